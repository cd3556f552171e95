/*
 * test_templates.c - unit tests of the job templates (server/jobs/templates_*.c):
 * the repository's templates/ load and offer runnable jobs, defaults, the
 * command built from examples_dir, every field's refusals with the field
 * named, the loader's file errors (path in the message), lookups, and every
 * failed allocation of the parser.
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

#include "jobspec.h"
#include "templates.h"

#define EXAMPLES "/opt/ty/examples"

/* A template's required keys; BASE adds the model that strategy "auto" needs. */
#define BASE0                                                                                      \
    "\"id\":\"demo\",\"name\":{\"zh-CN\":\"演示\",\"en\":\"Demo\"},"                             \
    "\"description\":{\"zh-CN\":\"说明\",\"en\":\"About\"},\"industry\":\"general\",\"gpus\":2"
#define BASE BASE0 ",\"model\":{\"name\":\"resnet50\"}"

/* A template of BASE plus extra (",..." or ""), parsed; expect success. */
static json_t *ok_with(const char *extra, const char *examples)
{
    char text[4096];
    json_t *t = NULL;
    struct err e;

    snprintf(text, sizeof(text), "{" BASE "%s}", extra);
    err_init(&e);
    if (tpl_parse(text, strlen(text), examples, &t, &e) != RC_OK)
        fail_msg("unexpected error: field \"%s\": %s (%s) in %s", e.field, e.message, e.detail,
                 text);
    assert_non_null(t);
    return t;
}

static void expect_bad_text(const char *text, const char *field, const char *msg)
{
    json_t *t = (json_t *)0x1;
    struct err e;

    err_init(&e);
    assert_int_equal(tpl_parse(text, strlen(text), EXAMPLES, &t, &e), RC_EINVAL);
    assert_null(t);
    if (strcmp(e.field, field) != 0)
        fail_msg("field: want \"%s\" got \"%s\" (message \"%s\") in %s", field, e.field, e.message,
                 text);
    if (msg != NULL && strstr(e.message, msg) == NULL)
        fail_msg("message: want \"%s\" in \"%s\"", msg, e.message);
}

/* BASE with key (which must be one of BASE's) removed or replaced. */
static void expect_bad_base(const char *drop, const char *extra, const char *field, const char *msg)
{
    char base[1024], text[4096];
    char *p, *end;

    snprintf(base, sizeof(base), "%s", BASE);
    if (drop != NULL) {
        char key[64];
        snprintf(key, sizeof(key), "\"%s\":", drop);
        p = strstr(base, key);
        assert_non_null(p);
        /* The value ends at the next top-level comma (values here have none
         * at depth 0 except objects, which end with "},"). */
        end = p + strlen(key);
        if (*end == '{')
            end = strchr(end, '}') + 1;
        else
            while (*end && *end != ',')
                end++;
        if (*end == ',')
            end++;
        memmove(p, end, strlen(end) + 1);
        size_t n = strlen(base);
        if (n > 0 && base[n - 1] == ',')
            base[n - 1] = '\0';
    }
    snprintf(text, sizeof(text), "{%s%s}", base, extra);
    expect_bad_text(text, field, msg);
}

static void expect_bad(const char *extra, const char *field, const char *msg)
{
    expect_bad_base(NULL, extra, field, msg);
}

static const char *str_at(const json_t *arr, size_t i)
{
    return json_string_value(json_array_get(arr, i));
}

/* The job a template offers is accepted by the submit's validator (with a team). */
static void assert_job_parses(const json_t *job)
{
    json_t *probe = json_deep_copy(job);
    struct jobspec *spec = NULL;
    struct err e;

    assert_non_null(probe);
    assert_int_equal(json_object_set_new(probe, "team", json_string("ml")), 0);
    err_init(&e);
    if (jobspec_parse(probe, &spec, &e) != RC_OK)
        fail_msg("the offered job is refused: %s (%s)", e.message, e.field);
    jobspec_free(spec);
    json_decref(probe);
}

