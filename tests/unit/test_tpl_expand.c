/*
 * test_tpl_expand.c - unit tests of the submit by template
 * (server/jobs/tpl_expand.c): the command made from the schema and the values
 * (defaults, order, every type's rendering), the keys filled from the
 * template or kept from the request, every refusal of a value with
 * "params.<name>" named, the expanded spec accepted by the job-spec
 * validator, "clone and edit" (the stored spec submitted back either way
 * gives the same command), and every failed allocation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jobspec.h"
#include "templates.h"
#include "tpl_expand.h"

#define EXAMPLES "/opt/ty/examples"
#define LABEL "\"label\":{\"zh-CN\":\"标签\",\"en\":\"Label\"}"

/* A template with one parameter of each type, an env and a fixed arg. */
static const char tpl_text[] =
    "{\"id\":\"demo\",\"name\":{\"zh-CN\":\"演示\",\"en\":\"Demo\"},"
    "\"description\":{\"zh-CN\":\"说明\",\"en\":\"About\"},\"industry\":\"general\","
    "\"script\":\"demo.py\",\"args\":[\"--quiet\"],\"gpus\":4,\"gpus_per_node\":2,"
    "\"max_restarts\":1,\"time_limit_s\":600,\"priority\":\"high\",\"dataset\":\"image-folder\","
    "\"model\":{\"name\":\"resnet50\"},\"env\":{\"OMP_NUM_THREADS\":\"2\",\"A\":\"t\"},"
    "\"params\":{"
    "\"steps\":{\"type\":\"int\"," LABEL ",\"arg\":\"--steps\",\"min\":1,\"max\":1000,"
    "\"default\":200},"
    "\"lr\":{\"type\":\"float\"," LABEL ",\"arg\":\"--lr\",\"min\":0,\"max\":10,"
    "\"default\":0.001},"
    "\"arch\":{\"type\":\"enum\"," LABEL ",\"arg\":\"--arch\",\"values\":[\"resnet50\",\"tiny\"],"
    "\"default\":\"resnet50\"},"
    "\"amp\":{\"type\":\"bool\"," LABEL ",\"arg\":\"--amp\",\"default\":false},"
    "\"pretrained\":{\"type\":\"string\"," LABEL ",\"arg\":\"--pretrained\",\"default\":\"\"}}}";

static json_t *load(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);

    if (j == NULL)
        fail_msg("bad test JSON: %s: %s", jerr.text, text);
    return j;
}

static json_t *tpl(void)
{
    json_t *t = NULL;
    struct err e;

    err_init(&e);
    if (tpl_parse(tpl_text, strlen(tpl_text), EXAMPLES, &t, &e) != RC_OK)
        fail_msg("the test template is refused: %s (%s)", e.message, e.field);
    return t;
}

/* Expand request text with the test template; expect success. */
static json_t *expand_ok(const char *req_text)
{
    json_t *t = tpl(), *req = load(req_text), *out = NULL;
    struct err e;

    err_init(&e);
    if (tpl_expand(t, req, &out, &e) != RC_OK)
        fail_msg("unexpected error: field \"%s\": %s (%s)", e.field, e.message, e.detail);
    assert_non_null(out);
    json_decref(req);
    json_decref(t);
    return out;
}

static void expect_bad(const char *req_text, const char *field, const char *msg, const char *detail)
{
    json_t *t = tpl(), *req = load(req_text), *out = (json_t *)0x1;
    struct err e;

    err_init(&e);
    assert_int_equal(tpl_expand(t, req, &out, &e), RC_EINVAL);
    assert_null(out);
    if (strcmp(e.field, field) != 0)
        fail_msg("field: want \"%s\" got \"%s\" (message \"%s\")", field, e.field, e.message);
    if (msg != NULL && strstr(e.message, msg) == NULL)
        fail_msg("message: want \"%s\" in \"%s\"", msg, e.message);
    if (detail != NULL && strstr(e.detail, detail) == NULL)
        fail_msg("detail: want \"%s\" in \"%s\"", detail, e.detail);
    json_decref(req);
    json_decref(t);
}

