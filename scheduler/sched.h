/*
 * sched.h - the trainyard scheduler: a pure library. A snapshot goes in
 * (nodes with free GPUs and topology labels, teams with quotas, running jobs,
 * the queue) and decisions come out (placements, preemptions, the reservation
 * of the head job). No I/O, clock, threads or randomness: now_ms is passed in.
 *
 * Main structures: struct sched_cluster and struct sched_queue are filled by
 * the caller and only read; struct sched_decisions is caller storage whose
 * arrays the library owns (sched_decisions_init/cleanup).
 *
 * Invariants of every plan (verified by sched_check): no GPU is booked twice,
 * nothing lands on draining or down nodes, gangs are all or nothing, a job's
 * gpus_per_node is honoured, a job of a site lands only on nodes of that site
 * (site 0 on either side matches anything; "fits one node" means one node of
 * the job's site), quota preemptions only hit borrowing jobs, and a
 * placement touching the reserved GPUs has its time limit end by the
 * reservation's bound (its start when nothing is predicted), as does every
 * running job holding them: predictions never break the time-limit guarantee.
 *
 * Thread-safety: no globals; one thread owns a struct sched_decisions. Distinct
 * decisions objects may be planned concurrently over a shared read-only
 * snapshot.
 */
#ifndef TY_SCHED_H
#define TY_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define SCHED_MAX_GPUS_PER_NODE 64   /* a node's GPUs are the bits of one uint64_t */
#define SCHED_MAX_JOB_GPUS 1024      /* the largest gang */
#define SCHED_TIME_UNKNOWN INT64_MAX /* an end time that is not known */

enum sched_node_state {
    SCHED_NODE_READY = 0,    /* takes new work */
    SCHED_NODE_DRAINING = 1, /* running work continues; takes no new work */
    SCHED_NODE_DOWN = 2      /* nothing runs; takes no new work */
};

enum sched_prio { SCHED_PRIO_LOW = 0, SCHED_PRIO_NORMAL = 1, SCHED_PRIO_HIGH = 2 };

enum sched_preempt_reason {
    SCHED_PREEMPT_QUOTA = 1, /* a team under quota takes borrowed GPUs back */
    SCHED_PREEMPT_LAS = 2    /* tiresias-las: a job with less attained service goes first */
};

/* A node as the snapshot sees it. All pointers are borrowed for the call. */
struct sched_node {
    int64_t id;                  /* unique within the cluster */
    const char *name;            /* borrowed; may be NULL; for messages only */
    enum sched_node_state state; /* only READY nodes take new work */
    int ngpus;                   /* 0..SCHED_MAX_GPUS_PER_NODE */
    uint64_t free_mask;          /* bit i set: GPU i is free (bits >= ngpus ignored) */
    const char *rack;            /* borrowed; may be NULL (no rack known) */
    const char *switch_name;     /* borrowed; may be NULL (no switch known) */
    /* nvlink_peers[i]: bit j set when GPU i and GPU j are NVLink peers.
     * All zero means "no topology reported": GPUs are taken lowest first. */
    uint64_t nvlink_peers[SCHED_MAX_GPUS_PER_NODE];
    int64_t site; /* data-residency site (sites.id); 0 = takes jobs of any site */
};

/* A team. Teams not listed have quota 0 and weight 1. */
struct sched_team {
    int64_t id;
    int quota_gpus; /* GPUs guaranteed to the team; >= 0 */
    double weight;  /* fair-share weight; <= 0 is read as 1 */
};

/* One node's part of a gang: a node id and the GPUs used there. */
struct sched_alloc {
    int64_t node_id;
    uint64_t gpu_mask; /* bit i: GPU i of that node */
};

