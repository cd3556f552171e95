/*
 * assign.h - one assignment from the server (docs/agent-protocol.md,
 * "Assignments") and the launch plan built from it: the argv and the exact
 * environment of every process the worker starts for this node.
 *
 * Data flow: assignments JSON -> wrk_assignment_parse() (validated, bounded)
 * -> wrk_plan_build() (pure: no file access, no environment reads; the
 * inherited PATH/HOME/LANG/PYTHONPATH come in through struct wrk_plan_opts)
 * -> launcher.
 *
 * Thread-safety: reentrant; objects belong to one thread at a time.
 */
#ifndef TY_WORKER_ASSIGN_H
#define TY_WORKER_ASSIGN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "err.h"
#include "ident.h"

#define WRK_MAX_RANKS 64 /* ranks of one node */
#define WRK_MAX_GPUS 64  /* GPUs of one node */
#define WRK_MAX_ARGS 256 /* argv entries of the job command */
#define WRK_MAX_ENV 256  /* job env + nccl env entries */
#define WRK_MAX_STR 4096 /* longest string field (paths, args, env values) */
#define WRK_ID_MAX 64    /* longest attempt/job id */

#define WRK_MAX_SITE_ROOTS 32 /* "allowed_roots" of an assignment */
#define WRK_MAX_DATASETS 64   /* "datasets" of an assignment */

enum wrk_launcher_kind {
    WRK_LAUNCH_NATIVE = 0,
    WRK_LAUNCH_TORCHRUN = 1,
    WRK_LAUNCH_DEEPSPEED = 2,
    WRK_LAUNCH_HOROVOD = 3
};

struct wrk_assign_rank {
    int rank;       /* global rank */
    int local_rank; /* rank on this node */
    int ngpus;
    int gpus[WRK_MAX_GPUS]; /* GPU indices on this node */
};

struct wrk_assignment {
    char *attempt_id; /* owned; [A-Za-z0-9_.-]{1,64} so it is safe in URLs and file names */
    char *job_id;     /* owned; same rules */
    int64_t attempt;  /* attempt number, 1.. */
    enum wrk_launcher_kind launcher;
    char **command; /* owned, NULL-terminated, >= 1 entry */
    size_t ncommand;
    char **env_keys; /* owned: job "env" then "nccl_env", validated names */
    char **env_vals;
    size_t nenv;
    size_t nenv_job;  /* the first nenv_job entries are the job's "env"; then "nccl_env" */
    size_t nplan_env; /* the last nplan_env env entries are "plan_env" (TRAINYARD_* only) */
    int node_rank, nnodes, world_size, local_world_size;
    char *master_addr;             /* owned */
    int master_port;               /* 1..65535 */
    struct wrk_assign_rank *ranks; /* owned, nranks >= 1 */
    size_t nranks;
    char *work_dir;       /* owned, absolute */
    char *output_dir;     /* owned, absolute, or NULL when the server sent none */
    char *checkpoint_dir; /* owned, absolute */
    char *resume_from;    /* owned, "" on a first attempt */
    int64_t time_limit_s; /* 0 = none */
    int grace_s;          /* seconds from SIGTERM to SIGKILL, default 30 */
    char *ds_config;      /* owned compact JSON of "deepspeed_config", or NULL */
    /* Data residency: every path above and below must also lie inside one of
     * these roots of the job's site ("allowed_roots"). NULL when the server
     * sent none (no site limit); non-NULL but empty: nothing is allowed. */
    char **site_roots;  /* owned, NULL-terminated absolute paths, or NULL */
    size_t nsite_roots; /* 0..WRK_MAX_SITE_ROOTS */
    char **datasets;    /* owned, NULL-terminated local dataset paths ("datasets"), or NULL */
    size_t ndatasets;   /* 0..WRK_MAX_DATASETS */
    char *unix_account; /* owned: the account the ranks should run as (a site's mapping of the
                           job's user or team), or NULL: the worker's --job-user */
};

/*
 * Validate one element of "assignments" and copy it into a new object. obj is
 * borrowed. On RC_EINVAL e says which field is wrong; if the attempt id itself
 * was readable, *attempt_id_out (may be NULL) receives an owned copy so the
 * caller can report the refusal. Returns RC_OK, RC_EINVAL or RC_ENOMEM.
 * Free the result with wrk_assignment_free().
 */
enum rc wrk_assignment_parse(const json_t *obj, struct wrk_assignment **out, char **attempt_id_out,
                             struct err *e) TY_WUR;

/* Free a; NULL is a no-op. */
void wrk_assignment_free(struct wrk_assignment *a);

/* Whether s is a valid id (attempt or job): [A-Za-z0-9_.-]{1,64}. */
int wrk_id_valid(const char *s);

/* What the plan takes from the worker itself. Every pointer is borrowed; NULL = unset. */
struct wrk_plan_opts {
    const char *path;       /* the worker's PATH */
    const char *home;       /* HOME */
    const char *lang;       /* LANG */
    const char *pythonpath; /* PYTHONPATH */
    const char *hostname;   /* this node's address or name, for HOROVOD_HOSTNAME */
    const char
        *ds_config_path;  /* where the deepspeed config is written (work_dir/ds_config.json) */
    const char *torchrun; /* torchrun executable, default "torchrun" */
};

/* torchrun's --role: its copies of the ranks' lines begin "[trainyard<local rank>]:". */
#define WRK_TORCHRUN_ROLE "trainyard"
/* torchrun's --log_dir, in the attempt's work_dir (torchrun adds a fresh dir per run). */
#define WRK_TORCHRUN_LOG_DIR "torchrun_logs"

struct wrk_proc_spec {
    int rank; /* rank reported for its output; torchrun: local rank 0's, for its own lines */
    int local_rank;
    int torchrun_tee; /* torchrun: a line behind "[trainyard<N>]:" is report_ranks[N]'s */
    char **argv;      /* owned, NULL-terminated */
    char **envp;      /* owned, NULL-terminated "K=V" */
};

struct wrk_plan {
    struct wrk_proc_spec *procs; /* owned; one per rank, or one torchrun per node */
    size_t nprocs;
    int *report_ranks; /* owned: the ranks named in the exit report; torchrun: by local rank */
    size_t nreport;
    int *gpus; /* owned: every GPU index this node's ranks use */
    size_t ngpus;
};

/*
 * Build the processes for a (borrowed). Returns RC_OK, RC_EINVAL (e filled;
 * for example a job env naming a reserved variable is silently overridden,
 * but a command the launcher cannot express is refused) or RC_ENOMEM.
 * Free with wrk_plan_free().
 */
enum rc wrk_plan_build(const struct wrk_assignment *a, const struct wrk_plan_opts *o,
                       struct wrk_plan **out, struct err *e) TY_WUR;

void wrk_plan_free(struct wrk_plan *p);

/* Free a NULL-terminated vector of strings; NULL is a no-op. */
void wrk_strv_free(char **v);

/* The ds_config.json written for a deepspeed launch without "deepspeed_config"; static. */
const char *wrk_default_ds_config(void);

/* "native", "torchrun", ...; never NULL. */
const char *wrk_launcher_name(enum wrk_launcher_kind k);

#endif
