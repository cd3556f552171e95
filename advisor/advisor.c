/*
 * advisor.c - the planner (see advisor.h): validate the request, evaluate
 * every candidate (strategy + engine) on the allocation, choose, split the
 * batch, predict the step, write the reasons in en and zh-CN.
 *
 * Main structures: struct eval is one candidate on one allocation size (its
 * cost from advisor_models.c, whether the nodes can run it and why not, its
 * micro-batch with and without checkpointing, its speed). A plan evaluates
 * the ADV_STRATEGY_COUNT candidates of cands[] once for the request; only
 * when nothing fits are they evaluated again for larger allocations (binary
 * search over whole nodes) to find the smallest that would fit.
 *
 * Invariants: the plan only names a strategy the nodes can run, unless the
 * request asked for it explicitly (then a warning says so); m x k x gpus ==
 * reached_batch; mem.total <= mem.limit whenever status is ADV_PLAN_OK.
 *
 * Threading: none; reentrant, no allocation.
 */
#include "advisor_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)
#define ADV_LINK_EFF 0.75 /* assumed busbw / link bandwidth without a probe (README) */

/* The candidates, in the order they are tried; rung: the position in that order. */
static const struct {
    enum adv_strategy s;
    enum adv_engine g;
    int rung;
} cands[] = {
    {ADV_STRATEGY_DDP, ADV_ENGINE_TORCH, 0},
    {ADV_STRATEGY_ZERO1, ADV_ENGINE_DEEPSPEED, 1},
    {ADV_STRATEGY_ZERO1, ADV_ENGINE_TORCH, 1},
    {ADV_STRATEGY_ZERO2, ADV_ENGINE_DEEPSPEED, 2},
    {ADV_STRATEGY_ZERO3, ADV_ENGINE_DEEPSPEED, 3},
    {ADV_STRATEGY_FSDP, ADV_ENGINE_TORCH, 3},
    {ADV_STRATEGY_ZERO3_OFFLOAD_OPT, ADV_ENGINE_DEEPSPEED, 4},
    {ADV_STRATEGY_ZERO3_OFFLOAD_ALL, ADV_ENGINE_DEEPSPEED, 5},
    {ADV_STRATEGY_FSDP_OFFLOAD, ADV_ENGINE_TORCH, 5},
};
#define NCANDS (sizeof(cands) / sizeof(cands[0]))

enum unavail {
    UA_NONE = 0,
    UA_GPU_ONLY,     /* the allocation is CPU */
    UA_DEEPSPEED,    /* deepspeed does not import */
    UA_FSDP,         /* torch.distributed.fsdp does not import */
    UA_TORCH_OLD,    /* ZeroRedundancyOptimizer needs torch >= 1.8 */
    UA_TORCH_UNKNOWN /* no torch version reported */
};

struct eval {
    size_t ci;       /* index into cands[] */
    enum unavail ua; /* UA_NONE: the nodes can run it */
    struct cost c;
    double usable; /* device bytes minus headroom */
    double headroom;
    double limit;   /* device bytes (GPU, or CPU per process) */
    bool cpu_short; /* offload: the host memory does not suffice (or is unknown) */
    bool fits;
    bool ckpt;
    int micro; /* chosen micro-batch (a divisor of q); 0: does not fit */
    int accum;
    double over_bytes; /* bytes above usable at micro-batch 1 (best checkpointing) */
    struct adv_speed sp;
};

/* The allocation-wide facts every evaluation needs. */
struct ctx {
    const struct adv_request *req;
    struct adv_model_info mi;
    bool cpu;
    enum adv_precision prec;
    int q; /* samples per GPU per step */
    int reached;
};

static const char *const strategy_names[] = {"auto",
                                             "ddp",
                                             "zero1",
                                             "zero2",
                                             "zero3",
                                             "fsdp",
                                             "zero3_offload_optimizer",
                                             "zero3_offload_all",
                                             "fsdp_offload"};
static const char *const strategy_en[] = {"auto",
                                          "DDP",
                                          "ZeRO-1",
                                          "ZeRO-2",
                                          "ZeRO-3",
                                          "FSDP",
                                          "ZeRO-3 + optimizer offload",
                                          "ZeRO-3 + parameter offload",
                                          "FSDP + CPU offload"};
static const char *const strategy_zh[] = {"自动",
                                          "DDP",
                                          "ZeRO-1",
                                          "ZeRO-2",
                                          "ZeRO-3",
                                          "FSDP",
                                          "ZeRO-3 + 优化器卸载",
                                          "ZeRO-3 + 参数卸载",
                                          "FSDP + CPU 卸载"};

const char *adv_strategy_name(enum adv_strategy s)
{
    return (unsigned)s < ADV_STRATEGY_COUNT ? strategy_names[s] : "auto";
}

int adv_strategy_parse(const char *s)
{
    for (int i = 0; i < ADV_STRATEGY_COUNT; i++) {
        if (strcmp(s, strategy_names[i]) == 0)
            return i;
    }
    return -1;
}

const char *adv_engine_name(enum adv_engine g)
{
    return g == ADV_ENGINE_DEEPSPEED ? "deepspeed" : "torch";
}

const char *adv_precision_name(enum adv_precision p)
{
    return p == ADV_PREC_BF16 ? "bf16" : p == ADV_PREC_FP16 ? "fp16" : "fp32";
}

const char *adv_optimizer_name(enum adv_optimizer o)
{
    static const char *const n[] = {"adamw", "adam", "sgd", "sgd-momentum"};
    return (unsigned)o < 4 ? n[o] : "adamw";
}

const char *adv_alt_status_name(enum adv_alt_status s)
{
    static const char *const n[] = {"chosen", "fits", "does_not_fit", "unavailable", "skipped"};
    return (unsigned)s < 5 ? n[s] : "unavailable";
}

void adv_request_init(struct adv_request *req)
{
    memset(req, 0, sizeof(*req));
    req->model.kind = ADV_MODEL_KNOWN;
    req->global_batch = 1;
    req->optimizer = ADV_OPT_ADAMW;
    req->alloc.gpus = 1;
    req->alloc.gpus_per_node = 1;
    req->alloc.intra = ADV_INTRA_PCIE;
    req->alloc.intra_gbps = ADV_HOST_GBPS_DEFAULT;
    req->alloc.inter = ADV_INTER_ETHERNET;
    req->alloc.inter_gbps = 1.25; /* 10 GbE */
    req->strategy = ADV_STRATEGY_AUTO;
}

/* ---- validation ---------------------------------------------------------- */

static bool dbl_in(double v, double lo, double hi)
{
    return isfinite(v) && v >= lo && v <= hi;
}

