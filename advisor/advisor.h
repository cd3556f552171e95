/*
 * advisor.h - the strategy advisor: a pure library that picks how to train a
 * model on an allocation. A request goes in (the model, the global batch, the
 * optimizer, the GPUs and their links, what the nodes' software can run, an
 * optional explicit strategy) and a plan comes out: the strategy (DDP,
 * ZeRO-1, ZeRO-2, ZeRO-3/FSDP, ZeRO-3 with optimizer offload, with parameter
 * offload), the engine that runs it (plain PyTorch or DeepSpeed), the
 * precision, activation checkpointing, the micro-batch and gradient
 * accumulation, the per-GPU memory breakdown, the predicted step time, every
 * alternative with why it was not taken, and the reasons in en and zh-CN.
 * advisor_json.h turns requests and plans into JSON and emits the configs
 * (DeepSpeed, FSDP, TRAINYARD_* env).
 *
 * No I/O, clock, threads, globals with state or allocation: libc, libm and
 * common/err.h only. Same request, same plan, on every machine.
 *
 * How it decides (advisor/README.md has the sources of every figure):
 *  - Candidates are tried in the order of enum adv_strategy; the first that
 *    fits in memory with headroom and that the nodes can run is chosen.
 *    Inside one rung (ZeRO-1 by DeepSpeed or by torch's
 *    ZeroRedundancyOptimizer; ZeRO-3 by DeepSpeed or FSDP; parameter
 *    offload by DeepSpeed or FSDP) the faster one wins.
 *  - A candidate fits when, at micro-batch 1, parameters + gradients +
 *    optimizer states + buffers + fixed costs + activations + headroom
 *    (ADV_HEADROOM_PCT of the device memory) stay within the memory of one
 *    GPU (on CPU: the node's memory divided by its processes). Activation
 *    checkpointing is switched on when only it makes the candidate fit, or
 *    when it at least doubles a micro-batch below ADV_SMALL_MICRO.
 *  - Micro-batch m and accumulation k satisfy m x k x gpus == global batch;
 *    when gpus does not divide the global batch, the nearest multiple of
 *    gpus is reached instead (reached_batch, batch_exact false, a warning).
 *  - Nothing fits: status ADV_PLAN_NO_FIT, with the smallest allocation of
 *    the same GPUs (same gpus_per_node) that would fit, if one of at most
 *    ADV_MAX_GPUS does, and the memory per GPU that would fit at this size.
 *
 * Thread-safety: reentrant. A plan is caller storage and owns nothing.
 */
#ifndef TY_ADVISOR_H
#define TY_ADVISOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define ADV_MAX_GPUS 4096        /* largest allocation planned or suggested */
#define ADV_MAX_GPUS_PER_NODE 64 /* as the scheduler's nodes */
#define ADV_MAX_GLOBAL_BATCH 16777216
#define ADV_MAX_PARAMS 1e13     /* 10 T parameters */
#define ADV_HEADROOM_PCT 10     /* allocator fragmentation headroom, % of device memory */
#define ADV_SMALL_MICRO 4       /* policy: below this micro-batch, checkpointing may pay */
#define ADV_MAX_ALTERNATIVES 12 /* candidates in a plan (9 are used today) */
#define ADV_MAX_WARNINGS 6
#define ADV_TEXT 768     /* bytes of one reason paragraph, NUL included */
#define ADV_ALT_TEXT 320 /* bytes of one alternative's reason */
#define ADV_NAME 64

/* How the model is described. */
enum adv_model_kind {
    ADV_MODEL_KNOWN = 0,       /* a name from the known-model table */
    ADV_MODEL_TRANSFORMER = 1, /* a transformer by shape */
    ADV_MODEL_MEASURED = 2     /* parameters plus measured activation bytes per sample */
};

enum adv_arch { ADV_ARCH_DECODER = 0, ADV_ARCH_ENCODER = 1 };

enum adv_norm { ADV_NORM_LAYERNORM = 0, ADV_NORM_RMSNORM = 1 };

/*
 * The attention kernel the script uses. EAGER keeps the a x s x s score,
 * softmax (and dropout) tensors for the backward pass, as Korthikanti et al.
 * count them; FUSED (torch's scaled_dot_product_attention flash or
 * memory-efficient kernels, FlashAttention) keeps only the output and a
 * per-row statistic, so the 5as/h term drops out.
 */