/* out's command must be exactly want (NULL-terminated). */
static void assert_command(const json_t *out, const char *const *want)
{
    const json_t *cmd = json_object_get(out, "command");
    size_t n = 0;

    for (; want[n] != NULL; n++) {
        const char *got = json_string_value(json_array_get(cmd, n));
        if (got == NULL || strcmp(got, want[n]) != 0)
            fail_msg("command[%zu]: want \"%s\" got \"%s\"", n, want[n], got ? got : "(none)");
    }
    assert_int_equal(json_array_size(cmd), n);
}

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static json_int_t num(const json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

static void defaults_make_the_templates_job(void **state)
{
    static const char *const want[] = {
        "/usr/bin/python3", EXAMPLES "/demo.py", "--quiet", "--steps", "200", "--lr", "0.001",
        "--arch",           "resnet50",          NULL};
    json_t *out = expand_ok("{\"template\":\"demo\",\"team\":\"ml\"}");
    json_t *t = tpl();
    const json_t *params = json_object_get(out, "params");

    (void)state;
    assert_command(out, want);
    /* Every parameter is recorded with the value used, in the schema's order. */
    assert_int_equal(json_object_size(params), 5);
    assert_string_equal(json_object_iter_key(json_object_iter((json_t *)params)), "steps");
    assert_int_equal(num(params, "steps"), 200);
    assert_true(json_is_false(json_object_get(params, "amp")));
    assert_string_equal(str(params, "pretrained"), "");
    /* What the template fills in. */
    assert_string_equal(str(out, "template"), "demo");
    assert_string_equal(str(out, "name"), "demo");
    assert_string_equal(str(out, "team"), "ml");
    assert_string_equal(str(out, "launcher"), "native");
    assert_string_equal(str(out, "priority"), "high");
    assert_string_equal(str(out, "strategy"), "auto");
    assert_int_equal(num(out, "max_restarts"), 1);
    assert_int_equal(num(out, "time_limit_s"), 600);
    assert_int_equal(num(json_object_get(out, "resources"), "gpus"), 4);
    assert_int_equal(num(json_object_get(out, "resources"), "gpus_per_node"), 2);
    assert_string_equal(str(json_object_get(out, "env"), "OMP_NUM_THREADS"), "2");
    /* The template's offered job is this very expansion, without the team. */
    assert_true(json_object_del(out, "team") == 0);
    assert_true(json_equal(out, json_object_get(t, "job")));
    json_decref(t);
    json_decref(out);
}

static void given_values_are_rendered_in_the_schemas_order(void **state)
{
    static const char *const want[] = {"/usr/bin/python3",
                                       EXAMPLES "/demo.py",
                                       "--quiet",
                                       "--steps",
                                       "7",
                                       "--lr",
                                       "0.1",
                                       "--arch",
                                       "tiny",
                                       "--amp",
                                       "--pretrained",
                                       "/data/site/w.pt",
                                       NULL};
    static const char *const floats[][2] = {
        {"1e-05", "1e-05"}, {"3", "3"},           {"2.5", "2.5"},
        {"0.3", "0.3"},     {"10.0", "10"},       {"0.30000000000000004", "0.30000000000000004"},
        {"0", "0"},         {"1e-300", "1e-300"},
    };
    json_t *out;
    char req[256];

    (void)state;
    /* The request's order does not matter; the schema's does. */
    out = expand_ok("{\"template\":\"demo\",\"team\":\"ml\",\"params\":{\"pretrained\":"
                    "\"/data/site/w.pt\",\"amp\":true,\"arch\":\"tiny\",\"lr\":0.1,\"steps\":7}}");
    assert_command(out, want);
    assert_string_equal(json_object_iter_key(json_object_iter(json_object_get(out, "params"))),
                        "steps");
    json_decref(out);
    /* Floats: the shortest text that reads back as the same double. */
    for (size_t i = 0; i < sizeof(floats) / sizeof(floats[0]); i++) {
        snprintf(req, sizeof(req), "{\"template\":\"demo\",\"params\":{\"lr\":%s}}", floats[i][0]);
        out = expand_ok(req);
        assert_string_equal(json_string_value(json_array_get(json_object_get(out, "command"), 6)),
                            floats[i][1]);
        json_decref(out);
    }
    /* null params is no params. */
    out = expand_ok("{\"template\":\"demo\",\"params\":null}");
    assert_int_equal(json_array_size(json_object_get(out, "command")), 9);
    json_decref(out);
}

static void the_request_wins_over_the_template(void **state)
{
    json_t *out, *res;

    (void)state;
    out = expand_ok("{\"template\":\"demo\",\"team\":\"ml\",\"name\":\"line 3 defects\","
                    "\"priority\":\"low\",\"max_restarts\":0,\"time_limit_s\":60,"
                    "\"strategy\":\"zero1\",\"launcher\":\"torchrun\",\"datasets\":[\"/data/a\"],"
                    "\"output_dir\":\"/data/out\",\"site\":\"plant-a\","
                    "\"env\":{\"A\":\"r\",\"B\":\"r\"},\"resources\":{\"gpus\":8}}");
    assert_string_equal(str(out, "name"), "line 3 defects");
    assert_string_equal(str(out, "priority"), "low");
    assert_int_equal(num(out, "max_restarts"), 0);
    assert_int_equal(num(out, "time_limit_s"), 60);
    assert_string_equal(str(out, "strategy"), "zero1");
    assert_string_equal(str(out, "launcher"), "torchrun");
    assert_string_equal(str(out, "output_dir"), "/data/out");
    assert_string_equal(str(out, "site"), "plant-a");
    assert_string_equal(json_string_value(json_array_get(json_object_get(out, "datasets"), 0)),
                        "/data/a");
    /* env: the template's with the request's on top. */
    assert_string_equal(str(json_object_get(out, "env"), "OMP_NUM_THREADS"), "2");
    assert_string_equal(str(json_object_get(out, "env"), "A"), "r");
    assert_string_equal(str(json_object_get(out, "env"), "B"), "r");
    /* The request's gpus without gpus_per_node: the template's gpus_per_node
     * is not forced on another GPU count. */
    res = json_object_get(out, "resources");
    assert_int_equal(num(res, "gpus"), 8);
    assert_null(json_object_get(res, "gpus_per_node"));
    json_decref(out);
    /* Only gpus_per_node given: the template's gpus with it. */
    out = expand_ok("{\"template\":\"demo\",\"resources\":{\"gpus_per_node\":1}}");
    res = json_object_get(out, "resources");
    assert_int_equal(num(res, "gpus"), 4);
    assert_int_equal(num(res, "gpus_per_node"), 1);
    json_decref(out);
    /* A bad env or resources is left for the job-spec check to name. */
    out = expand_ok("{\"template\":\"demo\",\"env\":[1],\"resources\":\"all\"}");
    assert_true(json_is_array(json_object_get(out, "env")));
    assert_string_equal(str(out, "resources"), "all");
    json_decref(out);
}

static void bad_values_are_refused_naming_the_parameter(void **state)
{
    (void)state;
    expect_bad("[]", "", "must be a JSON object", NULL);
    expect_bad("{\"template\":\"demo\",\"params\":[]}", "params", "params must be an object",
               "got an array");
    expect_bad("{\"template\":\"demo\",\"params\":\"steps=1\"}", "params", "must be an object",
               NULL);
    /* Unknown ones first, the smallest in byte order. */
    expect_bad("{\"template\":\"demo\",\"params\":{\"steps\":0,\"zz\":1,\"epochs\":3}}",
               "params.epochs", "unknown parameter \"epochs\"", NULL);
    expect_bad("{\"template\":\"demo\",\"params\":{\"a\\\"b\":1}}", "params.a?b",
               "unknown parameter", NULL);
    expect_bad("{\"template\":\"demo\",\"params\":{\"steps\":0}}", "params.steps",
               "params.steps must be an integer from 1 to 1000", "got 0");
    expect_bad("{\"template\":\"demo\",\"params\":{\"steps\":1001}}", "params.steps",
               "from 1 to 1000", "got 1001");
    expect_bad("{\"template\":\"demo\",\"params\":{\"steps\":\"100\"}}", "params.steps",
               "must be an integer", "got \"100\"");
    expect_bad("{\"template\":\"demo\",\"params\":{\"steps\":10.0}}", "params.steps",
               "must be an integer", "got 10");
    expect_bad("{\"template\":\"demo\",\"params\":{\"steps\":null}}", "params.steps",
               "must be an integer", "got null");
    expect_bad("{\"template\":\"demo\",\"params\":{\"lr\":-0.5}}", "params.lr",
               "must be a number from 0 to 10", "got -0.5");
    expect_bad("{\"template\":\"demo\",\"params\":{\"lr\":true}}", "params.lr", "must be a number",
               "got true");
    expect_bad("{\"template\":\"demo\",\"params\":{\"arch\":\"vit\"}}", "params.arch",
               "must be one of resnet50, tiny", "got \"vit\"");
    expect_bad("{\"template\":\"demo\",\"params\":{\"amp\":\"yes\"}}", "params.amp",
               "true or false", NULL);
    expect_bad("{\"template\":\"demo\",\"params\":{\"pretrained\":5}}", "params.pretrained",
               "must be a string", "got 5");
    expect_bad("{\"template\":\"demo\",\"params\":{\"pretrained\":\"a\\nb\"}}", "params.pretrained",
               "control characters", NULL);
    expect_bad("{\"template\":\"demo\",\"params\":{\"pretrained\":\"a\\u0000b\"}}",
               "params.pretrained", "control characters", NULL);
    /* A value is the argument after its flag: it cannot pose as a flag. */
    expect_bad("{\"template\":\"demo\",\"params\":{\"pretrained\":\"--steps=1000000\"}}",
               "params.pretrained", "must not start with '-'", NULL);
    /* Checked in the schema's order: steps before arch. */
    expect_bad("{\"template\":\"demo\",\"params\":{\"arch\":1,\"steps\":0}}", "params.steps", NULL,
               NULL);
}

static void a_long_string_value_is_refused(void **state)
{
    char *req = malloc(TPL_MAX_STRING_PARAM + 100);
    size_t off;

    (void)state;
    assert_non_null(req);
    off = (size_t)snprintf(req, 100, "{\"template\":\"demo\",\"params\":{\"pretrained\":\"");
    memset(req + off, 'a', TPL_MAX_STRING_PARAM + 1);
    snprintf(req + off + TPL_MAX_STRING_PARAM + 1, 10, "\"}}");
    expect_bad(req, "params.pretrained", "at most 4096 bytes", NULL);
    free(req);
}

static void only_a_template_without_command_is_expanded(void **state)
{
    json_t *j;

    (void)state;
    assert_false(tpl_expand_wanted(NULL));
    j = load("{\"template\":\"demo\"}");
    assert_true(tpl_expand_wanted(j));
    json_decref(j);
    j = load("{\"template\":7}"); /* a bad template is named by the expansion */
    assert_true(tpl_expand_wanted(j));
    json_decref(j);
    j = load("{\"template\":\"demo\",\"command\":[\"/bin/true\"]}");
    assert_false(tpl_expand_wanted(j));
    json_decref(j);
    j = load("{\"command\":[\"/bin/true\"]}");
    assert_false(tpl_expand_wanted(j));
    json_decref(j);
    j = load("[\"template\"]");
    assert_false(tpl_expand_wanted(j));
    json_decref(j);
}

/* jobspec_to_json(jobspec_parse(in)): what POST /jobs stores. */
static json_t *stored(const json_t *in)
{
    struct jobspec *spec = NULL;
    struct err e;
    json_t *out;

    err_init(&e);
    if (jobspec_parse(in, &spec, &e) != RC_OK)
        fail_msg("the job spec is refused: %s (%s)", e.message, e.field);
    out = jobspec_to_json(spec);
    assert_non_null(out);
    jobspec_free(spec);
    return out;
}

static void the_stored_spec_reproduces_the_job(void **state)
{
    json_t *t = tpl();
    json_t *first = expand_ok("{\"template\":\"demo\",\"team\":\"ml\",\"params\":{\"steps\":9,"
                              "\"amp\":true,\"lr\":0.5}}");
    json_t *spec = stored(first), *again, *bare, *re = NULL;
    struct err e;

    (void)state;
    assert_string_equal(str(spec, "template"), "demo");
    assert_string_equal(str(spec, "strategy"), "auto");
    assert_int_equal(num(json_object_get(spec, "params"), "steps"), 9);
    /* Submitted back as it is: it has a command, so it is taken as is. */
    assert_false(tpl_expand_wanted(spec));
    again = stored(spec);
    assert_true(json_equal(again, spec));
    json_decref(again);
    /* Without template and params: the same command. */
    bare = json_deep_copy(spec);
    json_object_del(bare, "template");
    json_object_del(bare, "params");
    again = stored(bare);
    assert_true(json_equal(json_object_get(again, "command"), json_object_get(spec, "command")));
    json_decref(again);
    json_decref(bare);
    /* Without the command: expanded again from template and params, the
     * same command and the same stored spec. */
    bare = json_deep_copy(spec);
    json_object_del(bare, "command");
    assert_true(tpl_expand_wanted(bare));
    err_init(&e);
    assert_int_equal(tpl_expand(t, bare, &re, &e), RC_OK);
    again = stored(re);
    assert_true(json_equal(again, spec));
    json_decref(again);
    json_decref(re);
    json_decref(bare);
    json_decref(spec);
    json_decref(first);
    json_decref(t);
}

/* jansson's allocator, failing the Nth call from now on (0: never). */
static long alloc_countdown;

static void *failing_malloc(size_t n)
{
    if (alloc_countdown > 0 && --alloc_countdown == 0)
        return NULL;
    return malloc(n);
}

static void every_failed_allocation_is_an_error_not_a_crash(void **state)
{
    json_t *t = tpl();
    json_t *req = load("{\"template\":\"demo\",\"team\":\"ml\",\"params\":{\"steps\":9,"
                       "\"amp\":true,\"lr\":0.5,\"pretrained\":\"/w\"},\"env\":{\"B\":\"1\"},"
                       "\"resources\":{\"gpus_per_node\":1}}");
    int succeeded = 0;

    (void)state;
    json_set_alloc_funcs(failing_malloc, free);
    for (long n = 1; n < 100000 && !succeeded; n++) {
        json_t *out = NULL;
        struct err e;
        enum rc rc;

        err_init(&e);
        alloc_countdown = n;
        rc = tpl_expand(t, req, &out, &e);
        alloc_countdown = 0;
        if (rc == RC_OK) {
            assert_non_null(out);
            succeeded = 1;
        } else {
            assert_int_equal(rc, RC_ENOMEM);
            assert_null(out);
        }
        json_decref(out);
    }
    json_set_alloc_funcs(malloc, free);
    assert_true(succeeded);
    json_decref(req);
    json_decref(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_make_the_templates_job),
        cmocka_unit_test(given_values_are_rendered_in_the_schemas_order),
        cmocka_unit_test(the_request_wins_over_the_template),
        cmocka_unit_test(bad_values_are_refused_naming_the_parameter),
        cmocka_unit_test(a_long_string_value_is_refused),
        cmocka_unit_test(only_a_template_without_command_is_expanded),
        cmocka_unit_test(the_stored_spec_reproduces_the_job),
        cmocka_unit_test(every_failed_allocation_is_an_error_not_a_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
