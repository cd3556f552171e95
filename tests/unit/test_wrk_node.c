/*
 * test_wrk_node.c - node description: --fake-gpus parsing and fake GPUs,
 * --labels parsing, and the realpath containment of work/checkpoint dirs.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent.h"
#include "gpu.h"
#include "pathchk.h"

static void test_fake_parse(void **state)
{
    struct wrk_fake_spec f;
    struct err e;
    (void)state;
    err_init(&e);
    assert_int_equal(wrk_fake_parse("4", &f, &e), RC_OK);
    assert_int_equal(f.count, 4);
    assert_int_equal(f.memory_gib, 80);
    assert_string_equal(f.model, "Fake GPU");
    assert_int_equal(wrk_fake_parse("8:141:NVIDIA H200", &f, &e), RC_OK);
    assert_int_equal(f.count, 8);
    assert_int_equal(f.memory_gib, 141);
    assert_string_equal(f.model, "NVIDIA H200");
    assert_int_equal(wrk_fake_parse("0", &f, &e), RC_OK);
    static const char *bad[] = {"",
                                "x",
                                "-1",
                                "65",
                                "4:",
                                "4:0",
                                "4:abc",
                                "4:80:",
                                "4x",
                                "4:80:\x01",
                                "99999999999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(wrk_fake_parse(bad[i], &f, &e), RC_EINVAL);
    assert_int_equal(wrk_fake_parse(NULL, &f, &e), RC_EINVAL);
}

static int busy_odd(void *ctx, int i)
{
    (void)ctx;
    return i % 2;
}

static void test_fake_gpus(void **state)
{
    struct wrk_fake_spec f;
    struct wrk_gpus *g = NULL;
    json_t *j;
    (void)state;
    assert_int_equal(wrk_fake_parse("2:16:T4", &f, NULL), RC_OK);
    assert_int_equal(wrk_gpus_open(&f, "n1", &g), RC_OK);
    assert_int_equal(wrk_gpus_count(g), 2);
    assert_string_equal(wrk_gpus_get(g, 1)->uuid, "GPU-fake-n1-1");
    assert_int_equal(wrk_gpus_get(g, 0)->memory_mb, 16384);
    assert_null(wrk_gpus_get(g, 2));
    wrk_gpus_sample(g, busy_odd, NULL);
    assert_int_equal(wrk_gpus_get(g, 0)->util_pct, 0);
    assert_int_equal(wrk_gpus_get(g, 1)->util_pct, 100);
    j = wrk_gpus_register_json(g);
    assert_int_equal(json_array_size(j), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(j, 0), "model")), "T4");
    assert_true(json_is_array(json_object_get(json_array_get(j, 0), "nvlink_peers")));
    json_decref(j);
    j = wrk_gpus_heartbeat_json(g);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(j, 1), "mem_used_mb")),
                     8192);
    json_decref(j);
    wrk_gpus_free(g);
    assert_true(wrk_host_cpus() >= 1);
    assert_true(wrk_host_memory_mb() > 0);
}

static void test_labels(void **state)
{
    json_t *o = NULL;
    (void)state;
    assert_int_equal(wrk_labels_parse("rack=r1,switch=s1", &o, NULL), RC_OK);
    assert_string_equal(json_string_value(json_object_get(o, "rack")), "r1");
    assert_string_equal(json_string_value(json_object_get(o, "switch")), "s1");
    json_decref(o);
    assert_int_equal(wrk_labels_parse(NULL, &o, NULL), RC_OK);
    assert_int_equal(json_object_size(o), 0);
    json_decref(o);
    assert_int_equal(wrk_labels_parse("rack", &o, NULL), RC_EINVAL);
    assert_int_equal(wrk_labels_parse("=x", &o, NULL), RC_EINVAL);
    assert_int_equal(wrk_labels_parse("a b=x", &o, NULL), RC_EINVAL);
    assert_int_equal(wrk_labels_parse("a=x=y", &o, NULL), RC_EINVAL);
}

static void test_pathchk(void **state)
{
    char root[64], sub[128], out[PATH_MAX], link[128], outside[64];
    const char *roots[1];
    struct err e;
    (void)state;

    snprintf(root, sizeof(root), "/tmp/ty-wrk-root-XXXXXX");
    assert_non_null(mkdtemp(root));
    snprintf(outside, sizeof(outside), "/tmp/ty-wrk-out-XXXXXX");
    assert_non_null(mkdtemp(outside));
    roots[0] = root;
    err_init(&e);
    snprintf(sub, sizeof(sub), "%s/jobs/7", root);
    assert_int_equal(wrk_path_check(sub, roots, 1, 1, out, sizeof(out), &e), RC_OK);
    assert_string_equal(out, sub);
    {
        struct stat st;
        assert_int_equal(stat(sub, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0750);
    }
    /* ".." is refused even when it would stay inside */
    snprintf(sub, sizeof(sub), "%s/jobs/../jobs/8", root);
    assert_int_equal(wrk_path_check(sub, roots, 1, 1, out, sizeof(out), &e), RC_EPOLICY);
    assert_string_equal(e.code, "policy_violation");
    /* a symlink out of the root */
    snprintf(link, sizeof(link), "%s/escape", root);
    assert_int_equal(symlink(outside, link), 0);
    snprintf(sub, sizeof(sub), "%s/escape/x", root);
    assert_int_equal(wrk_path_check(sub, roots, 1, 1, out, sizeof(out), &e), RC_EPOLICY);
    /* a sibling with the root as a prefix */
    snprintf(sub, sizeof(sub), "%s2/x", root);
    assert_int_equal(wrk_path_check(sub, roots, 1, 0, out, sizeof(out), &e), RC_EPOLICY);
    assert_int_equal(wrk_path_check("relative", roots, 1, 0, out, sizeof(out), &e), RC_EPOLICY);
    assert_int_equal(wrk_path_check("/etc", roots, 1, 0, out, sizeof(out), &e), RC_EPOLICY);
    assert_true(wrk_path_inside("/data/x", "/data"));
    assert_true(wrk_path_inside("/data", "/data/"));
    assert_false(wrk_path_inside("/data2", "/data"));
    assert_true(wrk_path_inside("/x", "/"));

    unlink(link);
    snprintf(sub, sizeof(sub), "%s/jobs/7", root);
    rmdir(sub);
    snprintf(sub, sizeof(sub), "%s/jobs", root);
    rmdir(sub);
    rmdir(root);
    rmdir(outside);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fake_parse),
        cmocka_unit_test(test_fake_gpus),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_pathchk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