enum adv_attn { ADV_ATTN_EAGER = 0, ADV_ATTN_FUSED = 1 };

/* A transformer by shape. Parameters are counted from it (advisor README). */
struct adv_transformer {
    enum adv_arch arch;
    int layers;           /* 1..1024 */
    int hidden;           /* h, 1..65536; a multiple of heads */
    int heads;            /* a, 1..1024 */
    int kv_heads;         /* grouped-query attention; 0 = heads; divides heads */
    int ffn;              /* FFN inner size, 1..1048576 */
    int vocab;            /* V, 0..4194304 (0: no token embedding or LM head) */
    int seq_len;          /* s, 1..1048576 */
    int positions;        /* learned position embeddings (0 = rotary or none) */
    bool gated_mlp;       /* SwiGLU-style (3 matrices) instead of GeLU (2) */
    bool tied_embeddings; /* the LM head reuses the token embedding */
    bool bias;            /* every linear layer has a bias */
    bool qkv_bias;        /* only the q, k, v projections have biases (Qwen2, ChatGLM3) */
    bool dropout;         /* dropout layers are active (their 1-byte masks are kept) */
    enum adv_norm norm;
};

/* A model measured by the project or the user (CNNs, anything else). */
struct adv_measured {
    double params;                 /* 1..ADV_MAX_PARAMS */
    double act_bytes_per_sample;   /* saved activations per sample, fp32 run */
    double act_bytes_per_sample16; /* the same with 16-bit activations; 0 = half of fp32 */
    double act_fixed_bytes;        /* saved bytes independent of the batch (0 if unknown) */
    double fwd_flops_per_sample;   /* forward FLOPs per sample; 0 = unknown (no speed) */
    double largest_layer_params;   /* largest module's own parameters; 0 = params */
};

struct adv_model {
    enum adv_model_kind kind;
    char name[ADV_NAME];       /* KNOWN: the table name; else a label (may be empty) */
    int seq_len;               /* KNOWN transformers: 0 = the table's default */
    enum adv_attn attn;        /* transformers only */
    struct adv_transformer tf; /* TRANSFORMER */
    struct adv_measured ms;    /* MEASURED */
};

enum adv_optimizer {
    ADV_OPT_ADAMW = 0,
    ADV_OPT_ADAM = 1,
    ADV_OPT_SGD = 2,         /* no state */
    ADV_OPT_SGD_MOMENTUM = 3 /* one fp32 buffer per parameter */
};

enum adv_intra { ADV_INTRA_PCIE = 0, ADV_INTRA_NVLINK = 1 };
enum adv_inter { ADV_INTER_ETHERNET = 0, ADV_INTER_IB = 1 };

/*
 * The GPUs of one job. gpu_mem_bytes == 0 or cc10 == 0 means CPU: then
 * gpus counts processes, and each takes cpu_mem_per_node_bytes /
 * gpus_per_node. Bandwidths are GB/s (1e9 bytes/s), one direction.
 */
struct adv_alloc {
    int gpus;                        /* 1..ADV_MAX_GPUS */
    int gpus_per_node;               /* 1..ADV_MAX_GPUS_PER_NODE; gpus is a multiple, or less */
    uint64_t gpu_mem_bytes;          /* memory of one GPU; 0 = CPU */
    int cc10;                        /* compute capability x 10 (80 = 8.0); 0 = CPU */
    enum adv_intra intra;            /* link between the GPUs of a node */
    double intra_gbps;               /* per GPU; > 0 */
    enum adv_inter inter;            /* link between nodes */
    double inter_gbps;               /* per node, all its NICs; > 0 */
    double host_gbps;                /* GPU <-> CPU (PCIe) per GPU; 0 = ADV_HOST_GBPS_DEFAULT */
    uint64_t cpu_mem_per_node_bytes; /* 0 = unknown (no offload; required on CPU) */
    double busbw_intra_gbps;         /* measured all-reduce bus bandwidth in a node; 0 = none */
    double busbw_inter_gbps;         /* measured across nodes; 0 = none */
};

#define ADV_HOST_GBPS_DEFAULT 16.0 /* PCIe 3.0 x16, one direction (PCI-SIG: 15.75 GB/s) */

