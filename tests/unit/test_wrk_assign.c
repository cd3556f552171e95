/*
 * test_wrk_assign.c - assignment validation and the argv/env of every launch
 * mode (docs/agent-protocol.md, "Environment of each rank").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "assign.h"

#define BASE                                                                                       \
    "{\"attempt_id\":\"31\",\"job_id\":\"7\",\"attempt\":2,\"launcher\":\"%s\","                   \
    "\"command\":[\"/usr/bin/python3\",\"examples/ddp_mlp.py\",\"--steps\",\"200\"],"              \
    "\"env\":{\"USER_VAR\":\"x\",\"http_proxy\":\"http://"                                         \
    "p\",\"HTTPS_PROXY\":\"p\",\"RANK\":\"99\"},"                                                  \
    "\"node_rank\":1,\"nnodes\":2,\"world_size\":4,\"local_world_size\":2,"                        \
    "\"master_addr\":\"10.0.0.7\",\"master_port\":29500,"                                          \
    "\"ranks\":[{\"rank\":2,\"local_rank\":0,\"gpu_indices\":[0]},"                                \
    "{\"rank\":3,\"local_rank\":1,\"gpu_indices\":[1,2]}],"                                        \
    "\"work_dir\":\"/srv/trainyard/jobs/7\",\"checkpoint_dir\":\"/srv/trainyard/ckpt/7\","         \
    "\"resume_from\":\"/srv/trainyard/ckpt/7/step-120.pt\",\"time_limit_s\":3600,\"grace_s\":5,"   \
    "\"nccl_env\":{\"NCCL_IB_DISABLE\":\"1\"}%s}"

static struct wrk_assignment *parse_ok(const char *launcher, const char *extra)
{
    char buf[4096];
    json_error_t je;
    json_t *o;
    struct wrk_assignment *a = NULL;
    struct err e;

    err_init(&e);
    snprintf(buf, sizeof(buf), BASE, launcher, extra);
    o = json_loads(buf, 0, &je);
    assert_non_null(o);
    assert_int_equal(wrk_assignment_parse(o, &a, NULL, &e), RC_OK);
    json_decref(o);
    return a;
}

static const char *env_get(char **envp, const char *k)
{
    size_t n = strlen(k);
    for (size_t i = 0; envp[i] != NULL; i++)
        if (strncmp(envp[i], k, n) == 0 && envp[i][n] == '=')
            return envp[i] + n + 1;
    return NULL;
}

static size_t count(char **v)
{
    size_t n = 0;
    while (v[n] != NULL)
        n++;
    return n;
}

static const struct wrk_plan_opts OPTS = {
    .path = "/usr/bin:/bin",
    .home = "/home/u",
    .lang = "C.UTF-8",
    .pythonpath = NULL,
    .hostname = "10.0.0.8",
    .ds_config_path = "/srv/trainyard/jobs/7/ds_config.json",
    .torchrun = NULL,
};

static void test_native(void **state)
{
    struct wrk_assignment *a = parse_ok("native", "");
    struct wrk_plan *p = NULL;
    char **env;
    (void)state;

    assert_int_equal(a->grace_s, 5);
    assert_int_equal(a->time_limit_s, 3600);
    assert_int_equal(wrk_plan_build(a, &OPTS, &p, NULL), RC_OK);
    assert_int_equal(p->nprocs, 2);
    assert_int_equal(p->nreport, 2);
    assert_int_equal(p->ngpus, 3);
    assert_string_equal(p->procs[1].argv[0], "/usr/bin/python3");
    assert_string_equal(p->procs[1].argv[3], "200");
    assert_null(p->procs[1].argv[4]);
    env = p->procs[1].envp;
    assert_string_equal(env_get(env, "RANK"), "3"); /* the job cannot override it */
    assert_string_equal(env_get(env, "LOCAL_RANK"), "1");
    assert_string_equal(env_get(env, "WORLD_SIZE"), "4");
    assert_string_equal(env_get(env, "LOCAL_WORLD_SIZE"), "2");
    assert_string_equal(env_get(env, "NODE_RANK"), "1");
    assert_string_equal(env_get(env, "MASTER_ADDR"), "10.0.0.7");
    assert_string_equal(env_get(env, "MASTER_PORT"), "29500");
    assert_string_equal(env_get(env, "CUDA_VISIBLE_DEVICES"), "1,2");
    assert_string_equal(env_get(env, "TRAINYARD_JOB_ID"), "7");
    assert_string_equal(env_get(env, "TRAINYARD_ATTEMPT"), "2");
    assert_string_equal(env_get(env, "TRAINYARD_CHECKPOINT_DIR"), "/srv/trainyard/ckpt/7");
    assert_string_equal(env_get(env, "TRAINYARD_RESUME_FROM"), "/srv/trainyard/ckpt/7/step-120.pt");
    assert_string_equal(env_get(env, "HF_HUB_OFFLINE"), "1");
    assert_string_equal(env_get(env, "TRANSFORMERS_OFFLINE"), "1");
    assert_string_equal(env_get(env, "HF_DATASETS_OFFLINE"), "1");
    assert_string_equal(env_get(env, "USER_VAR"), "x");
    assert_string_equal(env_get(env, "NCCL_IB_DISABLE"), "1");
    assert_string_equal(env_get(env, "PATH"), "/usr/bin:/bin");
    assert_string_equal(env_get(env, "HOME"), "/home/u");
    assert_string_equal(env_get(env, "LANG"), "C.UTF-8");
    assert_null(env_get(env, "PYTHONPATH"));
    assert_null(env_get(env, "http_proxy"));
    assert_null(env_get(env, "HTTPS_PROXY"));
    assert_null(env_get(env, "TRAINYARD_DS_CONFIG"));
    /* No datasets and no output_dir (as an older server sends): an empty list. */
    assert_string_equal(env_get(env, "TRAINYARD_DATASETS"), "[]");
    assert_null(env_get(env, "TRAINYARD_DATA"));
    assert_null(env_get(env, "TRAINYARD_OUTPUT_DIR"));
    /* 3 inherited + 2 job/nccl + 8 TRAINYARD/offline + 8 per rank, each once */
    assert_int_equal(count(env), 21);
    assert_string_equal(env_get(p->procs[0].envp, "CUDA_VISIBLE_DEVICES"), "0");
    assert_int_equal(p->procs[0].rank, 2);
    wrk_plan_free(p);
    wrk_assignment_free(a);
}

