/*
 * test_cli_submit.c - unit tests of "trainyard submit" and "trainyard
 * templates" without a server (cli/submit.c, cli/client.c): option
 * parsing and its usage errors, the POST /api/v1/jobs body with each
 * --param typed by the template's schema, the server URL's precedence, the
 * user's language, and how a server's error is shown.
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
#include "submit.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

static char g_err[4096];

/* Runs cli_submit_parse on argv, the diagnostics into g_err. */
static int parse(int argc, char **argv, struct cli_submit_opts *o)
{
    FILE *f = fmemopen(g_err, sizeof(g_err), "w");
    int r;

    assert_non_null(f);
    r = cli_submit_parse(argc, argv, o, f);
    fclose(f);
    return r;
}

static void test_parse_all_options(void **state)
{
    (void)state;
    struct cli_submit_opts o;
    char *argv[] = {"submit",
                    "--template",
                    "defect-resnet50",
                    "--param",
                    "steps=50",
                    "--param=arch=tiny",
                    "--param",
                    "pretrained=",
                    "--dataset",
                    "/data/photos",
                    "--dataset=digits",
                    "--gpus",
                    "2",
                    "--team=factory",
                    "--name",
                    "line 3",
                    "--server",
                    "http://h:9",
                    "--json"};

    assert_int_equal(parse(ARGC(argv), argv, &o), 0);
    assert_string_equal(o.template_id, "defect-resnet50");
    assert_int_equal(o.n_params, 3);
    assert_string_equal(o.params[0].name, "steps");
    assert_string_equal(o.params[0].value, "50");
    /* Only the first '=' splits: the value may hold more. */
    assert_string_equal(o.params[1].name, "arch");
    assert_string_equal(o.params[1].value, "tiny");
    assert_string_equal(o.params[2].name, "pretrained");
    assert_string_equal(o.params[2].value, "");
    assert_int_equal(o.n_datasets, 2);
    assert_string_equal(o.datasets[0], "/data/photos");
    assert_string_equal(o.datasets[1], "digits");
    assert_int_equal(o.gpus, 2);
    assert_string_equal(o.team, "factory");
    assert_string_equal(o.name, "line 3");
    assert_string_equal(o.server, "http://h:9");
    assert_int_equal(o.json, 1);

    char *help[] = {"submit", "--param", "a=1", "--help"};
    assert_int_equal(parse(ARGC(help), help, &o), 1);
    char *minimal[] = {"submit", "--template=bench-gpt2"};
    assert_int_equal(parse(ARGC(minimal), minimal, &o), 0);
    assert_null(o.server);
    assert_null(o.team);
    assert_int_equal(o.gpus, 0);
    assert_int_equal(o.n_params, 0);
}

static void expect_usage_error(int argc, char **argv, const char *words)
{
    struct cli_submit_opts o;

    assert_int_equal(parse(argc, argv, &o), -1);
    if (strstr(g_err, words) == NULL)
        fail_msg("want \"%s\" in: %s", words, g_err);
}

