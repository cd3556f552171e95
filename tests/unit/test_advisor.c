/*
 * test_advisor.c - the strategy advisor (advisor/advisor.h): the published
 * figures it is built on (ZeRO paper, DeepSpeed's estimators, Korthikanti
 * et al.'s activation counts, the models' parameter counts), the strategy
 * order at its boundaries (a byte either side, FSDP or DeepSpeed missing,
 * an uneven batch, compute capability 7.0 against 8.0, CPU), explicit
 * overrides, the smallest allocation when nothing fits, input refusals, and
 * a randomized check of the plan's invariants.
 *
 * Only published numbers are written down here; everything else is
 * computed from the library's own answers (boundaries are searched for).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "advisor.h"

#define GIB (1024.0 * 1024 * 1024)

static struct adv_plan plan; /* 20 KiB: not on the stack of every test */

/* n A100-like GPUs (mem GiB, cc) in nodes of 8, NVLink, IB, 1 TiB of host memory. */
static void gpu_req(struct adv_request *r, const char *model, int batch, int n, double mem_gib,
                    int cc10)
{
    adv_request_init(r);
    r->model.kind = ADV_MODEL_KNOWN;
    snprintf(r->model.name, sizeof(r->model.name), "%s", model);
    r->global_batch = batch;
    r->alloc.gpus = n;
    r->alloc.gpus_per_node = n < 8 ? n : 8;
    r->alloc.gpu_mem_bytes = (uint64_t)(mem_gib * GIB);
    r->alloc.cc10 = cc10;
    r->alloc.intra = ADV_INTRA_NVLINK;
    r->alloc.intra_gbps = 300;
    r->alloc.inter = ADV_INTER_IB;
    r->alloc.inter_gbps = 100;
    r->alloc.cpu_mem_per_node_bytes = (uint64_t)(1024 * GIB);
    r->caps.torch_major = 2;
    r->caps.torch_minor = 1;
    r->caps.fsdp = true;
    r->caps.deepspeed = true;
}

static void must_plan(const struct adv_request *r)
{
    struct err e;

    err_init(&e);
    if (adv_plan(r, &plan, &e) != RC_OK)
        fail_msg("adv_plan: %s (%s)", e.message, e.field);
}

static const struct adv_alternative *alt(enum adv_strategy s, enum adv_engine g)
{
    for (size_t i = 0; i < plan.nalts; i++) {
        if (plan.alts[i].strategy == s && plan.alts[i].engine == g)
            return &plan.alts[i];
    }
    fail_msg("no alternative %s/%s", adv_strategy_name(s), adv_engine_name(g));
    return NULL;
}

static bool has_warning(enum adv_warning_code c)
{
    for (size_t i = 0; i < plan.nwarnings; i++) {
        if (plan.warnings[i].code == c)
            return true;
    }
    return false;
}

/* ZeRO paper section 5.1 / figure 1: 7.5B parameters, K = 12, Nd = 64:
 * 120 GB, 31.4 GB, 16.6 GB and 1.9 GB per GPU for stages 0 to 3. */
static void test_zero_paper(void **state)
{
    static const double gb[] = {120, 31.4, 16.6, 1.9};

    (void)state;
    for (int stage = 0; stage < 4; stage++) {
        double x = adv_zero_paper_bytes(stage, 7.5e9, 12, 64) / 1e9;
        if (fabs(x - gb[stage]) >= 0.05)
            fail_msg("stage %d: %.3f GB, the paper says %.1f", stage, x, gb[stage]);
    }
}

/* The figures printed by DeepSpeed's docs/code-docs/source/memory.rst for a
 * 2851M-parameter model (t5-3b) on 1 node x 8 GPUs, in GB (2^30 bytes). */
static void check_gib(double bytes, double printed, const char *what)
{
    if (fabs(bytes / GIB - printed) > 0.0051)
        fail_msg("%s: %.4f GiB, DeepSpeed prints %.2f", what, bytes / GIB, printed);
}

