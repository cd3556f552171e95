/*
 * jobplan.h - the strategy advisor in the product (docs/advisor.md): a job's plan
 * at submit and at placement, what its ranks get at launch, and the plan's
 * prediction next to what the job measured.
 *
 * A job is planned when its spec has a strategy ("auto" or explicit), a
 * model and a global_batch (jobspec.h). The advisor (advisor/advisor_json.h)
 * gets the request of docs/advisor.md built from the spec and from the nodes:
 *
 *   nodes   a JSON array, one object per node, as server/store/db_plan.c reads it:
 *           {"name", "memory_mb" (the node's RAM), "gpus": [{"idx",
 *           "memory_mb", "compute_capability", "fake", "nvlink_peers"}],
 *           "capabilities", "interconnect", "nccl_probe"} (the last three
 *           as the worker reports them at register, null when not reported)
 *
 * How the nodes become an allocation (the reason says which was used):
 *  - Fake GPUs (a worker started with --fake-gpus; uuid "GPU-fake-...") are
 *    CPU processes: the advisor gets gpu_memory_bytes 0 and compute
 *    capability 0 (fp32, gloo, DDP or ZeroRedundancyOptimizer only) and the
 *    node's RAM as cpu_memory_per_node_bytes. A fake GPU's memory size is
 *    not memory any rank has.
 *  - At submit the job is not placed yet: the plan is made for the node kind
 *    with the most memory per GPU among the site's nodes that are not down
 *    (real GPUs before CPU-only nodes; then the higher compute capability),
 *    as if every node of the job were of that kind. It is the most the site
 *    offers, so a does_not_fit there fits nowhere in the site.
 *  - At placement the plan is made again for the GPUs the attempt holds: the
 *    smallest memory and compute capability among them, NVLink inside a node
 *    only when every pair of a node's allocated GPUs is NVLink-connected,
 *    InfiniBand between nodes only when every node has an active port, the
 *    measured all-reduce bus bandwidth (trainyard-nccl-probe) of a
 *    single-node attempt.
 *  - Capabilities: what every node can run (the lowest PyTorch version,
 *    FSDP and DeepSpeed only if all have them); unknown when a node
 *    reported none (the advisor then assumes only DDP).
 *
 * Thread-safety: reentrant; pure (no I/O), jansson only.
 */
#ifndef TY_SERVER_JOBPLAN_H
#define TY_SERVER_JOBPLAN_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"

/*
 * Check model (borrowed), a job spec's "model", as the advisor reads it:
 * RC_OK, RC_EINVAL with e naming the field ("model.transformer.heads"), or
 * RC_ENOMEM.
 */
enum rc jobplan_model_check(const json_t *model, struct err *e) TY_WUR;

/*
 * A template's model (templates_model.c's form: {"name"}, {"transformer": {...,
 * "kind"}}, {"params", "activation_bytes_per_sample"}) in the advisor's
 * terms, as a new object; NULL when out of memory or not one of the forms.
 */
json_t *jobplan_model_from_template(const json_t *tmodel);

/* Whether spec (a stored spec, borrowed) asks for a plan. */
int jobplan_wanted(const json_t *spec);

/*
 * The advisor's allocation and capabilities (new objects) for a job of gpus
 * GPUs (gpus_per_node 0: as many per node as the node kind has) on the site
 * whose nodes are given (see above); why gets the node kind in words.
 * RC_OK, RC_ENOTFOUND (no node of the site has a GPU), RC_ENOMEM.
 */
enum rc jobplan_site_alloc(const json_t *nodes, int gpus, int gpus_per_node,
                           json_t **alloc /* out */, json_t **caps /* out */, char *why,
                           size_t why_size) TY_WUR;

/* The same for the GPUs an attempt holds: nodes lists only those GPUs. */
enum rc jobplan_placed_alloc(const json_t *nodes, json_t **alloc /* out */, json_t **caps /* out */,
                             char *why, size_t why_size) TY_WUR;

/*
 * Plan spec (borrowed, a stored spec with jobplan_wanted()) on alloc and
 * caps (borrowed): the advisor's plan (docs/advisor.md "Response") plus
 * "planned_for": {"at": at, "node_kind": why, "allocation", "capabilities"},
 * a new object in *out. RC_OK, RC_EINVAL (e names the field of the request),
 * RC_ENOMEM.
 */
enum rc jobplan_make(const json_t *spec, const json_t *alloc, const json_t *caps, const char *at,
                     const char *why, json_t **out /* out */, struct err *e) TY_WUR;

/*
 * What the ranks get from plan (borrowed; NULL: no plan) for spec
 * (borrowed): *env a new object of strings, the plan's config.env plus the
 * FSDP settings (TRAINYARD_FSDP_SHARDING, TRAINYARD_FSDP_CPU_OFFLOAD,
 * TRAINYARD_FSDP_AUTO_WRAP, TRAINYARD_FSDP_MIN_NUM_PARAMS) for an FSDP plan,
 * without the names the job's own env sets (they win); with no plan, only
 * TRAINYARD_STRATEGY of an explicit strategy. *ds is the plan's ds_config
 * (new) for a DeepSpeed plan, else NULL. RC_OK or RC_ENOMEM.
 */
enum rc jobplan_launch(const json_t *plan, const json_t *spec, json_t **env /* out */,
                       json_t **ds /* out */) TY_WUR;

/*
 * The plan's prediction next to the measurement, as a new object (NULL when
 * out of memory): predicted (borrowed, a plan's "predicted"), metrics
 * (borrowed, the latest TRAINYARD_METRIC values with param_bytes, or NULL)
 * and ranks (borrowed, the exit reports' ranks with gpu_mem_peak_bytes, or
 * NULL). Each measured size becomes {"predicted", "measured", "error_pct"}
 * with error_pct = 100 x (predicted - measured) / measured (null when the
 * measurement is missing or 0): param_bytes, grad_bytes, optim_state_bytes
 * (against optimizer_bytes), model_state_bytes (the three summed),
 * activation_bytes, peak_mem_bytes (against peak_allocated_bytes), and
 * "gpu_mem_peak": [{"rank", ...}] against peak_allocated_bytes.
 */
json_t *jobplan_compare(const json_t *predicted, const json_t *metrics, const json_t *ranks);

#endif