static void test_parse_usage_errors(void **state)
{
    (void)state;
    char *no_template[] = {"submit", "--param", "steps=5"};
    expect_usage_error(ARGC(no_template), no_template, "--template ID is required");
    char *no_eq[] = {"submit", "--template", "t", "--param", "steps"};
    expect_usage_error(ARGC(no_eq), no_eq, "--param wants NAME=VALUE (got steps)");
    char *empty_name[] = {"submit", "--template", "t", "--param", "=5"};
    expect_usage_error(ARGC(empty_name), empty_name, "--param wants NAME=VALUE");
    char *bad_name[] = {"submit", "--template", "t", "--param", "a.b=5"};
    expect_usage_error(ARGC(bad_name), bad_name, "letters, digits and _ only");
    char *twice[] = {"submit", "--template", "t", "--param", "lr=1", "--param", "lr=2"};
    expect_usage_error(ARGC(twice), twice, "--param lr given twice");
    char *missing[] = {"submit", "--template", "t", "--gpus"};
    expect_usage_error(ARGC(missing), missing, "--gpus needs a value");
    char *missing_tpl[] = {"submit", "--template"};
    expect_usage_error(ARGC(missing_tpl), missing_tpl, "--template needs a value");
    char *zero[] = {"submit", "--template", "t", "--gpus", "0"};
    expect_usage_error(ARGC(zero), zero, "--gpus wants a whole number from 1 to 4096 (got 0)");
    char *junk[] = {"submit", "--template", "t", "--gpus", "2x"};
    expect_usage_error(ARGC(junk), junk, "(got 2x)");
    char *empty_team[] = {"submit", "--template", "t", "--team="};
    expect_usage_error(ARGC(empty_team), empty_team, "--team needs a value");
    char *empty_ds[] = {"submit", "--template", "t", "--dataset", ""};
    expect_usage_error(ARGC(empty_ds), empty_ds, "--dataset needs a path");
    char *unknown[] = {"submit", "--template", "t", "--priority", "high"};
    expect_usage_error(ARGC(unknown), unknown, "unknown option --priority");
    char *bare[] = {"submit", "--template", "t", "steps=5"};
    expect_usage_error(ARGC(bare), bare, "parameters go as --param steps=5");
    char *both[] = {"submit", "job.json", "--template", "t"};
    expect_usage_error(ARGC(both), both, "give a job file or --template, not both");
    char *file_param[] = {"submit", "job.json", "--param", "steps=5"};
    expect_usage_error(ARGC(file_param), file_param, "go with --template");
    char *two_files[] = {"submit", "a.json", "b.json"};
    expect_usage_error(ARGC(two_files), two_files, "unexpected argument b.json");
    char *not_utf8[] = {"submit", "--template", "t", "--name", "\xff\xfe"};
    expect_usage_error(ARGC(not_utf8), not_utf8, "not valid UTF-8");

    char too_many[CLI_MAX_PARAMS + 2][16];
    char *many[2 * (CLI_MAX_PARAMS + 1) + 3];
    int n = 0;
    many[n++] = "submit";
    many[n++] = "--template=t";
    for (int i = 0; i <= CLI_MAX_PARAMS; i++) {
        snprintf(too_many[i], sizeof(too_many[i]), "p%d=1", i);
        many[n++] = "--param";
        many[n++] = too_many[i];
    }
    expect_usage_error(n, many, "at most 64 --param");
}

static void test_parse_job_file(void **state)
{
    (void)state;
    struct cli_submit_opts o;
    char *file[] = {"submit",
                    "job.json",
                    "--json",
                    "--server",
                    "http://h:1",
                    "--idempotency-key",
                    "nightly-2026-12-01"};
    char *stdin_file[] = {"submit", "-"};
    char *empty_key[] = {"submit", "job.json", "--idempotency-key="};

    assert_int_equal(parse(ARGC(file), file, &o), 0);
    assert_string_equal(o.file, "job.json");
    assert_string_equal(o.idempotency_key, "nightly-2026-12-01");
    assert_null(o.template_id);
    assert_int_equal(o.json, 1);
    assert_string_equal(o.server, "http://h:1");
    assert_int_equal(parse(ARGC(stdin_file), stdin_file, &o), 0);
    assert_string_equal(o.file, "-");
    assert_null(o.idempotency_key);
    expect_usage_error(ARGC(empty_key), empty_key, "--idempotency-key");
}

static void test_templates_parse(void **state)
{
    (void)state;
    struct cli_templates_opts o;
    FILE *f = fmemopen(g_err, sizeof(g_err), "w");
    char *ok[] = {"templates", "--json", "--server=http://x:1"};
    char *bad[] = {"templates", "--all"};
    char *missing[] = {"templates", "--server"};

    assert_int_equal(cli_templates_parse(ARGC(ok), ok, &o, f), 0);
    assert_int_equal(o.json, 1);
    assert_string_equal(o.server, "http://x:1");
    assert_int_equal(cli_templates_parse(ARGC(bad), bad, &o, f), -1);
    assert_int_equal(cli_templates_parse(ARGC(missing), missing, &o, f), -1);
    fclose(f);
    assert_non_null(strstr(g_err, "unknown option --all"));
    assert_non_null(strstr(g_err, "--server needs a value"));
}

