/*
 * test_jobplan.c - unit tests of the advisor in the product
 * (server/jobs/jobplan.c): the prediction next to the measurement with the error
 * in percent, the node kinds a plan is made for (fake GPUs as CPU processes,
 * the site's largest GPUs at submit, the weakest allocated GPU and link at
 * placement, capabilities only when every node reported them), a template's
 * model in the advisor's terms, and what the ranks get at launch (the job's
 * own env wins, FSDP settings, DeepSpeed config, an explicit strategy
 * without a plan).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "jobplan.h"

static json_t *load(const char *s)
{
    json_error_t je;
    json_t *j = json_loads(s, 0, &je);

    if (j == NULL)
        fail_msg("bad test JSON: %s: %s", je.text, s);
    return j;
}

static json_int_t iget(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);

    if (b != NULL)
        v = json_object_get(v, b);
    if (!json_is_integer(v))
        fail_msg("%s.%s is not an integer", a, b ? b : "");
    return json_integer_value(v);
}

static double rget(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(json_object_get(o, a), b);

    if (!json_is_number(v))
        fail_msg("%s.%s is not a number", a, b);
    return json_number_value(v);
}

static void test_compare(void **state)
{
    json_t *pred = load("{\"param_bytes\":1000,\"grad_bytes\":1000,\"optimizer_bytes\":2000,"
                        "\"model_state_bytes\":4000,\"activation_bytes\":1150,"
                        "\"peak_allocated_bytes\":9000}");
    json_t *meas = load("{\"step\":1,\"param_bytes\":1000,\"grad_bytes\":1000,"
                        "\"optim_state_bytes\":2016,\"activation_bytes\":1000}");
    json_t *ranks = load("[{\"rank\":0,\"exit_code\":0,\"gpu_mem_peak_bytes\":10000},"
                         "{\"rank\":1,\"exit_code\":0}]");
    json_t *c;

    (void)state;
    c = jobplan_compare(pred, meas, ranks);
    assert_non_null(c);
    assert_int_equal(iget(c, "param_bytes", "predicted"), 1000);
    assert_int_equal(iget(c, "param_bytes", "measured"), 1000);
    assert_true(rget(c, "param_bytes", "error_pct") == 0.0);
    /* 100 x (1150 - 1000) / 1000 */
    assert_true(rget(c, "activation_bytes", "error_pct") == 15.0);
    /* optimizer_bytes against optim_state_bytes: -0.8 % (rounded to 0.1) */
    assert_true(rget(c, "optim_state_bytes", "error_pct") == -0.8);
    /* model states: 4000 against 1000 + 1000 + 2016 */
    assert_int_equal(iget(c, "model_state_bytes", "measured"), 4016);
    assert_true(rget(c, "model_state_bytes", "error_pct") == -0.4);
    /* No measured peak (CPU): measured and error are null. */
    assert_true(json_is_null(json_object_get(json_object_get(c, "peak_mem_bytes"), "measured")));
    assert_true(json_is_null(json_object_get(json_object_get(c, "peak_mem_bytes"), "error_pct")));
    /* The worker's per-rank GPU peak, only where reported: -10 %. */
    assert_int_equal(json_array_size(json_object_get(c, "gpu_mem_peak")), 1);
    {
        json_t *r0 = json_array_get(json_object_get(c, "gpu_mem_peak"), 0);
        assert_int_equal(json_integer_value(json_object_get(r0, "rank")), 0);
        assert_true(json_real_value(json_object_get(r0, "error_pct")) == -10.0);
    }
    json_decref(c);
    /* Nothing measured yet: every error is null, nothing fails. */
    c = jobplan_compare(pred, NULL, NULL);
    assert_non_null(c);
    assert_true(json_is_null(json_object_get(json_object_get(c, "model_state_bytes"), "measured")));
    assert_int_equal(json_array_size(json_object_get(c, "gpu_mem_peak")), 0);
    json_decref(c);
    json_decref(pred);
    json_decref(meas);
    json_decref(ranks);
}

#define CPU_NODE(name, mem)                                                                        \
    "{\"name\":\"" name "\",\"memory_mb\":" #mem ",\"gpus\":[{\"idx\":0,\"model\":\"Fake GPU\","   \
    "\"memory_mb\":81920,\"compute_capability\":\"8.0\",\"fake\":true,\"nvlink_peers\":[]},"       \
    "{\"idx\":1,\"model\":\"Fake GPU\",\"memory_mb\":81920,\"compute_capability\":\"8.0\","        \
    "\"fake\":true,\"nvlink_peers\":[]}],\"capabilities\":null,\"interconnect\":null,"             \
    "\"nccl_probe\":null}"

