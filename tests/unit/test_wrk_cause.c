/*
 * test_wrk_cause.c - the deterministic failure causes of worker/cause.h:
 * which exec errors repeat, which commands name a script that can be
 * checked before spawning (and, as important, which do not), and the
 * missing-script check against real files in a temporary directory.
 */
#include <errno.h>
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

#include "cause.h"

static void test_exec_errno(void **state)
{
    static const int repeat[] = {ENOENT, ENOTDIR, EACCES,       ENOEXEC,
                                 ELOOP,  EISDIR,  ENAMETOOLONG, E2BIG};
    static const int transient[] = {0, ENOMEM, EAGAIN, ETXTBSY, EMFILE, ENFILE, EINTR, EPERM, EIO};
    (void)state;
    for (size_t i = 0; i < sizeof(repeat) / sizeof(repeat[0]); i++)
        assert_true(wrk_cause_exec_errno(repeat[i]));
    for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++)
        assert_false(wrk_cause_exec_errno(transient[i]));
}

#define ARGV(...) ((char *const[]){__VA_ARGS__, NULL})

static void test_script_arg(void **state)
{
    (void)state;
    /* an interpreter and its script: checkable */
    assert_string_equal(wrk_cause_script_arg(ARGV("python3", "train.py")), "train.py");
    assert_string_equal(wrk_cause_script_arg(ARGV("/usr/bin/python3", "/a/b.py", "--x")),
                        "/a/b.py");
    assert_string_equal(wrk_cause_script_arg(ARGV("python", "x.py")), "x.py");
    assert_string_equal(wrk_cause_script_arg(ARGV("python3.11", "dir/x.py")), "dir/x.py");
    assert_string_equal(wrk_cause_script_arg(ARGV("/bin/bash", "./run.sh")), "./run.sh");
    assert_string_equal(wrk_cause_script_arg(ARGV("sh", "/opt/run.sh", "a")), "/opt/run.sh");
    assert_string_equal(wrk_cause_script_arg(ARGV("dash", "s/run.sh")), "s/run.sh");

    /* anything else: not ours to judge */
    assert_null(wrk_cause_script_arg(ARGV("python3", "-m", "train")));
    assert_null(wrk_cause_script_arg(ARGV("python3", "-u", "train.py")));
    assert_null(wrk_cause_script_arg(ARGV("python3", "-c", "print(1)")));
    assert_null(wrk_cause_script_arg(ARGV("python3", "-")));
    assert_null(wrk_cause_script_arg(ARGV("python3", "train")));    /* no .py */
    assert_null(wrk_cause_script_arg(ARGV("python3", "train.sh"))); /* not python's */
    assert_null(wrk_cause_script_arg(ARGV("python3", ".py")));
    assert_null(wrk_cause_script_arg(ARGV("python3")));
    assert_null(wrk_cause_script_arg(ARGV("pythonista", "x.py")));
    assert_null(wrk_cause_script_arg(ARGV("ipython", "x.py")));
    assert_null(wrk_cause_script_arg(ARGV("bash", "run.sh"))); /* bash searches PATH */
    assert_null(wrk_cause_script_arg(ARGV("bash", "-c", "./run.sh")));
    assert_null(wrk_cause_script_arg(ARGV("bash", "./run.py")));
    assert_null(wrk_cause_script_arg(ARGV("zsh", "./run.sh")));
    assert_null(wrk_cause_script_arg(ARGV("torchrun", "train.py")));
    assert_null(wrk_cause_script_arg(ARGV("/usr/bin/env", "python3", "train.py")));
    assert_null(wrk_cause_script_arg(ARGV("./train.py", "x.py")));
    assert_null(wrk_cause_script_arg(NULL));
}

static void test_script_missing(void **state)
{
    char dir[] = "/tmp/ty-cause-XXXXXX", path[256];
    FILE *f;
    (void)state;

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/here.py", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/sub.py", dir);
    assert_int_equal(mkdir(path, 0700), 0); /* python runs a directory's __main__.py */

    assert_false(wrk_cause_script_missing(dir, "here.py"));
    assert_false(wrk_cause_script_missing(dir, "./here.py"));
    assert_false(wrk_cause_script_missing(dir, "sub.py"));
    snprintf(path, sizeof(path), "%s/here.py", dir);
    assert_false(wrk_cause_script_missing("/nonexistent", path)); /* absolute: cwd unused */
    assert_true(wrk_cause_script_missing(dir, "missing.py"));
    assert_true(wrk_cause_script_missing(dir, "no/such/dir.py"));
    assert_true(wrk_cause_script_missing(dir, "here.py/x.py")); /* ENOTDIR */
    assert_true(wrk_cause_script_missing("/", "/nonexistent-ty/x.py"));
    /* a directory it may not search: EACCES is not "missing" (root searches anyway) */
    snprintf(path, sizeof(path), "%s/sub.py", dir);
    assert_int_equal(chmod(path, 0), 0);
    if (geteuid() != 0)
        assert_false(wrk_cause_script_missing(dir, "sub.py/x.py"));
    assert_int_equal(chmod(path, 0700), 0);

    snprintf(path, sizeof(path), "%s/here.py", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/sub.py", dir);
    rmdir(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exec_errno),
        cmocka_unit_test(test_script_arg),
        cmocka_unit_test(test_script_missing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