static const char *SCHEMA = "{\"steps\":{\"type\":\"int\"},\"lr\":{\"type\":\"float\"},"
                            "\"arch\":{\"type\":\"enum\"},\"verbose\":{\"type\":\"bool\"},"
                            "\"pretrained\":{\"type\":\"string\"}}";

static void test_body_types_params_by_schema(void **state)
{
    (void)state;
    struct cli_submit_opts o;
    json_t *schema = json_loads(SCHEMA, 0, NULL), *body = NULL, *want;
    char *argv[] = {"submit",         "--template",  "defect-resnet50",
                    "--param",        "steps=50",    "--param",
                    "lr=0.05",        "--param",     "arch=tiny",
                    "--param",        "verbose=yes", "--param",
                    "pretrained=123", "--dataset",   "/data/photos",
                    "--gpus",         "2",           "--team",
                    "factory",        "--name",      "n"};

    assert_non_null(schema);
    assert_int_equal(parse(ARGC(argv), argv, &o), 0);
    assert_int_equal(cli_submit_body(&o, schema, &body), RC_OK);
    want = json_pack("{s:s,s:{s:i,s:f,s:s,s:b,s:s},s:[s],s:{s:i},s:s,s:s}", "template",
                     "defect-resnet50", "params", "steps", 50, "lr", 0.05, "arch", "tiny",
                     "verbose", 1, "pretrained", "123", "datasets", "/data/photos", "resources",
                     "gpus", 2, "team", "factory", "name", "n");
    assert_true(json_equal(body, want));
    json_decref(want);
    json_decref(body);

    /* What does not read as its type, and names the schema lacks, go as
     * text: the server refuses them naming params.<name>. No schema (an
     * unknown template): all text, and only what was given. */
    char *bad[] = {"submit",   "--template", "t",         "--param", "steps=many", "--param",
                   "lr=1e999", "--param",    "verbose=2", "--param", "epochs=3"};
    assert_int_equal(parse(ARGC(bad), bad, &o), 0);
    assert_int_equal(cli_submit_body(&o, schema, &body), RC_OK);
    want = json_pack("{s:s,s:{s:s,s:s,s:s,s:s}}", "template", "t", "params", "steps", "many", "lr",
                     "1e999", "verbose", "2", "epochs", "3");
    assert_true(json_equal(body, want));
    json_decref(want);
    json_decref(body);
    char *plain[] = {"submit", "--template", "t", "--param", "steps=7"};
    assert_int_equal(parse(ARGC(plain), plain, &o), 0);
    assert_int_equal(cli_submit_body(&o, NULL, &body), RC_OK);
    want = json_pack("{s:s,s:{s:s}}", "template", "t", "params", "steps", "7");
    assert_true(json_equal(body, want));
    json_decref(want);
    json_decref(body);
    json_decref(schema);
}

static void test_server_and_language(void **state)
{
    (void)state;
    assert_string_equal(cli_user_lang(NULL, NULL, "en_US.UTF-8"), "en");
    assert_string_equal(cli_user_lang(NULL, NULL, "zh_CN.UTF-8"), "zh-CN");
    assert_string_equal(cli_user_lang("zh_CN.UTF-8", NULL, "en_US.UTF-8"), "zh-CN");
    assert_string_equal(cli_user_lang("", "en_GB", "zh_CN.UTF-8"), "en");
    assert_string_equal(cli_user_lang(NULL, NULL, "C.UTF-8"), "zh-CN");
    assert_string_equal(cli_user_lang(NULL, NULL, NULL), "zh-CN");

    json_t *both = json_pack("{s:s,s:s}", "zh-CN", "表面缺陷分类", "en", "Surface defects");
    json_t *en_only = json_pack("{s:s}", "en", "Only English");
    assert_string_equal(cli_localized(both, "en"), "Surface defects");
    assert_string_equal(cli_localized(both, "zh-CN"), "表面缺陷分类");
    assert_string_equal(cli_localized(en_only, "zh-CN"), "Only English");
    assert_string_equal(cli_localized(NULL, "en"), "");
    json_decref(both);
    json_decref(en_only);

    struct cli_client *c = NULL;
    FILE *f = fmemopen(g_err, sizeof(g_err), "w");
    assert_int_equal(cli_client_new("ftp://x", NULL, &c, f), RC_EINVAL);
    fclose(f);
    assert_null(c);
    assert_non_null(strstr(g_err, "must start with http:// or https:// (got ftp://x)"));
}

