/*
 * jobspec.h - the strict validator of job specs (POST /api/v1/jobs).
 *
 * jobspec_parse() turns a JSON object into a struct jobspec or names the first
 * bad field. Checks run in a fixed order (unknown fields of an object first,
 * in byte order of their names, then the known fields in the order of the
 * struct below; env keys in byte order), so the same bad input always names
 * the same field. Only types and sizes are checked here: the data-residency
 * policy of datasets/output_dir/working_dir is applied by the caller with
 * common/pathpol.h.
 *
 * Accepted document (all other keys are refused, at every level):
 *   name          string, required, 1..128 bytes UTF-8, no control characters
 *   team          string, required, 1..64 bytes, [a-z0-9][a-z0-9_-]*
 *   command       array of 1..256 strings, required, each 1..4096 bytes
 *   launcher      "native" (default) | "torchrun" | "deepspeed" | "horovod"
 *   resources     object, required: gpus 1..1024 (required),
 *                 gpus_per_node 1..64 or null (optional; gpus must be a
 *                 multiple of it)
 *   priority      "low" | "normal" (default) | "high"
 *   max_restarts  integer 0..100, default 3
 *   time_limit_s  integer 1..2592000, default 86400
 *   env           object of <= 128 string values (<= 8192 bytes); names
 *                 [A-Za-z_][A-Za-z0-9_]{0,127}; variables the platform sets
 *                 (RANK, MASTER_ADDR, TRAINYARD_*, offline flags, ...) and
 *                 proxy variables are refused
 *   datasets      array of <= 64 strings, each 1..4096 bytes
 *   output_dir    string 1..4096 or null
 *   working_dir   string 1..4096 or null
 *   template      string 1..128 or null
 *   site          string 1..64, [a-z0-9][a-z0-9_-]*, or null: the data-residency
 *                 site the job runs in (default "default"); its storage roots
 *                 and networks bound the paths above, its nodes run the job
 *   strategy      "auto" | "ddp" | "zero1" | "zero2" | "zero3" | "fsdp", or null
 *                 (default): how the model is distributed. "auto" asks the
 *                 strategy advisor (advisor.h); the rest name one. Stored and
 *                 shown; the job's scripts get it through the advisor's plan.
 *   params        object of <= 64 template parameters, or null: names
 *                 [a-z][a-z0-9_]{0,63}, values strings (<= 4096 bytes),
 *                 numbers or booleans. The values a template job's command
 *                 was made from (tpl_expand.h); kept as given, never applied:
 *                 the command is what runs.
 *   model         object or null: the model in the strategy advisor's terms
 *                 (docs/advisor.md "model": {"name"}, {"transformer"} or
 *                 {"measured"}), checked by the advisor's own parser (fields
 *                 "model.transformer.layers", ...); a template fills it from
 *                 its own model
 *   global_batch  integer 1..16777216 or null: samples per optimizer step over
 *                 all ranks (a template fills it from its "batch" parameter)
 *   optimizer     "adamw" | "adam" | "sgd" | "sgd-momentum", or null (adamw)
 *                 A job with a strategy, a model and a global_batch is planned
 *                 by the advisor at submit and again at placement
 *                 (server/jobs/jobplan.h).
 * No string may contain a NUL character; all must be valid UTF-8.
 *
 * Thread-safety: reentrant; a struct jobspec is immutable after parsing and
 * may be read from several threads.
 */
#ifndef TY_SERVER_JOBSPEC_H
#define TY_SERVER_JOBSPEC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define JOBSPEC_MAX_GPUS 1024
#define JOBSPEC_MAX_GPUS_PER_NODE 64
#define JOBSPEC_MAX_RESTARTS 100
#define JOBSPEC_MAX_TIME_LIMIT_S 2592000 /* 30 days */
#define JOBSPEC_DEFAULT_RESTARTS 3
#define JOBSPEC_DEFAULT_TIME_LIMIT_S 86400
#define JOBSPEC_MAX_GLOBAL_BATCH 16777216 /* as ADV_MAX_GLOBAL_BATCH */