/* What the nodes can run, as the worker reports it. */
struct adv_caps {
    int torch_major, torch_minor; /* 0.0 = PyTorch unknown: only DDP is assumed */
    bool fsdp;                    /* torch.distributed.fsdp imports */
    bool deepspeed;               /* deepspeed imports */
};

/*
 * Strategies, in the order they are tried. Each needs an engine: DDP and
 * FSDP are PyTorch; ZeRO-1 is DeepSpeed stage 1 or torch's
 * ZeroRedundancyOptimizer (torch >= 1.8); ZeRO-2, ZeRO-3 and the optimizer
 * offload are DeepSpeed only; parameter offload is DeepSpeed (offload_param
 * + offload_optimizer) or FSDP with CPUOffload(offload_params=True).
 */
enum adv_strategy {
    ADV_STRATEGY_AUTO = 0, /* requests only: let the advisor choose */
    ADV_STRATEGY_DDP = 1,
    ADV_STRATEGY_ZERO1 = 2,
    ADV_STRATEGY_ZERO2 = 3,
    ADV_STRATEGY_ZERO3 = 4, /* DeepSpeed stage 3 */
    ADV_STRATEGY_FSDP = 5,  /* torch FSDP FULL_SHARD: the same rung as ZERO3 */
    ADV_STRATEGY_ZERO3_OFFLOAD_OPT = 6,
    ADV_STRATEGY_ZERO3_OFFLOAD_ALL = 7,
    ADV_STRATEGY_FSDP_OFFLOAD = 8 /* the same rung as ZERO3_OFFLOAD_ALL */
};
#define ADV_STRATEGY_COUNT 9

enum adv_engine { ADV_ENGINE_TORCH = 0, ADV_ENGINE_DEEPSPEED = 1 };

enum adv_precision { ADV_PREC_FP32 = 0, ADV_PREC_FP16 = 1, ADV_PREC_BF16 = 2 };

struct adv_request {
    struct adv_model model;
    int global_batch; /* samples per optimizer step, 1..ADV_MAX_GLOBAL_BATCH */
    enum adv_optimizer optimizer;
    struct adv_alloc alloc;
    struct adv_caps caps;
    enum adv_strategy strategy; /* AUTO, or an explicit choice the plan follows */
};

/* Bytes on one GPU (or one CPU process). */
struct adv_memory {
    uint64_t params;      /* parameters held (shards, or full copies) */
    uint64_t grads;       /* gradients held, fp32 partitions included */
    uint64_t optimizer;   /* optimizer states (momentum, variance, fp32 master copy) */
    uint64_t activations; /* saved for the backward pass, at the micro-batch */
    uint64_t buffers;     /* communication buckets, gathered layers, autocast weight copies */
    uint64_t fixed;       /* CUDA context (or the CPU process's runtime) */
    uint64_t headroom;    /* kept free for allocator fragmentation */
    uint64_t total;       /* the sum of the above */
    uint64_t limit;       /* the device memory: GPU, or CPU memory per process */
};

/* Predicted time of one optimizer step (seconds). */
struct adv_speed {
    double step_s;         /* compute_s + exposed_comm_s + offload_s; 0 = unknown */
    double compute_s;      /* FLOPs / (peak x efficiency), recomputation included */
    double comm_s;         /* bytes moved over the bus bandwidth, before overlap */
    double exposed_comm_s; /* the part not hidden behind the backward pass */
    double offload_s;      /* PCIe traffic and the CPU optimizer step (offload only) */
    double samples_per_s;  /* reached_batch / step_s; 0 = unknown */
    double flops_per_step; /* training FLOPs of all GPUs in one step */
    double peak_flops;     /* of one GPU at the precision (table in advisor README) */
    double efficiency;     /* the stated fraction of peak */
    double busbw_gbps;     /* the bus bandwidth used for the collectives */
    bool busbw_measured;   /* busbw_gbps came from trainyard-nccl-probe */
};

enum adv_alt_status {
    ADV_ALT_CHOSEN = 0,
    ADV_ALT_FITS = 1,        /* fits, but an earlier or faster candidate was taken */
    ADV_ALT_NO_FIT = 2,      /* does not fit even at micro-batch 1 with checkpointing */
    ADV_ALT_UNAVAILABLE = 3, /* the nodes cannot run it (the reason says what unlocks it) */
    ADV_ALT_SKIPPED = 4      /* not planned: an earlier rung fits (speed still predicted) */
};