static void repo_templates_load_and_offer_runnable_jobs(void **state)
{
    static const char *const ids[] = {
        "ddp-mlp-demo", "defect-resnet50", "product-ddpm", "product-embed", "review-textcls",
        "chatbot-gpt2", "bench-resnet50",  "bench-gpt2",   "sleep-test",
    };
    static const char *const industries[] = {
        "general",  "manufacturing", "manufacturing", "ecommerce", "ecommerce",
        "services", "benchmark",     "benchmark",     "benchmark",
    };
    struct tpl_set *set = NULL;
    struct err e;
    json_t *list, *job, *cmd, *sleep = NULL, *t;
    char examples[1024], script[1100];
    struct stat st;
    size_t i;

    (void)state;
    snprintf(examples, sizeof(examples), "%s/examples", TY_SOURCE_DIR);
    err_init(&e);
    if (tpl_set_load(TY_SOURCE_DIR "/templates", examples, &set, &e) != RC_OK)
        fail_msg("the repository's templates do not load: %s (field %s)", e.message, e.field);
    assert_int_equal(tpl_set_count(set), 9);
    list = tpl_set_list(set);
    /* Listed by "order": the DDP demo first (the dashboard's first button,
     * which the first-run browser test runs on CPU), the sleep test last. */
    json_array_foreach(list, i, t)
    {
        const json_t *params = json_object_get(t, "params");
        const char *name;
        json_t *p;
        size_t k = 2;

        assert_string_equal(json_string_value(json_object_get(t, "id")), ids[i]);
        assert_string_equal(json_string_value(json_object_get(t, "industry")), industries[i]);
        job = json_object_get(t, "job");
        assert_job_parses(job);
        cmd = json_object_get(job, "command");
        /* The command is the base command, then each parameter's default. */
        assert_true(json_array_size(cmd) >= json_array_size(json_object_get(t, "base_command")));
        for (size_t b = 0; b < json_array_size(json_object_get(t, "base_command")); b++)
            assert_true(json_equal(json_array_get(cmd, b),
                                   json_array_get(json_object_get(t, "base_command"), b)));
        json_object_foreach((json_t *)params, name, p)
        {
            const char *type = json_string_value(json_object_get(p, "type"));
            /* The repository's templates have no bool or empty defaults
             * except the one optional weights path. */
            if (strcmp(type, "string") == 0 &&
                json_string_length(json_object_get(p, "default")) == 0)
                continue;
            assert_true(json_equal(json_array_get(cmd, k), json_object_get(p, "arg")));
            k += 2;
        }
        assert_int_equal(json_array_size(cmd), k);
        assert_true(json_equal(json_object_get(job, "strategy"), json_object_get(t, "strategy")));
        if (i + 1 < json_array_size(list)) {
            /* Every training template: a script in examples_dir, the
             * advisor's strategy from a model, and a label in both languages
             * for every parameter. */
            assert_string_equal(json_string_value(json_object_get(t, "strategy")), "auto");
            assert_true(json_is_object(json_object_get(t, "model")));
            assert_string_equal(json_string_value(json_object_get(t, "launcher")), "native");
            assert_string_equal(str_at(cmd, 0), "/usr/bin/python3");
            snprintf(script, sizeof(script), "%s/%s", examples,
                     json_string_value(json_object_get(t, "script")));
            assert_string_equal(str_at(cmd, 1), script);
            assert_true(json_object_size(params) > 0);
            json_object_foreach((json_t *)params, name, p)
            {
                assert_non_null(json_object_get(json_object_get(p, "label"), "zh-CN"));
                assert_non_null(json_object_get(json_object_get(p, "label"), "en"));
            }
        }
    }
    t = json_array_get(list, 0);
    job = json_object_get(t, "job");
    cmd = json_object_get(job, "command");
    /* An absolute path that exists: the job's working directory is not the
     * repository, so a relative one would not be found. */
    snprintf(script, sizeof(script), "%s/ddp_mlp.py", examples);
    assert_string_equal(str_at(cmd, 1), script);
    assert_int_equal(stat(str_at(cmd, 1), &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_string_equal(str_at(cmd, 2), "--steps");
    assert_string_equal(str_at(cmd, 3), "200");
    assert_string_equal(str_at(cmd, 4), "--lr");
    assert_string_equal(str_at(cmd, 5), "0.001");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(job, "resources"), "gpus")),
                     2);
    assert_string_equal(json_string_value(json_object_get(job, "template")), "ddp-mlp-demo");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(job, "params"), "steps")),
                     200);
    assert_null(json_object_get(job, "team"));
    assert_int_equal(tpl_set_get(set, "sleep-test", &sleep), RC_OK);
    assert_true(json_equal(sleep, json_array_get(list, 8)));
    cmd = json_object_get(json_object_get(sleep, "job"), "command");
    assert_int_equal(json_array_size(cmd), 2);
    assert_string_equal(str_at(cmd, 0), "/bin/sleep");
    assert_string_equal(str_at(cmd, 1), "60");
    assert_true(json_is_null(json_object_get(sleep, "model")));
    assert_string_equal(json_string_value(json_object_get(sleep, "strategy")), "ddp");
    json_decref(sleep);
    json_decref(list);
    tpl_set_free(set);
}

static void defaults_are_filled_in(void **state)
{
    json_t *t = ok_with(",\"script\":\"train/mlp.py\"", EXAMPLES "/");
    json_t *job = json_object_get(t, "job");
    json_t *cmd = json_object_get(job, "command");

    (void)state;
    assert_string_equal(json_string_value(json_object_get(t, "interpreter")), "/usr/bin/python3");
    assert_string_equal(json_string_value(json_object_get(t, "launcher")), "native");
    assert_string_equal(json_string_value(json_object_get(t, "priority")), "normal");
    assert_string_equal(json_string_value(json_object_get(t, "dataset")), "synthetic");
    assert_int_equal(json_integer_value(json_object_get(t, "max_restarts")), 3);
    assert_int_equal(json_integer_value(json_object_get(t, "time_limit_s")), 86400);
    assert_true(json_is_null(json_object_get(t, "gpus_per_node")));
    assert_true(json_is_null(json_object_get(t, "command")));
    assert_int_equal(json_array_size(json_object_get(t, "args")), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(t, "name"), "zh-CN")),
                        "演示");
    /* One '/' between examples_dir and the script, however the setting ends. */
    assert_int_equal(json_array_size(cmd), 2);
    assert_string_equal(str_at(cmd, 1), EXAMPLES "/train/mlp.py");
    assert_string_equal(json_string_value(json_object_get(job, "name")), "demo");
    assert_string_equal(json_string_value(json_object_get(job, "priority")), "normal");
    assert_int_equal(json_integer_value(json_object_get(job, "max_restarts")), 3);
    assert_true(json_is_null(json_object_get(json_object_get(job, "resources"), "gpus_per_node")));
    json_decref(t);
}

static void every_field_is_carried_into_the_job(void **state)
{
    json_t *t =
        ok_with(",\"script\":\"a.py\",\"interpreter\":\"/opt/py/bin/python\","
                "\"args\":[\"--steps\",\"9\"],\"gpus_per_node\":1,\"launcher\":\"torchrun\","
                "\"max_restarts\":0,\"time_limit_s\":60,\"priority\":\"high\","
                "\"dataset\":\"text-lines\"",
                EXAMPLES);
    json_t *job = json_object_get(t, "job"), *cmd = json_object_get(job, "command");

    (void)state;
    assert_int_equal(json_array_size(cmd), 4);
    assert_string_equal(str_at(cmd, 0), "/opt/py/bin/python");
    assert_string_equal(str_at(cmd, 1), EXAMPLES "/a.py");
    assert_string_equal(str_at(cmd, 2), "--steps");
    assert_string_equal(str_at(cmd, 3), "9");
    assert_string_equal(json_string_value(json_object_get(job, "launcher")), "torchrun");
    assert_string_equal(json_string_value(json_object_get(job, "priority")), "high");
    assert_int_equal(json_integer_value(json_object_get(job, "max_restarts")), 0);
    assert_int_equal(json_integer_value(json_object_get(job, "time_limit_s")), 60);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(job, "resources"), "gpus_per_node")), 1);
    assert_string_equal(json_string_value(json_object_get(t, "dataset")), "text-lines");
    json_decref(t);
}

static void a_command_template_needs_no_examples_dir(void **state)
{
    json_t *t = ok_with(",\"command\":[\"/bin/sleep\"],\"args\":[\"60\"]", NULL);
    json_t *cmd = json_object_get(json_object_get(t, "job"), "command");

    (void)state;
    assert_true(json_is_null(json_object_get(t, "script")));
    assert_true(json_is_null(json_object_get(t, "interpreter")));
    assert_int_equal(json_array_size(cmd), 2);
    assert_string_equal(str_at(cmd, 0), "/bin/sleep");
    assert_string_equal(str_at(cmd, 1), "60");
    json_decref(t);
}