/* The job's own env wins over the server's nccl_env, which fills in the rest. */
static void test_user_env_beats_nccl_env(void **state)
{
    char buf[4096];
    json_t *o;
    struct wrk_assignment *a = NULL;
    struct wrk_plan *p = NULL;
    struct err e;
    char **env;

    (void)state;
    err_init(&e);
    snprintf(buf, sizeof(buf), BASE, "native", "");
    o = json_loads(buf, 0, NULL);
    assert_non_null(o);
    json_object_set_new(json_object_get(o, "env"), "NCCL_IB_DISABLE", json_string("0"));
    json_object_set_new(json_object_get(o, "nccl_env"), "NCCL_SOCKET_IFNAME", json_string("=eth0"));
    assert_int_equal(wrk_assignment_parse(o, &a, NULL, &e), RC_OK);
    json_decref(o);
    assert_int_equal(wrk_plan_build(a, &OPTS, &p, &e), RC_OK);
    env = p->procs[0].envp;
    assert_string_equal(env_get(env, "NCCL_IB_DISABLE"), "0");
    assert_string_equal(env_get(env, "NCCL_SOCKET_IFNAME"), "=eth0");
    wrk_plan_free(p);
    wrk_assignment_free(a);
}

static void test_torchrun(void **state)
{
    struct wrk_assignment *a = parse_ok("torchrun", "");
    struct wrk_plan *p = NULL;
    char **v;
    (void)state;

    assert_int_equal(wrk_plan_build(a, &OPTS, &p, NULL), RC_OK);
    assert_int_equal(p->nprocs, 1);
    assert_int_equal(p->nreport, 2);
    v = p->procs[0].argv;
    assert_string_equal(v[0], "torchrun");
    assert_string_equal(v[1], "--nnodes=2");
    assert_string_equal(v[2], "--node_rank=1");
    assert_string_equal(v[3], "--nproc_per_node=2");
    assert_string_equal(v[4], "--master_addr=10.0.0.7");
    assert_string_equal(v[5], "--master_port=29500");
    /* Flags whose values parse on Python 3.11 too; torchrun's defaults do not. */
    assert_string_equal(v[6], "--role=trainyard");
    assert_string_equal(v[7], "--redirects=1");
    assert_string_equal(v[8], "--tee=1");
    assert_string_equal(v[9], "--log_dir=/srv/trainyard/jobs/7/torchrun_logs");
    /* The command as given, its stderr into its stdout (the one stream teed). */
    assert_string_equal(v[10], "--no_python");
    assert_string_equal(v[11], "/bin/sh");
    assert_string_equal(v[12], "-c");
    assert_string_equal(v[13], "unset PYTHONUNBUFFERED; exec \"$@\" 2>&1");
    assert_string_equal(v[14], "sh");
    assert_string_equal(v[15], "/usr/bin/python3");
    assert_string_equal(v[16], "examples/ddp_mlp.py");
    assert_string_equal(v[18], "200");
    assert_null(v[19]);
    assert_string_equal(env_get(p->procs[0].envp, "PYTHONUNBUFFERED"), "1");
    assert_int_equal(p->procs[0].torchrun_tee, 1);
    assert_int_equal(p->report_ranks[0], 2); /* by local rank: "[trainyard1]:" is rank 3 */
    assert_int_equal(p->report_ranks[1], 3);
    assert_int_equal(p->procs[0].rank, 2);
    wrk_plan_free(p);
    wrk_assignment_free(a);
    /* The job's own choice reaches torchrun and its ranks. */
    a = parse_ok("torchrun", ",\"env\":{\"PYTHONUNBUFFERED\":\"\"}");
    assert_int_equal(wrk_plan_build(a, &OPTS, &p, NULL), RC_OK);
    assert_string_equal(p->procs[0].argv[13], "exec \"$@\" 2>&1");
    assert_string_equal(env_get(p->procs[0].envp, "PYTHONUNBUFFERED"), "");
    assert_null(env_get(p->procs[0].envp, "RANK"));
    assert_string_equal(env_get(p->procs[0].envp, "CUDA_VISIBLE_DEVICES"), "0,1,2");
    assert_string_equal(env_get(p->procs[0].envp, "TRAINYARD_JOB_ID"), "7");
    wrk_plan_free(p);
    wrk_assignment_free(a);
}