/* A running job. Its GPUs are not in its nodes' free_mask. */
struct sched_running {
    int64_t job_id;
    int64_t team_id;
    enum sched_prio prio;
    int gpus;                         /* total GPUs held (sum over allocs) */
    int64_t submit_ms;                /* original submission time (LAS order) */
    int64_t start_ms;                 /* when it (last) started; newest = largest */
    int64_t end_by_ms;                /* start + time limit; SCHED_TIME_UNKNOWN if none */
    int64_t true_end_ms;              /* sim only: the real end, read by sjf-oracle only;
                                         SCHED_TIME_UNKNOWN elsewhere */
    const struct sched_alloc *allocs; /* borrowed; nallocs entries */
    size_t nallocs;
    bool preemptible;        /* may be preempted (it checkpoints) */
    int64_t attained_gpu_ms; /* service so far (GPU-ms, including this run), for LAS */
    int64_t expected_end_ms; /* the predicted end; SCHED_TIME_UNKNOWN or 0 = use end_by_ms */
};

/* A queued job. */
struct sched_job {
    int64_t id;
    int64_t team_id;
    enum sched_prio prio;
    int gpus;                 /* 1..SCHED_MAX_JOB_GPUS */
    int gpus_per_node;        /* 0 = any; else gpus must be a multiple of it */
    int64_t submit_ms;        /* original submission time (kept across preemption) */
    int64_t time_limit_ms;    /* 0 = unknown */
    int64_t true_duration_ms; /* sim only, read by sjf-oracle only; 0 = unknown */
    int64_t attained_gpu_ms;  /* service from earlier runs (resumed jobs), for LAS */
    int64_t site;             /* runs only on nodes of this site (or site 0); 0 = any node */
    int64_t predicted_ms;     /* the predicted run time (predictor/); 0 = unknown: the
                                 time limit stands in */
};

/* The cluster snapshot. Arrays are borrowed for the call; ids unique. */
struct sched_cluster {
    const struct sched_node *nodes;
    size_t nnodes;
    const struct sched_team *teams;
    size_t nteams;
    const struct sched_running *running;
    size_t nrunning;
};

/* The queue, in any order. */
struct sched_queue {
    const struct sched_job *jobs; /* borrowed */
    size_t njobs;
    int backfill_depth; /* jobs examined after the head blocks; 0 = SCHED_BACKFILL_DEPTH */
    /* The caller promises jobs[] is sorted by (submit_ms, id). fifo then
     * reads only the jobs it tries instead of validating and ordering the
     * whole queue each pass; invalid jobs past the head it stops at are
     * neither validated nor counted in nskipped. sched_check() verifies the
     * promise. Other policies ignore it. */
    bool in_submit_order;
};

#define SCHED_BACKFILL_DEPTH 5000
/* trainyard-spf: a job waits behind jobs submitted up to this many times its
 * predicted run after it, at most (aging: no job waits forever) */
#define SCHED_SPF_AGING 1
/* trainyard-qspf: the same bound, weaker aging (closer to shortest first; bench/RESULTS.md,
 * "Average JCT with the runtime predictor": on the Philly replay 1 gave 1.85x sjf-oracle's
 * average JCT under trainyard-spf, 32 under trainyard-qspf 1.26x) */
#define SCHED_QSPF_AGING 32
/* tiresias-las: attained service that moves a job to the second queue (GPU-ms) */
#define SCHED_LAS_THRESHOLD_GPU_MS (16LL * 3600 * 1000)

struct sched_placement {
    int64_t job_id;
    const struct sched_alloc *allocs; /* owned by the decisions; nallocs entries */
    size_t nallocs;
    int64_t end_by_ms;       /* now + the job's time limit; SCHED_TIME_UNKNOWN if none */
    int64_t expected_end_ms; /* now + predicted_ms when known, else end_by_ms */
};

struct sched_preemption {
    int64_t job_id;
    enum sched_preempt_reason reason;
    int64_t for_job_id; /* the queued job the GPUs were freed for */
};

struct sched_reservation {
    bool valid;       /* false: no job is blocked, or no time is known */
    int64_t job_id;   /* the highest-priority job that did not fit */
    int64_t start_ms; /* earliest start from the running jobs' expected ends (predictions,
                         else time limits) */
    const struct sched_alloc *allocs; /* owned by the decisions; the GPUs held for it */
    size_t nallocs;
    int64_t bound_ms; /* the latest start the time limits guarantee on these GPUs (>= start_ms;
                         equal without predictions): the latest limit among their holders.
                         A placement on reserved GPUs has its limit end by it. */
};

struct sched_plan_int; /* scratch kept between passes; internal */

