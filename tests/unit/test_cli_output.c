/*
 * test_cli_output.c - the command line's output without a server: the
 * message catalogue (cli/msg.c: both languages of every message take the
 * same printf conversions, the language follows LC_ALL, LC_MESSAGES,
 * LANG), the width-aware table (cli/table.c: Chinese counts two columns,
 * so columns line up), and how a refused request maps to an exit code
 * (cli/client.c cli_exit_for_http).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli.h"
#include "client.h"
#include "msg.h"
#include "table.h"

/* The conversions of printf format f ("%s%ld%d..."), flags and widths
 * dropped, into out. */
static void conversions(const char *f, char *out, size_t n)
{
    size_t k = 0;

    for (const char *p = f; *p != '\0'; p++) {
        if (*p != '%')
            continue;
        p++;
        if (*p == '%')
            continue;
        while (*p != '\0' && strchr("0123456789-+ #.", *p) != NULL)
            p++;
        while (*p != '\0' && strchr("hlzjt", *p) != NULL && k + 1 < n)
            out[k++] = *p++;
        if (*p != '\0' && k + 1 < n)
            out[k++] = *p;
        if (k + 1 < n)
            out[k++] = ',';
    }
    out[k] = '\0';
}

static void test_catalogue_languages_agree(void **state)
{
    (void)state;
    char en[128], zh[128];

    for (int id = 0; id < CLI_MSG_COUNT; id++) {
        const char *e = cli_msg_in((enum cli_msg)id, CLI_LANG_EN);
        const char *z = cli_msg_in((enum cli_msg)id, CLI_LANG_ZH);
        assert_non_null(e);
        assert_non_null(z);
        assert_true(e[0] != '\0');
        assert_true(z[0] != '\0');
        conversions(e, en, sizeof(en));
        conversions(z, zh, sizeof(zh));
        if (strcmp(en, zh) != 0)
            fail_msg("message %d: \"%s\" takes %s but \"%s\" takes %s", id, e, en, z, zh);
        assert_true(cli_utf8_valid(z, strlen(z)));
    }
    assert_string_equal(cli_msg_in(M_NO_NODE, CLI_LANG_ZH), "没有名为 %s 的节点");
    assert_string_equal(cli_msg_in((enum cli_msg)CLI_MSG_COUNT, CLI_LANG_EN), "");
}

static void test_language_from_locale(void **state)
{
    (void)state;
    assert_int_equal(cli_lang_of(NULL, NULL, "zh_CN.UTF-8"), CLI_LANG_ZH);
    assert_int_equal(cli_lang_of(NULL, NULL, "en_US.UTF-8"), CLI_LANG_EN);
    assert_int_equal(cli_lang_of(NULL, NULL, "C.UTF-8"), CLI_LANG_EN);
    assert_int_equal(cli_lang_of(NULL, NULL, NULL), CLI_LANG_EN);
    assert_int_equal(cli_lang_of("en_US.UTF-8", "zh_CN", "zh_CN"), CLI_LANG_EN);
    assert_int_equal(cli_lang_of("", "zh_TW.UTF-8", "en_US"), CLI_LANG_ZH);
    assert_int_equal(cli_lang_of("", "", "zh_CN.UTF-8"), CLI_LANG_ZH);

    char buf[128];
    setenv("LC_ALL", "zh_CN.UTF-8", 1);
    cli_msgf(buf, sizeof(buf), M_NO_NODE, "gpu-7");
    assert_string_equal(buf, "没有名为 gpu-7 的节点");
    setenv("LC_ALL", "C", 1);
    cli_msgf(buf, sizeof(buf), M_NO_NODE, "gpu-7");
    assert_string_equal(buf, "no node named gpu-7");
}

static void test_text_width(void **state)
{
    (void)state;
    assert_int_equal(cli_text_width(""), 0);
    assert_int_equal(cli_text_width("RUNNING"), 7);
    assert_int_equal(cli_text_width("状态"), 4);
    assert_int_equal(cli_text_width("表面缺陷分类（ResNet-50）"), 25);
    assert_int_equal(cli_text_width("e\xcc\x81"), 1);    /* e + combining acute */
    assert_int_equal(cli_text_width("\xff\xfe"), 2);     /* not UTF-8: a column each */
    assert_int_equal(cli_text_width("\xe4\xb8"), 2);     /* a cut sequence too */
    assert_int_equal(cli_text_width("\xed\xa0\x80"), 3); /* a surrogate is no text */
    assert_true(cli_utf8_valid("作业 ok", strlen("作业 ok")));
    assert_false(cli_utf8_valid("\xc0\xaf", 2)); /* overlong '/' */
    assert_false(cli_utf8_valid("a\0b", 3));
    assert_false(cli_utf8_valid("\xe4\xb8", 2));
}

