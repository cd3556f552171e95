/*
 * test_jobspec.c - unit tests of the job-spec validator (server/jobs/jobspec.c):
 * defaults, normalization round trip, every field's type and range edges,
 * unknown fields, reserved env names and the field paths of errors.
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

#define BASE                                                                                       \
    "{\"name\":\"resnet50 baseline\",\"team\":\"vision\",\"command\":[\"python3\",\"train.py\"],"  \
    "\"resources\":{\"gpus\":8}}"

static json_t *load(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);

    if (j == NULL)
        fail_msg("bad test JSON: %s: %s", jerr.text, text);
    return j;
}

/* The base spec with the top-level keys of patch (JSON text) replaced. */
static json_t *spec_with(const char *patch)
{
    json_t *base = load(BASE);
    json_t *p = load(patch);

    assert_int_equal(json_object_update(base, p), 0);
    json_decref(p);
    return base;
}

/* Parse j (consumed) and expect RC_EINVAL naming field, message containing msg. */
static void expect_bad_json(json_t *j, const char *field, const char *msg, const char *detail)
{
    struct jobspec *spec = (struct jobspec *)0x1;
    struct err e;

    err_init(&e);
    assert_int_equal(jobspec_parse(j, &spec, &e), RC_EINVAL);
    assert_null(spec);
    assert_int_equal(e.rc, RC_EINVAL);
    if (strcmp(e.field, field) != 0)
        fail_msg("field: want \"%s\" got \"%s\" (message \"%s\")", field, e.field, e.message);
    if (msg != NULL && strstr(e.message, msg) == NULL)
        fail_msg("message: want \"%s\" in \"%s\"", msg, e.message);
    if (detail != NULL && strstr(e.detail, detail) == NULL)
        fail_msg("detail: want \"%s\" in \"%s\"", detail, e.detail);
    json_decref(j);
}

static void expect_bad(const char *patch, const char *field, const char *msg, const char *detail)
{
    expect_bad_json(spec_with(patch), field, msg, detail);
}

/* Parse j (consumed), expect success, return the spec. */
static struct jobspec *expect_ok_json(json_t *j)
{
    struct jobspec *spec = NULL;
    struct err e;

    err_init(&e);
    if (jobspec_parse(j, &spec, &e) != RC_OK)
        fail_msg("unexpected error: field \"%s\": %s (%s)", e.field, e.message, e.detail);
    assert_non_null(spec);
    json_decref(j);
    return spec;
}

static void expect_ok(const char *patch)
{
    jobspec_free(expect_ok_json(spec_with(patch)));
}

/* to_json(spec) must parse back to the same normalized JSON. */
static void check_round_trip(const struct jobspec *spec)
{
    json_t *a = jobspec_to_json(spec);
    struct jobspec *again = NULL;
    json_t *b;
    struct err e;

    assert_non_null(a);
    err_init(&e);
    assert_int_equal(jobspec_parse(a, &again, &e), RC_OK);
    b = jobspec_to_json(again);
    assert_non_null(b);
    assert_true(json_equal(a, b));
    json_decref(a);
    json_decref(b);
    jobspec_free(again);
}

static void test_minimal_defaults(void **state)
{
    struct jobspec *spec;
    json_t *j, *want;

    (void)state;
    spec = expect_ok_json(load(BASE));
    assert_string_equal(spec->name, "resnet50 baseline");
    assert_string_equal(spec->team, "vision");
    assert_int_equal(spec->command_count, 2);
    assert_string_equal(spec->command[0], "python3");
    assert_string_equal(spec->command[1], "train.py");
    assert_int_equal(spec->launcher, JOBSPEC_LAUNCHER_NATIVE);
    assert_int_equal(spec->gpus, 8);
    assert_int_equal(spec->gpus_per_node, 0);
    assert_int_equal(spec->priority, JOBSPEC_PRIO_NORMAL);
    assert_int_equal(spec->max_restarts, 3);
    assert_int_equal(spec->time_limit_s, 86400);
    assert_int_equal(spec->env_count, 0);
    assert_int_equal(spec->dataset_count, 0);
    assert_null(spec->output_dir);
    assert_null(spec->working_dir);
    assert_null(spec->template);
    assert_string_equal(spec->site, "default");
    assert_int_equal(spec->strategy, JOBSPEC_STRATEGY_NONE);
    assert_null(spec->params);

    j = jobspec_to_json(spec);
    want = load("{\"name\":\"resnet50 baseline\",\"team\":\"vision\","
                "\"command\":[\"python3\",\"train.py\"],\"launcher\":\"native\","
                "\"resources\":{\"gpus\":8,\"gpus_per_node\":null},\"priority\":\"normal\","
                "\"max_restarts\":3,\"time_limit_s\":86400,\"env\":{},\"datasets\":[],"
                "\"output_dir\":null,\"working_dir\":null,\"template\":null,"
                "\"site\":\"default\",\"strategy\":null,\"params\":null,\"model\":null,"
                "\"global_batch\":null,\"optimizer\":null}");
    assert_true(json_equal(j, want));
    json_decref(j);
    json_decref(want);
    check_round_trip(spec);
    jobspec_free(spec);
}

