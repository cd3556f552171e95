/*
 * test_wrk_pathchk.c - the worker's run-time data-residency check
 * (worker/pathchk.c): every symlink fixture of tests/data/paths/symlinks.txt
 * is refused, and a path must lie inside both the worker's --allowed-root
 * dirs and the job's site roots when the server sends them.
 *
 * Builds its trees in a mkdtemp directory under /tmp and removes them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pathchk.h"

struct tree {
    char base[64];       /* mkdtemp result */
    char root[128];      /* base/root: the allowed root */
    char outside[128];   /* base/outside */
    char real[PATH_MAX]; /* realpath of root */
};

static void tree_new(struct tree *t)
{
    snprintf(t->base, sizeof(t->base), "/tmp/ty-wrk-pathchk-XXXXXX");
    assert_non_null(mkdtemp(t->base));
    snprintf(t->root, sizeof(t->root), "%s/root", t->base);
    snprintf(t->outside, sizeof(t->outside), "%s/outside", t->base);
    assert_int_equal(mkdir(t->root, 0700), 0);
    assert_int_equal(mkdir(t->outside, 0700), 0);
    assert_non_null(realpath(t->root, t->real));
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* rm -rf of the tree; links are removed, never followed. */
static void tree_free(struct tree *t)
{
    assert_int_equal(nftw(t->base, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/* mkdir -p the parents of path (inside the tree). */
static void mk_parents(const char *path)
{
    char buf[PATH_MAX];

    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        (void)mkdir(buf, 0700);
        *p = '/';
    }
}

/* Build every fixture of symlinks.txt under t; returns how many; probes[] get the paths. */
static size_t build_fixtures(const struct tree *t, char probes[][PATH_MAX], size_t max)
{
    char path[1024], line[1024], link[PATH_MAX], target[PATH_MAX];
    size_t n = 0;
    FILE *f;

    snprintf(path, sizeof(path), "%s/tests/data/paths/symlinks.txt", TY_SOURCE_DIR);
    f = fopen(path, "r");
    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL && n < max) {
        char l[256], tg[256], pr[256];
        if (line[0] == '#' || sscanf(line, "%255s %255s %255s", l, tg, pr) != 3)
            continue;
        snprintf(link, sizeof(link), "%s/%s", t->root, l);
        if (strncmp(tg, "@OUT@", 5) == 0)
            snprintf(target, sizeof(target), "%s%s", t->outside, tg + 5);
        else
            snprintf(target, sizeof(target), "%s", tg);
        mk_parents(link);
        if (symlink(target, link) != 0)
            fail_msg("symlink %s -> %s failed", link, target);
        snprintf(probes[n++], PATH_MAX, "%s/%s", t->root, pr);
    }
    fclose(f);
    return n;
}

static void test_symlink_fixtures(void **state)
{
    static char probes[64][PATH_MAX];
    char out[PATH_MAX];
    struct tree t;
    struct err e;
    const char *roots[1];
    size_t n;

    (void)state;
    tree_new(&t);
    roots[0] = t.root;
    n = build_fixtures(&t, probes, 64);
    assert_true(n >= 20);
    for (size_t i = 0; i < n; i++) {
        for (int create = 0; create <= 1; create++) {
            err_init(&e);
            if (wrk_path_check(probes[i], roots, 1, create, out, sizeof(out), &e) != RC_EPOLICY)
                fail_msg("symlink fixture %s not refused (create %d)", probes[i], create);
            assert_string_equal(e.code, "policy_violation");
            assert_string_equal(out, "");
        }
    }
    /* nothing was created outside by the refused create=1 calls */
    {
        char p[PATH_MAX];
        struct stat st;
        snprintf(p, sizeof(p), "%s/new", t.outside);
        assert_int_not_equal(stat(p, &st), 0);
        snprintf(p, sizeof(p), "%s/missing", t.outside);
        assert_int_not_equal(stat(p, &st), 0);
    }
    tree_free(&t);
}

static void test_site_roots(void **state)
{
    char sub[PATH_MAX], p[PATH_MAX], out[PATH_MAX], want[PATH_MAX];
    const char *roots[1], *site[2];
    struct tree t;
    struct err e;
    struct stat st;

    (void)state;
    tree_new(&t);
    roots[0] = t.root;
    snprintf(sub, sizeof(sub), "%s/site", t.root);
    assert_int_equal(mkdir(sub, 0700), 0);
    site[0] = sub;
    site[1] = "/nonexistent-root-of-the-site";
    err_init(&e);
    /* inside both */
    snprintf(p, sizeof(p), "%s/site/jobs/7", t.root);
    assert_int_equal(wrk_path_check_site(p, roots, 1, site, 2, 1, out, sizeof(out), &e), RC_OK);
    snprintf(want, sizeof(want), "%s/site/jobs/7", t.real);
    assert_string_equal(out, want);
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0750);
    /* inside the worker's root, outside the site's */
    snprintf(p, sizeof(p), "%s/other/x", t.root);
    assert_int_equal(wrk_path_check_site(p, roots, 1, site, 2, 1, out, sizeof(out), &e),
                     RC_EPOLICY);
    assert_true(strstr(e.message, "site") != NULL);
    assert_int_not_equal(stat(p, &st), 0); /* not created */
    /* ... which is fine without site roots */
    assert_int_equal(wrk_path_check_site(p, roots, 1, NULL, 0, 0, out, sizeof(out), &e), RC_OK);
    /* an empty list of site roots allows nothing */
    snprintf(p, sizeof(p), "%s/site/x", t.root);
    assert_int_equal(wrk_path_check_site(p, roots, 1, site, 0, 0, out, sizeof(out), &e),
                     RC_EPOLICY);
    /* inside the site's root, outside the worker's */
    site[0] = t.outside;
    snprintf(p, sizeof(p), "%s/x", t.outside);
    assert_int_equal(wrk_path_check_site(p, roots, 1, site, 1, 0, out, sizeof(out), &e),
                     RC_EPOLICY);
    /* a symlink inside the site's root that leads to the worker's other dirs */
    site[0] = sub;
    snprintf(p, sizeof(p), "%s/site/to-other", t.root);
    snprintf(want, sizeof(want), "%s/other", t.root);
    assert_int_equal(mkdir(want, 0700), 0);
    assert_int_equal(symlink(want, p), 0);
    snprintf(p, sizeof(p), "%s/site/to-other/x", t.root);
    assert_int_equal(wrk_path_check_site(p, roots, 1, site, 1, 0, out, sizeof(out), &e),
                     RC_EPOLICY);
    /* "..", even when it would stay inside */
    snprintf(p, sizeof(p), "%s/site/../site/x", t.root);
    assert_int_equal(wrk_path_check_site(p, roots, 1, site, 1, 0, out, sizeof(out), &e),
                     RC_EPOLICY);
    tree_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symlink_fixtures),
        cmocka_unit_test(test_site_roots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
