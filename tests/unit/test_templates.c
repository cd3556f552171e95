/*
 * test_templates.c - unit tests of the job templates (server/templates.c):
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

#include "templates.h"

#define EXAMPLES "/opt/ty/examples"

#define BASE                                                                                       \
    "\"id\":\"demo\",\"name\":{\"zh-CN\":\"演示\",\"en\":\"Demo\"},"                             \
    "\"description\":{\"zh-CN\":\"说明\",\"en\":\"About\"},\"industry\":\"general\",\"gpus\":2"

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

static void repo_templates_load_and_offer_runnable_jobs(void **state)
{
    struct tpl_set *set = NULL;
    struct err e;
    json_t *list, *job, *cmd, *sleep = NULL;
    char examples[1024], script[1100];
    struct stat st;

    (void)state;
    snprintf(examples, sizeof(examples), "%s/examples", TY_SOURCE_DIR);
    err_init(&e);
    if (tpl_set_load(TY_SOURCE_DIR "/templates", examples, &set, &e) != RC_OK)
        fail_msg("the repository's templates do not load: %s (field %s)", e.message, e.field);
    assert_int_equal(tpl_set_count(set), 2);
    list = tpl_set_list(set);
    /* The dashboard offers the first one first: the DDP demo. */
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "id")),
                        "ddp-mlp-demo");
    job = json_object_get(json_array_get(list, 0), "job");
    cmd = json_object_get(job, "command");
    assert_string_equal(str_at(cmd, 0), "/usr/bin/python3");
    /* An absolute path that exists: the job's working directory is not the
     * repository, so a relative one would not be found (issue 13). */
    snprintf(script, sizeof(script), "%s/ddp_mlp.py", examples);
    assert_string_equal(str_at(cmd, 1), script);
    assert_int_equal(stat(str_at(cmd, 1), &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(job, "resources"), "gpus")),
                     2);
    assert_string_equal(json_string_value(json_object_get(job, "template")), "ddp-mlp-demo");
    assert_null(json_object_get(job, "team"));
    assert_int_equal(tpl_set_get(set, "sleep-test", &sleep), RC_OK);
    assert_true(json_equal(sleep, json_array_get(list, 1)));
    cmd = json_object_get(json_object_get(sleep, "job"), "command");
    assert_int_equal(json_array_size(cmd), 2);
    assert_string_equal(str_at(cmd, 0), "/bin/sleep");
    assert_string_equal(str_at(cmd, 1), "60");
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
    const char *text = "{" BASE ",\"script\":\"a.py\",\"args\":[\"--steps\",\"9\"],"
                       "\"gpus_per_node\":1}";
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
        cmocka_unit_test(loader_names_the_bad_file),
        cmocka_unit_test(loader_refuses_a_file_too_large),
        cmocka_unit_test(no_directory_means_no_templates),
        cmocka_unit_test(every_failed_allocation_is_an_error_not_a_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