static enum rc bad_int(struct err *e, const char *field, long long v, long long lo, long long hi)
{
    err_set(e, RC_EINVAL, field, "%s must be from %lld to %lld", field, lo, hi);
    err_detail(e, "got %lld", v);
    return RC_EINVAL;
}

static enum rc bad_dbl(struct err *e, const char *field, double v, double lo, double hi)
{
    err_set(e, RC_EINVAL, field, "%s must be from %g to %g", field, lo, hi);
    err_detail(e, "got %g", v);
    return RC_EINVAL;
}

#define CHECK_INT(v, lo, hi, field)                                                                \
    do {                                                                                           \
        if ((v) < (lo) || (v) > (hi))                                                              \
            return bad_int(e, field, (long long)(v), (long long)(lo), (long long)(hi));            \
    } while (0)
#define CHECK_DBL(v, lo, hi, field)                                                                \
    do {                                                                                           \
        if (!dbl_in((v), (lo), (hi)))                                                              \
            return bad_dbl(e, field, (v), (lo), (hi));                                             \
    } while (0)

static enum rc check_transformer(const struct adv_transformer *t, struct err *e)
{
#define F(x) "model.transformer." x
    CHECK_INT((int)t->arch, 0, 1, F("arch"));
    CHECK_INT(t->layers, 1, 1024, F("layers"));
    CHECK_INT(t->hidden, 1, 65536, F("hidden"));
    CHECK_INT(t->heads, 1, 1024, F("heads"));
    if (t->hidden % t->heads != 0) {
        err_set(e, RC_EINVAL, F("heads"), "heads must divide hidden");
        err_detail(e, "got hidden %d, heads %d", t->hidden, t->heads);
        return RC_EINVAL;
    }
    CHECK_INT(t->kv_heads, 0, t->heads, F("kv_heads"));
    if (t->kv_heads > 0 && t->heads % t->kv_heads != 0) {
        err_set(e, RC_EINVAL, F("kv_heads"), "kv_heads must divide heads");
        err_detail(e, "got heads %d, kv_heads %d", t->heads, t->kv_heads);
        return RC_EINVAL;
    }
    CHECK_INT(t->ffn, 1, 1048576, F("ffn"));
    CHECK_INT(t->vocab, 0, 4194304, F("vocab"));
    CHECK_INT(t->seq_len, 1, 1048576, F("seq_len"));
    CHECK_INT(t->positions, 0, 1048576, F("positions"));
    CHECK_INT((int)t->norm, 0, 1, F("norm"));
#undef F
    return RC_OK;
}

static enum rc check_measured(const struct adv_measured *m, struct err *e)
{
#define F(x) "model.measured." x
    CHECK_DBL(m->params, 1, ADV_MAX_PARAMS, F("params"));
    CHECK_DBL(m->act_bytes_per_sample, 1, 1e15, F("activation_bytes_per_sample"));
    CHECK_DBL(m->act_bytes_per_sample16, 0, 1e15, F("activation_bytes_per_sample_16bit"));
    CHECK_DBL(m->act_fixed_bytes, 0, 1e15, F("activation_fixed_bytes"));
    CHECK_DBL(m->fwd_flops_per_sample, 0, 1e18, F("forward_flops_per_sample"));
    CHECK_DBL(m->largest_layer_params, 0, m->params, F("largest_layer_params"));
#undef F
    return RC_OK;
}

static enum rc check_alloc(const struct adv_alloc *a, struct err *e)
{
#define F(x) "allocation." x
    CHECK_INT(a->gpus, 1, ADV_MAX_GPUS, F("gpus"));
    CHECK_INT(a->gpus_per_node, 1, ADV_MAX_GPUS_PER_NODE, F("gpus_per_node"));
    if (a->gpus > a->gpus_per_node && a->gpus % a->gpus_per_node != 0) {
        err_set(e, RC_EINVAL, F("gpus"), "gpus must be a multiple of gpus_per_node");
        err_detail(e, "got gpus %d, gpus_per_node %d", a->gpus, a->gpus_per_node);
        return RC_EINVAL;
    }
    if (a->gpu_mem_bytes > (1ULL << 50))
        return bad_dbl(e, F("gpu_memory_bytes"), (double)a->gpu_mem_bytes, 0, 0x1p50);
    CHECK_INT(a->cc10, 0, 200, F("compute_capability"));
    if ((a->gpu_mem_bytes == 0) != (a->cc10 == 0)) {
        err_set(e, RC_EINVAL, a->cc10 == 0 ? F("compute_capability") : F("gpu_memory_bytes"),
                "gpu_memory_bytes and compute_capability must both be 0 (CPU) or both be set");
        return RC_EINVAL;
    }
    if (a->cc10 != 0 && a->cc10 < 30)
        return bad_int(e, F("compute_capability"), a->cc10, 30, 200);
    CHECK_INT((int)a->intra, 0, 1, F("intra_node.link"));
    CHECK_DBL(a->intra_gbps, 0.001, 1e5, F("intra_node.gbps"));
    CHECK_INT((int)a->inter, 0, 1, F("inter_node.link"));
    CHECK_DBL(a->inter_gbps, 0.001, 1e5, F("inter_node.gbps"));
    CHECK_DBL(a->host_gbps, 0, 1e5, F("host_link_gbps"));
    CHECK_DBL(a->busbw_intra_gbps, 0, 1e5, F("measured_busbw_gbps.intra_node"));
    CHECK_DBL(a->busbw_inter_gbps, 0, 1e5, F("measured_busbw_gbps.inter_node"));
    if (a->cpu_mem_per_node_bytes > (1ULL << 50))
        return bad_dbl(e, F("cpu_memory_per_node_bytes"), (double)a->cpu_mem_per_node_bytes, 0,
                       0x1p50);
    if (a->cc10 == 0 && a->cpu_mem_per_node_bytes == 0) {
        err_set(e, RC_EINVAL, F("cpu_memory_per_node_bytes"),
                "cpu_memory_per_node_bytes is required when the allocation is CPU");
        return RC_EINVAL;
    }
#undef F
    return RC_OK;
}

static enum rc check_request(const struct adv_request *r, struct err *e)
{
    enum rc rc;

