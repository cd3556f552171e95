/*
 * advisor_json.h - the advisor's JSON layer: the strict request parser and
 * the plan renderer, with the configs the launch applies (DeepSpeed
 * ds_config, FSDP settings, DDP settings, the TRAINYARD_* env). The formats
 * are documented with an example in docs/advisor.md.
 *
 * Parsing is strict: unknown keys are refused at every level (the smallest
 * unknown name first), every field is type- and range-checked in a fixed
 * order, and a refusal fills struct err with the dotted field path
 * ("allocation.intra_node.gbps"), a lower-case message and the bad value.
 *
 * Request (object; the fields, their bounds and defaults):
 *   model          required; exactly one of
 *                    {"name": "<known>", "seq_len": 1..1048576, "attention": "eager"|"fused"}
 *                    {"transformer": {...}, "attention": ..., "label": "..."}
 *                    {"measured": {...}, "label": "..."}
 *                  transformer: arch "decoder"|"encoder", layers 1..1024, hidden
 *                    1..65536, heads 1..1024, ffn 1..1048576, vocab 0..4194304,
 *                    seq_len 1..1048576 (all required); kv_heads (= heads),
 *                    positions (0), gated_mlp (false), tied_embeddings (true),
 *                    bias (true), qkv_bias (false), dropout (true), norm
 *                    "layernorm"|"rmsnorm" (layernorm)
 *                  measured: params 1..1e13, activation_bytes_per_sample (fp32)
 *                    1..1e15 (both required); activation_bytes_per_sample_16bit,
 *                    activation_fixed_bytes, forward_flops_per_sample 0..1e18,
 *                    largest_layer_params 0..params (0 each)
 *   global_batch   required, 1..16777216
 *   optimizer      "adamw" (default) | "adam" | "sgd" | "sgd-momentum"
 *   allocation     required: gpus 1..4096, gpus_per_node 1..64 (gpus a
 *                  multiple, or fewer), gpu_memory_bytes 0..2^50 and
 *                  compute_capability "M.m" or a number (both 0 = CPU) are
 *                  required; intra_node {link "nvlink"|"pcie", gbps},
 *                  inter_node {link "ib"|"ethernet", gbps} (GB/s, one
 *                  direction; defaults pcie 16, ethernet 1.25),
 *                  host_link_gbps, cpu_memory_per_node_bytes (required on CPU),
 *                  measured_busbw_gbps {intra_node, inter_node}
 *   capabilities   {torch_version "M.m[.p][+local]", fsdp bool, deepspeed bool};
 *                  default: torch unknown, neither
 *   strategy       "auto" (default) | "ddp" | "zero1" | "zero2" | "zero3" |
 *                  "fsdp" | "zero3_offload_optimizer" | "zero3_offload_all" |
 *                  "fsdp_offload"
 *
 * Thread-safety: reentrant. jansson values follow its rules ("new" results
 * are owned by the caller; arguments are borrowed).
 */
#ifndef TY_ADVISOR_JSON_H
#define TY_ADVISOR_JSON_H

#include <jansson.h>

#include "advisor.h"
#include "err.h"

/*
 * Parse the request object j (borrowed) into req (caller storage,
 * overwritten). RC_OK, RC_EINVAL with e (may be NULL) naming the field.
 * Cross-field checks (heads divides hidden, ...) happen in adv_plan(), which
 * names fields the same way.
 */
enum rc adv_json_parse_request(const json_t *j, struct adv_request *req /* out */,
                               struct err *e) TY_WUR;

/*
 * The plan as a new JSON object (docs/advisor.md "Response"), including
 * "config": {"env", "deepspeed", "fsdp", "ddp"}. RC_OK with *out owned by
 * the caller, or RC_ENOMEM with *out NULL.
 */
enum rc adv_json_plan(const struct adv_plan *p, json_t **out /* out */) TY_WUR;

/*
 * The ds_config.json for the deepspeed launcher as a new object; *out is
 * NULL (and RC_OK) when the plan's engine is not DeepSpeed. RC_ENOMEM.
 */
enum rc adv_json_deepspeed_config(const struct adv_plan *p, json_t **out /* out */) TY_WUR;

/*
 * The TRAINYARD_* environment of every rank as a new object of strings:
 * TRAINYARD_STRATEGY, _ENGINE, _MICRO_BATCH, _GRAD_ACCUM, _GLOBAL_BATCH,
 * _PRECISION, _ACTIVATION_CHECKPOINTING (0|1), _DDP_BUCKET_VIEW (0|1), and
 * the predictions _PRED_PARAM_BYTES, _PRED_GRAD_BYTES, _PRED_OPTIMIZER_BYTES,
 * _PRED_ACTIVATION_BYTES, _PRED_PEAK_BYTES. RC_OK or RC_ENOMEM.
 */
enum rc adv_json_env(const struct adv_plan *p, json_t **out /* out */) TY_WUR;

/*
 * Parse, plan and render in one call: what POST /api/v1/advisor does.
 * RC_OK with *out a new plan object; RC_EINVAL (e names the field) or
 * RC_ENOMEM (e says "internal error") with *out NULL.
 */
enum rc adv_json_advise(const json_t *request, json_t **out /* out */, struct err *e) TY_WUR;

#endif
