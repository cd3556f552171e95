/*
 * test_advisor_json.c - the advisor's JSON layer (advisor/advisor_json.h):
 * refusals that name the field, the emitted configs (DeepSpeed's
 * train_batch_size = micro x accumulation x data-parallel degree, fp16 with
 * loss scaling below compute capability 8.0, FSDP settings, the CPU's gloo
 * and fp32, the TRAINYARD_* env), and allocation failure at every jansson
 * allocation of adv_json_advise() (json_set_alloc_funcs with a counter):
 * each fails cleanly with RC_ENOMEM and no leak (ASan checks at exit).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "advisor_json.h"

#define A100                                                                                       \
    "\"allocation\":{\"gpus\":8,\"gpus_per_node\":8,\"gpu_memory_bytes\":85899345920,"             \
    "\"compute_capability\":\"8.0\",\"intra_node\":{\"link\":\"nvlink\",\"gbps\":300},"            \
    "\"inter_node\":{\"link\":\"ib\",\"gbps\":100},\"cpu_memory_per_node_bytes\":1099511627776}"
#define CAPS_ALL                                                                                   \
    "\"capabilities\":{\"torch_version\":\"2.1.0+cu121\",\"fsdp\":true,\"deepspeed\":true}"

static json_t *load(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &je);

    if (j == NULL)
        fail_msg("bad test JSON: %s: %s", je.text, text);
    return j;
}

/* Advise on text; returns the plan (new reference) or fails the test. */
static json_t *advise(const char *text)
{
    json_t *in = load(text), *out = NULL;
    struct err e;

    err_init(&e);
    if (adv_json_advise(in, &out, &e) != RC_OK)
        fail_msg("refused: %s (%s: %s)", e.message, e.field, e.detail);
    json_decref(in);
    return out;
}