static void bad_documents_are_refused(void **state)
{
    (void)state;
    expect_bad_text("", "", "not valid JSON");
    expect_bad_text("{\"id\":\"a\",\"id\":\"b\"}", "", "not valid JSON");
    expect_bad_text("[1]", "", "must be a JSON object");
    /* Unknown keys first, the smallest in byte order. */
    expect_bad(",\"zzz\":1,\"aaa\":2,\"script\":\"a.py\"", "aaa", "unknown field \"aaa\"");
    expect_bad(",\"gpus\":0", "", "not valid JSON"); /* a duplicate key */
}

static void bad_texts_are_refused(void **state)
{
    (void)state;
    expect_bad_base("id", ",\"script\":\"a.py\"", "id", "id is required");
    expect_bad_base("id", ",\"id\":\"Demo\",\"script\":\"a.py\"", "id", "a-z");
    expect_bad_base("id", ",\"id\":\"-x\",\"script\":\"a.py\"", "id", "a-z");
    expect_bad_base("id", ",\"id\":7,\"script\":\"a.py\"", "id", "must be a string");
    expect_bad_base("id",
                    ",\"id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
                    "\"script\":\"a.py\"",
                    "id", "1 to 64 bytes");
    expect_bad_base("name", ",\"script\":\"a.py\"", "name", "name is required");
    expect_bad_base("name", ",\"name\":\"Demo\",\"script\":\"a.py\"", "name", "must be an object");
    expect_bad_base("name", ",\"name\":{\"zh-CN\":\"演示\"},\"script\":\"a.py\"", "name.en",
                    "name.en is required");
    expect_bad_base("name", ",\"name\":{\"zh-CN\":\"演示\",\"en\":\"D\",\"fr\":\"D\"}", "name.fr",
                    "unknown field");
    expect_bad_base("name", ",\"name\":{\"zh-CN\":\"\",\"en\":\"D\"},\"script\":\"a.py\"",
                    "name.zh-CN", "1 to 128 bytes");
    expect_bad_base("name", ",\"name\":{\"zh-CN\":\"a\\nb\",\"en\":\"D\"},\"script\":\"a.py\"",
                    "name.zh-CN", "control characters");
    expect_bad_base("description", ",\"script\":\"a.py\"", "description",
                    "description is required");
    expect_bad_base("industry", ",\"script\":\"a.py\"", "industry", "industry is required");
    expect_bad_base("industry", ",\"industry\":\"farming\",\"script\":\"a.py\"", "industry",
                    "one of manufacturing, ecommerce, services, benchmark, general");
}

static void bad_programs_are_refused(void **state)
{
    (void)state;
    expect_bad("", "script", "script (or command) is required");
    expect_bad(",\"script\":\"a.py\",\"command\":[\"/bin/true\"]", "command", "not both");
    expect_bad(",\"script\":\"../a.py\"", "script", "relative path inside examples_dir");
    expect_bad(",\"script\":\"x/../../a.py\"", "script", "relative path inside examples_dir");
    expect_bad(",\"script\":\"/abs/a.py\"", "script", "relative path inside examples_dir");
    expect_bad(",\"script\":\"a//b.py\"", "script", "relative path inside examples_dir");
    expect_bad(",\"script\":\"./a.py\"", "script", "relative path inside examples_dir");
    expect_bad(",\"script\":\"dir/\"", "script", "relative path inside examples_dir");
    expect_bad(",\"script\":\"\"", "script", "1 to 255 bytes");
    expect_bad(",\"script\":\"a.py\",\"interpreter\":\"python3\"", "interpreter", "absolute path");
    expect_bad(",\"command\":[\"/bin/true\"],\"interpreter\":\"/usr/bin/python3\"", "interpreter",
               "only with script");
    expect_bad(",\"command\":[]", "command", "1 to 64 strings");
    expect_bad(",\"command\":\"/bin/true\"", "command", "1 to 64 strings");
    expect_bad(",\"command\":[\"sleep\",\"1\"]", "command[0]", "absolute path");
    expect_bad(",\"command\":[\"/bin/sleep\",1]", "command[1]", "must be a string");
    expect_bad(",\"command\":[\"/bin/sleep\"],\"args\":\"60\"", "args", "0 to 64 strings");
    expect_bad(",\"command\":[\"/bin/sleep\"],\"args\":[\"\"]", "args[0]", "1 to 4096 bytes");
    /* A script needs examples_dir to become an absolute path. */
    {
        const char *text = "{" BASE ",\"script\":\"a.py\"}";
        json_t *t = NULL;
        struct err e;
        err_init(&e);
        assert_int_equal(tpl_parse(text, strlen(text), "", &t, &e), RC_EINVAL);
        assert_string_equal(e.field, "script");
        assert_non_null(strstr(e.message, "examples_dir"));
        assert_int_equal(tpl_parse(text, strlen(text), "relative/examples", &t, &e), RC_EINVAL);
        assert_string_equal(e.field, "script");
        assert_null(t);
    }
}

static void bad_numbers_and_choices_are_refused(void **state)
{
    (void)state;
    expect_bad_base("gpus", ",\"script\":\"a.py\"", "gpus", "gpus is required");
    expect_bad_base("gpus", ",\"script\":\"a.py\",\"gpus\":0", "gpus", "from 1 to 1024");
    expect_bad_base("gpus", ",\"script\":\"a.py\",\"gpus\":1025", "gpus", "from 1 to 1024");
    expect_bad_base("gpus", ",\"script\":\"a.py\",\"gpus\":\"2\"", "gpus", "from 1 to 1024");
    expect_bad(",\"script\":\"a.py\",\"gpus_per_node\":3", "gpus_per_node", "multiple");
    expect_bad(",\"script\":\"a.py\",\"gpus_per_node\":65", "gpus_per_node", "from 1 to 64");
    expect_bad(",\"script\":\"a.py\",\"launcher\":\"mpirun\"", "launcher", "one of native");
    expect_bad(",\"script\":\"a.py\",\"max_restarts\":101", "max_restarts", "from 0 to 100");
    expect_bad(",\"script\":\"a.py\",\"max_restarts\":-1", "max_restarts", "from 0 to 100");
    expect_bad(",\"script\":\"a.py\",\"time_limit_s\":0", "time_limit_s", "from 1 to 2592000");
    expect_bad(",\"script\":\"a.py\",\"priority\":\"urgent\"", "priority", "one of low");
    expect_bad(",\"script\":\"a.py\",\"dataset\":\"imagenet\"", "dataset", "one of synthetic");
    /* gpus_per_node null is the same as absent. */
    json_decref(ok_with(",\"script\":\"a.py\",\"gpus_per_node\":null", EXAMPLES));
}

