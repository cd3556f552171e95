/*
 * test_outputs.c - server/jobs/outputs.h's checkpoint rule: which checkpoint
 * paths a node may report (inside the job's checkpoint directory, itself in
 * the site's storage roots), lexically, with ".." tricks and look-alikes
 * refused and the accepted paths normalized.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "outputs.h"
#include "pathpol.h"

#define CKPT "/srv/ty/jobs/7/checkpoints"

static const char *const ROOTS[] = {"/data", "/srv/ty"};

static enum rc check(const char *path, const char *dir, char *norm, struct err *e)
{
    err_init(e);
    return outputs_checkpoint_check(path, dir, ROOTS, 2, norm, PATHPOL_BUF_SIZE, e);
}

static void test_inside_is_recorded_normalized(void **state)
{
    static const char *const cases[][2] = {
        {CKPT "/step-120.pt", CKPT "/step-120.pt"},
        {CKPT "//step-1.pt", CKPT "/step-1.pt"},
        {CKPT "/./sharded/step-2/", CKPT "/sharded/step-2"},
        {CKPT "/a/b/c.pt", CKPT "/a/b/c.pt"},
        {CKPT, CKPT},
    };
    char norm[PATHPOL_BUF_SIZE];
    struct err e;
    (void)state;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(check(cases[i][0], CKPT, norm, &e), RC_OK);
        assert_string_equal(norm, cases[i][1]);
    }
    /* a checkpoint directory given unnormalized still matches */
    assert_int_equal(check(CKPT "/x.pt", "/srv/ty//jobs/7/./checkpoints/", norm, &e), RC_OK);
    assert_string_equal(norm, CKPT "/x.pt");
}

static void test_outside_is_refused(void **state)
{
    static const char *const cases[][2] = {
        {"/etc/shadow", "outside the job's checkpoint directory"},
        {CKPT "/../../../../etc/x", "must not contain \"..\""},
        {CKPT "/../../7/checkpoints/x.pt", "must not contain \"..\""}, /* stays inside */
        {CKPT "/a/..", "must not contain \"..\""},
        {"/srv/ty/jobs/7/model.pt", "outside the job's checkpoint directory"}, /* in the roots */
        {"/srv/ty/jobs/8/checkpoints/x.pt", "outside the job's checkpoint directory"},
        {"/data/x.pt", "outside the job's checkpoint directory"},
        {CKPT "-evil/x.pt", "outside the job's checkpoint directory"},
        {"/srv/ty/jobs/7/checkpoint", "outside the job's checkpoint directory"},
        {"step-120.pt", ""},          /* relative */
        {"", ""},                     /* empty */
        {"file://" CKPT "/x.pt", ""}, /* URIs are not paths here */
        {CKPT "/x%2e.pt", ""},
        {CKPT "/x\\y.pt", ""},
        {CKPT "/\xe2\x80\xae"
              "tp.x",
         ""}, /* bidi override */
        {CKPT "/a\nb", ""},
    };
    char norm[PATHPOL_BUF_SIZE];
    struct err e;
    (void)state;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(check(cases[i][0], CKPT, norm, &e), RC_EPOLICY);
        assert_string_equal(e.code, "policy_violation");
        assert_non_null(strstr(e.message, cases[i][1]));
        assert_true(e.detail[0] != '\0' || cases[i][0][0] == '\0');
        assert_string_equal(norm, "");
    }
}

/* The checkpoint directory itself must be in the site's roots. */
static void test_directory_outside_the_roots(void **state)
{
    char norm[PATHPOL_BUF_SIZE];
    struct err e;
    (void)state;

    assert_int_equal(check("/home/u/ckpt/x.pt", "/home/u/ckpt", norm, &e), RC_EPOLICY);
    assert_non_null(strstr(e.message, "checkpoint directory is outside the site's storage roots"));
    assert_int_equal(check("/x.pt", "", norm, &e), RC_EPOLICY); /* no directory */
    err_init(&e);
    assert_int_equal(outputs_checkpoint_check(CKPT "/x.pt", CKPT, ROOTS, 0, norm, sizeof(norm), &e),
                     RC_EPOLICY); /* a site without roots allows nothing */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inside_is_recorded_normalized),
        cmocka_unit_test(test_outside_is_refused),
        cmocka_unit_test(test_directory_outside_the_roots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