static void test_deepspeed(void **state)
{
    struct wrk_assignment *a =
        parse_ok("deepspeed", ",\"deepspeed_config\":{\"zero_optimization\":{\"stage\":2}}");
    struct wrk_plan *p = NULL;
    (void)state;

    assert_string_equal(a->ds_config, "{\"zero_optimization\":{\"stage\":2}}");
    assert_int_equal(wrk_plan_build(a, &OPTS, &p, NULL), RC_OK);
    assert_int_equal(p->nprocs, 2);
    assert_string_equal(env_get(p->procs[0].envp, "TRAINYARD_DS_CONFIG"),
                        "/srv/trainyard/jobs/7/ds_config.json");
    assert_string_equal(env_get(p->procs[0].envp, "RANK"), "2");
    assert_non_null(wrk_default_ds_config());
    wrk_plan_free(p);
    wrk_assignment_free(a);
}

static void test_horovod(void **state)
{
    struct wrk_assignment *a = parse_ok("horovod", "");
    struct wrk_plan *p = NULL;
    char **env;
    (void)state;

    assert_int_equal(wrk_plan_build(a, &OPTS, &p, NULL), RC_OK);
    env = p->procs[1].envp;
    assert_string_equal(env_get(env, "HOROVOD_GLOO_RENDEZVOUS_ADDR"), "10.0.0.7");
    assert_string_equal(env_get(env, "HOROVOD_GLOO_RENDEZVOUS_PORT"), "29500");
    assert_string_equal(env_get(env, "HOROVOD_CONTROLLER"), "gloo");
    assert_string_equal(env_get(env, "HOROVOD_CPU_OPERATIONS"), "gloo");
    assert_string_equal(env_get(env, "HOROVOD_RANK"), "3");
    assert_string_equal(env_get(env, "HOROVOD_SIZE"), "4");
    assert_string_equal(env_get(env, "HOROVOD_LOCAL_RANK"), "1");
    assert_string_equal(env_get(env, "HOROVOD_LOCAL_SIZE"), "2");
    assert_string_equal(env_get(env, "HOROVOD_CROSS_RANK"), "1");
    assert_string_equal(env_get(env, "HOROVOD_CROSS_SIZE"), "2");
    assert_string_equal(env_get(env, "HOROVOD_HOSTNAME"), "10.0.0.8");
    wrk_plan_free(p);
    wrk_assignment_free(a);
}

/* TRAINYARD_DATA (the first dataset), TRAINYARD_DATASETS (all, as JSON) and
 * TRAINYARD_OUTPUT_DIR reach every rank, and a job's env cannot set them. */