struct adv_alternative {
    enum adv_strategy strategy;
    enum adv_engine engine;
    enum adv_alt_status status;
    bool checkpointing;    /* as planned for this candidate */
    int micro_batch;       /* 0 when it does not fit or cannot run */
    struct adv_memory mem; /* at micro_batch (at 1 when it does not fit) */
    double step_s;         /* 0 when unknown or not planned */
    double over_bytes;     /* NO_FIT: bytes above the limit at micro-batch 1 */
    char reason_en[ADV_ALT_TEXT];
    char reason_zh[ADV_ALT_TEXT];
};

enum adv_warning_code {
    ADV_WARN_OVERRIDE_NO_FIT = 1,      /* the explicit strategy does not fit */
    ADV_WARN_OVERRIDE_UNAVAILABLE = 2, /* the explicit strategy cannot run on the nodes */
    ADV_WARN_BATCH_INEXACT = 3,        /* the global batch was rounded */
    ADV_WARN_CPU_MEM_LOAD = 4,         /* loading the model in fp32 on every rank needs more RAM */
    ADV_WARN_NO_SPEED = 5              /* no FLOPs known: no step time */
};

struct adv_warning {
    enum adv_warning_code code;
    char en[ADV_ALT_TEXT];
    char zh[ADV_ALT_TEXT];
};

enum adv_plan_status {
    ADV_PLAN_OK = 0,    /* the strategy fits and can run */
    ADV_PLAN_NO_FIT = 1 /* nothing (or the explicit strategy) does not fit / cannot run */
};

/* The resolved model the plan was made for (known names filled from the table). */
struct adv_model_info {
    enum adv_model_kind kind; /* TRANSFORMER or MEASURED after resolution */
    char name[ADV_NAME];
    double params;               /* parameter count used */
    double largest_layer_params; /* module gathered at once by ZeRO-3 / FSDP */
    int seq_len;                 /* transformers; 0 otherwise */
    struct adv_transformer tf;   /* TRANSFORMER */
    struct adv_measured ms;      /* MEASURED */
    enum adv_attn attn;
};

struct adv_plan {
    enum adv_plan_status status;
    struct adv_model_info model;
    bool cpu;                   /* the allocation is CPU processes (gloo, fp32) */
    enum adv_strategy strategy; /* chosen (or the explicit one); DDP when nothing fits */
    enum adv_engine engine;
    enum adv_strategy recommended; /* what AUTO would choose (differs only with an override) */
    enum adv_precision precision;
    bool loss_scaling;         /* fp16: dynamic loss scaling */
    bool checkpointing;        /* activation checkpointing, full (every block) */
    int micro_batch;           /* per GPU; 0 when nothing fits */
    int grad_accum;            /* >= 1; 0 when nothing fits */
    int dp_degree;             /* data-parallel ranks = gpus */
    int requested_batch;       /* the request's global batch */
    int reached_batch;         /* micro_batch x grad_accum x dp_degree */
    bool batch_exact;          /* reached_batch == requested_batch */
    struct adv_memory mem;     /* per GPU at micro_batch */
    uint64_t cpu_mem_per_node; /* offload: host memory needed per node; else 0 */
    struct adv_speed speed;
    struct adv_alternative alts[ADV_MAX_ALTERNATIVES]; /* every candidate, in order */
    size_t nalts;
    struct adv_warning warnings[ADV_MAX_WARNINGS];
    size_t nwarnings;
    int smallest_gpus;          /* NO_FIT: smallest allocation that fits; 0 = none known */
    uint64_t min_gpu_mem_bytes; /* NO_FIT: memory per GPU that fits at this size; 0 = none */
    char reason_en[ADV_TEXT];   /* one paragraph */
    char reason_zh[ADV_TEXT];
};

/*
 * Plan req into out (caller storage, overwritten). req is borrowed and only
 * read. Returns RC_OK (out->status says whether anything fits) or RC_EINVAL
 * when req is out of range or inconsistent; then e (may be NULL) names the
 * field with the JSON path the request layer uses ("allocation.gpus") and
 * out is zeroed. Never allocates.
 */