static void test_full_spec(void **state)
{
    struct jobspec *spec;

    (void)state;
    spec = expect_ok_json(spec_with(
        "{\"launcher\":\"deepspeed\",\"resources\":{\"gpus\":16,\"gpus_per_node\":8},"
        "\"priority\":\"high\",\"max_restarts\":0,\"time_limit_s\":3600,"
        "\"env\":{\"ZETA\":\"1\",\"NCCL_DEBUG\":\"INFO\",\"_x\":\"\",\"OMP_NUM_THREADS\":\"4\"},"
        "\"datasets\":[\"imagenet\",\"/data/imagenet\",\"file:///data/x\"],"
        "\"output_dir\":\"/srv/trainyard/out\",\"working_dir\":\"/data/code\","
        "\"template\":\"cv-resnet\",\"site\":\"beijing-1\"}"));
    assert_int_equal(spec->launcher, JOBSPEC_LAUNCHER_DEEPSPEED);
    assert_int_equal(spec->gpus, 16);
    assert_int_equal(spec->gpus_per_node, 8);
    assert_int_equal(spec->priority, JOBSPEC_PRIO_HIGH);
    assert_int_equal(spec->max_restarts, 0);
    assert_int_equal(spec->time_limit_s, 3600);
    assert_int_equal(spec->env_count, 4);
    /* sorted by byte order */
    assert_string_equal(spec->env_names[0], "NCCL_DEBUG");
    assert_string_equal(spec->env_values[0], "INFO");
    assert_string_equal(spec->env_names[1], "OMP_NUM_THREADS");
    assert_string_equal(spec->env_names[2], "ZETA");
    assert_string_equal(spec->env_names[3], "_x");
    assert_string_equal(spec->env_values[3], "");
    assert_int_equal(spec->dataset_count, 3);
    assert_string_equal(spec->datasets[2], "file:///data/x");
    assert_string_equal(spec->output_dir, "/srv/trainyard/out");
    assert_string_equal(spec->working_dir, "/data/code");
    assert_string_equal(spec->template, "cv-resnet");
    assert_string_equal(spec->site, "beijing-1");
    check_round_trip(spec);
    jobspec_free(spec);
}

static void test_enums(void **state)
{
    static const char *const launchers[] = {"native", "torchrun", "deepspeed", "horovod"};
    static const char *const prios[] = {"low", "normal", "high"};
    char buf[128];

    (void)state;
    for (int i = 0; i < 4; i++) {
        struct jobspec *spec;
        snprintf(buf, sizeof(buf), "{\"launcher\":\"%s\"}", launchers[i]);
        spec = expect_ok_json(spec_with(buf));
        assert_int_equal(spec->launcher, i);
        assert_string_equal(jobspec_launcher_str(spec->launcher), launchers[i]);
        jobspec_free(spec);
    }
    for (int i = 0; i < 3; i++) {
        struct jobspec *spec;
        snprintf(buf, sizeof(buf), "{\"priority\":\"%s\"}", prios[i]);
        spec = expect_ok_json(spec_with(buf));
        assert_int_equal(spec->priority, i);
        assert_string_equal(jobspec_prio_str(spec->priority), prios[i]);
        jobspec_free(spec);
    }
    expect_bad("{\"launcher\":\"mpirun\"}", "launcher", "launcher must be one of native",
               "got \"mpirun\"");
    expect_bad("{\"launcher\":\"Native\"}", "launcher", NULL, NULL);
    expect_bad("{\"launcher\":1}", "launcher", NULL, "got 1");
    expect_bad("{\"priority\":\"urgent\"}", "priority", "priority must be one of low, normal, high",
               "got \"urgent\"");
    expect_bad("{\"priority\":null}", "priority", NULL, "got null");
}