static void test_data_and_output_env(void **state)
{
    struct wrk_assignment *a = parse_ok(
        "native", ",\"output_dir\":\"/srv/trainyard/out/7\",\"datasets\":[\"/srv/trainyard/data/"
                  "defects\",\"/srv/trainyard/data/a:b \\\"c\\\"\"]");
    struct wrk_plan *p = NULL;
    json_t *list;
    (void)state;

    assert_string_equal(a->output_dir, "/srv/trainyard/out/7");
    assert_int_equal(wrk_plan_build(a, &OPTS, &p, NULL), RC_OK);
    for (size_t i = 0; i < p->nprocs; i++) {
        char **env = p->procs[i].envp;
        assert_string_equal(env_get(env, "TRAINYARD_DATA"), "/srv/trainyard/data/defects");
        assert_string_equal(env_get(env, "TRAINYARD_OUTPUT_DIR"), "/srv/trainyard/out/7");
        list = json_loads(env_get(env, "TRAINYARD_DATASETS"), 0, NULL);
        assert_int_equal(json_array_size(list), 2);
        assert_string_equal(json_string_value(json_array_get(list, 1)),
                            "/srv/trainyard/data/a:b \"c\"");
        json_decref(list);
    }
    wrk_plan_free(p);
    wrk_assignment_free(a);
    /* The job's env names them in vain: the platform's values win. */
    a = parse_ok("torchrun",
                 ",\"output_dir\":\"/o\",\"datasets\":[\"/d\"],"
                 "\"env\":{\"TRAINYARD_DATA\":\"/elsewhere\",\"TRAINYARD_OUTPUT_DIR\":\"/x\"}");
    assert_int_equal(wrk_plan_build(a, &OPTS, &p, NULL), RC_OK);
    assert_string_equal(env_get(p->procs[0].envp, "TRAINYARD_DATA"), "/d");
    assert_string_equal(env_get(p->procs[0].envp, "TRAINYARD_OUTPUT_DIR"), "/o");
    wrk_plan_free(p);
    wrk_assignment_free(a);
}

static void test_invalid(void **state)
{
    static const char *bad[] = {
        "{\"attempt_id\":\"../x\"}",
        "{\"attempt_id\":\"31\",\"job_id\":\"7\",\"command\":[],\"world_size\":1}",
        "{\"attempt_id\":\"31\",\"job_id\":\"7\",\"launcher\":\"mpirun\",\"command\":[\"a\"]}",
        "{\"attempt_id\":\"31\",\"job_id\":\"7\",\"command\":[\"a\"],\"env\":{\"A B\":\"x\"},"
        "\"world_size\":1}",
        "{\"attempt_id\":\"31\",\"job_id\":\"7\",\"command\":[\"a\"],\"world_size\":1,\"nnodes\":1,"
        "\"node_rank\":0,\"local_world_size\":1,\"master_addr\":\"h\",\"master_port\":0}",
        "{\"attempt_id\":\"31\",\"job_id\":\"7\",\"command\":[\"a\"],\"world_size\":1,\"nnodes\":1,"
        "\"node_rank\":0,\"local_world_size\":1,\"master_addr\":\"h\",\"master_port\":1,"
        "\"ranks\":[{\"rank\":0,\"local_rank\":0}],\"work_dir\":\"rel\",\"checkpoint_dir\":\"/c\"}",
        "{\"attempt_id\":\"31\",\"job_id\":\"7\",\"command\":[\"a\"],\"world_size\":2,\"nnodes\":1,"
        "\"node_rank\":0,\"local_world_size\":2,\"master_addr\":\"h\",\"master_port\":1,"
        "\"ranks\":[{\"rank\":0,\"local_rank\":0},{\"rank\":0,\"local_rank\":1}],"
        "\"work_dir\":\"/w\",\"checkpoint_dir\":\"/c\"}",
        "{\"attempt_id\":\"31\",\"job_id\":\"7\",\"command\":[\"a\"],\"world_size\":1,\"nnodes\":1,"
        "\"node_rank\":0,\"local_world_size\":1,\"master_addr\":\"h\",\"master_port\":1,"
        "\"ranks\":[{\"rank\":0,\"local_rank\":0}],\"work_dir\":\"/w\",\"output_dir\":\"o\","
        "\"checkpoint_dir\":\"/c\"}",
        "[]",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_error_t je;
        json_t *o = json_loads(bad[i], 0, &je);
        struct wrk_assignment *a = NULL;
        char *id = NULL;
        struct err e;
        err_init(&e);
        assert_non_null(o);
        assert_int_equal(wrk_assignment_parse(o, &a, &id, &e), RC_EINVAL);
        assert_null(a);
        assert_true(e.message[0] != '\0');
        if (i > 0 && i < 8)
            assert_string_equal(id, "31"); /* reportable */
        free(id);
        json_decref(o);
    }
}