static void test_fake_gpus_are_cpu(void **state)
{
    json_t *nodes = load("[" CPU_NODE("c1", 8192) "]");
    json_t *alloc = NULL, *caps = NULL;
    char why[320];

    (void)state;
    assert_int_equal(jobplan_site_alloc(nodes, 2, 0, &alloc, &caps, why, sizeof(why)), RC_OK);
    assert_int_equal(iget(alloc, "gpu_memory_bytes", NULL), 0);
    assert_true(json_number_value(json_object_get(alloc, "compute_capability")) == 0.0);
    assert_int_equal(iget(alloc, "cpu_memory_per_node_bytes", NULL), INT64_C(8192) << 20);
    assert_int_equal(iget(alloc, "gpus", NULL), 2);
    assert_int_equal(iget(alloc, "gpus_per_node", NULL), 2);
    /* No capabilities reported: the advisor assumes only DDP. */
    assert_int_equal(json_object_size(caps), 0);
    assert_non_null(strstr(why, "CPU processes"));
    assert_non_null(strstr(why, "c1"));
    json_decref(alloc);
    json_decref(caps);
    json_decref(nodes);
    /* No node with a GPU: nothing to plan for. */
    nodes = load("[{\"name\":\"n\",\"memory_mb\":1,\"gpus\":[]}]");
    assert_int_equal(jobplan_site_alloc(nodes, 2, 0, &alloc, &caps, why, sizeof(why)),
                     RC_ENOTFOUND);
    assert_null(alloc);
    json_decref(nodes);
}

/* Node a: 2 x 40 GiB cc 8.0 with NVLink (12 links), PyTorch 2.1 with FSDP. */
static const char node_a[] =
    "{\"name\":\"a\",\"memory_mb\":100000,\"gpus\":["
    "{\"idx\":0,\"model\":\"A\",\"memory_mb\":40960,\"compute_capability\":\"8.0\","
    "\"fake\":false,\"nvlink_peers\":[1]},"
    "{\"idx\":1,\"model\":\"A\",\"memory_mb\":40960,\"compute_capability\":\"8.0\","
    "\"fake\":false,\"nvlink_peers\":[0]}],"
    "\"capabilities\":{\"probe\":\"ok\",\"torch\":\"2.1.0+cu121\",\"fsdp\":true,"
    "\"deepspeed\":false},"
    "\"interconnect\":{\"gpus\":[{\"index\":0,\"nvlinks\":12},{\"index\":1,\"nvlinks\":12}]}}";

/* Node b: 4 x 80 GiB cc 9.0 on PCIe 4.0 x16, one active 200 Gb/s IB port,
 * Debian's PyTorch, a probe. */
static const char node_b[] =
    "{\"name\":\"b\",\"memory_mb\":200000,\"gpus\":["
    "{\"idx\":0,\"model\":\"H\",\"memory_mb\":81920,\"compute_capability\":\"9.0\","
    "\"fake\":false,\"nvlink_peers\":[]},"
    "{\"idx\":1,\"model\":\"H\",\"memory_mb\":81920,\"compute_capability\":\"9.0\","
    "\"fake\":false,\"nvlink_peers\":[]},"
    "{\"idx\":2,\"model\":\"H\",\"memory_mb\":81920,\"compute_capability\":\"9.0\","
    "\"fake\":false,\"nvlink_peers\":[]},"
    "{\"idx\":3,\"model\":\"H\",\"memory_mb\":81920,\"compute_capability\":\"9.0\","
    "\"fake\":false,\"nvlink_peers\":[]}],"
    "\"capabilities\":{\"probe\":\"ok\",\"torch\":\"1.13.0a0\",\"fsdp\":false,"
    "\"deepspeed\":false},"
    "\"interconnect\":{\"gpus\":["
    "{\"index\":0,\"pcie\":{\"gen\":4,\"width\":16}},{\"index\":1,\"pcie\":{\"gen\":4,\"width\":16}"
    "},"
    "{\"index\":2,\"pcie\":{\"gen\":4,\"width\":16}},{\"index\":3,\"pcie\":{\"gen\":4,\"width\":16}"
    "}],"
    "\"infiniband\":[{\"hca\":\"mlx5_0\",\"state\":\"ACTIVE\",\"rate_gbps\":200.0}]},"
    "\"nccl_probe\":{\"results\":[{\"bytes\":8,\"busbw_gbs\":0.001},"
    "{\"bytes\":1073741824,\"busbw_gbs\":21.5}]}}";