static void test_not_object(void **state)
{
    static const char *const inputs[] = {"[]", "\"job\"", "null", "42", "true", "[{}]"};

    (void)state;
    for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++)
        expect_bad_json(json_loads(inputs[i], JSON_DECODE_ANY, NULL), "",
                        "job spec must be a JSON object", NULL);
    {
        struct jobspec *spec = NULL;
        struct err e;
        err_init(&e);
        assert_int_equal(jobspec_parse(NULL, &spec, &e), RC_EINVAL);
        assert_string_equal(e.message, "job spec must be a JSON object");
    }
}

static void test_unknown_fields(void **state)
{
    (void)state;
    expect_bad("{\"cpus\":4}", "cpus", "unknown field \"cpus\"", NULL);
    /* the smallest unknown name is reported, whatever the input order */
    expect_bad("{\"zz\":1,\"aa\":1,\"mm\":1}", "aa", "unknown field", NULL);
    /* unknown fields are reported before bad known ones */
    expect_bad("{\"zz\":1,\"gpus\":0,\"name\":5}", "gpus", "unknown field \"gpus\"", NULL);
    expect_bad("{\"resources\":{\"gpus\":1,\"cpus\":2}}", "resources.cpus",
               "unknown field \"cpus\"", NULL);
    expect_bad("{\"resources\":{\"gpus\":1,\"memory\":2,\"cpus\":2}}", "resources.cpus", NULL,
               NULL);
    expect_bad("{\"Name\":\"x\"}", "Name", NULL, NULL);
    {
        /* a key with an embedded NUL is not "name" */
        json_t *j = load(BASE);
        json_t *v = json_string("x");
        assert_int_equal(json_object_setn_new(j, "name\0x", 6, v), 0);
        expect_bad_json(j, "name?x", "unknown field", NULL);
    }
}

static void test_required(void **state)
{
    static const char *const req[] = {"name", "team", "command", "resources"};

    (void)state;
    for (size_t i = 0; i < 4; i++) {
        json_t *j = load(BASE);
        char msg[64];
        json_object_del(j, req[i]);
        snprintf(msg, sizeof(msg), "%s is required", req[i]);
        expect_bad_json(j, req[i], msg, NULL);
    }
    expect_bad("{\"resources\":{}}", "resources.gpus", "gpus is required", NULL);
    expect_bad("{\"resources\":{\"gpus_per_node\":8}}", "resources.gpus", "gpus is required", NULL);
    /* the first missing field in the documented order */
    expect_bad_json(load("{}"), "name", "name is required", NULL);
    expect_bad_json(load("{\"command\":[],\"name\":\"x\"}"), "team", "team is required", NULL);
}

