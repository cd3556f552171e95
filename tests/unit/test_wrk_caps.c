/*
 * test_wrk_caps.c - the Python capability probe: parsing its marked line
 * (noise before it, wrong types, no marker), and real runs through
 * posix_spawn of stand-in interpreters (shell scripts written here) that
 * answer, fail, hang past the timeout or do not exist; and the real script
 * under the system's python3, which must at least run to its end.
 */
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

#include "caps.h"

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void assert_unknown(const json_t *c, const char *probe)
{
    static const char *const keys[] = {"python", "torch", "torch_cuda",
                                       "nccl",   "fsdp",  "deepspeed"};
    assert_string_equal(str(c, "probe"), probe);
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        assert_string_equal(str(c, keys[i]), "unknown");
}

static void test_parse(void **state)
{
    json_t *c;

    (void)state;
    c = wrk_caps_parse("some warning\n" WRK_CAPS_MARKER
                       "{\"python\":\"3.11.2\",\"torch\":\"1.13.0a0\",\"torch_cuda\":null,"
                       "\"nccl\":false,\"fsdp\":false,\"deepspeed\":false}\n",
                       "ok");
    assert_string_equal(str(c, "probe"), "ok");
    assert_string_equal(str(c, "python"), "3.11.2");
    assert_string_equal(str(c, "torch"), "1.13.0a0");
    assert_true(json_is_null(json_object_get(c, "torch_cuda")));
    assert_true(json_is_false(json_object_get(c, "fsdp")));
    assert_true(json_is_false(json_object_get(c, "deepspeed")));
    json_decref(c);
    /* no torch at all */
    c = wrk_caps_parse(WRK_CAPS_MARKER "{\"python\":\"3.12.1\",\"torch\":null,\"torch_cuda\":null,"
                                       "\"nccl\":false,\"fsdp\":false,\"deepspeed\":true}",
                       "ok");
    assert_true(json_is_null(json_object_get(c, "torch")));
    assert_true(json_is_true(json_object_get(c, "deepspeed")));
    json_decref(c);
}

static void test_parse_bad(void **state)
{
    static const char *const bad[] = {
        "",
        "no marker here\n",
        WRK_CAPS_MARKER "not json",
        WRK_CAPS_MARKER "[1,2]",
        WRK_CAPS_MARKER "{\"python\":\"3.11\",\"torch\":1,\"torch_cuda\":null,\"nccl\":false,"
                        "\"fsdp\":false,\"deepspeed\":false}",
        WRK_CAPS_MARKER "{\"python\":\"3.11\",\"torch\":null,\"torch_cuda\":null,\"nccl\":false,"
                        "\"fsdp\":\"yes\",\"deepspeed\":false}",
        WRK_CAPS_MARKER "{\"python\":\"3.11\",\"torch\":\"\\u0001\",\"torch_cuda\":null,"
                        "\"nccl\":false,\"fsdp\":false,\"deepspeed\":false}",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *c = wrk_caps_parse(bad[i], "ok");
        assert_unknown(c, "failed");
        json_decref(c);
    }
    {
        json_t *c = wrk_caps_parse(NULL, "timeout");
        assert_unknown(c, "timeout");
        json_decref(c);
    }
}

/* A stand-in interpreter: a shell script that ignores "-c <script>". */
static void write_script(const char *path, const char *body)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
}

static void test_probe_runs(void **state)
{
    char dir[] = "/tmp/ty-caps-XXXXXX", ok[64], fail[64], hang[64];
    json_t *c = NULL;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(ok, sizeof(ok), "%s/ok", dir);
    snprintf(fail, sizeof(fail), "%s/fail", dir);
    snprintf(hang, sizeof(hang), "%s/hang", dir);
    write_script(ok, "echo noise; echo 'TRAINYARD_CAPS {\"python\":\"3.10.4\",\"torch\":\"2.3.1\","
                     "\"torch_cuda\":\"12.1\",\"nccl\":true,\"fsdp\":true,\"deepspeed\":false}'");
    write_script(fail, "echo 'TRAINYARD_CAPS {\"python\":\"3.10.4\"}'; exit 1");
    /* the grandchild holds stdout open too: the group is killed, nothing waits for it */
    write_script(hang, "sleep 30 & exec sleep 30");

    assert_int_equal(wrk_caps_probe(ok, 10000, &c), RC_OK);
    assert_string_equal(str(c, "probe"), "ok");
    assert_string_equal(str(c, "torch"), "2.3.1");
    assert_string_equal(str(c, "torch_cuda"), "12.1");
    assert_true(json_is_true(json_object_get(c, "fsdp")));
    json_decref(c);

    assert_int_equal(wrk_caps_probe(fail, 10000, &c), RC_OK);
    assert_unknown(c, "failed");
    json_decref(c);

    assert_int_equal(wrk_caps_probe(hang, 300, &c), RC_OK);
    assert_unknown(c, "timeout");
    json_decref(c);

    assert_int_equal(wrk_caps_probe("/nonexistent/python3", 1000, &c), RC_OK);
    assert_unknown(c, "failed");
    json_decref(c);

    assert_int_equal(wrk_caps_probe("", 1000, &c), RC_OK);
    assert_unknown(c, "skipped");
    json_decref(c);

    unlink(ok);
    unlink(fail);
    unlink(hang);
    rmdir(dir);
}

/* Set when test_real_python skips: main() then exits 77, which ctest reports as
 * skipped (cmocka's own result counts only failures). */
static int real_python_skipped;

/* The real script: valid Python that runs to its end wherever python3 is. */
static void test_real_python(void **state)
{
    json_t *c = NULL;

    (void)state;
    if (access("/usr/bin/python3", X_OK) != 0) {
        real_python_skipped = 1;
        skip();
        return;
    }
    assert_int_equal(wrk_caps_probe("/usr/bin/python3", 60000, &c), RC_OK);
    assert_string_equal(str(c, "probe"), "ok");
    assert_true(strlen(str(c, "python")) >= 3);
    assert_true(json_is_boolean(json_object_get(c, "fsdp")));
    assert_true(json_is_boolean(json_object_get(c, "deepspeed")));
    json_decref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_probe_runs),
        cmocka_unit_test(test_real_python),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);

    if (failed != 0) {
        return 1;
    }
    return real_python_skipped ? 77 : 0;
}