/*
 * The result of one pass. Caller storage: sched_decisions_init() before the
 * first sched_plan(), sched_decisions_cleanup() at the end. A decisions
 * object may be reused for many passes; each pass overwrites it, and the
 * pointers inside stay valid until the next sched_plan() or cleanup.
 * Apply preemptions first (their GPUs are free for the placements).
 */
struct sched_decisions {
    struct sched_placement *placements; /* owned; nplacements entries, in plan order */
    size_t nplacements;
    struct sched_preemption *preemptions; /* owned */
    size_t npreemptions;
    struct sched_reservation reservation;
    size_t nblocked;           /* queued jobs that could not be placed this pass */
    size_t nskipped;           /* queued jobs that are invalid (err names the first) */
    struct err first_invalid;  /* why the first skipped job was invalid */
    struct sched_plan_int *in; /* owned scratch; do not touch */
};

/* A scheduling policy: a name plus operations [SQLite os table style]. */
struct sched_policy;
typedef enum rc (*sched_plan_fn)(const struct sched_policy *policy,
                                 const struct sched_cluster *cluster,
                                 const struct sched_queue *queue, int64_t now_ms,
                                 struct sched_decisions *out);
struct sched_policy {
    const char *name;
    sched_plan_fn plan;
    int kind;  /* internal: which ordering */
    int flags; /* internal: backfill, oracle times, quota preemption, LAS preemption */
};

/* Prepare d (caller storage) for sched_plan(). Cannot fail. */
void sched_decisions_init(struct sched_decisions *d);

/* Free what d owns; d may be reused after sched_decisions_init(). NULL is a no-op. */
void sched_decisions_cleanup(struct sched_decisions *d);

/*
 * The policy named "fifo", "sjf-oracle", "trainyard", "tiresias-las",
 * "trainyard-spf" (trainyard ordering each team's jobs shortest predicted
 * first with aging, instead of by submit time) or "trainyard-qspf" (teams
 * under quota first, by fair share; then every other team's jobs shortest
 * predicted first with SCHED_QSPF_AGING, across teams: the order of
 * sched_int.h's sched_pick_before); NULL when unknown. The result is
 * static; never free it.
 */
const struct sched_policy *sched_policy_find(const char *name);

/* The names of the known policies, NULL-terminated; static. */
const char *const *sched_policy_names(void);

/*
 * Plan one pass. policy NULL means "trainyard". All inputs are borrowed for
 * the call and only read; out is overwritten (see struct sched_decisions).
 * Queued jobs that are invalid (gpus out of range, gpus not a multiple of
 * gpus_per_node, ...) are skipped and counted in out->nskipped.
 * Returns RC_OK; RC_EINVAL when the snapshot itself is malformed (duplicate
 * node ids, ngpus out of range, a running job on an unknown node or on GPUs
 * marked free; out->first_invalid says which), RC_ENOMEM. On error out holds an
 * empty plan.
 */
enum rc sched_plan(const struct sched_policy *policy, const struct sched_cluster *cluster,
                   const struct sched_queue *queue, int64_t now_ms,
                   struct sched_decisions *out) TY_WUR;

/*
 * Verify the invariants of decisions d for the snapshot (cluster, queue) at
 * now_ms: placements only of queued jobs, each once, all or nothing (sum of
 * GPUs equals the job's gpus), gpus_per_node honoured, GPUs exist and are free
 * (or freed by a preemption in d), no GPU booked twice, only READY nodes of
 * the job's site;
 * preemptions only of running, preemptible jobs and, for quota preemptions,
 * only of borrowing jobs (those whose GPUs, newest last, lie above their
 * team's quota); the reservation on READY nodes with the right GPU count; a
 * placement touching a reserved GPU, and a running job holding one, ends
 * (by its time limit) by the reservation's bound_ms, which is >= start_ms.
 * Returns RC_OK, or RC_ECONFLICT with e (may be NULL) naming the violation.
 */
enum rc sched_check(const struct sched_cluster *cluster, const struct sched_queue *queue,
                    int64_t now_ms, const struct sched_decisions *d, struct err *e) TY_WUR;

#endif