static void test_wrong_types(void **state)
{
    static const struct {
        const char *patch;
        const char *field;
        const char *msg;
    } cases[] = {
        {"{\"name\":5}", "name", "name must be a string"},
        {"{\"name\":null}", "name", "name must be a string"},
        {"{\"team\":[]}", "team", "team must be a string"},
        {"{\"command\":\"python3 train.py\"}", "command", "command must be an array"},
        {"{\"command\":{}}", "command", "command must be an array"},
        {"{\"command\":[\"python3\",3]}", "command[1]", "command[1] must be a string"},
        {"{\"command\":[\"a\",\"b\",null]}", "command[2]", "must be a string"},
        {"{\"launcher\":[]}", "launcher", "launcher must be one of"},
        {"{\"resources\":8}", "resources", "resources must be an object"},
        {"{\"resources\":[8]}", "resources", "resources must be an object"},
        {"{\"resources\":{\"gpus\":\"8\"}}", "resources.gpus", "gpus must be an integer"},
        {"{\"resources\":{\"gpus\":8.0}}", "resources.gpus", "gpus must be an integer"},
        {"{\"resources\":{\"gpus\":true}}", "resources.gpus", "gpus must be an integer"},
        {"{\"resources\":{\"gpus\":null}}", "resources.gpus", "gpus must be an integer"},
        {"{\"resources\":{\"gpus\":8,\"gpus_per_node\":\"8\"}}", "resources.gpus_per_node",
         "gpus_per_node must be an integer from 1 to 64"},
        {"{\"priority\":2}", "priority", "priority must be one of"},
        {"{\"max_restarts\":\"3\"}", "max_restarts", "max_restarts must be an integer"},
        {"{\"max_restarts\":null}", "max_restarts", "max_restarts must be an integer"},
        {"{\"time_limit_s\":1.5}", "time_limit_s", "time_limit_s must be an integer"},
        {"{\"env\":[]}", "env", "env must be an object"},
        {"{\"env\":\"A=1\"}", "env", "env must be an object"},
        {"{\"env\":{\"A\":1}}", "env.A", "env.A must be a string"},
        {"{\"env\":{\"A\":null}}", "env.A", "must be a string"},
        {"{\"datasets\":\"imagenet\"}", "datasets", "datasets must be an array"},
        {"{\"datasets\":[\"a\",{}]}", "datasets[1]", "datasets[1] must be a string"},
        {"{\"output_dir\":1}", "output_dir", "output_dir must be a string"},
        {"{\"working_dir\":[]}", "working_dir", "working_dir must be a string"},
        {"{\"template\":false}", "template", "template must be a string"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect_bad(cases[i].patch, cases[i].field, cases[i].msg, NULL);
}

static void test_int_ranges(void **state)
{
    (void)state;
    expect_bad("{\"resources\":{\"gpus\":0}}", "resources.gpus",
               "gpus must be an integer from 1 to 1024", "got 0");
    expect_bad("{\"resources\":{\"gpus\":-1}}", "resources.gpus", NULL, "got -1");
    expect_bad("{\"resources\":{\"gpus\":1025}}", "resources.gpus", NULL, "got 1025");
    expect_bad("{\"resources\":{\"gpus\":9223372036854775807}}", "resources.gpus", NULL, NULL);
    expect_ok("{\"resources\":{\"gpus\":1}}");
    expect_ok("{\"resources\":{\"gpus\":1024}}");
    expect_bad("{\"resources\":{\"gpus\":8,\"gpus_per_node\":0}}", "resources.gpus_per_node",
               "gpus_per_node must be an integer from 1 to 64", "got 0");
    expect_bad("{\"resources\":{\"gpus\":128,\"gpus_per_node\":65}}", "resources.gpus_per_node",
               NULL, "got 65");
    expect_ok("{\"resources\":{\"gpus\":64,\"gpus_per_node\":64}}");
    expect_ok("{\"resources\":{\"gpus\":1024,\"gpus_per_node\":1}}");
    expect_ok("{\"resources\":{\"gpus\":8,\"gpus_per_node\":null}}");
    expect_bad("{\"max_restarts\":-1}", "max_restarts",
               "max_restarts must be an integer from 0 to 100", "got -1");
    expect_bad("{\"max_restarts\":101}", "max_restarts", NULL, "got 101");
    expect_ok("{\"max_restarts\":0}");
    expect_ok("{\"max_restarts\":100}");
    expect_bad("{\"time_limit_s\":0}", "time_limit_s",
               "time_limit_s must be an integer from 1 to 2592000", "got 0");
    expect_bad("{\"time_limit_s\":2592001}", "time_limit_s", NULL, "got 2592001");
    expect_ok("{\"time_limit_s\":1}");
    expect_ok("{\"time_limit_s\":2592000}");
}

static void test_gpus_per_node_rule(void **state)
{
    (void)state;
    expect_bad("{\"resources\":{\"gpus\":4,\"gpus_per_node\":8}}", "resources.gpus",
               "gpus is less than gpus_per_node", "got gpus 4, gpus_per_node 8");
    expect_bad("{\"resources\":{\"gpus\":12,\"gpus_per_node\":8}}", "resources.gpus",
               "gpus must be a multiple of gpus_per_node", "got gpus 12, gpus_per_node 8");
    expect_ok("{\"resources\":{\"gpus\":24,\"gpus_per_node\":8}}");
    expect_ok("{\"resources\":{\"gpus\":8,\"gpus_per_node\":8}}");
}

/* A string of n copies of c (malloc'd). */
static char *rep(char c, size_t n)
{
    char *s = malloc(n + 1);

    assert_non_null(s);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

/* The base spec with key set to a string of n copies of c. */
static json_t *with_long(const char *key, char c, size_t n)
{
    json_t *j = load(BASE);
    char *s = rep(c, n);

    assert_int_equal(json_object_set_new(j, key, json_string(s)), 0);
    free(s);
    return j;
}

static void test_string_sizes(void **state)
{
    static const struct {
        const char *key;
        size_t max;
    } cases[] = {{"name", 128},         {"team", 64},      {"output_dir", 4096},
                 {"working_dir", 4096}, {"template", 128}, {"site", 64}};

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char msg[64];
        char det[64];

        jobspec_free(expect_ok_json(with_long(cases[i].key, 'a', cases[i].max)));
        jobspec_free(expect_ok_json(with_long(cases[i].key, 'a', 1)));
        snprintf(msg, sizeof(msg), "%s must be 1 to %zu bytes long", cases[i].key, cases[i].max);
        snprintf(det, sizeof(det), "got %zu bytes", cases[i].max + 1);
        expect_bad_json(with_long(cases[i].key, 'a', cases[i].max + 1), cases[i].key, msg, det);
        expect_bad_json(with_long(cases[i].key, 'a', 0), cases[i].key, msg, "got 0 bytes");
    }
    /* name: multi-byte UTF-8 counts bytes */
    expect_ok("{\"name\":\"\\u8bad\\u7ec3 ResNet\"}");
    expect_ok("{\"output_dir\":null,\"working_dir\":null,\"template\":null}");
    expect_ok("{\"site\":null}");
}

static void test_name_and_team_content(void **state)
{
    (void)state;
    expect_bad("{\"name\":\"a\\nb\"}", "name", "name must not contain control characters", NULL);
    expect_bad("{\"name\":\"a\\u0007\"}", "name", "control characters", NULL);
    expect_bad("{\"name\":\"a\\u007f\"}", "name", "control characters", NULL);
    expect_bad("{\"name\":\"a\\u0085\"}", "name", "control characters", NULL);
    expect_bad("{\"name\":\"a\\u0000b\"}", "name", "name must not contain NUL characters", NULL);
    {
        /* invalid UTF-8 smuggled in with the no-check constructor */
        json_t *j = load(BASE);
        assert_int_equal(json_object_set_new(j, "name", json_stringn_nocheck("a\xff", 2)), 0);
        expect_bad_json(j, "name", "name must be valid UTF-8", NULL);
    }
    expect_ok("{\"team\":\"a\"}");
    expect_ok("{\"team\":\"0ml-infra_2\"}");
    expect_bad("{\"team\":\"Vision\"}", "team", "team must start with a lower-case letter",
               "got \"Vision\"");
    expect_bad("{\"team\":\"-vision\"}", "team", NULL, NULL);
    expect_bad("{\"team\":\"_vision\"}", "team", NULL, NULL);
    expect_bad("{\"team\":\"vi sion\"}", "team", NULL, NULL);
    expect_bad("{\"team\":\"vi.sion\"}", "team", NULL, NULL);
    expect_bad("{\"team\":\"\\u00e9quipe\"}", "team", NULL, NULL);
    expect_ok("{\"site\":\"shanghai-2\"}");
    expect_bad("{\"site\":\"Shanghai\"}", "site", "site must start with a lower-case letter",
               "got \"Shanghai\"");
    expect_bad("{\"site\":\"../x\"}", "site", NULL, NULL);
    expect_bad("{\"site\":\"a/b\"}", "site", NULL, NULL);
    expect_bad("{\"site\":1}", "site", "site must be a string", NULL);
}

static void test_command(void **state)
{
    json_t *j, *a;
    char *s;

    (void)state;
    expect_bad("{\"command\":[]}", "command", "command must be an array of 1 to 256 strings",
               "got 0 items");
    expect_bad("{\"command\":[\"python3\",\"\"]}", "command[1]",
               "command[1] must be 1 to 4096 bytes long", "got 0 bytes");
    expect_bad("{\"command\":[\"a\\u0000b\"]}", "command[0]", "must not contain NUL", NULL);
    expect_ok("{\"command\":[\"sh\",\"-c\",\"echo a\\nb\"]}");

    for (size_t n = 256; n <= 257; n++) {
        j = load(BASE);
        a = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(a, json_string("x"));
        json_object_set_new(j, "command", a);
        if (n == 256)
            jobspec_free(expect_ok_json(j));
        else
            expect_bad_json(j, "command", "1 to 256 strings", "got 257 items");
    }
    for (size_t n = 4096; n <= 4097; n++) {
        j = load(BASE);
        s = rep('x', n);
        json_object_set_new(j, "command", json_pack("[s,s]", "python3", s));
        free(s);
        if (n == 4096)
            jobspec_free(expect_ok_json(j));
        else
            expect_bad_json(j, "command[1]", "1 to 4096 bytes", "got 4097 bytes");
    }
}

static void test_env(void **state)
{
    static const char *const reserved[] = {
        "RANK",           "LOCAL_RANK",           "WORLD_SIZE",  "LOCAL_WORLD_SIZE",
        "NODE_RANK",      "MASTER_ADDR",          "MASTER_PORT", "CUDA_VISIBLE_DEVICES",
        "LD_PRELOAD",     "TRAINYARD_JOB_ID",     "TRAINYARD_",  "trainyard_x",
        "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",
    };
    static const char *const proxies[] = {"http_proxy",  "https_proxy", "HTTP_PROXY",
                                          "HTTPS_PROXY", "all_proxy",   "ALL_PROXY",
                                          "no_proxy",    "NO_PROXY",    "Https_Proxy"};
    static const char *const bad_names[] = {"1A", "A-B", "A.B", "A B", "", "\\u00c4", "A=B"};
    char buf[256];
    json_t *j, *env;
    char *s;

    (void)state;
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
        char field[64];
        snprintf(buf, sizeof(buf), "{\"env\":{\"OK\":\"1\",\"%s\":\"0\"}}", reserved[i]);
        snprintf(field, sizeof(field), "env.%s", reserved[i]);
        expect_bad(buf, field, "is set by the platform and cannot be overridden", NULL);
    }
    for (size_t i = 0; i < sizeof(proxies) / sizeof(proxies[0]); i++) {
        char field[64];
        snprintf(buf, sizeof(buf), "{\"env\":{\"%s\":\"http://proxy:3128\"}}", proxies[i]);
        snprintf(field, sizeof(field), "env.%s", proxies[i]);
        expect_bad(buf, field, "proxy variables are not allowed: data must not leave the site",
                   NULL);
    }
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
        snprintf(buf, sizeof(buf), "{\"env\":{\"%s\":\"1\"}}", bad_names[i]);
        expect_bad(buf, "env", "environment variable names must match", NULL);
    }
    expect_ok("{\"env\":{\"RANKS\":\"1\",\"MY_RANK\":\"2\",\"PROXY\":\"x\",\"a1\":\"\"}}");
    /* the first bad key in byte order is reported */
    expect_bad("{\"env\":{\"WORLD_SIZE\":\"1\",\"RANK\":\"1\"}}", "env.RANK", NULL, NULL);
    expect_bad("{\"env\":{\"B\":1,\"A\":2}}", "env.A", NULL, NULL);
    expect_bad("{\"env\":{\"A\":\"x\\u0000y\"}}", "env.A", "must not contain NUL", NULL);

    /* name length 128 ok, 129 not */
    for (size_t n = 128; n <= 129; n++) {
        j = load(BASE);
        env = json_object();
        s = rep('A', n);
        json_object_set_new(env, s, json_string("1"));
        free(s);
        json_object_set_new(j, "env", env);
        if (n == 128)
            jobspec_free(expect_ok_json(j));
        else
            expect_bad_json(j, "env", "at most 128 bytes", NULL);
    }
    /* value length 8192 ok, 8193 not */
    for (size_t n = 8192; n <= 8193; n++) {
        j = load(BASE);
        s = rep('v', n);
        json_object_set_new(j, "env", json_pack("{s:s}", "V", s));
        free(s);
        if (n == 8192)
            jobspec_free(expect_ok_json(j));
        else
            expect_bad_json(j, "env.V", "env.V must be 0 to 8192 bytes long", "got 8193 bytes");
    }
    /* 128 keys ok, 129 not */
    for (size_t n = 128; n <= 129; n++) {
        j = load(BASE);
        env = json_object();
        for (size_t i = 0; i < n; i++) {
            char k[16];
            snprintf(k, sizeof(k), "V%zu", i);
            json_object_set_new(env, k, json_string("x"));
        }
        json_object_set_new(j, "env", env);
        if (n == 128) {
            struct jobspec *spec = expect_ok_json(j);
            assert_int_equal(spec->env_count, 128);
            check_round_trip(spec);
            jobspec_free(spec);
        } else {
            expect_bad_json(j, "env", "env must have at most 128 variables", "got 129");
        }
    }
}