static void test_deepspeed_estimators(void **state)
{
    double gpu, cpu;
    static const struct {
        bool off, off_params, zero_init;
        double cpu, gpu;
    } z3[] = {
        {true, true, true, 71.69, 0.12},  {true, true, false, 127.45, 0.12},
        {true, false, true, 63.72, 0.78}, {true, false, false, 127.45, 0.78},
        {false, false, true, 1.43, 6.09}, {false, false, false, 127.45, 6.09},
    };

    (void)state;
    /* estimate_zero2_model_states_mem_needs_all_cold(total_params=2851e6, 8, 1) */
    adv_ds_zero2_estimate(2851e6, 8, 1, true, 1.5, &gpu, &cpu);
    check_gib(gpu, 5.31, "zero2 offload gpu");
    check_gib(cpu, 127.45, "zero2 offload cpu");
    adv_ds_zero2_estimate(2851e6, 8, 1, false, 1.5, &gpu, &cpu);
    check_gib(gpu, 15.93, "zero2 gpu");
    check_gib(cpu, 127.45, "zero2 cpu");
    /* estimate_zero3_model_states_mem_needs_all_cold(2851e6, largest_layer_params=32e6, 8, 1) */
    for (size_t i = 0; i < sizeof(z3) / sizeof(z3[0]); i++) {
        adv_ds_zero3_estimate(2851e6, 32e6, 8, 1, z3[i].off, z3[i].off_params, z3[i].zero_init, 1.5,
                              &gpu, &cpu);
        check_gib(gpu, z3[i].gpu, "zero3 gpu");
        check_gib(cpu, z3[i].cpu, "zero3 cpu");
    }
    /* memory.rst's t5-large example on 4 GPUs: 737.67M params, 32.90M largest
     * layer: case 1 3291 MB, case 2 125 MB, case 3 477 MB (bytes >> 20). */
    adv_ds_zero3_estimate(737.67e6, 32.90e6, 4, 1, false, false, true, 1.5, &gpu, &cpu);
    assert_true(fabs(floor(gpu / 1048576) - 3291) <= 1);
    adv_ds_zero3_estimate(737.67e6, 32.90e6, 4, 1, true, true, true, 1.5, &gpu, &cpu);
    assert_true(fabs(floor(gpu / 1048576) - 125) <= 1);
    adv_ds_zero3_estimate(737.67e6, 32.90e6, 4, 1, true, false, true, 1.5, &gpu, &cpu);
    assert_true(fabs(floor(gpu / 1048576) - 477) <= 1);
}

/* The planner's DeepSpeed ZeRO-3 model states are the estimator's 18P/N. */
static void test_zero3_uses_estimator(void **state)
{
    struct adv_request r;
    const struct adv_alternative *a;
    double gpu, cpu;

    (void)state;
    gpu_req(&r, "gpt2-xl", 64, 16, 80, 80);
    r.strategy = ADV_STRATEGY_ZERO3;
    must_plan(&r);
    a = alt(ADV_STRATEGY_ZERO3, ADV_ENGINE_DEEPSPEED);
    adv_ds_zero3_estimate(plan.model.params, plan.model.largest_layer_params, 8, 2, false, false,
                          true, 1.5, &gpu, &cpu);
    gpu -= 4 * plan.model.largest_layer_params; /* the gathered layer is in buffers */
    assert_true(fabs((double)(a->mem.params + a->mem.grads + a->mem.optimizer) - gpu) < 8);
}

/* Korthikanti et al. 2022, section 4.1 equation 1 and table 2 (no tensor or
 * sequence parallelism), for the GPT-3 175B shape of their table 3 (96
 * heads, hidden 12288, 96 layers, sequence 2048): sbh(34 + 5as/h) per layer,
 * 34sbh with selective and 2sbh with full recomputation. Section 5: for
 * GPT-3, 5as/h = 80 and selective recomputation saves 70 % of the
 * activation memory; for MT-NLG (128 heads, hidden 20480) 65 %. */