/* A scratch directory with files; removed by rm_dir(). */
static void write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void rm_dir(const char *dir, const char *const *names)
{
    char path[512];

    for (size_t i = 0; names[i] != NULL; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

static void loader_names_the_bad_file(void **state)
{
    static const char *const names[] = {"a.json", "b.json", ".hidden.json", "notes.txt", NULL};
    char dir[] = "/tmp/ty-test-templates-XXXXXX";
    char bad_path[128];
    struct tpl_set *set = (struct tpl_set *)0x1;
    struct err e;

    (void)state;
    assert_non_null(mkdtemp(dir));
    write_file(dir, "a.json", "{" BASE ",\"command\":[\"/bin/true\"]}");
    write_file(dir, ".hidden.json", "not json");
    write_file(dir, "notes.txt", "not json");
    /* Only *.json files, hidden ones skipped. */
    err_init(&e);
    assert_int_equal(tpl_set_load(dir, NULL, &set, &e), RC_OK);
    assert_int_equal(tpl_set_count(set), 1);
    tpl_set_free(set);
    /* A bad file fails the load, named with the field. */
    write_file(dir, "b.json", "{" BASE ",\"command\":[\"/bin/true\"],\"priority\":\"urgent\"}");
    snprintf(bad_path, sizeof(bad_path), "%s/b.json", dir);
    err_init(&e);
    assert_int_equal(tpl_set_load(dir, NULL, &set, &e), RC_EINVAL);
    assert_null(set);
    assert_string_equal(e.field, "priority");
    assert_true(strncmp(e.message, bad_path, strlen(bad_path)) == 0);
    assert_non_null(strstr(e.message, "priority must be one of"));
    /* The same id twice. */
    write_file(dir, "b.json", "{" BASE ",\"command\":[\"/bin/false\"]}");
    err_init(&e);
    assert_int_equal(tpl_set_load(dir, NULL, &set, &e), RC_EINVAL);
    assert_string_equal(e.field, "id");
    assert_true(strncmp(e.message, bad_path, strlen(bad_path)) == 0);
    assert_non_null(strstr(e.message, "another template file has this id"));
    rm_dir(dir, names);
    /* A directory that is not there is a configuration mistake. */
    err_init(&e);
    assert_int_equal(tpl_set_load(dir, NULL, &set, &e), RC_EINVAL);
    assert_string_equal(e.field, "templates_dir");
}

static void loader_refuses_a_file_too_large(void **state)
{
    static const char *const names[] = {"big.json", NULL};
    char dir[] = "/tmp/ty-test-templates-XXXXXX";
    char *text = malloc(TPL_MAX_FILE_BYTES + 2);
    struct tpl_set *set = NULL;
    struct err e;

    (void)state;
    assert_non_null(text);
    assert_non_null(mkdtemp(dir));
    memset(text, ' ', TPL_MAX_FILE_BYTES + 1);
    text[TPL_MAX_FILE_BYTES + 1] = '\0';
    write_file(dir, "big.json", text);
    err_init(&e);
    assert_int_equal(tpl_set_load(dir, NULL, &set, &e), RC_EINVAL);
    assert_non_null(strstr(e.message, "big.json: the file is larger than"));
    rm_dir(dir, names);
    free(text);
}

static void no_directory_means_no_templates(void **state)
{
    struct tpl_set *set = NULL;
    json_t *list, *t = (json_t *)0x1;
    struct err e;

    (void)state;
    err_init(&e);
    assert_int_equal(tpl_set_load("", NULL, &set, &e), RC_OK);
    assert_int_equal(tpl_set_count(set), 0);
    list = tpl_set_list(set);
    assert_int_equal(json_array_size(list), 0);
    assert_int_equal(tpl_set_get(set, "ddp-mlp-demo", &t), RC_ENOTFOUND);
    assert_null(t);
    json_decref(list);
    tpl_set_free(set);
    tpl_set_free(NULL);
    assert_int_equal(tpl_set_count(NULL), 0);
}

static void plan_fields_are_in_the_public_form(void **state)
{
    json_t *t = ok_with(",\"script\":\"a.py\"", EXAMPLES);
    json_t *job = json_object_get(t, "job");
    json_t *base = json_object_get(t, "base_command");

    (void)state;
    /* Defaults: strategy auto, no env or parameters, listed last. */
    assert_string_equal(json_string_value(json_object_get(t, "strategy")), "auto");
    assert_int_equal(json_object_size(json_object_get(t, "env")), 0);
    assert_int_equal(json_object_size(json_object_get(t, "params")), 0);
    assert_int_equal(json_integer_value(json_object_get(t, "order")), 1000000);
    assert_string_equal(json_string_value(json_object_get(json_object_get(t, "model"), "name")),
                        "resnet50");
    assert_int_equal(json_array_size(base), 2);
    assert_true(json_equal(base, json_object_get(job, "command")));
    assert_string_equal(json_string_value(json_object_get(job, "strategy")), "auto");
    assert_int_equal(json_object_size(json_object_get(job, "params")), 0);
    assert_null(json_object_get(job, "env"));
    json_decref(t);

    t = ok_with(",\"script\":\"a.py\",\"strategy\":\"zero2\",\"order\":5,"
                "\"env\":{\"OMP_NUM_THREADS\":\"4\"}",
                EXAMPLES);
    job = json_object_get(t, "job");
    assert_string_equal(json_string_value(json_object_get(job, "strategy")), "zero2");
    assert_int_equal(json_integer_value(json_object_get(t, "order")), 5);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(job, "env"), "OMP_NUM_THREADS")), "4");
    json_decref(t);
}

/* "serve": absent is null in the public form; every kind is taken; the
 * script is a plain file name; the repository serves chatbot-gpt2 (chat)
 * and ddp-mlp-demo (echo) only. */