static const char *link_of(const json_t *alloc, const char *where)
{
    return json_string_value(json_object_get(json_object_get(alloc, where), "link"));
}

static void test_site_largest_and_placed_weakest(void **state)
{
    char text[4096], why[320];
    json_t *nodes, *alloc = NULL, *caps = NULL;

    (void)state;
    snprintf(text, sizeof(text), "[%s,%s]", node_a, node_b);
    nodes = load(text);
    /* Submit: the largest GPUs (b), 6 GPUs as 2 nodes of 3 (the largest
     * divisor of 6 that b has). */
    assert_int_equal(jobplan_site_alloc(nodes, 6, 0, &alloc, &caps, why, sizeof(why)), RC_OK);
    assert_int_equal(iget(alloc, "gpu_memory_bytes", NULL), INT64_C(81920) << 20);
    assert_true(json_number_value(json_object_get(alloc, "compute_capability")) == 9.0);
    assert_int_equal(iget(alloc, "gpus_per_node", NULL), 3);
    assert_string_equal(link_of(alloc, "intra_node"), "pcie");
    /* PCIe 4.0 x16: 16 x 1.969 GB/s */
    assert_true(rget(alloc, "intra_node", "gbps") > 31.4);
    assert_true(rget(alloc, "intra_node", "gbps") < 31.6);
    assert_string_equal(link_of(alloc, "inter_node"), "ib");
    assert_true(rget(alloc, "inter_node", "gbps") == 25.0);
    /* More than one node: the probe measured one node only. */
    assert_null(json_object_get(alloc, "measured_busbw_gbps"));
    assert_string_equal(json_string_value(json_object_get(caps, "torch_version")), "1.13");
    assert_non_null(strstr(why, "node b"));
    json_decref(alloc);
    json_decref(caps);
    /* Two GPUs on b alone: its probe's bus bandwidth is used. */
    assert_int_equal(jobplan_site_alloc(nodes, 2, 2, &alloc, &caps, why, sizeof(why)), RC_OK);
    assert_true(rget(alloc, "measured_busbw_gbps", "intra_node") == 21.5);
    json_decref(alloc);
    json_decref(caps);

    /* Placement on both: the weakest GPU (40 GiB, 8.0), PCIe (b has no
     * NVLink), no IB (a has none), the lowest torch and no FSDP. */
    assert_int_equal(jobplan_placed_alloc(nodes, &alloc, &caps, why, sizeof(why)), RC_OK);
    assert_int_equal(iget(alloc, "gpus", NULL), 6);
    assert_int_equal(iget(alloc, "gpus_per_node", NULL), 3);
    assert_int_equal(iget(alloc, "gpu_memory_bytes", NULL), INT64_C(40960) << 20);
    assert_true(json_number_value(json_object_get(alloc, "compute_capability")) == 8.0);
    assert_null(json_object_get(alloc, "inter_node")); /* a reports no interfaces */
    assert_string_equal(json_string_value(json_object_get(caps, "torch_version")), "1.13");
    assert_true(json_is_false(json_object_get(caps, "fsdp")));
    assert_non_null(strstr(why, "6 allocated on 2 node(s)"));
    json_decref(alloc);
    json_decref(caps);
    json_decref(nodes);

    /* Node a alone: NVLink between its two GPUs, 12 links x 25 GB/s, FSDP. */
    snprintf(text, sizeof(text), "[%s]", node_a);
    nodes = load(text);
    assert_int_equal(jobplan_placed_alloc(nodes, &alloc, &caps, why, sizeof(why)), RC_OK);
    assert_string_equal(link_of(alloc, "intra_node"), "nvlink");
    assert_true(rget(alloc, "intra_node", "gbps") == 300.0);
    assert_string_equal(json_string_value(json_object_get(caps, "torch_version")), "2.1");
    assert_true(json_is_true(json_object_get(caps, "fsdp")));
    json_decref(alloc);
    json_decref(caps);
    json_decref(nodes);
}

static void test_model_from_template(void **state)
{
    json_t *t, *m;

    (void)state;
    t = load("{\"name\":\"gpt2\"}");
    m = jobplan_model_from_template(t);
    assert_string_equal(json_string_value(json_object_get(m, "name")), "gpt2");
    assert_int_equal(jobplan_model_check(m, NULL), RC_OK);
    json_decref(m);
    json_decref(t);
    t = load("{\"transformer\":{\"layers\":6,\"hidden\":512,\"heads\":8,\"ffn\":2048,"
             "\"vocab\":8192,\"seq_len\":256,\"kind\":\"encoder\"}}");
    m = jobplan_model_from_template(t);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(m, "transformer"), "arch")), "encoder");
    assert_int_equal(jobplan_model_check(m, NULL), RC_OK);
    json_decref(m);
    json_decref(t);
    t = load("{\"params\":76296,\"activation_bytes_per_sample\":4256}");
    m = jobplan_model_from_template(t);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "measured"), "params")),
                     76296);
    assert_int_equal(jobplan_model_check(m, NULL), RC_OK);
    json_decref(m);
    json_decref(t);
}