static void test_datasets(void **state)
{
    json_t *j, *a;
    char *s;

    (void)state;
    expect_ok("{\"datasets\":[]}");
    expect_bad("{\"datasets\":[\"\"]}", "datasets[0]", "datasets[0] must be 1 to 4096 bytes",
               "got 0 bytes");
    expect_bad("{\"datasets\":[\"a\",\"b\\u0000\"]}", "datasets[1]", "NUL", NULL);
    for (size_t n = 64; n <= 65; n++) {
        j = load(BASE);
        a = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(a, json_string("imagenet"));
        json_object_set_new(j, "datasets", a);
        if (n == 64)
            jobspec_free(expect_ok_json(j));
        else
            expect_bad_json(j, "datasets", "datasets must be an array of at most 64 strings",
                            "got 65 items");
    }
    for (size_t n = 4096; n <= 4097; n++) {
        j = load(BASE);
        s = rep('d', n);
        s[0] = '/';
        json_object_set_new(j, "datasets", json_pack("[s]", s));
        free(s);
        if (n == 4096)
            jobspec_free(expect_ok_json(j));
        else
            expect_bad_json(j, "datasets[0]", NULL, "got 4097 bytes");
    }
}

static void test_determinism(void **state)
{
    (void)state;
    /* several errors: always the first in the documented order */
    for (int i = 0; i < 3; i++) {
        expect_bad("{\"name\":\"\",\"team\":\"BAD\",\"resources\":{\"gpus\":0}}", "name", NULL,
                   NULL);
        expect_bad("{\"team\":\"BAD\",\"resources\":{\"gpus\":0},\"env\":{\"RANK\":\"0\"}}", "team",
                   NULL, NULL);
        expect_bad("{\"resources\":{\"gpus\":0},\"env\":{\"RANK\":\"0\"}}", "resources.gpus", NULL,
                   NULL);
    }
}