static void serve_is_checked_and_public(void **state)
{
    static const char *const kinds[] = {"chat", "classify", "embed", "image", "echo"};
    struct tpl_set *set = NULL;
    char extra[256], examples[1024];
    json_t *t = ok_with(",\"script\":\"a.py\"", EXAMPLES), *list, *v;
    struct err e;
    size_t i, served = 0;

    (void)state;
    assert_true(json_is_null(json_object_get(t, "serve")));
    json_decref(t);
    for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        snprintf(extra, sizeof(extra),
                 ",\"script\":\"a.py\",\"serve\":{\"kind\":\"%s\",\"script\":\"serve_x-1.py\"}",
                 kinds[i]);
        t = ok_with(extra, EXAMPLES);
        v = json_object_get(t, "serve");
        assert_string_equal(json_string_value(json_object_get(v, "kind")), kinds[i]);
        assert_string_equal(json_string_value(json_object_get(v, "script")), "serve_x-1.py");
        json_decref(t);
    }
    expect_bad(",\"script\":\"a.py\",\"serve\":\"chat\"", "serve", "must be an object");
    expect_bad(",\"script\":\"a.py\",\"serve\":{\"kind\":\"chat\",\"script\":\"s.py\",\"x\":1}",
               "serve.x", NULL);
    expect_bad(",\"script\":\"a.py\",\"serve\":{\"script\":\"s.py\"}", "serve.kind", NULL);
    expect_bad(",\"script\":\"a.py\",\"serve\":{\"kind\":\"speech\",\"script\":\"s.py\"}",
               "serve.kind", NULL);
    expect_bad(",\"script\":\"a.py\",\"serve\":{\"kind\":\"chat\"}", "serve.script", "required");
    expect_bad(",\"script\":\"a.py\",\"serve\":{\"kind\":\"chat\",\"script\":\"../s.py\"}",
               "serve.script", "file name");
    expect_bad(",\"script\":\"a.py\",\"serve\":{\"kind\":\"chat\",\"script\":\"d/s.py\"}",
               "serve.script", "file name");
    expect_bad(",\"script\":\"a.py\",\"serve\":{\"kind\":\"chat\",\"script\":\".s.py\"}",
               "serve.script", "file name");
    expect_bad(",\"script\":\"a.py\",\"serve\":{\"kind\":\"chat\",\"script\":\"\"}", "serve.script",
               NULL);

    snprintf(examples, sizeof(examples), "%s/examples", TY_SOURCE_DIR);
    err_init(&e);
    assert_int_equal(tpl_set_load(TY_SOURCE_DIR "/templates", examples, &set, &e), RC_OK);
    list = tpl_set_list(set);
    json_array_foreach(list, i, t)
    {
        const char *id = json_string_value(json_object_get(t, "id"));
        v = json_object_get(t, "serve");
        if (strcmp(id, "chatbot-gpt2") == 0 || strcmp(id, "ddp-mlp-demo") == 0) {
            assert_string_equal(json_string_value(json_object_get(v, "kind")),
                                strcmp(id, "chatbot-gpt2") == 0 ? "chat" : "echo");
            assert_string_equal(json_string_value(json_object_get(v, "script")),
                                strcmp(id, "chatbot-gpt2") == 0 ? "serve_chat_gpt2.py"
                                                                : "serve_echo.py");
            served++;
        } else {
            assert_true(json_is_null(v));
        }
    }
    assert_int_equal(served, 2);
    json_decref(list);
    tpl_set_free(set);
}

/* BASE0 and extra, parsed; expect success. */
static json_t *ok0_with(const char *extra)
{
    char text[4096];
    json_t *t = NULL;
    struct err e;

    snprintf(text, sizeof(text), "{" BASE0 "%s}", extra);
    err_init(&e);
    if (tpl_parse(text, strlen(text), EXAMPLES, &t, &e) != RC_OK)
        fail_msg("unexpected error: field \"%s\": %s (%s) in %s", e.field, e.message, e.detail,
                 text);
    return t;
}

static void every_model_form_is_accepted(void **state)
{
    static const char *const good[] = {
        "{\"name\":\"gpt2\"}",
        "{\"name\":\"qwen2-7b\"}",
        ("{\"transformer\":{\"layers\":12,\"hidden\":768,\"heads\":12,\"ffn\":3072,"
         "\"vocab\":50257,\"seq_len\":1024,\"kind\":\"decoder\"}}"),
        "{\"params\":25557032,\"activation_bytes_per_sample\":104857600}",
    };
    char extra[512];
    json_t *t, *m;

    (void)state;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        snprintf(extra, sizeof(extra), ",\"model\":%s,\"script\":\"a.py\"", good[i]);
        t = ok0_with(extra);
        m = json_loads(good[i], 0, NULL);
        assert_true(json_equal(json_object_get(t, "model"), m));
        json_decref(m);
        json_decref(t);
    }
    /* No model: only with an explicit strategy, as the advisor needs one. */
    t = ok0_with(",\"model\":null,\"strategy\":\"ddp\",\"script\":\"a.py\"");
    assert_true(json_is_null(json_object_get(t, "model")));
    json_decref(t);
    json_decref(ok0_with(",\"strategy\":\"fsdp\",\"script\":\"a.py\""));
    expect_bad_text("{" BASE0 ",\"script\":\"a.py\"}", "model", "required with strategy \"auto\"");
    expect_bad_text("{" BASE0 ",\"model\":null,\"strategy\":\"auto\",\"script\":\"a.py\"}", "model",
                    "required with strategy \"auto\"");
}