    CHECK_INT((int)r->model.kind, 0, 2, "model");
    CHECK_INT((int)r->model.attn, 0, 1, "model.attention");
    if (r->model.kind == ADV_MODEL_KNOWN) {
        CHECK_INT(r->model.seq_len, 0, 1048576, "model.seq_len");
    } else if (r->model.kind == ADV_MODEL_TRANSFORMER) {
        rc = check_transformer(&r->model.tf, e);
        if (rc != RC_OK)
            return rc;
    } else {
        rc = check_measured(&r->model.ms, e);
        if (rc != RC_OK)
            return rc;
    }
    CHECK_INT(r->global_batch, 1, ADV_MAX_GLOBAL_BATCH, "global_batch");
    CHECK_INT((int)r->optimizer, 0, 3, "optimizer");
    rc = check_alloc(&r->alloc, e);
    if (rc != RC_OK)
        return rc;
    CHECK_INT(r->caps.torch_major, 0, 99, "capabilities.torch_version");
    CHECK_INT(r->caps.torch_minor, 0, 999, "capabilities.torch_version");
    CHECK_INT((int)r->strategy, 0, ADV_STRATEGY_COUNT - 1, "strategy");
    return RC_OK;
}

/* ---- evaluation ----------------------------------------------------------- */

static bool torch_at_least(const struct adv_caps *c, int major, int minor)
{
    return c->torch_major > major || (c->torch_major == major && c->torch_minor >= minor);
}

static enum unavail availability(const struct ctx *x, size_t ci)
{
    const struct adv_caps *caps = &x->req->caps;
    enum adv_strategy s = cands[ci].s;

    if (s == ADV_STRATEGY_DDP)
        return UA_NONE;
    if (x->cpu && !(s == ADV_STRATEGY_ZERO1 && cands[ci].g == ADV_ENGINE_TORCH))
        return UA_GPU_ONLY;
    if (cands[ci].g == ADV_ENGINE_DEEPSPEED)
        return caps->deepspeed ? UA_NONE : UA_DEEPSPEED;
    if (s == ADV_STRATEGY_ZERO1) {
        if (caps->torch_major == 0)
            return UA_TORCH_UNKNOWN;
        return torch_at_least(caps, 1, 8) ? UA_NONE : UA_TORCH_OLD;
    }
    return caps->fsdp ? UA_NONE : UA_FSDP; /* FSDP, FSDP_OFFLOAD */
}

static enum adv_precision precision(const struct adv_request *r, bool cpu)
{
    int cc = r->alloc.cc10;

    if (cpu)
        return ADV_PREC_FP32;
    if (cc >= 80 && (r->caps.torch_major == 0 || torch_at_least(&r->caps, 1, 10)))
        return ADV_PREC_BF16; /* CUDA bf16 autocast arrived in torch 1.10 */
    if (cc >= 60 && cc != 61 && cc != 62)
        return ADV_PREC_FP16;
    return ADV_PREC_FP32; /* 6.1/6.2 run fp16 at 1/64 rate; older GPUs have no fast fp16 */
}

/* Largest divisor of q that is at most cap (>= 1 when cap >= 1); 0 when cap < 1. */
static int best_divisor(int q, double cap)
{
    int c = cap >= q ? q : (int)cap;

    for (int m = c; m >= 1; m--) {
        if (q % m == 0)
            return m;
    }
    return 0;
}

/* How many samples fit besides the static bytes; clamped to the global batch limit. */
static double samples_fit(double usable, double stat, double per)
{
    double m;

    if (per <= 0)
        return ADV_MAX_GLOBAL_BATCH;
    m = floor((usable - stat) / per);
    if (m < 0)
        return 0;
    return m > ADV_MAX_GLOBAL_BATCH ? ADV_MAX_GLOBAL_BATCH : m;
}

static double static_bytes(const struct cost *c)
{
    return c->params + c->grads + c->optim + c->buffers + c->fixed + c->act_fixed;
}

/* Bus bandwidth in bytes/s for collectives over n ranks; *measured says its source. */
static double busbw(const struct adv_alloc *a, int n, bool *measured)
{
    double bw;

    *measured = false;
    if (n <= a->gpus_per_node) {
        if (a->busbw_intra_gbps > 0) {
            *measured = true;
            return a->busbw_intra_gbps * 1e9;
        }
        return a->intra_gbps * ADV_LINK_EFF * 1e9;
    }
    if (a->busbw_inter_gbps > 0) {
        *measured = true;
        return a->busbw_inter_gbps * 1e9;
    }
    /* A ring crosses each node boundary once: the node's NICs bound it. */
    bw = a->inter_gbps < a->intra_gbps ? a->inter_gbps : a->intra_gbps;
    return bw * ADV_LINK_EFF * 1e9;
}

static void predict(const struct ctx *x, struct eval *ev, int n)
{
    const struct adv_alloc *a = &x->req->alloc;
    struct traffic t;
    double fps = adv_train_flops_per_sample(&x->mi);
    double peak = adv_peak_flops(x->cpu ? 0 : a->cc10, x->prec);
    double eff = adv_efficiency(&x->mi, x->cpu);
    double host = (a->host_gbps > 0 ? a->host_gbps : ADV_HOST_GBPS_DEFAULT) * 1e9;
    double micro_s, once_s, per_micro_s, bw;
    struct adv_speed *sp = &ev->sp;
    int m = ev->micro, k = ev->accum;

    memset(sp, 0, sizeof(*sp));
    if (ev->ckpt)
        fps += adv_fwd_flops_per_sample(&x->mi); /* the forward runs again in the backward */
    adv_traffic(&x->mi, cands[ev->ci].s, cands[ev->ci].g, x->prec, n, a->gpus_per_node, k, &t);
    bw = busbw(a, n, &sp->busbw_measured);
    sp->busbw_gbps = bw / 1e9;
    sp->peak_flops = peak;
    sp->efficiency = eff;
    sp->flops_per_step = fps * m * k * n;
    micro_s = fps > 0 ? m * fps / (peak * eff) : 0;
    once_s = t.once_bytes / bw;
    per_micro_s = t.micro_bytes / bw;
    sp->compute_s = k * micro_s;
    sp->comm_s = once_s + k * per_micro_s;
    /* Once-per-step collectives overlap the last backward (2/3 of its
     * compute); per-micro-step ones overlap that micro-step. */
    sp->exposed_comm_s = fmax(0, once_s - micro_s * 2 / 3) + k * fmax(0, per_micro_s - micro_s);
    sp->offload_s = t.host_bytes / host + t.cpu_opt_params / ADV_CPU_OPT_PARAMS_PER_S;
    if (fps > 0) {
        sp->step_s = sp->compute_s + sp->exposed_comm_s + sp->offload_s;
        sp->samples_per_s = sp->step_s > 0 ? (double)m * k * n / sp->step_s : 0;
    }
}

/*
 * Evaluate candidate ci on n ranks with q samples per rank: cost, fit,
 * checkpointing, micro-batch, and (when it fits) speed.
 */
