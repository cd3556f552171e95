/*
 * advisor_int.h - advisor internals shared by advisor.c (the planner: the
 * candidates, the batch split, the reasons) and advisor_models.c (the known
 * models, the memory and speed figures). Not part of the API.
 *
 * struct cand is one candidate (strategy + engine) evaluated on one
 * allocation size: its static bytes (everything but activations) and its
 * activation bytes per sample, both with and without checkpointing. All
 * byte counts are doubles: products such as 5 a s^2 b overflow 64 bits for
 * the largest inputs, and a double is exact below 2^53 bytes (8 PiB).
 * Threading: none.
 */
#ifndef TY_ADVISOR_INT_H
#define TY_ADVISOR_INT_H

#include "advisor.h"

/* Per-GPU bytes of one candidate, before the micro-batch is known. */
struct cost {
    double params, grads, optim, buffers, fixed; /* as struct adv_memory */
    double act_fixed;                            /* activations independent of the batch */
    double act_sample;                           /* activations per sample */
    double act_sample_ckpt;                      /* the same with full checkpointing */
    double cpu_node;                             /* host bytes per node (offload); 0 if none */
};

/* Bytes one optimizer step moves per GPU, and how much of it can overlap. */
struct traffic {
    double once_bytes;     /* per step: collective bytes on the bus (already x 2(n-1)/n etc.) */
    double micro_bytes;    /* per micro-step */
    double host_bytes;     /* per step over PCIe (offload) */
    double cpu_opt_params; /* parameters the CPU optimizer updates per node (offload) */
};

/* Resolve the request's model into info. RC_EINVAL names the field in e. */
enum rc adv_resolve_model(const struct adv_model *m, struct adv_model_info *info, struct err *e);

/* Optimizer state bytes per parameter in fp32 (adam: 8, sgd-momentum: 4, sgd: 0). */
double adv_opt_state_bytes(enum adv_optimizer o);

/* Model-state and buffer bytes of strategy s run by engine g on n ranks. */
void adv_cost(const struct adv_model_info *mi, enum adv_strategy s, enum adv_engine g,
              enum adv_precision p, enum adv_optimizer o, int n, int gpus_per_node, bool cpu,
              struct cost *c /* out */);

/* Collective and host traffic of strategy s for one step with k micro-steps. */
void adv_traffic(const struct adv_model_info *mi, enum adv_strategy s, enum adv_engine g,
                 enum adv_precision p, int n, int gpus_per_node, int k,
                 struct traffic *t /* out */);

/* Training FLOPs of one sample (forward + backward, no recomputation); 0 unknown. */
double adv_train_flops_per_sample(const struct adv_model_info *mi);

/* Forward FLOPs of one sample (what checkpointing recomputes); 0 unknown. */
double adv_fwd_flops_per_sample(const struct adv_model_info *mi);

/* Peak FLOP/s of one device at precision p (cc10 0 = a CPU process). */
double adv_peak_flops(int cc10, enum adv_precision p);

/* The stated fraction of peak for this kind of model (advisor README). */
double adv_efficiency(const struct adv_model_info *mi, bool cpu);

/* Fixed bytes per device: the CUDA context, or the CPU process's runtime. */
double adv_fixed_bytes(bool cpu);

/* Bytes of the LM head's logits per sample (16-bit output + fp32 loss copy). */
double adv_logits_bytes(const struct adv_model_info *mi, int act_bytes);
/* The part of adv_logits_bytes() that is the returned logits (act_bytes per
 * logit): live memory, but no tensor autograd saves (predicted.activation_bytes
 * leaves it out). */
double adv_logits_live_bytes(const struct adv_model_info *mi, int act_bytes);

/* Parameters of the root FSDP unit and of one wrapped unit. */
void adv_fsdp_units(const struct adv_model_info *mi, double *root, double *unit);

/* Default ZeRO bucket sizes the emitted DeepSpeed config sets (elements). */
double adv_ds_bucket_elems(const struct adv_model_info *mi);

#define ADV_CPU_OPT_PARAMS_PER_S 1e9 /* DeepSpeedCPUAdam per node (assumed; README) */

#endif