static void test_korthikanti(void **state)
{
    struct adv_transformer gpt3 = {ADV_ARCH_DECODER,
                                   96,
                                   12288,
                                   96,
                                   96,
                                   4 * 12288,
                                   51200,
                                   2048,
                                   2048,
                                   false,
                                   true,
                                   true,
                                   false,
                                   true,
                                   ADV_NORM_LAYERNORM};
    struct adv_transformer mtnlg = gpt3;
    double s = 2048, b = 4, h = 12288, a = 96;
    double none, sel, full;

    (void)state;
    none = adv_layer_act_bytes(&gpt3, ADV_ATTN_EAGER, s, b, 2, ADV_RECOMP_NONE);
    sel = adv_layer_act_bytes(&gpt3, ADV_ATTN_EAGER, s, b, 2, ADV_RECOMP_SELECTIVE);
    full = adv_layer_act_bytes(&gpt3, ADV_ATTN_EAGER, s, b, 2, ADV_RECOMP_FULL);
    assert_true(none == s * b * h * (34 + 5 * a * s / h));
    assert_true(5 * a * s / h == 80);
    assert_true(sel == 34 * s * b * h);
    assert_true(full == 2 * s * b * h);
    assert_int_equal((int)lround(100 * (1 - sel / none)), 70);
    mtnlg.heads = mtnlg.kv_heads = 128;
    mtnlg.hidden = 20480;
    mtnlg.ffn = 4 * 20480;
    none = adv_layer_act_bytes(&mtnlg, ADV_ATTN_EAGER, s, 1, 2, ADV_RECOMP_NONE);
    sel = adv_layer_act_bytes(&mtnlg, ADV_ATTN_EAGER, s, 1, 2, ADV_RECOMP_SELECTIVE);
    assert_int_equal((int)lround(100 * (1 - sel / none)), 65);
    /* A fused attention kernel keeps no a x s x s tensors. */
    none = adv_layer_act_bytes(&gpt3, ADV_ATTN_FUSED, s, b, 2, ADV_RECOMP_NONE);
    assert_true(none < 35 * s * b * h);
}

/* Parameter counts of the table's transformers against their sources. */
static void test_known_params(void **state)
{
    size_t n;
    const struct adv_known *k = adv_known_table(&n);

    (void)state;
    assert_true(n >= 14);
    for (size_t i = 0; i < n; i++) {
        double p;

        assert_non_null(k[i].source);
        if (k[i].kind != ADV_MODEL_TRANSFORMER) {
            assert_true(fabs(k[i].ms.params / k[i].published_params - 1) < 0.01);
            assert_true(k[i].ms.act_bytes_per_sample > 0 && k[i].ms.fwd_flops_per_sample > 0);
            continue;
        }
        p = adv_transformer_params(&k[i].tf);
        if (fabs(p / k[i].published_params - 1) > 0.02)
            fail_msg("%s: %.0f parameters, the source says %.3g", k[i].name, p,
                     k[i].published_params);
    }
    /* Exact counts: Hugging Face's gpt2 (124,439,808) and Llama-2-7b-hf (6,738,415,616). */
    assert_true(adv_transformer_params(&adv_known_find("gpt2")->tf) == 124439808);
    assert_true(adv_transformer_params(&adv_known_find("llama-2-7b")->tf) == 6738415616.0);
    assert_null(adv_known_find("gpt-5"));
}