static void evaluate(const struct ctx *x, size_t ci, int n, int q, struct eval *ev)
{
    const struct adv_alloc *a = &x->req->alloc;
    int gpn = a->gpus_per_node < n ? a->gpus_per_node : n;
    double stat, m0, m1;
    int d0, d1;
    bool can_ckpt = x->mi.kind == ADV_MODEL_TRANSFORMER;

    memset(ev, 0, sizeof(*ev));
    ev->ci = ci;
    ev->ua = availability(x, ci);
    adv_cost(&x->mi, cands[ci].s, cands[ci].g, x->prec, x->req->optimizer, n, a->gpus_per_node,
             x->cpu, &ev->c);
    if (x->cpu) {
        uint64_t per = a->cpu_mem_per_node_bytes / (uint64_t)gpn;
        ev->limit = (double)per;
        ev->headroom = (double)(per / 100 * ADV_HEADROOM_PCT);
        ev->c.fixed = adv_fixed_bytes(true);
    } else {
        ev->limit = (double)a->gpu_mem_bytes;
        ev->headroom = (double)(a->gpu_mem_bytes / 100 * ADV_HEADROOM_PCT);
    }
    ev->usable = ev->limit - ev->headroom;
    if (ev->c.cpu_node > 0) {
        double host = (double)a->cpu_mem_per_node_bytes;
        ev->cpu_short = host <= 0 || ev->c.cpu_node > host - floor(host / 100) * ADV_HEADROOM_PCT;
    }
    stat = static_bytes(&ev->c);
    m0 = samples_fit(ev->usable, stat, ev->c.act_sample);
    m1 = can_ckpt ? samples_fit(ev->usable, stat, ev->c.act_sample_ckpt) : 0;
    ev->over_bytes = stat + (can_ckpt ? ev->c.act_sample_ckpt : ev->c.act_sample) - ev->usable;
    if (ev->cpu_short)
        return;
    d0 = best_divisor(q, m0);
    d1 = best_divisor(q, m1);
    if (d0 >= 1 && !(d0 < ADV_SMALL_MICRO && d0 < q && d1 >= 2 * d0)) {
        ev->micro = d0;
    } else if (d1 >= 1) {
        ev->micro = d1;
        ev->ckpt = true;
    } else {
        return;
    }
    ev->fits = true;
    ev->accum = q / ev->micro;
    predict(x, ev, n);
}

static void fill_mem(const struct eval *ev, int m, struct adv_memory *mem)
{
    const struct cost *c = &ev->c;
    double act = c->act_fixed + m * (ev->ckpt ? c->act_sample_ckpt : c->act_sample);

    mem->params = (uint64_t)ceil(c->params);
    mem->grads = (uint64_t)ceil(c->grads);
    mem->optimizer = (uint64_t)ceil(c->optim);
    mem->activations = (uint64_t)ceil(act);
    mem->buffers = (uint64_t)ceil(c->buffers);
    mem->fixed = (uint64_t)ceil(c->fixed);
    mem->headroom = (uint64_t)ev->headroom;
    mem->total = mem->params + mem->grads + mem->optimizer + mem->activations + mem->buffers +
                 mem->fixed + mem->headroom;
    mem->limit = (uint64_t)ev->limit;
}

/* Is ev better than best within one rung: faster, else less memory. */
static bool better(const struct eval *ev, const struct eval *best)
{
    double a = ev->sp.step_s, b = best->sp.step_s;

    if (a > 0 && b > 0 && a != b)
        return a < b;
    return static_bytes(&ev->c) < static_bytes(&best->c);
}

/* The chosen candidate among evs (only those matching want, or all for AUTO); -1 if none. */
static int choose(const struct eval *evs, enum adv_strategy want)
{
    int best = -1;

    for (size_t i = 0; i < NCANDS; i++) {
        if (want != ADV_STRATEGY_AUTO && cands[i].s != want)
            continue;
        if (evs[i].ua != UA_NONE || !evs[i].fits)
            continue;
        if (best >= 0 && cands[i].rung > cands[best].rung)
            break;
        if (best < 0 || better(&evs[i], &evs[best]))
            best = (int)i;
    }
    return best;
}

/* Smallest allocation (same GPUs, same gpus_per_node) where some runnable candidate fits. */
static int smallest_fit(const struct ctx *x)
{
    const struct adv_alloc *a = &x->req->alloc;
    int gpn = a->gpus_per_node, best = 0;
    /* sizes: 1..gpn, then 2gpn, 3gpn, ... up to ADV_MAX_GPUS */
    int nsizes = gpn + (ADV_MAX_GPUS / gpn - 1);
    struct eval ev;

    for (size_t ci = 0; ci < NCANDS; ci++) {
        int lo = 0, hi = nsizes - 1, found = -1;

        if (availability(x, ci) != UA_NONE)
            continue;
        while (lo <= hi) {
            int mid = lo + (hi - lo) / 2;
            int n = mid < gpn ? mid + 1 : (mid - gpn + 2) * gpn;

            evaluate(x, ci, n, 1, &ev);
            if (ev.fits) {
                found = n;
                hi = mid - 1;
            } else {
                lo = mid + 1;
            }
        }
        if (found > 0 && (best == 0 || found < best))
            best = found;
    }
    return best;
}

/* ---- text ------------------------------------------------------------------ */

static void cat(char *buf, size_t size, const char *fmt, ...) TY_PRINTF(3, 4);

static void cat(char *buf, size_t size, const char *fmt, ...)
{
    size_t used = strnlen(buf, size);
    va_list ap;

    if (used + 1 >= size)
        return;
    va_start(ap, fmt);
    vsnprintf(buf + used, size - used, fmt, ap);
    va_end(ap);
}

static double gib(double bytes)
{
    return bytes / GIB;
}