static void bad_models_are_refused(void **state)
{
    static const struct {
        const char *model, *field, *msg;
    } cases[] = {
        {"\"resnet50\"", "model", "must be an object"},
        {"{}", "model", "exactly one of name, transformer and params"},
        {"{\"name\":\"gpt2\",\"params\":1}", "model", "exactly one"},
        {"{\"name\":\"gpt2\",\"size\":1}", "model.size", "unknown field"},
        {"{\"name\":\"gpt-5\"}", "model.name", "one of resnet50"},
        {"{\"name\":7}", "model.name", "one of resnet50"},
        {"{\"name\":\"gpt2\",\"activation_bytes_per_sample\":9}",
         "model.activation_bytes_per_sample", "only with model.params"},
        {"{\"params\":1000}", "model.activation_bytes_per_sample", "is required"},
        {"{\"params\":0,\"activation_bytes_per_sample\":9}", "model.params", "from 1 to"},
        {"{\"params\":10000000000001,\"activation_bytes_per_sample\":9}", "model.params",
         "from 1 to 10000000000000"},
        {"{\"params\":10,\"activation_bytes_per_sample\":1099511627777}",
         "model.activation_bytes_per_sample", "from 1 to 1099511627776"},
        {"{\"params\":1.5,\"activation_bytes_per_sample\":9}", "model.params", "integer"},
        {"{\"transformer\":[]}", "model.transformer", "must be an object"},
        {"{\"transformer\":{\"layers\":2}}", "model.transformer.hidden", "is required"},
        {"{\"transformer\":{\"layers\":2,\"hidden\":64,\"heads\":4,\"ffn\":256,\"vocab\":256,"
         "\"seq_len\":128,\"kind\":\"decoder\",\"dropout\":0}}",
         "model.transformer.dropout", "unknown field"},
        {"{\"transformer\":{\"layers\":0,\"hidden\":64,\"heads\":4,\"ffn\":256,\"vocab\":256,"
         "\"seq_len\":128,\"kind\":\"decoder\"}}",
         "model.transformer.layers", "from 1 to 1024"},
        {"{\"transformer\":{\"layers\":2,\"hidden\":64,\"heads\":5,\"ffn\":256,\"vocab\":256,"
         "\"seq_len\":128,\"kind\":\"decoder\"}}",
         "model.transformer.heads", "divide hidden"},
        {"{\"transformer\":{\"layers\":2,\"hidden\":64,\"heads\":4,\"ffn\":256,\"vocab\":256,"
         "\"seq_len\":2000000,\"kind\":\"decoder\"}}",
         "model.transformer.seq_len", "from 1 to 1048576"},
        {"{\"transformer\":{\"layers\":2,\"hidden\":64,\"heads\":4,\"ffn\":256,\"vocab\":256,"
         "\"seq_len\":128,\"kind\":\"moe\"}}",
         "model.transformer.kind", "one of decoder, encoder"},
        {"{\"transformer\":{\"layers\":2,\"hidden\":64,\"heads\":4,\"ffn\":256,\"vocab\":256,"
         "\"seq_len\":128}}",
         "model.transformer.kind", "is required"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[4096];
        snprintf(text, sizeof(text), "{" BASE0 ",\"model\":%s,\"script\":\"a.py\"}",
                 cases[i].model);
        expect_bad_text(text, cases[i].field, cases[i].msg);
    }
    expect_bad(",\"script\":\"a.py\",\"strategy\":\"zero4\"", "strategy", "one of auto, ddp");
    expect_bad(",\"script\":\"a.py\",\"order\":-1", "order", "from 0 to 1000000");
    expect_bad(",\"script\":\"a.py\",\"env\":[]", "env", "object of at most 32");
    /* Env names follow the job spec's rules, named as the job spec names them. */
    expect_bad(",\"script\":\"a.py\",\"env\":{\"TRAINYARD_DATA\":\"/x\"}", "env.TRAINYARD_DATA",
               "set by the platform");
    expect_bad(",\"script\":\"a.py\",\"env\":{\"A\":1}", "env.A", "must be a string");
}

/* A template with BASE, a script and the given "params" text. */
static json_t *with_params(const char *params)
{
    char extra[3000];

    snprintf(extra, sizeof(extra), ",\"script\":\"a.py\",\"args\":[\"--quiet\"],\"params\":%s",
             params);
    return ok_with(extra, EXAMPLES);
}

#define LABEL "\"label\":{\"zh-CN\":\"步数\",\"en\":\"Steps\"}"

static void the_params_schema_is_normalized_and_applied(void **state)
{
    json_t *t = with_params(
        "{\"steps\":{\"type\":\"int\"," LABEL ",\"arg\":\"--steps\",\"min\":1,\"max\":1000,"
        "\"default\":200},"
        "\"lr\":{\"type\":\"float\"," LABEL ",\"help\":{\"zh-CN\":\"说明\",\"en\":\"Help\"},"
        "\"arg\":\"--lr\",\"min\":0,\"max\":1,\"default\":0.1},"
        "\"size\":{\"type\":\"enum\"," LABEL ",\"arg\":\"--size\",\"values\":[\"full\",\"tiny\"],"
        "\"default\":\"tiny\"},"
        "\"amp\":{\"type\":\"bool\"," LABEL ",\"arg\":\"--amp\",\"default\":true},"
        "\"fast\":{\"type\":\"bool\"," LABEL ",\"arg\":\"--fast\",\"default\":false},"
        "\"weights\":{\"type\":\"string\"," LABEL ",\"arg\":\"--pretrained\",\"default\":\"\"},"
        "\"tag\":{\"type\":\"string\"," LABEL ",\"arg\":\"--tag\",\"default\":\"a b\"}}");
    json_t *params = json_object_get(t, "params"), *p;
    json_t *cmd = json_object_get(json_object_get(t, "job"), "command");
    static const char *const want[] = {
        "/usr/bin/python3", EXAMPLES "/a.py", "--quiet", "--steps", "200", "--lr", "0.1",
        "--size",           "tiny",           "--amp",   "--tag",   "a b",
    };
    static const char *const order[] = {"steps", "lr", "size", "amp", "fast", "weights", "tag"};
    const char *name;
    size_t i = 0;

    (void)state;
    /* The file's order is kept: it is the wizard's and the command's. */
    json_object_foreach(params, name, p)
    {
        assert_true(i < 7);
        assert_string_equal(name, order[i++]);
        /* Every key present, the absent ones null. */
        assert_int_equal(json_object_size(p), 8);
    }
    p = json_object_get(params, "steps");
    assert_true(json_is_null(json_object_get(p, "help")));
    assert_true(json_is_null(json_object_get(p, "values")));
    assert_int_equal(json_integer_value(json_object_get(p, "max")), 1000);
    p = json_object_get(params, "size");
    assert_true(json_is_null(json_object_get(p, "min")));
    assert_int_equal(json_array_size(json_object_get(p, "values")), 2);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(params, "lr"), "help"), "en")),
                        "Help");
    /* base_command has the template's args, the job's command the defaults. */
    assert_int_equal(json_array_size(json_object_get(t, "base_command")), 3);
    assert_int_equal(json_array_size(cmd), sizeof(want) / sizeof(want[0]));
    for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        assert_string_equal(str_at(cmd, i), want[i]);
    assert_int_equal(json_object_size(json_object_get(json_object_get(t, "job"), "params")), 7);
    json_decref(t);
}

static void expect_bad_params(const char *params, const char *field, const char *msg)
{
    char text[4096];

    snprintf(text, sizeof(text),
             "{" BASE ",\"script\":\"a.py\",\"args\":[\"--quiet\"],\"params\":%s}", params);
    expect_bad_text(text, field, msg);
}