enum jobspec_launcher {
    JOBSPEC_LAUNCHER_NATIVE = 0,
    JOBSPEC_LAUNCHER_TORCHRUN = 1,
    JOBSPEC_LAUNCHER_DEEPSPEED = 2,
    JOBSPEC_LAUNCHER_HOROVOD = 3
};

enum jobspec_prio { JOBSPEC_PRIO_LOW = 0, JOBSPEC_PRIO_NORMAL = 1, JOBSPEC_PRIO_HIGH = 2 };

/* The distribution strategy; NONE (0) is "not given" (null). */
enum jobspec_strategy {
    JOBSPEC_STRATEGY_NONE = 0,
    JOBSPEC_STRATEGY_AUTO = 1,
    JOBSPEC_STRATEGY_DDP = 2,
    JOBSPEC_STRATEGY_ZERO1 = 3,
    JOBSPEC_STRATEGY_ZERO2 = 4,
    JOBSPEC_STRATEGY_ZERO3 = 5,
    JOBSPEC_STRATEGY_FSDP = 6
};

/* A validated job spec. Every pointer is owned by the struct (jobspec_free). */
struct jobspec {
    char *name;                     /* display name, never NULL */
    char *team;                     /* team slug, never NULL */
    char **command;                 /* argv, command_count entries, no NULL terminator */
    size_t command_count;           /* 1..256 */
    enum jobspec_launcher launcher; /* default native */
    int gpus;                       /* total GPUs, 1..1024 */
    int gpus_per_node;              /* 1..64, or 0: the scheduler decides */
    enum jobspec_prio priority;     /* default normal */
    int max_restarts;               /* 0..100, default 3 */
    int64_t time_limit_s;           /* seconds, 1..2592000, default 86400 */
    char **env_names;               /* env_count names, sorted by byte order */
    char **env_values;              /* env_count values, same order */
    size_t env_count;               /* 0..128 */
    char **datasets;                /* dataset_count names, paths or URIs (not policy-checked) */
    size_t dataset_count;           /* 0..64 */
    char *output_dir;               /* or NULL (not policy-checked) */
    char *working_dir;              /* or NULL (not policy-checked) */
    char *template;                 /* template name, or NULL */
    char *site;                     /* site name, never NULL ("default" when not given) */
    enum jobspec_strategy strategy; /* default NONE */
    json_t *params;                 /* owned object of template parameters, or NULL */
    json_t *model;                  /* owned: the advisor's model object, or NULL */
    int global_batch;               /* samples per optimizer step, or 0: not given */
    const char *optimizer;          /* static name ("adamw", ...), or NULL: not given */
    int service; /* 1: a deployment's replica (jobs.service): set by the server, never parsed */
};

/*
 * Validate in (borrowed) and build a spec. On RC_OK *out is a new spec the
 * caller frees with jobspec_free(); on error *out is NULL and e says why
 * (field = dotted path such as "resources.gpus", "command[2]", "env.RANK").
 * Returns RC_OK, RC_EINVAL (bad spec) or RC_ENOMEM. e may be NULL.
 */
enum rc jobspec_parse(const json_t *in, struct jobspec **out /* out */, struct err *e) TY_WUR;

/* Free a spec and everything it owns; NULL is a no-op. */
void jobspec_free(struct jobspec *spec);

/*
 * The normalized spec as JSON with every default filled in and absent
 * optional fields as null: suitable for storing (jsonb) and returning. It
 * parses back with jobspec_parse() to an equal spec. Returns a new reference
 * (json_decref it), or NULL when out of memory. spec is borrowed.
 */
json_t *jobspec_to_json(const struct jobspec *spec);

/* "native", "torchrun", ...; never NULL. */
const char *jobspec_launcher_str(enum jobspec_launcher l);

/* "low", "normal", "high"; never NULL. */
const char *jobspec_prio_str(enum jobspec_prio p);

/* "auto", "ddp", ...; NULL for JOBSPEC_STRATEGY_NONE. */
const char *jobspec_strategy_str(enum jobspec_strategy s);

#endif