static void unavail_text(enum unavail ua, const struct adv_caps *caps, char *en, char *zh,
                         size_t size)
{
    switch (ua) {
    case UA_GPU_ONLY:
        snprintf(en, size, "runs on GPUs only; this allocation is CPU");
        snprintf(zh, size, "仅支持 GPU；本次分配为 CPU");
        break;
    case UA_DEEPSPEED:
        snprintf(en, size,
                 "needs DeepSpeed, which the nodes do not have: installing deepspeed on every "
                 "node unlocks it");
        snprintf(zh, size, "需要 DeepSpeed，但节点未安装：在每个节点安装 deepspeed 即可启用");
        break;
    case UA_FSDP:
        snprintf(en, size,
                 "torch.distributed.fsdp does not import on the nodes (PyTorch %d.%d; Debian "
                 "12's 1.13 fails): a PyTorch 2.x on every node unlocks it",
                 caps->torch_major, caps->torch_minor);
        snprintf(zh, size,
                 "节点上无法导入 torch.distributed.fsdp（PyTorch %d.%d；Debian 12 的 1.13 "
                 "不可用）：在每个节点安装 PyTorch 2.x 即可启用",
                 caps->torch_major, caps->torch_minor);
        break;
    case UA_TORCH_OLD:
        snprintf(en, size,
                 "ZeroRedundancyOptimizer needs PyTorch 1.8 or newer; the nodes have %d.%d",
                 caps->torch_major, caps->torch_minor);
        snprintf(zh, size, "ZeroRedundancyOptimizer 需要 PyTorch 1.8 或更新版本；节点为 %d.%d",
                 caps->torch_major, caps->torch_minor);
        break;
    case UA_TORCH_UNKNOWN:
        snprintf(en, size,
                 "the nodes did not report a PyTorch version; ZeroRedundancyOptimizer needs 1.8 "
                 "or newer");
        snprintf(zh, size, "节点未报告 PyTorch 版本；ZeroRedundancyOptimizer 需要 1.8 或更新版本");
        break;
    default:
        en[0] = zh[0] = '\0';
        break;
    }
}

static void alt_text(const struct ctx *x, const struct eval *ev, const struct eval *chosen,
                     struct adv_alternative *alt)
{
    size_t n = sizeof(alt->reason_en);

    alt->reason_en[0] = alt->reason_zh[0] = '\0';
    if (ev->ua != UA_NONE) {
        unavail_text(ev->ua, &x->req->caps, alt->reason_en, alt->reason_zh, n);
        return;
    }
    if (!ev->fits) {
        if (ev->cpu_short) {
            snprintf(alt->reason_en, n,
                     "the host memory does not suffice: needs %.1f GiB per node, the node has "
                     "%.1f GiB%s",
                     gib(ev->c.cpu_node), gib((double)x->req->alloc.cpu_mem_per_node_bytes),
                     x->req->alloc.cpu_mem_per_node_bytes == 0 ? " (not reported)" : "");
            snprintf(alt->reason_zh, n, "主机内存不足：每个节点需要 %.1f GiB，节点有 %.1f GiB%s",
                     gib(ev->c.cpu_node), gib((double)x->req->alloc.cpu_mem_per_node_bytes),
                     x->req->alloc.cpu_mem_per_node_bytes == 0 ? "（未报告）" : "");
            return;
        }
        snprintf(alt->reason_en, n,
                 "does not fit by %.2f GiB: needs %.2f GiB per GPU at micro-batch 1%s, %.2f GiB "
                 "usable",
                 gib(ev->over_bytes), gib(ev->over_bytes + ev->usable),
                 x->mi.kind == ADV_MODEL_TRANSFORMER ? " with checkpointing" : "", gib(ev->usable));
        snprintf(alt->reason_zh, n,
                 "显存不足 %.2f GiB：micro-batch 为 1%s时每张 GPU 需要 %.2f GiB，可用 %.2f GiB",
                 gib(ev->over_bytes), x->mi.kind == ADV_MODEL_TRANSFORMER ? "且开启激活检查点" : "",
                 gib(ev->over_bytes + ev->usable), gib(ev->usable));
        return;
    }
    if (ev == chosen) {
        snprintf(alt->reason_en, n, "chosen");
        snprintf(alt->reason_zh, n, "已选择");
        return;
    }
    if (chosen == NULL) {
        snprintf(alt->reason_en, n, "fits");
        snprintf(alt->reason_zh, n, "可以容纳");
        return;
    }
    {
        double a = ev->sp.step_s, b = chosen->sp.step_s;
        const char *cs_en = strategy_en[cands[chosen->ci].s];
        const char *cs_zh = strategy_zh[cands[chosen->ci].s];
        bool same = cands[ev->ci].rung == cands[chosen->ci].rung;

        if (a > 0 && b > 0 && fabs(a / b - 1) < 0.005) {
            snprintf(alt->reason_en, n, "fits and is predicted as fast as %s, which %s", cs_en,
                     same ? "needs less memory" : "comes first in the order");
            snprintf(alt->reason_zh, n, "可以容纳，预计与 %s 一样快，但%s", cs_zh,
                     same ? "后者占用内存更少" : "后者在顺序上优先");
        } else if (a > 0 && b > 0 && a > b) {
            snprintf(alt->reason_en, n, "fits, but predicted %.0f %% slower than %s",
                     100 * (a / b - 1), cs_en);
            snprintf(alt->reason_zh, n, "可以容纳，但预计比 %s 慢 %.0f %%", cs_zh,
                     100 * (a / b - 1));
        } else if (a > 0 && b > 0) {
            snprintf(alt->reason_en, n,
                     "fits and is predicted %.0f %% faster, but %s comes first in the order "
                     "(fewer moving parts)",
                     100 * (1 - a / b), cs_en);
            snprintf(alt->reason_zh, n, "可以容纳且预计快 %.0f %%，但顺序上 %s 优先（更简单）",
                     100 * (1 - a / b), cs_zh);
        } else {
            snprintf(alt->reason_en, n, "fits, but %s %s", cs_en,
                     same ? "needs less memory" : "comes first in the order");
            snprintf(alt->reason_zh, n, "可以容纳，但 %s %s", cs_zh,
                     same ? "占用内存更少" : "在顺序上优先");
        }
    }
}

static void precision_text(const struct ctx *x, char *en, char *zh, size_t size)
{
    int cc = x->req->alloc.cc10;

    switch (x->prec) {
    case ADV_PREC_BF16:
        cat(en, size, "Precision bf16: compute capability %d.%d supports it.", cc / 10, cc % 10);
        cat(zh, size, "精度 bf16：计算能力 %d.%d 支持。", cc / 10, cc % 10);
        break;
    case ADV_PREC_FP16:
        if (cc >= 80) {
            cat(en, size,
                "Precision fp16 with dynamic loss scaling: PyTorch %d.%d has no CUDA bf16 "
                "autocast (1.10 has).",
                x->req->caps.torch_major, x->req->caps.torch_minor);
            cat(zh, size,
                "精度 fp16（动态损失缩放）：PyTorch %d.%d 不支持 CUDA bf16 autocast（1.10 "
                "起支持）。",
                x->req->caps.torch_major, x->req->caps.torch_minor);
        } else {
            cat(en, size,
                "Precision fp16 with dynamic loss scaling: bf16 needs compute capability 8.0, the "
                "GPUs have %d.%d.",
                cc / 10, cc % 10);
            cat(zh, size, "精度 fp16（动态损失缩放）：bf16 需要计算能力 8.0，当前 GPU 为 %d.%d。",
                cc / 10, cc % 10);
        }
        break;
    default:
        if (x->cpu) {
            cat(en, size, "Precision fp32: the allocation is CPU.");
            cat(zh, size, "精度 fp32：本次分配为 CPU。");
        } else {
            cat(en, size, "Precision fp32: compute capability %d.%d has no fast fp16.", cc / 10,
                cc % 10);
            cat(zh, size, "精度 fp32：计算能力 %d.%d 没有高速 fp16。", cc / 10, cc % 10);
        }
        break;
    }
}