static void bad_params_schemas_are_refused(void **state)
{
    char many[4096];
    size_t off;

    (void)state;
    expect_bad_params("[]", "params", "must be an object");
    expect_bad_params("{\"Steps\":{}}", "params", "starting with a-z");
    expect_bad_params("{\"1x\":{}}", "params", "starting with a-z");
    expect_bad_params("{\"steps\":1}", "params.steps", "must be an object");
    expect_bad_params("{\"steps\":{\"type\":\"int\"," LABEL ",\"arg\":\"--steps\",\"default\":1,"
                      "\"step\":1}}",
                      "params.steps.step", "unknown field");
    expect_bad_params("{\"steps\":{" LABEL ",\"arg\":\"--steps\",\"default\":1}}",
                      "params.steps.type", "is required");
    expect_bad_params("{\"steps\":{\"type\":\"long\"," LABEL ",\"arg\":\"--steps\",\"default\":1}}",
                      "params.steps.type", "one of int, float, enum, bool, string");
    expect_bad_params("{\"steps\":{\"type\":\"int\",\"arg\":\"--steps\",\"default\":1}}",
                      "params.steps.label", "is required");
    expect_bad_params("{\"steps\":{\"type\":\"int\",\"label\":{\"en\":\"S\"},\"arg\":\"--steps\","
                      "\"default\":1}}",
                      "params.steps.label.zh-CN", "is required");
    expect_bad_params("{\"steps\":{\"type\":\"int\"," LABEL ",\"help\":\"h\",\"arg\":\"--steps\","
                      "\"default\":1}}",
                      "params.steps.help", "must be an object");
    expect_bad_params("{\"steps\":{\"type\":\"int\"," LABEL ",\"default\":1}}", "params.steps.arg",
                      "is required");
    /* "batch" becomes the job's global_batch: a schema that lets a user give
     * 0 (found by fuzz_templates) or an unbounded value is refused. */
    expect_bad_params("{\"batch\":{\"type\":\"int\"," LABEL
                      ",\"arg\":\"--batch\",\"min\":0,\"max\":64,\"default\":8}}",
                      "params.batch", "is the global batch");
    expect_bad_params("{\"batch\":{\"type\":\"int\"," LABEL ",\"arg\":\"--batch\",\"default\":8}}",
                      "params.batch", "is the global batch");
    expect_bad_params("{\"batch\":{\"type\":\"string\"," LABEL
                      ",\"arg\":\"--batch\",\"default\":\"8\"}}",
                      "params.batch", "is the global batch");
    expect_bad_params("{\"steps\":{\"type\":\"int\"," LABEL ",\"arg\":\"-s\",\"default\":1}}",
                      "params.steps.arg", "3 to 64 bytes");
    expect_bad_params("{\"steps\":{\"type\":\"int\"," LABEL ",\"arg\":\"--Steps\",\"default\":1}}",
                      "params.steps.arg", "must be a flag");
    expect_bad_params("{\"steps\":{\"type\":\"int\"," LABEL ",\"arg\":\"---x\",\"default\":1}}",
                      "params.steps.arg", "must be a flag");
    expect_bad_params("{\"steps\":{\"type\":\"int\"," LABEL ",\"arg\":\"--a=1\",\"default\":1}}",
                      "params.steps.arg", "must be a flag");
    expect_bad_params("{\"a\":{\"type\":\"int\"," LABEL ",\"arg\":\"--n\",\"default\":1},"
                      "\"b\":{\"type\":\"int\"," LABEL ",\"arg\":\"--n\",\"default\":1}}",
                      "params.b.arg", "already used");
    expect_bad_params("{\"a\":{\"type\":\"bool\"," LABEL ",\"arg\":\"--quiet\",\"default\":true}}",
                      "params.a.arg", "already used");
    expect_bad_params("{\"a\":{\"type\":\"enum\"," LABEL ",\"arg\":\"--a\",\"min\":1,"
                      "\"values\":[\"x\"],\"default\":\"x\"}}",
                      "params.a.min", "only for int and float");
    expect_bad_params("{\"a\":{\"type\":\"int\"," LABEL ",\"arg\":\"--a\",\"values\":[\"x\"],"
                      "\"default\":1}}",
                      "params.a.values", "only for enum");
    expect_bad_params("{\"a\":{\"type\":\"enum\"," LABEL ",\"arg\":\"--a\",\"default\":\"x\"}}",
                      "params.a.values", "required for an enum");
    expect_bad_params("{\"a\":{\"type\":\"enum\"," LABEL ",\"arg\":\"--a\",\"values\":[],"
                      "\"default\":\"x\"}}",
                      "params.a.values", "1 to 64 strings");
    expect_bad_params("{\"a\":{\"type\":\"enum\"," LABEL
                      ",\"arg\":\"--a\",\"values\":[\"x\",\"x\"],"
                      "\"default\":\"x\"}}",
                      "params.a.values[1]", "repeats");
    expect_bad_params("{\"a\":{\"type\":\"enum\"," LABEL ",\"arg\":\"--a\",\"values\":[\"x\",1],"
                      "\"default\":\"x\"}}",
                      "params.a.values[1]", "must be a string");
    expect_bad_params("{\"a\":{\"type\":\"enum\"," LABEL
                      ",\"arg\":\"--a\",\"values\":[\"x\",\"-y\"],"
                      "\"default\":\"x\"}}",
                      "params.a.values[1]", "must not start with '-'");
    expect_bad_params("{\"a\":{\"type\":\"string\"," LABEL ",\"arg\":\"--a\",\"default\":\"-x\"}}",
                      "params.a.default", "must not start with '-'");
    expect_bad_params("{\"a\":{\"type\":\"int\"," LABEL ",\"arg\":\"--a\",\"min\":1.5,"
                      "\"default\":2}}",
                      "params.a.min", "must be an integer");
    expect_bad_params("{\"a\":{\"type\":\"float\"," LABEL ",\"arg\":\"--a\",\"max\":\"1\","
                      "\"default\":0.5}}",
                      "params.a.max", "must be a number");
    expect_bad_params("{\"a\":{\"type\":\"int\"," LABEL ",\"arg\":\"--a\",\"min\":5,\"max\":4,"
                      "\"default\":4}}",
                      "params.a.max", "min must not be larger");
    expect_bad_params("{\"a\":{\"type\":\"int\"," LABEL ",\"arg\":\"--a\"}}", "params.a.default",
                      "is required");
    /* The default passes the same check as a user's value. */
    expect_bad_params("{\"a\":{\"type\":\"int\"," LABEL ",\"arg\":\"--a\",\"min\":1,\"max\":9,"
                      "\"default\":10}}",
                      "params.a.default", "integer from 1 to 9");
    expect_bad_params("{\"a\":{\"type\":\"int\"," LABEL ",\"arg\":\"--a\",\"default\":\"10\"}}",
                      "params.a.default", "must be an integer");
    expect_bad_params("{\"a\":{\"type\":\"float\"," LABEL ",\"arg\":\"--a\",\"min\":0.5,"
                      "\"default\":0.25}}",
                      "params.a.default", "number of at least 0.5");
    expect_bad_params("{\"a\":{\"type\":\"enum\"," LABEL ",\"arg\":\"--a\",\"values\":[\"x\"],"
                      "\"default\":\"y\"}}",
                      "params.a.default", "one of x");
    expect_bad_params("{\"a\":{\"type\":\"bool\"," LABEL ",\"arg\":\"--a\",\"default\":1}}",
                      "params.a.default", "true or false");
    expect_bad_params("{\"a\":{\"type\":\"string\"," LABEL
                      ",\"arg\":\"--a\",\"default\":\"a\\nb\"}}",
                      "params.a.default", "control characters");
    /* At most TPL_MAX_PARAMS parameters. */
    off = (size_t)snprintf(many, sizeof(many), "{");
    for (int i = 0; i <= TPL_MAX_PARAMS; i++)
        off += (size_t)snprintf(many + off, sizeof(many) - off,
                                "%s\"p%d\":{\"type\":\"bool\"," LABEL ",\"arg\":\"--p%d\","
                                "\"default\":false}",
                                i ? "," : "", i, i);
    snprintf(many + off, sizeof(many) - off, "}");
    expect_bad_params(many, "params", "at most 32 parameters");
}