/* strategy (the advisor's names, docs/advisor.md) and params (a template job's record). */
static void test_strategy_and_params(void **state)
{
    static const char *const names[] = {"auto", "ddp", "zero1", "zero2", "zero3", "fsdp"};
    struct jobspec *spec;
    char patch[128];
    json_t *j;

    (void)state;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(patch, sizeof(patch), "{\"strategy\":\"%s\"}", names[i]);
        spec = expect_ok_json(spec_with(patch));
        assert_int_equal(spec->strategy, (int)i + 1);
        assert_string_equal(jobspec_strategy_str(spec->strategy), names[i]);
        j = jobspec_to_json(spec);
        assert_string_equal(json_string_value(json_object_get(j, "strategy")), names[i]);
        json_decref(j);
        check_round_trip(spec);
        jobspec_free(spec);
    }
    assert_null(jobspec_strategy_str(JOBSPEC_STRATEGY_NONE));
    expect_ok("{\"strategy\":null,\"params\":null}");
    expect_bad("{\"strategy\":\"zero\"}", "strategy",
               "strategy must be one of auto, ddp, zero1, zero2, zero3, fsdp", "got \"zero\"");
    expect_bad("{\"strategy\":\"AUTO\"}", "strategy", "one of auto", NULL);
    expect_bad("{\"strategy\":1}", "strategy", "one of auto", "got 1");

    spec = expect_ok_json(
        spec_with("{\"template\":\"defect-resnet50\",\"params\":{\"steps\":200,\"lr\":0.01,"
                  "\"arch\":\"tiny\",\"amp\":true,\"pretrained\":\"\"}}"));
    assert_int_equal(json_object_size(spec->params), 5);
    j = jobspec_to_json(spec);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "params"), "steps")),
                     200);
    /* Kept in the order given: the template's. */
    assert_string_equal(json_object_iter_key(json_object_iter(json_object_get(j, "params"))),
                        "steps");
    json_decref(j);
    check_round_trip(spec);
    jobspec_free(spec);
    expect_bad("{\"params\":[1]}", "params", "params must be an object", "got an array");
    expect_bad("{\"params\":{\"Steps\":1}}", "params", "[a-z][a-z0-9_]*", "got \"Steps\"");
    expect_bad("{\"params\":{\"b\":[],\"a\":{}}}", "params.a",
               "must be a string, a number or a boolean", "got an object");
    expect_bad("{\"params\":{\"a\":null}}", "params.a", "a string, a number or a boolean",
               "got null");
    expect_bad("{\"params\":{\"a\":\"x\\u0000y\"}}", "params.a", "NUL", NULL);
    {
        char big[1024];
        size_t off = (size_t)snprintf(big, sizeof(big), "{\"params\":{");
        for (int i = 0; i <= 64; i++)
            off +=
                (size_t)snprintf(big + off, sizeof(big) - off, "%s\"p%d\":%d", i ? "," : "", i, i);
        snprintf(big + off, sizeof(big) - off, "}}");
        expect_bad(big, "params", "at most 64 entries", "got 65");
    }
}