/* "unix_account": optional; a valid account name, never "self" or anything else. */
static void test_unix_account(void **state)
{
    static const char *bad[] = {",\"unix_account\":\"Alice\"", ",\"unix_account\":\"\"",
                                ",\"unix_account\":\"self\"", ",\"unix_account\":\"a/b\"",
                                ",\"unix_account\":5"};
    struct wrk_assignment *a;
    char buf[4096];

    (void)state;
    a = parse_ok("native", "");
    assert_null(a->unix_account);
    wrk_assignment_free(a);
    a = parse_ok("native", ",\"unix_account\":\"ml-team\"");
    assert_string_equal(a->unix_account, "ml-team");
    wrk_assignment_free(a);
    a = parse_ok("native", ",\"unix_account\":null");
    assert_null(a->unix_account);
    wrk_assignment_free(a);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_error_t je;
        json_t *o;
        struct err e;
        a = NULL;
        err_init(&e);
        snprintf(buf, sizeof(buf), BASE, "native", bad[i]);
        o = json_loads(buf, 0, &je);
        assert_non_null(o);
        assert_int_equal(wrk_assignment_parse(o, &a, NULL, &e), RC_EINVAL);
        assert_string_equal(e.field, "unix_account");
        assert_null(a);
        json_decref(o);
    }
}

/* The advisor's plan_env (server/jobs/jobplan.h): TRAINYARD_* names for every rank, the
 * protocol's own variables still win; a DeepSpeed plan's config under the
 * native launcher gets TRAINYARD_DS_CONFIG. */
static void test_plan_env(void **state)
{
    struct wrk_assignment *a = parse_ok(
        "native", ",\"plan_env\":{\"TRAINYARD_STRATEGY\":\"zero1\",\"TRAINYARD_MICRO_BATCH\":\"4\","
                  "\"TRAINYARD_JOB_ID\":\"666\"},\"deepspeed_config\":{\"zero_optimization\":"
                  "{\"stage\":2}}");
    struct wrk_plan *p = NULL;
    char **env;
    (void)state;

    assert_int_equal(a->nplan_env, 3);
    assert_int_equal(wrk_plan_build(a, &OPTS, &p, NULL), RC_OK);
    env = p->procs[1].envp;
    assert_string_equal(env_get(env, "TRAINYARD_STRATEGY"), "zero1");
    assert_string_equal(env_get(env, "TRAINYARD_MICRO_BATCH"), "4");
    assert_string_equal(env_get(env, "TRAINYARD_JOB_ID"), "7"); /* the protocol's */
    assert_string_equal(env_get(env, "USER_VAR"), "x");
    assert_string_equal(env_get(env, "TRAINYARD_DS_CONFIG"),
                        "/srv/trainyard/jobs/7/ds_config.json");
    wrk_plan_free(p);
    wrk_assignment_free(a);
    {
        char buf[4096];
        json_t *o;
        struct err e;
        err_init(&e);
        snprintf(buf, sizeof(buf), BASE, "native", ",\"plan_env\":{\"LD_PRELOAD\":\"/x.so\"}");
        o = json_loads(buf, 0, NULL);
        assert_non_null(o);
        a = NULL;
        assert_int_equal(wrk_assignment_parse(o, &a, NULL, &e), RC_EINVAL);
        assert_null(a);
        assert_string_equal(e.field, "plan_env");
        json_decref(o);
    }
}

static void test_ids(void **state)
{
    (void)state;
    assert_true(wrk_id_valid("31"));
    assert_true(wrk_id_valid("a-b_c.d"));
    assert_false(wrk_id_valid(""));
    assert_false(wrk_id_valid(".."));
    assert_false(wrk_id_valid("a/b"));
    assert_false(wrk_id_valid("a b"));
    assert_false(wrk_id_valid(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_native),    cmocka_unit_test(test_user_env_beats_nccl_env),
        cmocka_unit_test(test_plan_env),  cmocka_unit_test(test_torchrun),
        cmocka_unit_test(test_deepspeed), cmocka_unit_test(test_horovod),
        cmocka_unit_test(test_invalid),   cmocka_unit_test(test_unix_account),
        cmocka_unit_test(test_ids),       cmocka_unit_test(test_data_and_output_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