static void test_api_error_shown_with_its_field(void **state)
{
    (void)state;
    json_t *resp = json_loads("{\"error\":{\"code\":\"invalid_argument\",\"message\":\"must be "
                              "from 1 to 1000000\",\"detail\":\"got 0\",\"field\":"
                              "\"params.steps\",\"request_id\":\"r-1\"}}",
                              0, NULL);
    FILE *f = fmemopen(g_err, sizeof(g_err), "w");

    assert_non_null(resp);
    cli_print_api_error(f, "the server refused the job", 400, resp);
    cli_print_api_error(f, "cannot list the templates", 502, NULL);
    cli_print_api_error(f, "cannot list the templates", 401, NULL);
    fclose(f);
    assert_string_equal(g_err, "trainyard: the server refused the job: 400 invalid_argument: "
                               "params.steps: must be from 1 to 1000000 (got 0)\n"
                               "trainyard: cannot list the templates: 502\n"
                               "trainyard: cannot list the templates: 401\n"
                               "trainyard: run 'trainyard login', or set TRAINYARD_TOKEN "
                               "to an API token\n");
    json_decref(resp);
}

static void test_commands_usage_exit_codes(void **state)
{
    (void)state;
    char out[4096];
    FILE *fo = fmemopen(out, sizeof(out), "w"), *fe = fmemopen(g_err, sizeof(g_err), "w");
    char *help[] = {"submit", "--help"};
    char *bad[] = {"submit", "--param", "x"};
    char *thelp[] = {"templates", "-h"};
    char *tbad[] = {"templates", "extra"};
    char *badurl[] = {"templates", "--server", "localhost:8080"};

    assert_int_equal(cli_cmd_submit(ARGC(help), help, fo, fe), CLI_EXIT_OK);
    assert_int_equal(cli_cmd_submit(ARGC(bad), bad, fo, fe), CLI_EXIT_USAGE);
    assert_int_equal(cli_cmd_templates(ARGC(thelp), thelp, fo, fe), CLI_EXIT_OK);
    assert_int_equal(cli_cmd_templates(ARGC(tbad), tbad, fo, fe), CLI_EXIT_USAGE);
    assert_int_equal(cli_cmd_templates(ARGC(badurl), badurl, fo, fe), CLI_EXIT_USAGE);
    fclose(fo);
    fclose(fe);
    assert_non_null(strstr(out, "usage: trainyard submit FILE"));
    assert_non_null(strstr(out, "trainyard submit --template ID"));
    assert_non_null(strstr(out, "usage: trainyard templates [--json]"));
    assert_non_null(strstr(g_err, "'trainyard submit --help' describes the options"));
    assert_non_null(strstr(g_err, "(got localhost:8080)"));
}

int main(void)
{
    /* English messages, and no login file of whoever runs the tests. */
    setenv("LC_ALL", "C", 1);
    setenv("HOME", "/nonexistent-trainyard-test-home", 1);
    unsetenv("XDG_CONFIG_HOME");
    unsetenv("TRAINYARD_URL");
    unsetenv("TRAINYARD_SERVER");
    unsetenv("TRAINYARD_TOKEN");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_all_options),
        cmocka_unit_test(test_parse_usage_errors),
        cmocka_unit_test(test_parse_job_file),
        cmocka_unit_test(test_templates_parse),
        cmocka_unit_test(test_body_types_params_by_schema),
        cmocka_unit_test(test_server_and_language),
        cmocka_unit_test(test_api_error_shown_with_its_field),
        cmocka_unit_test(test_commands_usage_exit_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