enum rc adv_plan(const struct adv_request *req, struct adv_plan *out, struct err *e) TY_WUR;

/* Fill req with the defaults: adamw, AUTO, one GPU, PCIe, Ethernet. */
void adv_request_init(struct adv_request *req);

/* One entry of the known-model table (advisor_models.c cites each source). */
struct adv_known {
    const char *name;          /* "llama-2-7b" */
    enum adv_model_kind kind;  /* TRANSFORMER or MEASURED */
    struct adv_transformer tf; /* seq_len is the default sequence length */
    struct adv_measured ms;    /* measured entries: per sample at 224 x 224 */
    double published_params;   /* the count the source states (for the tests) */
    const char *source;        /* citation of the architecture (and measurement) */
};

/* The entry named name (exact, lower case), or NULL. Static; never free. */
const struct adv_known *adv_known_find(const char *name);

/* The table: *n entries, in a fixed order. Static. */
const struct adv_known *adv_known_table(size_t *n);

/* Names for JSON and env: "ddp", "zero1", ... ; "auto" for AUTO. Static, never NULL. */
const char *adv_strategy_name(enum adv_strategy s);
const char *adv_engine_name(enum adv_engine g);         /* "torch", "deepspeed" */
const char *adv_precision_name(enum adv_precision p);   /* "fp32", "fp16", "bf16" */
const char *adv_optimizer_name(enum adv_optimizer o);   /* "adamw", "adam", "sgd", "sgd-momentum" */
const char *adv_alt_status_name(enum adv_alt_status s); /* "chosen", "fits", ... */

/* The strategy named s (as adv_strategy_name), or -1. */
int adv_strategy_parse(const char *s);

/*
 * The figures the planner is built on, exported for the tests that
 * reproduce the published numbers.
 */

/*
 * ZeRO paper (Rajbhandari et al. 2020, section 5.1 and figure 1): model-state
 * bytes per GPU of mixed-precision training with psi parameters, k bytes of
 * optimizer state per parameter (12 for Adam) and nd data-parallel ranks, for
 * stage 0 (DDP) .. 3: (2+2+k)psi, 2psi+2psi+k psi/nd, 2psi+(2+k)psi/nd,
 * (2+2+k)psi/nd.
 */
double adv_zero_paper_bytes(int stage, double psi, double k, int nd);

/*
 * DeepSpeed's estimators, as deepspeed/runtime/zero/stage_1_and_2.py
 * estimate_zero2_model_states_mem_needs() and stage3.py
 * estimate_zero3_model_states_mem_needs() compute them (with
 * additional_buffer_factor), returning GPU and CPU bytes per GPU / per node.
 */
void adv_ds_zero2_estimate(double params, int gpus_per_node, int nodes, bool cpu_offload,
                           double buffer_factor, double *gpu_bytes /* out */,
                           double *cpu_bytes /* out */);
void adv_ds_zero3_estimate(double params, double largest_layer_params, int gpus_per_node, int nodes,
                           bool cpu_offload, bool cpu_offload_params, bool zero_init,
                           double buffer_factor, double *gpu_bytes /* out */,
                           double *cpu_bytes /* out */);

enum adv_recompute { ADV_RECOMP_NONE = 0, ADV_RECOMP_SELECTIVE = 1, ADV_RECOMP_FULL = 2 };

/*
 * Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
 * Transformer Models", section 4, table 2, no tensor or sequence
 * parallelism): activation bytes of one transformer layer with 16-bit
 * activations: s b h (34 + 5 a s / h) with no recomputation, 34 s b h with
 * selective recomputation, 2 s b h (the layer input) with full recomputation.
 * This is the generalised form the planner uses: for a GPT-3 shaped layer
 * (ffn 4h, GeLU, dropout, eager attention) it is exactly the paper's.
 * act_bytes is 2 for 16-bit activations, 4 for fp32 (masks stay 1 byte).
 */
double adv_layer_act_bytes(const struct adv_transformer *tf, enum adv_attn attn, double s, double b,
                           int act_bytes, enum adv_recompute r);

/* Parameters of a transformer shape (embeddings, blocks, norms, head). */
double adv_transformer_params(const struct adv_transformer *tf);

#endif