static void the_list_follows_order_then_file_name(void **state)
{
    static const char *const names[] = {"a.json", "b.json", "c.json", "d.json", NULL};
    char dir[] = "/tmp/ty-test-templates-XXXXXX";
    struct tpl_set *set = NULL;
    json_t *list;
    struct err e;

    (void)state;
    assert_non_null(mkdtemp(dir));
    write_file(
        dir, "a.json",
        "{\"id\":\"last\",\"name\":{\"zh-CN\":\"a\",\"en\":\"a\"},\"description\":{\"zh-CN\":"
        "\"a\",\"en\":\"a\"},\"industry\":\"general\",\"gpus\":1,\"strategy\":\"ddp\","
        "\"command\":[\"/bin/true\"]}");
    write_file(dir, "b.json",
               "{\"id\":\"second\",\"order\":7,\"name\":{\"zh-CN\":\"a\",\"en\":\"a\"},"
               "\"description\":{\"zh-CN\":\"a\",\"en\":\"a\"},\"industry\":\"general\",\"gpus\":1,"
               "\"strategy\":\"ddp\",\"command\":[\"/bin/true\"]}");
    write_file(dir, "c.json",
               "{\"id\":\"first\",\"order\":0,\"name\":{\"zh-CN\":\"a\",\"en\":\"a\"},"
               "\"description\":{\"zh-CN\":\"a\",\"en\":\"a\"},\"industry\":\"general\",\"gpus\":1,"
               "\"strategy\":\"ddp\",\"command\":[\"/bin/true\"]}");
    write_file(dir, "d.json",
               "{\"id\":\"third\",\"order\":7,\"name\":{\"zh-CN\":\"a\",\"en\":\"a\"},"
               "\"description\":{\"zh-CN\":\"a\",\"en\":\"a\"},\"industry\":\"general\",\"gpus\":1,"
               "\"strategy\":\"ddp\",\"command\":[\"/bin/true\"]}");
    err_init(&e);
    assert_int_equal(tpl_set_load(dir, NULL, &set, &e), RC_OK);
    list = tpl_set_list(set);
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "id")), "first");
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 1), "id")),
                        "second");
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 2), "id")), "third");
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 3), "id")), "last");
    json_decref(list);
    tpl_set_free(set);
    rm_dir(dir, names);
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
    const char *text = "{" BASE ",\"script\":\"a.py\",\"args\":[\"--quiet\"],"
                       "\"gpus_per_node\":1,\"env\":{\"A\":\"1\"},\"params\":{"
                       "\"steps\":{\"type\":\"int\"," LABEL ",\"arg\":\"--steps\",\"min\":1,"
                       "\"default\":9},\"lr\":{\"type\":\"float\"," LABEL ",\"arg\":\"--lr\","
                       "\"default\":0.5},\"size\":{\"type\":\"enum\"," LABEL ",\"arg\":\"--size\","
                       "\"values\":[\"a\",\"b\"],\"default\":\"b\"}}}";
    int succeeded = 0;

    (void)state;
    json_set_alloc_funcs(failing_malloc, free);
    for (long n = 1; n < 100000 && !succeeded; n++) {
        json_t *t = NULL;
        struct err e;
        enum rc rc;

        err_init(&e);
        alloc_countdown = n;
        rc = tpl_parse(text, strlen(text), EXAMPLES, &t, &e);
        alloc_countdown = 0;
        if (rc == RC_OK) {
            assert_non_null(t);
            succeeded = 1;
        } else {
            /* A failed parser allocation reads as bad JSON; any other is ENOMEM. */
            assert_true(rc == RC_ENOMEM || rc == RC_EINVAL);
            assert_null(t);
        }
        json_decref(t);
    }
    json_set_alloc_funcs(malloc, free);
    assert_true(succeeded);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(repo_templates_load_and_offer_runnable_jobs),
        cmocka_unit_test(defaults_are_filled_in),
        cmocka_unit_test(every_field_is_carried_into_the_job),
        cmocka_unit_test(a_command_template_needs_no_examples_dir),
        cmocka_unit_test(bad_documents_are_refused),
        cmocka_unit_test(bad_texts_are_refused),
        cmocka_unit_test(bad_programs_are_refused),
        cmocka_unit_test(bad_numbers_and_choices_are_refused),
        cmocka_unit_test(plan_fields_are_in_the_public_form),
        cmocka_unit_test(serve_is_checked_and_public),
        cmocka_unit_test(every_model_form_is_accepted),
        cmocka_unit_test(bad_models_are_refused),
        cmocka_unit_test(the_params_schema_is_normalized_and_applied),
        cmocka_unit_test(bad_params_schemas_are_refused),
        cmocka_unit_test(the_list_follows_order_then_file_name),
        cmocka_unit_test(loader_names_the_bad_file),
        cmocka_unit_test(loader_refuses_a_file_too_large),
        cmocka_unit_test(no_directory_means_no_templates),
        cmocka_unit_test(every_failed_allocation_is_an_error_not_a_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