/* The gpu memory (bytes) at which plan() flips: DDP fits at the result, not one byte less. */
static uint64_t ddp_boundary(struct adv_request *r)
{
    uint64_t lo = 1ULL << 30, hi = 200ULL << 30; /* lo: DDP does not fit; hi: it does */

    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        r->alloc.gpu_mem_bytes = mid;
        must_plan(r);
        if (plan.status == ADV_PLAN_OK && plan.strategy == ADV_STRATEGY_DDP)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

static void test_just_fits(void **state)
{
    struct adv_request r;
    uint64_t m;

    (void)state;
    gpu_req(&r, "gpt2-large", 2, 2, 80, 80); /* one sample per GPU */
    m = ddp_boundary(&r);
    r.alloc.gpu_mem_bytes = m;
    must_plan(&r);
    assert_int_equal(plan.strategy, ADV_STRATEGY_DDP);
    assert_int_equal(plan.micro_batch, 1);
    assert_true(plan.mem.total <= plan.mem.limit);
    assert_true(plan.mem.limit - plan.mem.total <= 16); /* no slack hidden in the count */
    r.alloc.gpu_mem_bytes = m - 1;
    must_plan(&r);
    assert_int_not_equal(plan.strategy, ADV_STRATEGY_DDP);
    assert_int_equal(plan.status, ADV_PLAN_OK); /* a sharded strategy takes over */
    assert_int_equal(alt(ADV_STRATEGY_DDP, ADV_ENGINE_TORCH)->status, ADV_ALT_NO_FIT);
    assert_true(alt(ADV_STRATEGY_DDP, ADV_ENGINE_TORCH)->over_bytes > 0);
    assert_true(alt(ADV_STRATEGY_DDP, ADV_ENGINE_TORCH)->over_bytes <= 16);
    assert_non_null(strstr(alt(ADV_STRATEGY_DDP, ADV_ENGINE_TORCH)->reason_en, "does not fit"));
}

/* llama-2-7b on 8 x 80 GiB: too big for DDP and torch's ZeRO-1; FSDP or DeepSpeed fit. */
static void test_fsdp_unavailable(void **state)
{
    struct adv_request r;
    const struct adv_alternative *f;

    (void)state;
    gpu_req(&r, "llama-2-7b", 64, 8, 80, 80);
    r.caps.deepspeed = false;
    must_plan(&r);
    assert_int_equal(plan.status, ADV_PLAN_OK);
    assert_int_equal(plan.strategy, ADV_STRATEGY_FSDP);
    assert_true(plan.checkpointing); /* 4,096 tokens: even one sample needs it */
    r.caps.fsdp = false;
    r.caps.torch_major = 1;
    r.caps.torch_minor = 13;
    must_plan(&r);
    assert_int_equal(plan.status, ADV_PLAN_NO_FIT);
    f = alt(ADV_STRATEGY_FSDP, ADV_ENGINE_TORCH);
    assert_int_equal(f->status, ADV_ALT_UNAVAILABLE);
    assert_non_null(strstr(f->reason_en, "PyTorch 2.x"));
    assert_int_equal(alt(ADV_STRATEGY_ZERO2, ADV_ENGINE_DEEPSPEED)->status, ADV_ALT_UNAVAILABLE);
    assert_non_null(strstr(alt(ADV_STRATEGY_ZERO2, ADV_ENGINE_DEEPSPEED)->reason_en, "deepspeed"));
    for (size_t i = 0; i < plan.nalts; i++)
        assert_int_not_equal(plan.alts[i].status, ADV_ALT_CHOSEN);
    r.caps.deepspeed = true; /* DeepSpeed's ZeRO-1 (16-bit parameters) fits */
    must_plan(&r);
    assert_int_equal(plan.strategy, ADV_STRATEGY_ZERO1);
    assert_int_equal(plan.engine, ADV_ENGINE_DEEPSPEED);
}

static void test_uneven_batch(void **state)
{
    struct adv_request r;

    (void)state;
    gpu_req(&r, "gpt2", 100, 8, 80, 80);
    must_plan(&r);
    assert_int_equal(plan.status, ADV_PLAN_OK);
    assert_false(plan.batch_exact);
    assert_int_equal(plan.reached_batch % 8, 0);
    assert_true(abs(plan.reached_batch - 100) <= 4); /* 96 and 104 are the nearest */
    assert_int_equal(plan.micro_batch * plan.grad_accum * 8, plan.reached_batch);
    assert_true(has_warning(ADV_WARN_BATCH_INEXACT));
    r.global_batch = 96;
    must_plan(&r);
    assert_true(plan.batch_exact);
    assert_int_equal(plan.reached_batch, 96);
    assert_false(has_warning(ADV_WARN_BATCH_INEXACT));
    r.global_batch = 3; /* fewer samples than GPUs: one each */
    must_plan(&r);
    assert_int_equal(plan.reached_batch, 8);
    assert_int_equal(plan.micro_batch, 1);
}

/* A global batch whose per-GPU share is prime: the micro-batch divides it. */
static void test_accumulation(void **state)
{
    struct adv_request r;

    (void)state;
    gpu_req(&r, "gpt2-xl", 8 * 26, 8, 40, 80);
    must_plan(&r);
    assert_int_equal(plan.status, ADV_PLAN_OK);
    assert_int_equal(26 % plan.micro_batch, 0);
    assert_int_equal(plan.micro_batch * plan.grad_accum, 26);
    assert_true(plan.batch_exact);
}

static void test_precision(void **state)
{
    struct adv_request r;

    (void)state;
    gpu_req(&r, "bert-base", 256, 4, 32, 70);
    must_plan(&r);
    assert_int_equal(plan.precision, ADV_PREC_FP16);
    assert_true(plan.loss_scaling);
    assert_non_null(strstr(plan.reason_en, "fp16 with dynamic loss scaling"));
    r.alloc.cc10 = 80;
    must_plan(&r);
    assert_int_equal(plan.precision, ADV_PREC_BF16);
    assert_false(plan.loss_scaling);
    r.caps.torch_major = 1; /* no CUDA bf16 autocast before 1.10 */
    r.caps.torch_minor = 9;
    must_plan(&r);
    assert_int_equal(plan.precision, ADV_PREC_FP16);
    r.alloc.cc10 = 61; /* fp16 at 1/64 rate */
    must_plan(&r);
    assert_int_equal(plan.precision, ADV_PREC_FP32);
}

static void test_cpu(void **state)
{
    struct adv_request r;

    (void)state;
    adv_request_init(&r);
    snprintf(r.model.name, sizeof(r.model.name), "resnet50");
    r.global_batch = 32;
    r.alloc.gpus = 2;
    r.alloc.gpus_per_node = 2;
    r.alloc.cpu_mem_per_node_bytes = (uint64_t)(16 * GIB);
    r.caps.torch_major = 1;
    r.caps.torch_minor = 13;
    r.caps.deepspeed = true; /* DeepSpeed is GPU-only here even when installed */
    must_plan(&r);
    assert_int_equal(plan.status, ADV_PLAN_OK);
    assert_true(plan.cpu);
    assert_int_equal(plan.precision, ADV_PREC_FP32);
    assert_int_equal(plan.strategy, ADV_STRATEGY_DDP);
    assert_int_equal(plan.mem.limit, (uint64_t)(8 * GIB));
    assert_int_equal(alt(ADV_STRATEGY_ZERO1, ADV_ENGINE_TORCH)->status, ADV_ALT_FITS);
    assert_int_equal(alt(ADV_STRATEGY_ZERO2, ADV_ENGINE_DEEPSPEED)->status, ADV_ALT_UNAVAILABLE);
    /* Activations are the measured fp32 figure per sample plus the fixed part. */
    {
        const struct adv_known *k = adv_known_find("resnet50");
        double want = k->ms.act_fixed_bytes + plan.micro_batch * k->ms.act_bytes_per_sample;
        assert_true(fabs((double)plan.mem.activations - want) <= 1);
    }
    /* Forced ZeRO-1 on CPU is torch's ZeroRedundancyOptimizer. */
    r.strategy = ADV_STRATEGY_ZERO1;
    must_plan(&r);
    assert_int_equal(plan.engine, ADV_ENGINE_TORCH);
    assert_true(plan.mem.optimizer < alt(ADV_STRATEGY_DDP, ADV_ENGINE_TORCH)->mem.optimizer);
}

static void test_override(void **state)
{
    struct adv_request r;

    (void)state;
    gpu_req(&r, "llama-2-7b", 64, 8, 80, 80);
    r.strategy = ADV_STRATEGY_DDP;
    must_plan(&r);
    assert_int_equal(plan.status, ADV_PLAN_NO_FIT);
    assert_int_equal(plan.strategy, ADV_STRATEGY_DDP);
    assert_int_equal(plan.recommended, ADV_STRATEGY_ZERO1);
    assert_true(has_warning(ADV_WARN_OVERRIDE_NO_FIT));
    assert_non_null(strstr(plan.reason_en, "recommends ZeRO-1"));
    r.strategy = ADV_STRATEGY_ZERO2;
    r.caps.deepspeed = false;
    must_plan(&r);
    assert_int_equal(plan.status, ADV_PLAN_NO_FIT);
    assert_true(has_warning(ADV_WARN_OVERRIDE_UNAVAILABLE));
    r.caps.deepspeed = true; /* an explicit choice that fits is followed */
    must_plan(&r);
    assert_int_equal(plan.status, ADV_PLAN_OK);
    assert_int_equal(plan.strategy, ADV_STRATEGY_ZERO2);
    assert_int_equal(plan.nwarnings, 0);
}

/* Nothing fits: the suggested size fits and the one below it does not. */
static void test_smallest_allocation(void **state)
{
    struct adv_request r;
    int n, below;

    (void)state;
    gpu_req(&r, "llama-2-13b", 64, 2, 40, 80);
    r.caps.deepspeed = false;
    r.alloc.cpu_mem_per_node_bytes = (uint64_t)(64 * GIB); /* too little to offload */
    must_plan(&r);
    assert_int_equal(plan.status, ADV_PLAN_NO_FIT);
    assert_int_equal(alt(ADV_STRATEGY_FSDP_OFFLOAD, ADV_ENGINE_TORCH)->status, ADV_ALT_NO_FIT);
    assert_non_null(strstr(alt(ADV_STRATEGY_FSDP_OFFLOAD, ADV_ENGINE_TORCH)->reason_en, "host"));
    n = plan.smallest_gpus;
    assert_true(n > 2);
    assert_true(plan.min_gpu_mem_bytes > r.alloc.gpu_mem_bytes);
    r.alloc.gpus = n;
    r.alloc.gpus_per_node = n < 8 ? n : 8;
    r.global_batch = n;
    must_plan(&r);
    assert_int_equal(plan.status, ADV_PLAN_OK);
    below = n <= 8 ? n - 1 : n - 8;
    r.alloc.gpus = below;
    r.alloc.gpus_per_node = below < 8 ? below : 8;
    r.global_batch = below;
    must_plan(&r);
    assert_int_equal(plan.status, ADV_PLAN_NO_FIT);
    /* The memory it names fits at the original size. */
    gpu_req(&r, "llama-2-13b", 64, 2, 40, 80);
    r.caps.deepspeed = false;
    r.alloc.cpu_mem_per_node_bytes = (uint64_t)(64 * GIB);
    must_plan(&r);
    r.alloc.gpu_mem_bytes = plan.min_gpu_mem_bytes;
    r.global_batch = 2;
    must_plan(&r);
    assert_int_equal(plan.status, ADV_PLAN_OK);
}

static void expect_field(struct adv_request *r, const char *field)
{
    struct err e;

    err_init(&e);
    assert_int_equal(adv_plan(r, &plan, &e), RC_EINVAL);
    assert_string_equal(e.field, field);
    assert_true(e.message[0] != '\0');
}

static void test_refusals(void **state)
{
    struct adv_request r;

    (void)state;
    gpu_req(&r, "nonesuch", 8, 8, 80, 80);
    expect_field(&r, "model.name");
    gpu_req(&r, "gpt2", 8, 12, 80, 80);
    r.alloc.gpus_per_node = 8;
    expect_field(&r, "allocation.gpus");
    gpu_req(&r, "gpt2", 8, 8, 80, 80);
    r.alloc.cc10 = 0;
    expect_field(&r, "allocation.compute_capability");
    gpu_req(&r, "gpt2", 0, 8, 80, 80);
    expect_field(&r, "global_batch");
    gpu_req(&r, "gpt2", 8, 8, 80, 80);
    r.model.kind = ADV_MODEL_TRANSFORMER;
    r.model.tf = adv_known_find("gpt2")->tf;
    r.model.tf.heads = 7;
    expect_field(&r, "model.transformer.heads");
    r.model.tf.heads = 12;
    r.model.tf.kv_heads = 5;
    expect_field(&r, "model.transformer.kv_heads");
    r.model.kind = ADV_MODEL_MEASURED;
    r.model.ms.params = 1e6;
    r.model.ms.act_bytes_per_sample = NAN;
    expect_field(&r, "model.measured.activation_bytes_per_sample");
    adv_request_init(&r);
    snprintf(r.model.name, sizeof(r.model.name), "gpt2");
    expect_field(&r, "allocation.cpu_memory_per_node_bytes"); /* CPU without host memory */
}

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Whether s is whole UTF-8 (the texts go into JSON strings). */
static bool utf8_ok(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;

    while (*u) {
        int n = *u < 0x80 ? 0 : *u >= 0xf0 ? 3 : *u >= 0xe0 ? 2 : *u >= 0xc2 ? 1 : -1;
        if (n < 0)
            return false;
        u++;
        while (n-- > 0) {
            if ((*u & 0xc0) != 0x80)
                return false;
            u++;
        }
    }
    return true;
}

static int rung(enum adv_strategy s)
{
    static const int r[] = {0, 0, 1, 2, 3, 3, 4, 5, 5};
    return r[s];
}

/* Random requests over the table: every plan keeps the invariants. */
static void test_invariants(void **state)
{
    static const double mems[] = {16, 24, 32, 40, 80, 141};
    static const int ccs[] = {70, 75, 80, 86, 90};
    size_t nk;
    const struct adv_known *k = adv_known_table(&nk);
    uint64_t seed = 42;

    (void)state;
    for (int it = 0; it < 3000; it++) {
        struct adv_request r;
        int gpn = 1 << (rnd(&seed) % 4);
        int n = (int)(rnd(&seed) % 3) == 0 ? gpn : gpn * (1 << (rnd(&seed) % 7));
        const struct adv_alternative *chosen = NULL;

        gpu_req(&r, k[rnd(&seed) % nk].name, 1 + (int)(rnd(&seed) % 2048), n, mems[rnd(&seed) % 6],
                ccs[rnd(&seed) % 5]);
        r.alloc.gpus_per_node = gpn;
        r.caps.fsdp = rnd(&seed) % 2;
        r.caps.deepspeed = rnd(&seed) % 2;
        r.optimizer = (enum adv_optimizer)(rnd(&seed) % 4);
        if (rnd(&seed) % 8 == 0)
            r.alloc.gpu_mem_bytes = 0, r.alloc.cc10 = 0; /* CPU */
        if (rnd(&seed) % 4 == 0)
            r.model.seq_len = 128 << (rnd(&seed) % 6);
        must_plan(&r);
        assert_true(plan.reason_en[0] != '\0' && plan.reason_zh[0] != '\0');
        assert_true(utf8_ok(plan.reason_en) && utf8_ok(plan.reason_zh));
        for (size_t i = 0; i < plan.nwarnings; i++)
            assert_true(utf8_ok(plan.warnings[i].en) && utf8_ok(plan.warnings[i].zh));
        assert_int_equal(plan.nalts, 9);
        for (size_t i = 0; i < plan.nalts; i++) {
            const struct adv_alternative *a = &plan.alts[i];
            if (a->status == ADV_ALT_CHOSEN) {
                assert_null(chosen);
                chosen = a;
            }
            if (a->engine == ADV_ENGINE_DEEPSPEED && !r.caps.deepspeed)
                assert_int_equal(a->status, ADV_ALT_UNAVAILABLE);
            assert_true(a->reason_en[0] != '\0' && a->reason_zh[0] != '\0');
            assert_true(utf8_ok(a->reason_zh));
        }
        if (plan.status != ADV_PLAN_OK) {
            assert_null(chosen);
            continue;
        }
        assert_non_null(chosen);
        assert_int_equal(chosen->strategy, plan.strategy);
        assert_int_equal(plan.micro_batch * plan.grad_accum * n, plan.reached_batch);
        assert_true(plan.mem.total <= plan.mem.limit);
        assert_true(abs(plan.reached_batch - r.global_batch) <= n / 2 + (r.global_batch < n) * n);
        if (plan.strategy == ADV_STRATEGY_FSDP || plan.strategy == ADV_STRATEGY_FSDP_OFFLOAD)
            assert_true(r.caps.fsdp);
        if (plan.engine == ADV_ENGINE_DEEPSPEED)
            assert_true(r.caps.deepspeed && !plan.cpu);
        /* The order: nothing runnable of an earlier rung fits. */
        for (size_t i = 0; i < plan.nalts; i++) {
            if (rung(plan.alts[i].strategy) < rung(plan.strategy))
                assert_int_not_equal(plan.alts[i].status, ADV_ALT_FITS);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zero_paper),
        cmocka_unit_test(test_deepspeed_estimators),
        cmocka_unit_test(test_zero3_uses_estimator),
        cmocka_unit_test(test_korthikanti),
        cmocka_unit_test(test_known_params),
        cmocka_unit_test(test_just_fits),
        cmocka_unit_test(test_fsdp_unavailable),
        cmocka_unit_test(test_uneven_batch),
        cmocka_unit_test(test_accumulation),
        cmocka_unit_test(test_precision),
        cmocka_unit_test(test_cpu),
        cmocka_unit_test(test_override),
        cmocka_unit_test(test_smallest_allocation),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_invariants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