static void test_table_aligns_wide_text(void **state)
{
    (void)state;
    static const int right[] = {1, 0, 0};
    char buf[1024];
    FILE *f = fmemopen(buf, sizeof(buf), "w");
    struct cli_table *t = cli_table_new(3, right);
    const char *h[] = {"编号", "名称", "状态"};
    const char *r1[] = {"7", "缺陷检测", "RUNNING"};
    const char *r2[] = {"12", "bert\tb", NULL};

    assert_non_null(f);
    assert_non_null(t);
    assert_null(cli_table_new(0, NULL));
    assert_null(cli_table_new(CLI_TABLE_MAX_COLS + 1, NULL));
    assert_int_equal(cli_table_add(t, h), RC_OK);
    assert_int_equal(cli_table_add(t, r1), RC_OK);
    assert_int_equal(cli_table_add(t, r2), RC_OK);
    cli_table_print(t, f);
    fclose(f);
    cli_table_free(t);
    cli_table_free(NULL);
    /* Column 1 is 8 columns wide (缺陷检测), right-aligned ids, no
     * trailing spaces, a tab shown as a space. */
    assert_string_equal(buf, "编号  名称      状态\n"
                             "   7  缺陷检测  RUNNING\n"
                             "  12  bert b\n");
}

static void test_cells(void **state)
{
    (void)state;
    char b[64];
    json_t *v = json_loads("{\"s\":\"x\",\"i\":42,\"r\":0.5,\"t\":true,\"n\":null,"
                           "\"ts\":\"2026-12-01T11:16:03.123456+00:00\"}",
                           0, NULL);

    assert_non_null(v);
    assert_string_equal(cli_cell(json_object_get(v, "s"), b, sizeof(b)), "x");
    assert_string_equal(cli_cell(json_object_get(v, "i"), b, sizeof(b)), "42");
    assert_string_equal(cli_cell(json_object_get(v, "r"), b, sizeof(b)), "0.5");
    assert_string_equal(cli_cell(json_object_get(v, "t"), b, sizeof(b)), "true");
    assert_string_equal(cli_cell(json_object_get(v, "n"), b, sizeof(b)), "-");
    assert_string_equal(cli_cell(json_object_get(v, "missing"), b, sizeof(b)), "-");
    assert_string_equal(cli_cell_time(json_object_get(v, "ts"), b, sizeof(b)),
                        "2026-12-01 11:16:03");
    assert_string_equal(cli_cell_time(json_object_get(v, "n"), b, sizeof(b)), "-");
    json_decref(v);
}

static int exit_for(long status, const char *code)
{
    json_t *e = code ? json_pack("{s:{s:s}}", "error", "code", code) : NULL;
    int x = cli_exit_for_http(status, e);

    json_decref(e);
    return x;
}

static void test_exit_codes_from_http(void **state)
{
    (void)state;
    /* The numbers are a promise to scripts (cli/README.md). */
    assert_int_equal(CLI_EXIT_OK, 0);
    assert_int_equal(CLI_EXIT_FAIL, 1);
    assert_int_equal(CLI_EXIT_USAGE, 2);
    assert_int_equal(CLI_EXIT_AUTH, 3);
    assert_int_equal(CLI_EXIT_NOTFOUND, 4);
    assert_int_equal(CLI_EXIT_REFUSED, 5);
    assert_int_equal(CLI_EXIT_UNAVAIL, 6);
    assert_int_equal(exit_for(200, NULL), CLI_EXIT_OK);
    assert_int_equal(exit_for(201, NULL), CLI_EXIT_OK);
    assert_int_equal(exit_for(400, "invalid_argument"), CLI_EXIT_FAIL);
    assert_int_equal(exit_for(401, "unauthenticated"), CLI_EXIT_AUTH);
    assert_int_equal(exit_for(403, "permission_denied"), CLI_EXIT_AUTH);
    assert_int_equal(exit_for(403, "policy_violation"), CLI_EXIT_REFUSED);
    assert_int_equal(exit_for(403, NULL), CLI_EXIT_AUTH);
    assert_int_equal(exit_for(404, "not_found"), CLI_EXIT_NOTFOUND);
    assert_int_equal(exit_for(409, "conflict"), CLI_EXIT_REFUSED);
    assert_int_equal(exit_for(413, "too_large"), CLI_EXIT_FAIL);
    assert_int_equal(exit_for(429, "rate_limited"), CLI_EXIT_FAIL);
    assert_int_equal(exit_for(500, "internal"), CLI_EXIT_UNAVAIL);
    assert_int_equal(exit_for(503, "unavailable"), CLI_EXIT_UNAVAIL);
    assert_int_equal(cli_exit_for_rc(RC_EUNAVAIL), CLI_EXIT_UNAVAIL);
    assert_int_equal(cli_exit_for_rc(RC_EINVAL), CLI_EXIT_USAGE);
    assert_int_equal(cli_exit_for_rc(RC_ETOOBIG), CLI_EXIT_FAIL);
}

int main(void)
{
    setenv("LC_ALL", "C", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_catalogue_languages_agree),
        cmocka_unit_test(test_language_from_locale),
        cmocka_unit_test(test_text_width),
        cmocka_unit_test(test_table_aligns_wide_text),
        cmocka_unit_test(test_cells),
        cmocka_unit_test(test_exit_codes_from_http),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