static void plan_text(const struct ctx *x, const struct eval *ev, struct adv_plan *p)
{
    const struct adv_memory *m = &p->mem;
    size_t n = sizeof(p->reason_en);
    int gpn = x->req->alloc.gpus_per_node;
    int nodes = p->dp_degree <= gpn ? 1 : p->dp_degree / gpn;
    const char *dev_en = x->cpu ? "CPU process" : "GPU";
    const char *devs_en = x->cpu ? "CPU processes" : "GPUs";
    const char *dev_zh = x->cpu ? "个 CPU 进程" : "张 GPU";
    char *en = p->reason_en, *zh = p->reason_zh;

    en[0] = zh[0] = '\0';
    cat(en, n,
        "%s (%s) on %d %s (%d node%s): %.2f of %.2f GiB per %s (parameters %.2f, "
        "gradients %.2f, optimizer %.2f, activations %.2f at micro-batch %d, buffers %.2f, fixed "
        "%.2f, headroom %.2f). ",
        strategy_en[p->strategy], adv_engine_name(p->engine), p->dp_degree,
        p->dp_degree > 1 ? devs_en : dev_en, nodes, nodes > 1 ? "s" : "", gib((double)m->total),
        gib((double)m->limit), dev_en, gib((double)m->params), gib((double)m->grads),
        gib((double)m->optimizer), gib((double)m->activations), p->micro_batch,
        gib((double)m->buffers), gib((double)m->fixed), gib((double)m->headroom));
    cat(zh, n,
        "%s（%s），%d %s（%d 个节点）：每%s 占用 %.2f / %.2f GiB（参数 %.2f、梯度 %.2f、"
        "优化器状态 %.2f、激活 %.2f（micro-batch %d）、缓冲 %.2f、固定开销 %.2f、预留 %.2f）。",
        strategy_zh[p->strategy], adv_engine_name(p->engine), p->dp_degree, dev_zh, nodes,
        x->cpu ? "个进程" : "张 GPU", gib((double)m->total), gib((double)m->limit),
        gib((double)m->params), gib((double)m->grads), gib((double)m->optimizer),
        gib((double)m->activations), p->micro_batch, gib((double)m->buffers), gib((double)m->fixed),
        gib((double)m->headroom));
    cat(en, n, "Micro-batch %d x accumulation %d x %d = %d, %s %d. ", p->micro_batch, p->grad_accum,
        p->dp_degree, p->reached_batch,
        p->batch_exact ? "exactly the global batch" : "the nearest reachable to",
        p->requested_batch);
    cat(zh, n, "micro-batch %d × 梯度累积 %d × %d = %d，%s %d。", p->micro_batch, p->grad_accum,
        p->dp_degree, p->reached_batch, p->batch_exact ? "正好等于全局 batch" : "最接近请求的",
        p->requested_batch);
    if (p->checkpointing) {
        cat(en, n, "Activation checkpointing on: %s. ",
            ev->c.act_sample * 1 + static_bytes(&ev->c) > ev->usable
                ? "without it not even micro-batch 1 fits"
                : "it allows a larger micro-batch");
        cat(zh, n, "开启激活检查点：%s。",
            ev->c.act_sample * 1 + static_bytes(&ev->c) > ev->usable
                ? "不开启时 micro-batch 1 也放不下"
                : "可使用更大的 micro-batch");
    }
    precision_text(x, en, zh, n);
    if (p->speed.step_s > 0) {
        cat(en, n,
            " Predicted step %.3f s (compute %.3f s at %.0f %% of %.3g TFLOP/s, communication "
            "%.3f s of which %.3f s exposed over %.0f GB/s %s, offload %.3f s): %.1f samples/s.",
            p->speed.step_s, p->speed.compute_s, 100 * p->speed.efficiency,
            p->speed.peak_flops / 1e12, p->speed.comm_s, p->speed.exposed_comm_s,
            p->speed.busbw_gbps, p->speed.busbw_measured ? "measured" : "assumed",
            p->speed.offload_s, p->speed.samples_per_s);
        cat(zh, n,
            "预计每步 %.3f 秒（计算 %.3f 秒，按峰值 %.3g TFLOP/s 的 %.0f %%；通信 %.3f 秒，其中 "
            "%.3f 秒未被掩盖，总线带宽 %.0f GB/s（%s）；卸载 %.3f 秒），每秒 %.1f 个样本。",
            p->speed.step_s, p->speed.compute_s, p->speed.peak_flops / 1e12,
            100 * p->speed.efficiency, p->speed.comm_s, p->speed.exposed_comm_s,
            p->speed.busbw_gbps, p->speed.busbw_measured ? "实测" : "估计", p->speed.offload_s,
            p->speed.samples_per_s);
    }
}

/*
 * Cut a text that snprintf may have truncated inside a multi-byte UTF-8
 * character back to the last whole one: the JSON layer (jansson) refuses
 * strings that are not valid UTF-8.
 */