/* model, global_batch, optimizer: what the advisor plans from,
 * the model checked by the advisor's own parser and planner. */
static void test_model_and_batch(void **state)
{
    struct jobspec *spec;
    json_t *j;

    (void)state;
    spec = expect_ok_json(spec_with("{\"strategy\":\"auto\",\"model\":{\"name\":\"gpt2\"},"
                                    "\"global_batch\":32,\"optimizer\":\"sgd-momentum\"}"));
    assert_int_equal(spec->global_batch, 32);
    assert_string_equal(spec->optimizer, "sgd-momentum");
    j = jobspec_to_json(spec);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "model"), "name")),
                        "gpt2");
    assert_int_equal(json_integer_value(json_object_get(j, "global_batch")), 32);
    json_decref(j);
    check_round_trip(spec);
    jobspec_free(spec);
    expect_ok("{\"model\":null,\"global_batch\":null,\"optimizer\":null}");
    expect_ok("{\"model\":{\"measured\":{\"params\":76296,\"activation_bytes_per_sample\":4256}}}");
    expect_bad("{\"model\":{\"name\":\"gpt-5\"}}", "model.name", "one of", NULL);
    expect_bad("{\"model\":{\"name\":\"gpt2\",\"size\":1}}", "model.size", NULL, NULL);
    expect_bad("{\"model\":{\"transformer\":{\"arch\":\"decoder\",\"layers\":2,\"hidden\":"
               "64,\"heads\":5,\"ffn\":256,\"vocab\":512,\"seq_len\":64}}}",
               "model.transformer.heads", NULL, NULL);
    expect_bad("{\"model\":[1]}", "model", NULL, NULL);
    expect_bad("{\"global_batch\":0}", "global_batch", NULL, "got 0");
    expect_bad("{\"global_batch\":16777217}", "global_batch", NULL, NULL);
    expect_bad("{\"global_batch\":\"8\"}", "global_batch", NULL, NULL);
    expect_bad("{\"optimizer\":\"lamb\"}", "optimizer", "one of adamw, adam, sgd, sgd-momentum",
               "got \"lamb\"");
}

static void test_free_null(void **state)
{
    (void)state;
    jobspec_free(NULL);
    assert_null(jobspec_to_json(NULL));
    assert_string_equal(jobspec_launcher_str((enum jobspec_launcher)99), "native");
    assert_string_equal(jobspec_prio_str((enum jobspec_prio)99), "normal");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimal_defaults),
        cmocka_unit_test(test_full_spec),
        cmocka_unit_test(test_enums),
        cmocka_unit_test(test_not_object),
        cmocka_unit_test(test_unknown_fields),
        cmocka_unit_test(test_required),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_int_ranges),
        cmocka_unit_test(test_gpus_per_node_rule),
        cmocka_unit_test(test_string_sizes),
        cmocka_unit_test(test_name_and_team_content),
        cmocka_unit_test(test_command),
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_datasets),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_strategy_and_params),
        cmocka_unit_test(test_model_and_batch),
        cmocka_unit_test(test_free_null),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