static void refused(const char *text, const char *field, const char *words)
{
    json_t *in = load(text), *out = NULL;
    struct err e;

    err_init(&e);
    assert_int_equal(adv_json_advise(in, &out, &e), RC_EINVAL);
    assert_null(out);
    assert_string_equal(e.field, field);
    if (strstr(e.message, words) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", e.message, words);
    json_decref(in);
}

static void test_refusals(void **state)
{
    (void)state;
    refused("[]", "", "must be a JSON object");
    refused("{\"model\":{\"name\":\"gpt2\"},\"global_batch\":8,\"zz\":1,\"gpu\":2," A100 "}", "gpu",
            "unknown field \"gpu\"");
    refused("{\"global_batch\":8," A100 "}", "model", "model is required");
    refused("{\"model\":{\"name\":\"gpt2\"}," A100 "}", "global_batch", "global_batch is required");
    refused("{\"model\":{\"name\":\"gpt2\"},\"global_batch\":\"8\"," A100 "}", "global_batch",
            "integer");
    refused("{\"model\":{\"name\":\"gpt-9\"},\"global_batch\":8," A100 "}", "model.name",
            "llama-2-7b");
    refused("{\"model\":{\"name\":\"gpt2\",\"measured\":{}},\"global_batch\":8," A100 "}", "model",
            "exactly one");
    refused(
        "{\"model\":{\"transformer\":{\"arch\":\"decoder\",\"layers\":2,\"hidden\":64,"
        "\"heads\":4,\"ffn\":256,\"vocab\":100,\"seq_len\":32,\"act\":1}},\"global_batch\":8," A100
        "}",
        "model.transformer.act", "unknown field");
    refused("{\"model\":{\"transformer\":{\"arch\":\"decoder\",\"layers\":2,\"hidden\":64,"
            "\"heads\":5,\"ffn\":256,\"vocab\":100,\"seq_len\":32}},\"global_batch\":8," A100 "}",
            "model.transformer.heads", "divide");
    refused("{\"model\":{\"measured\":{\"params\":1000,\"activation_bytes_per_sample\":10,"
            "\"largest_layer_params\":2000}},\"global_batch\":8," A100 "}",
            "model.measured.largest_layer_params", "from 0 to 1000");
    refused("{\"model\":{\"name\":\"gpt2\"},\"global_batch\":8,\"allocation\":{\"gpus\":8,"
            "\"gpus_per_node\":8,\"gpu_memory_bytes\":1,\"compute_capability\":\"8\"}}",
            "allocation.compute_capability", "M.m");
    refused("{\"model\":{\"name\":\"gpt2\"},\"global_batch\":8,\"allocation\":{\"gpus\":8,"
            "\"gpus_per_node\":8,\"gpu_memory_bytes\":1,\"compute_capability\":8.0,"
            "\"intra_node\":{\"link\":\"nvlink\",\"speed\":3}}}",
            "allocation.intra_node.speed", "unknown field");
    refused("{\"model\":{\"name\":\"gpt2\"},\"global_batch\":8,\"allocation\":{\"gpus\":8,"
            "\"gpus_per_node\":8,\"gpu_memory_bytes\":1,\"compute_capability\":8.0,"
            "\"intra_node\":{\"link\":\"nvswitch\",\"gbps\":3}}}",
            "allocation.intra_node.link", "nvlink");
    refused("{\"model\":{\"name\":\"gpt2\"},\"global_batch\":8," A100
            ",\"capabilities\":{\"torch_version\":\"latest\"}}",
            "capabilities.torch_version", "version");
    refused("{\"model\":{\"name\":\"gpt2\"},\"global_batch\":8," A100 ",\"strategy\":\"zero4\"}",
            "strategy", "zero3_offload_all");
    refused("{\"model\":{\"name\":\"gpt2\"},\"global_batch\":8,\"allocation\":{\"gpus\":6,"
            "\"gpus_per_node\":4,\"gpu_memory_bytes\":1,\"compute_capability\":8.0}}",
            "allocation.gpus", "multiple of gpus_per_node");
}

static json_int_t iget(const json_t *o, const char *path)
{
    char buf[128], *save = NULL, *tok;
    const json_t *v = o;

    snprintf(buf, sizeof(buf), "%s", path);
    for (tok = strtok_r(buf, ".", &save); tok != NULL; tok = strtok_r(NULL, ".", &save))
        v = json_object_get(v, tok);
    if (!json_is_integer(v))
        fail_msg("%s is not an integer", path);
    return json_integer_value(v);
}

static const char *sget(const json_t *o, const char *path)
{
    char buf[128], *save = NULL, *tok;
    const json_t *v = o;

    snprintf(buf, sizeof(buf), "%s", path);
    for (tok = strtok_r(buf, ".", &save); tok != NULL; tok = strtok_r(NULL, ".", &save))
        v = json_object_get(v, tok);
    if (!json_is_string(v))
        fail_msg("%s is not a string", path);
    return json_string_value(v);
}

static void test_deepspeed_config(void **state)
{
    json_t *p = advise("{\"model\":{\"name\":\"gpt2-xl\"},\"global_batch\":240," A100 "," CAPS_ALL
                       ",\"strategy\":\"zero2\"}");
    const json_t *ds = json_object_get(json_object_get(p, "config"), "deepspeed");
    json_t *env;

    (void)state;
    assert_string_equal(sget(p, "status"), "ok");
    assert_true(json_is_object(ds));
    assert_int_equal(iget(ds, "zero_optimization.stage"), 2);
    assert_int_equal(iget(ds, "train_batch_size"), iget(ds, "train_micro_batch_size_per_gpu") *
                                                       iget(ds, "gradient_accumulation_steps") *
                                                       iget(p, "dp_degree"));
    assert_int_equal(iget(ds, "train_batch_size"), iget(p, "global_batch.reached"));
    assert_int_equal(iget(ds, "train_micro_batch_size_per_gpu"), iget(p, "micro_batch"));
    assert_true(json_is_true(json_object_get(json_object_get(ds, "bf16"), "enabled")));
    assert_null(json_object_get(ds, "fp16"));
    assert_null(json_object_get(json_object_get(ds, "zero_optimization"), "offload_optimizer"));
    assert_true(json_is_null(json_object_get(json_object_get(p, "config"), "fsdp")));
    env = json_object_get(json_object_get(p, "config"), "env");
    assert_string_equal(sget(env, "TRAINYARD_STRATEGY"), "zero2");
    assert_string_equal(sget(env, "TRAINYARD_ENGINE"), "deepspeed");
    assert_string_equal(sget(env, "TRAINYARD_PRECISION"), "bf16");
    assert_int_equal(strtoll(sget(env, "TRAINYARD_MICRO_BATCH"), NULL, 10), iget(p, "micro_batch"));
    assert_int_equal(strtoll(sget(env, "TRAINYARD_GRAD_ACCUM"), NULL, 10), iget(p, "grad_accum"));
    assert_int_equal(strtoll(sget(env, "TRAINYARD_PRED_ACTIVATION_BYTES"), NULL, 10),
                     iget(p, "predicted.activation_bytes"));
    /* The saved activations leave out the returned 16-bit logits, s x V x 2
     * bytes per sample, which memory.activations holds. */
    assert_int_equal(iget(p, "memory.activations") - iget(p, "predicted.activation_bytes"),
                     (json_int_t)iget(p, "micro_batch") * iget(p, "model.seq_len") * 50257 * 2);
    assert_int_equal(strtoll(sget(env, "TRAINYARD_PRED_PEAK_BYTES"), NULL, 10),
                     iget(p, "predicted.peak_allocated_bytes"));
    json_decref(p);

    /* Offload: both offload sections, stage 3. */
    p = advise("{\"model\":{\"name\":\"llama-2-13b\"},\"global_batch\":8," A100 "," CAPS_ALL
               ",\"strategy\":\"zero3_offload_all\"}");
    ds = json_object_get(json_object_get(p, "config"), "deepspeed");
    assert_int_equal(iget(ds, "zero_optimization.stage"), 3);
    assert_string_equal(sget(ds, "zero_optimization.offload_param.device"), "cpu");
    assert_string_equal(sget(ds, "zero_optimization.offload_optimizer.device"), "cpu");
    assert_true(iget(p, "host_memory_per_node_bytes") > 0);
    json_decref(p);
}

/* Compute capability 7.0: fp16 with dynamic loss scaling in the DeepSpeed config. */
static void test_fp16(void **state)
{
    json_t *p = advise("{\"model\":{\"name\":\"bert-large\"},\"global_batch\":64,\"allocation\":"
                       "{\"gpus\":8,\"gpus_per_node\":8,\"gpu_memory_bytes\":34359738368,"
                       "\"compute_capability\":7.0}," CAPS_ALL ",\"strategy\":\"zero1\"}");
    const json_t *ds = json_object_get(json_object_get(p, "config"), "deepspeed");

    (void)state;
    assert_string_equal(sget(p, "precision"), "fp16");
    assert_true(json_is_true(json_object_get(p, "loss_scaling")));
    assert_int_equal(iget(ds, "fp16.loss_scale"), 0);
    assert_null(json_object_get(ds, "bf16"));
    json_decref(p);
}

static void test_fsdp_settings(void **state)
{
    json_t *p =
        advise("{\"model\":{\"name\":\"llama-2-7b\",\"seq_len\":4096},\"global_batch\":64," A100
               ",\"capabilities\":{\"torch_version\":\"2.2\",\"fsdp\":true}}");
    const json_t *f = json_object_get(json_object_get(p, "config"), "fsdp");

    (void)state;
    assert_string_equal(sget(p, "strategy"), "fsdp");
    assert_string_equal(sget(f, "sharding_strategy"), "FULL_SHARD");
    assert_string_equal(sget(f, "auto_wrap_policy"), "transformer_block");
    assert_string_equal(sget(f, "mixed_precision.param_dtype"), "bfloat16");
    assert_true(json_is_null(json_object_get(json_object_get(p, "config"), "deepspeed")));
    assert_string_equal(sget(json_object_get(json_object_get(p, "config"), "env"),
                             "TRAINYARD_ACTIVATION_CHECKPOINTING"),
                        json_is_true(json_object_get(p, "activation_checkpointing")) ? "1" : "0");
    json_decref(p);
}

/* CPU workers (Debian's torch 1.13): DDP over gloo in fp32; ZeRO-1 is torch's. */
static void test_cpu(void **state)
{
#define CPU_REQ(extra)                                                                             \
    "{\"model\":{\"name\":\"resnet50\"},\"global_batch\":32,\"allocation\":{\"gpus\":2,"           \
    "\"gpus_per_node\":1,\"gpu_memory_bytes\":0,\"compute_capability\":0,"                         \
    "\"cpu_memory_per_node_bytes\":17179869184},\"capabilities\":{\"torch_version\":"              \
    "\"1.13.1\",\"fsdp\":false,\"deepspeed\":false}" extra "}"
    json_t *p, *env;

    (void)state;
    p = advise(CPU_REQ(""));
    assert_string_equal(sget(p, "strategy"), "ddp");
    assert_string_equal(sget(p, "precision"), "fp32");
    assert_string_equal(sget(p, "config.ddp.backend"), "gloo");
    assert_true(json_is_null(json_object_get(json_object_get(p, "config"), "deepspeed")));
    env = json_object_get(json_object_get(p, "config"), "env");
    assert_string_equal(sget(env, "TRAINYARD_DDP_BUCKET_VIEW"), "1");
    json_decref(p);
    p = advise(CPU_REQ(",\"strategy\":\"zero1\""));
    assert_string_equal(sget(p, "engine"), "torch");
    assert_true(json_is_true(json_object_get(json_object_get(json_object_get(p, "config"), "ddp"),
                                             "zero_redundancy_optimizer")));
    json_decref(p);
}

/* Nothing fits: does_not_fit with the smallest allocation and the reasons. */
static void test_no_fit(void **state)
{
    json_t *p = advise("{\"model\":{\"name\":\"llama-2-13b\"},\"global_batch\":8,\"allocation\":"
                       "{\"gpus\":1,\"gpus_per_node\":8,\"gpu_memory_bytes\":25769803776,"
                       "\"compute_capability\":\"8.6\"},\"capabilities\":{\"torch_version\":"
                       "\"2.1\",\"fsdp\":true}}");
    const json_t *sm = json_object_get(p, "smallest_allocation");

    (void)state;
    assert_string_equal(sget(p, "status"), "does_not_fit");
    assert_true(iget(sm, "gpus") > 1);
    assert_true(strlen(sget(p, "reason.zh-CN")) > 0);
    assert_non_null(strstr(sget(p, "reason.en"), "Nothing fits"));
    json_decref(p);
}

/* ---- allocation failures ---- */

static long fail_at = -1, nalloc; /* the allocation that fails; -1 none (test only) */
static bool failed;

static void *count_malloc(size_t n)
{
    if (fail_at >= 0 && ++nalloc == fail_at) {
        failed = true;
        return NULL;
    }
    return malloc(n);
}

static void test_oom(void **state)
{
    json_t *in;
    long n;

    (void)state;
    json_set_alloc_funcs(count_malloc, free);
    in = load("{\"model\":{\"name\":\"gpt2\"},\"global_batch\":60," A100 "," CAPS_ALL
              ",\"strategy\":\"zero3_offload_all\"}");
    for (n = 1;; n++) {
        json_t *out = NULL;
        struct err e;
        enum rc rc;

        err_init(&e);
        fail_at = n;
        nalloc = 0;
        failed = false;
        rc = adv_json_advise(in, &out, &e);
        fail_at = -1;
        if (!failed) {
            assert_int_equal(rc, RC_OK);
            assert_non_null(out);
            json_decref(out);
            break;
        }
        if (rc != RC_ENOMEM || out != NULL)
            fail_msg("allocation %ld failed: rc %d, out %p", n, rc, (void *)out);
        assert_string_equal(e.message, "internal error");
    }
    assert_true(n > 100); /* it did reach the renderer's allocations */
    json_decref(in);
    json_set_alloc_funcs(malloc, free);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals), cmocka_unit_test(test_deepspeed_config),
        cmocka_unit_test(test_fp16),     cmocka_unit_test(test_fsdp_settings),
        cmocka_unit_test(test_cpu),      cmocka_unit_test(test_no_fit),
        cmocka_unit_test(test_oom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