static void utf8_trim(char *s)
{
    size_t n = strlen(s), i = n, len;
    unsigned char c;

    while (i > 0 && i + 4 > n && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
        i--;
    if (i == 0)
        return;
    c = (unsigned char)s[i - 1];
    if (c < 0x80)
        return;
    len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
    if (n - (i - 1) != len)
        s[i - 1] = '\0';
}

static void copy_text(char *dst, size_t size, const char *src)
{
    size_t n = strnlen(src, size - 1);

    memcpy(dst, src, n);
    dst[n] = '\0';
    utf8_trim(dst);
}

static void warn(struct adv_plan *p, enum adv_warning_code code, const char *en, const char *zh)
{
    struct adv_warning *w;

    if (p->nwarnings >= ADV_MAX_WARNINGS)
        return;
    w = &p->warnings[p->nwarnings++];
    w->code = code;
    copy_text(w->en, sizeof(w->en), en);
    copy_text(w->zh, sizeof(w->zh), zh);
}

/* Every text of the plan ends on a whole UTF-8 character. */
static void trim_texts(struct adv_plan *p)
{
    utf8_trim(p->reason_en);
    utf8_trim(p->reason_zh);
    for (size_t i = 0; i < p->nalts; i++) {
        utf8_trim(p->alts[i].reason_en);
        utf8_trim(p->alts[i].reason_zh);
    }
}

/* ---- the plan --------------------------------------------------------------- */

static void split_batch(const struct adv_request *r, struct ctx *x)
{
    int b = r->global_batch, n = r->alloc.gpus;
    int lo = b / n, hi = lo + 1;

    if (b % n == 0) {
        x->q = lo;
    } else if (lo == 0 || (long long)hi * n - b < b - (long long)lo * n) {
        x->q = hi;
    } else {
        x->q = lo;
    }
    x->reached = x->q * n;
}

static void fill_alts(const struct ctx *x, const struct eval *evs, const struct eval *chosen,
                      struct adv_plan *p)
{
    for (size_t i = 0; i < NCANDS && p->nalts < ADV_MAX_ALTERNATIVES; i++) {
        struct adv_alternative *alt = &p->alts[p->nalts++];
        const struct eval *ev = &evs[i];

        alt->strategy = cands[i].s;
        alt->engine = cands[i].g;
        alt->checkpointing = ev->ckpt;
        alt->micro_batch = ev->ua == UA_NONE && ev->fits ? ev->micro : 0;
        fill_mem(ev, alt->micro_batch > 0 ? alt->micro_batch : 1, &alt->mem);
        alt->step_s = ev->ua == UA_NONE && ev->fits ? ev->sp.step_s : 0;
        alt->over_bytes = ev->over_bytes > 0 ? ev->over_bytes : 0;
        if (ev->ua != UA_NONE)
            alt->status = ADV_ALT_UNAVAILABLE;
        else if (!ev->fits)
            alt->status = ADV_ALT_NO_FIT;
        else
            alt->status = ev == chosen ? ADV_ALT_CHOSEN : ADV_ALT_FITS;
        alt_text(x, ev, chosen, alt);
    }
}

/* The runnable candidate closest to fitting (for a plan where nothing fits). */
/* 0: runnable, 1: maybe (PyTorch unknown), 2: not on these nodes. */
static int ua_rank(enum unavail ua)
{
    return ua == UA_NONE ? 0 : ua == UA_TORCH_UNKNOWN ? 1 : 2;
}

static int closest(const struct eval *evs, enum adv_strategy want)
{
    int best = -1;

    for (size_t i = 0; i < NCANDS; i++) {
        if (want != ADV_STRATEGY_AUTO && cands[i].s != want)
            continue;
        if (evs[i].ua != UA_NONE && want == ADV_STRATEGY_AUTO)
            continue;
        /* An explicit strategy's engine: one the nodes can run, else one they
         * may run (PyTorch not reported), before one they cannot (DeepSpeed on
         * CPU); the plan's engine is what the ranks are told to use. */
        if (best >= 0 && ua_rank(evs[i].ua) != ua_rank(evs[best].ua)) {
            if (ua_rank(evs[i].ua) < ua_rank(evs[best].ua))
                best = (int)i;
            continue;
        }
        /* One short of host memory only (offload) ranks after any GPU shortfall:
         * more GPU memory would not help it. */
        if (best < 0 || (evs[best].cpu_short && !evs[i].cpu_short) ||
            (evs[best].cpu_short == evs[i].cpu_short && evs[i].over_bytes < evs[best].over_bytes))
            best = (int)i;
    }
    return best;
}

static void warnings(const struct ctx *x, struct adv_plan *p)
{
    const struct adv_alloc *a = &x->req->alloc;
    char en[ADV_ALT_TEXT], zh[ADV_ALT_TEXT];
    int gpn = a->gpus_per_node < a->gpus ? a->gpus_per_node : a->gpus;
    double load = 4 * x->mi.params * gpn; /* DeepSpeed memory docs: fp32 model per rank */

    if (p->reached_batch > 0 && !p->batch_exact) {
        snprintf(en, sizeof(en),
                 "the global batch %d cannot be split evenly over %d ranks: %d is used (%d per "
                 "rank)",
                 p->requested_batch, p->dp_degree, p->reached_batch, x->q);
        snprintf(zh, sizeof(zh), "全局 batch %d 无法在 %d 个进程间均分：改用 %d（每个进程 %d）",
                 p->requested_batch, p->dp_degree, p->reached_batch, x->q);
        warn(p, ADV_WARN_BATCH_INEXACT, en, zh);
    }
    if (!x->cpu && a->cpu_mem_per_node_bytes > 0 && load > 0.9 * a->cpu_mem_per_node_bytes &&
        p->strategy != ADV_STRATEGY_ZERO3_OFFLOAD_OPT &&
        p->strategy != ADV_STRATEGY_ZERO3_OFFLOAD_ALL) {
        snprintf(en, sizeof(en),
                 "loading the model in fp32 on every rank needs %.1f GiB of host memory per "
                 "node, the node has %.1f GiB: load it on the meta device, with zero.Init, or "
                 "one rank at a time",
                 gib(load), gib((double)a->cpu_mem_per_node_bytes));
        snprintf(zh, sizeof(zh),
                 "每个进程以 fp32 加载模型，每个节点需要 %.1f GiB 主机内存，节点只有 %.1f "
                 "GiB：请在 meta 设备上、用 zero.Init 或逐个进程加载",
                 gib(load), gib((double)a->cpu_mem_per_node_bytes));
        warn(p, ADV_WARN_CPU_MEM_LOAD, en, zh);
    }
    if (adv_train_flops_per_sample(&x->mi) <= 0)
        warn(p, ADV_WARN_NO_SPEED,
             "no FLOPs per sample are known for this model: no step time is predicted",
             "未知该模型每个样本的 FLOPs：不预测每步时间");
}

static void apply(const struct ctx *x, const struct eval *ev, struct adv_plan *p)
{
    p->strategy = cands[ev->ci].s;
    p->engine = cands[ev->ci].g;
    p->checkpointing = ev->fits ? ev->ckpt : x->mi.kind == ADV_MODEL_TRANSFORMER;
    p->micro_batch = ev->fits ? ev->micro : 0;
    p->grad_accum = ev->fits ? ev->accum : 0;
    p->reached_batch = ev->fits ? x->reached : 0;
    p->batch_exact = ev->fits && x->reached == x->req->global_batch;
    if (ev->fits) {
        fill_mem(ev, ev->micro, &p->mem);
    } else {
        struct eval one = *ev;
        one.ckpt = p->checkpointing;
        fill_mem(&one, 1, &p->mem);
    }
    p->cpu_mem_per_node = (uint64_t)ceil(ev->c.cpu_node);
    p->speed = ev->sp;
}

enum rc adv_plan(const struct adv_request *req, struct adv_plan *out, struct err *e)
{
    struct ctx x;
    struct eval evs[NCANDS];
    int auto_i, pick;
    enum rc rc;

    memset(out, 0, sizeof(*out));
    rc = check_request(req, e);
    if (rc != RC_OK)
        return rc;
    memset(&x, 0, sizeof(x));
    x.req = req;
    rc = adv_resolve_model(&req->model, &x.mi, e);
    if (rc != RC_OK)
        return rc;
    x.cpu = req->alloc.cc10 == 0 || req->alloc.gpu_mem_bytes == 0;
    x.prec = precision(req, x.cpu);
    split_batch(req, &x);
    for (size_t i = 0; i < NCANDS; i++)
        evaluate(&x, i, req->alloc.gpus, x.q, &evs[i]);

    out->model = x.mi;
    out->cpu = x.cpu;
    out->precision = x.prec;
    out->loss_scaling = x.prec == ADV_PREC_FP16;
    out->dp_degree = req->alloc.gpus;
    out->requested_batch = req->global_batch;
    auto_i = choose(evs, ADV_STRATEGY_AUTO);
    pick = req->strategy == ADV_STRATEGY_AUTO ? auto_i : choose(evs, req->strategy);
    out->recommended = auto_i >= 0 ? cands[auto_i].s : ADV_STRATEGY_AUTO;
    if (pick >= 0) {
        out->status = ADV_PLAN_OK;
        apply(&x, &evs[pick], out);
    } else {
        int c = closest(evs, req->strategy);

        out->status = ADV_PLAN_NO_FIT;
        if (c < 0)
            c = 0; /* nothing runnable at all: DDP is always runnable, so cannot happen */
        apply(&x, &evs[c], out);
        if (req->strategy == ADV_STRATEGY_AUTO || auto_i < 0) {
            out->smallest_gpus = smallest_fit(&x);
            if (!x.cpu && evs[c].ua == UA_NONE && !evs[c].cpu_short && evs[c].over_bytes > 0) {
                /* memory per GPU M with M - M/100*10 >= need */
                double need = evs[c].over_bytes + evs[c].usable;
                double mgpu = ceil(need / (1 - ADV_HEADROOM_PCT / 100.0));
                out->min_gpu_mem_bytes = (uint64_t)mgpu;
            }
        }
    }
    fill_alts(&x, evs, pick >= 0 ? &evs[pick] : NULL, out);
    if (pick >= 0)
        plan_text(&x, &evs[pick], out);
    warnings(&x, out);
    if (req->strategy != ADV_STRATEGY_AUTO && pick < 0) {
        char en[2 * ADV_ALT_TEXT], zh[2 * ADV_ALT_TEXT]; /* warn() cuts them to size */
        const struct eval *ev = &evs[closest(evs, req->strategy)];

        if (ev->ua != UA_NONE) {
            char uen[ADV_ALT_TEXT], uzh[ADV_ALT_TEXT];
            unavail_text(ev->ua, &req->caps, uen, uzh, sizeof(uen));
            snprintf(en, sizeof(en), "the requested %s cannot run on the nodes: %s",
                     strategy_en[req->strategy], uen);
            snprintf(zh, sizeof(zh), "所选的 %s 无法在节点上运行：%s", strategy_zh[req->strategy],
                     uzh);
            warn(out, ADV_WARN_OVERRIDE_UNAVAILABLE, en, zh);
        } else {
            snprintf(en, sizeof(en), "the requested %s does not fit by %.2f GiB per GPU%s%s",
                     strategy_en[req->strategy], gib(ev->over_bytes),
                     auto_i >= 0 ? "; the advisor recommends " : "",
                     auto_i >= 0 ? strategy_en[cands[auto_i].s] : "");
            snprintf(zh, sizeof(zh), "所选的 %s 每张 GPU 超出 %.2f GiB%s%s",
                     strategy_zh[req->strategy], gib(ev->over_bytes),
                     auto_i >= 0 ? "；建议使用 " : "",
                     auto_i >= 0 ? strategy_zh[cands[auto_i].s] : "");
            warn(out, ADV_WARN_OVERRIDE_NO_FIT, en, zh);
        }
    }
    if (out->status == ADV_PLAN_NO_FIT && req->strategy == ADV_STRATEGY_AUTO) {
        size_t n = sizeof(out->reason_en);
        const struct eval *ev = &evs[closest(evs, ADV_STRATEGY_AUTO)];

        snprintf(out->reason_en, n,
                 "Nothing fits on %d %s: the closest, %s, needs %.2f GiB more per %s at "
                 "micro-batch 1. ",
                 req->alloc.gpus, x.cpu ? "CPU processes" : "GPUs", strategy_en[cands[ev->ci].s],
                 gib(ev->over_bytes), x.cpu ? "process" : "GPU");
        snprintf(out->reason_zh, n,
                 "%d %s上都放不下：最接近的 %s 在 micro-batch 为 1 时每%s还差 %.2f GiB。",
                 req->alloc.gpus, x.cpu ? "个 CPU 进程" : "张 GPU", strategy_zh[cands[ev->ci].s],
                 x.cpu ? "个进程" : "张 GPU", gib(ev->over_bytes));
        if (out->smallest_gpus > 0) {
            cat(out->reason_en, n, "The smallest allocation of these GPUs that fits: %d.",
                out->smallest_gpus);
            cat(out->reason_zh, n, "同型号 GPU 最少需要 %d 张。", out->smallest_gpus);
        } else {
            cat(out->reason_en, n, "No allocation of these GPUs up to %d fits.", ADV_MAX_GPUS);
            cat(out->reason_zh, n, "同型号 GPU 在 %d 张以内都放不下。", ADV_MAX_GPUS);
        }
        if (out->min_gpu_mem_bytes > 0) {
            cat(out->reason_en, n, " At this size, GPUs with %.1f GiB would fit.",
                gib((double)out->min_gpu_mem_bytes));
            cat(out->reason_zh, n, "保持当前数量时，每张 GPU 需要 %.1f GiB 显存。",
                gib((double)out->min_gpu_mem_bytes));
        }
    } else if (out->status == ADV_PLAN_NO_FIT && out->nwarnings > 0) {
        copy_text(out->reason_en, sizeof(out->reason_en), out->warnings[out->nwarnings - 1].en);
        copy_text(out->reason_zh, sizeof(out->reason_zh), out->warnings[out->nwarnings - 1].zh);
    }
    trim_texts(out);
    return RC_OK;
}