static void test_launch(void **state)
{
    json_t *plan = load("{\"config\":{\"env\":{\"TRAINYARD_STRATEGY\":\"fsdp\","
                        "\"TRAINYARD_MICRO_BATCH\":\"4\",\"TRAINYARD_PRECISION\":\"bf16\"},"
                        "\"fsdp\":{\"sharding_strategy\":\"FULL_SHARD\",\"cpu_offload\":false,"
                        "\"auto_wrap_policy\":\"size_based\",\"min_num_params\":1000},"
                        "\"deepspeed\":null}}");
    json_t *spec = load("{\"strategy\":\"auto\",\"env\":{\"TRAINYARD_PRECISION\":\"fp32\"}}");
    json_t *env = NULL, *ds = NULL;
    struct err e;

    (void)state;
    err_init(&e);
    assert_int_equal(jobplan_launch(plan, spec, &env, &ds), RC_OK);
    assert_string_equal(json_string_value(json_object_get(env, "TRAINYARD_STRATEGY")), "fsdp");
    assert_string_equal(json_string_value(json_object_get(env, "TRAINYARD_MICRO_BATCH")), "4");
    /* The job's own env wins: the plan's value is left out. */
    assert_null(json_object_get(env, "TRAINYARD_PRECISION"));
    assert_string_equal(json_string_value(json_object_get(env, "TRAINYARD_FSDP_SHARDING")),
                        "FULL_SHARD");
    assert_string_equal(json_string_value(json_object_get(env, "TRAINYARD_FSDP_CPU_OFFLOAD")), "0");
    assert_string_equal(json_string_value(json_object_get(env, "TRAINYARD_FSDP_MIN_NUM_PARAMS")),
                        "1000");
    assert_null(ds);
    json_decref(env);
    json_decref(plan);
    /* A DeepSpeed plan brings its ds_config; a split of 0 (does not fit) is left out. */
    plan = load("{\"config\":{\"env\":{\"TRAINYARD_STRATEGY\":\"zero2\",\"TRAINYARD_MICRO_BATCH\":"
                "\"0\",\"TRAINYARD_GRAD_ACCUM\":\"0\"},\"fsdp\":null,\"deepspeed\":"
                "{\"zero_optimization\":{\"stage\":2}}}}");
    assert_int_equal(jobplan_launch(plan, spec, &env, &ds), RC_OK);
    assert_null(json_object_get(env, "TRAINYARD_MICRO_BATCH"));
    assert_null(json_object_get(env, "TRAINYARD_GRAD_ACCUM"));
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(ds, "zero_optimization"), "stage")), 2);
    json_decref(env);
    json_decref(ds);
    json_decref(plan);
    json_decref(spec);
    /* No plan: an explicit strategy still reaches the ranks, auto does not. */
    spec = load("{\"strategy\":\"zero1\"}");
    assert_int_equal(jobplan_launch(NULL, spec, &env, &ds), RC_OK);
    assert_string_equal(json_string_value(json_object_get(env, "TRAINYARD_STRATEGY")), "zero1");
    assert_int_equal(json_object_size(env), 1);
    json_decref(env);
    json_decref(spec);
    spec = load("{\"strategy\":\"auto\"}");
    assert_int_equal(jobplan_launch(NULL, spec, &env, &ds), RC_OK);
    assert_int_equal(json_object_size(env), 0);
    json_decref(env);
    json_decref(spec);
}

static void test_wanted(void **state)
{
    json_t *s;

    (void)state;
    s = load("{\"strategy\":\"auto\",\"model\":{\"name\":\"gpt2\"},\"global_batch\":8}");
    assert_true(jobplan_wanted(s));
    json_object_set_new(s, "global_batch", json_null());
    assert_false(jobplan_wanted(s));
    json_decref(s);
    s = load("{\"strategy\":null,\"model\":{\"name\":\"gpt2\"},\"global_batch\":8}");
    assert_false(jobplan_wanted(s));
    json_decref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_fake_gpus_are_cpu),
        cmocka_unit_test(test_site_largest_and_placed_weakest),
        cmocka_unit_test(test_model_from_template),
        cmocka_unit_test(test_launch),
        cmocka_unit_test(test_wanted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
