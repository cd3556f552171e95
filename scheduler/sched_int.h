/*
 * sched_int.h - scheduler internals shared by sched.c (the pass: order,
 * reserve, backfill, preempt) and sched_place.c (the capacity index and gang
 * placement). Not part of the API: the server includes sched.h only.
 *
 * struct idx is the free-capacity index: per node the GPUs that new work may
 * take (avail: free, READY, not reserved), each node linked into the bucket
 * of its free-GPU count. struct pass holds everything one sched_plan() call
 * allocates. Placement and feasibility see only the nodes of the current
 * job's site (sched_site_set): the others are hidden from the index for the
 * call and put back after it. Threading: none; one pass owns both.
 */
#ifndef TY_SCHED_INT_H
#define TY_SCHED_INT_H

#include "sched.h"

#include <stdbool.h>
#include <stdint.h>

#define NB (SCHED_MAX_GPUS_PER_NODE + 1)
#define MAX_PREEMPT_TRIES 64                            /* preempt-to-fit attempts per pass */
#define MAX_PREEMPT_CANDS 256                           /* victims considered per attempt */
#define LAS_THRESHOLD_GPU_MS SCHED_LAS_THRESHOLD_GPU_MS /* 16 GPU-hours, as Pollux's Tiresias */

/* KIND_SPF is only a sort order: trainyard-spf's order inside a (priority, team) bucket. */
enum { KIND_FIFO = 1, KIND_SJF = 2, KIND_FAIR = 3, KIND_LAS = 4, KIND_SPF = 5 };
/* F_BF_SHORTEST: backfill candidates are tried shortest (predicted, else limit) first.
 * F_SPF: inside a team, shortest predicted first with aging instead of submit order.
 * F_QSPF: across teams, teams under quota first, then shortest predicted first
 * (sched_pick_before) instead of the lowest share first. */
enum {
    F_BACKFILL = 1,
    F_ORACLE = 2,
    F_QUOTA = 4,
    F_LAS = 8,
    F_BF_SHORTEST = 16,
    F_SPF = 32,
    F_QSPF = 64
};

/*
 * The order of a fair-share policy (trainyard, trainyard-spf, trainyard-qspf)
 * is: priority class (high first); then, at each step, the team whose next
 * job wins sched_pick_before() over every other team's next job of that
 * class; inside a team, jobs by (sched_job_order_key, submit_ms, id),
 * smallest first. Teams' shares and quota use change as the pass places and
 * preempts, so the pick is redone after every job. Once the head job is
 * blocked, backfill candidates are tried shortest predicted (else limit)
 * first. The forecast mirrors exactly this.
 */

/*
 * A queued job's key inside its (priority, team) bucket, smallest first (then
 * submit_ms, then id). trainyard-spf and trainyard-qspf: submit_ms + aging x
 * run, run = predicted_ms, else time_limit_ms, else 1 h; aging =
 * SCHED_SPF_AGING (trainyard-spf) or SCHED_QSPF_AGING (trainyard-qspf); the
 * terms are clamped to a quarter of the int64 range. Every other policy:
 * submit_ms. The key never changes while the job waits. sched.c.
 */
int64_t sched_job_order_key(const struct sched_policy *pol, const struct sched_job *j);

/* A team's next job (the front of its bucket) as the cross-team pick sees it. */
struct sched_pick {
    double share;      /* the team's GPUs in use / quota (1 when 0) / weight, now */
    bool under_quota;  /* the team's GPUs in use plus the job's GPUs fit its quota */
    int64_t key;       /* sched_job_order_key() of the job */
    int64_t submit_ms; /* the job's */
    int64_t id;        /* the job's */
};

/*
 * Does team front a go before b (same class)? trainyard and trainyard-spf:
 * lower share, then earlier submit_ms, then lower id. trainyard-qspf: a team
 * under quota before one that is not; between two under quota, lower share,
 * then smaller key, then lower id; between two others, smaller key, then
 * lower id (shares ignored: shortest predicted first across those teams, with
 * the key's aging). sched.c.
 */
bool sched_pick_before(const struct sched_policy *pol, const struct sched_pick *a,
                       const struct sched_pick *b);

struct idx {
    size_t n;
    uint64_t *avail;
    int *nav;
    int *next, *prev;
    int head[NB];
    int cnt[NB];
    int64_t total;
};

struct sched_plan_int {
    struct sched_alloc *allocs; /* pool for placements and the reservation */
    size_t nallocs, cap_allocs;
    size_t *pl_off; /* per placement: offset into allocs */
    size_t cap_pl;
    size_t cap_pre;
};

struct nid {
    int64_t id;
    int idx;
};

/* qsort order of a node id index: by id (then position). sched.c. */
int sched_nid_cmp(const void *a, const void *b);

/* A sort key of up to four parts (unused parts 0), then the index i, which
 * makes every order total; qsort with sched_sort_key_cmp. The pass's queue
 * order and the forecast's buckets and shapes use it. */
struct sched_sort_key {
    int64_t k1, k2, k3, k4;
    int i;
};
int sched_sort_key_cmp(const void *a, const void *b);

/* The position of node id in nids (n entries, sorted by sched_nid_cmp), or
 * -1 when it is not there. sched.c; the pass and the forecast share it. */
int sched_nid_find(const struct nid *nids, size_t n, int64_t id);

struct pass {
    const struct sched_policy *pol;
    const struct sched_cluster *c;
    const struct sched_queue *q;
    int64_t now;
    struct sched_decisions *d;
    struct sched_plan_int *in;
    size_t nn;
    struct idx main, hypo;
    bool hypo_ok;
    uint64_t *resv, *resfree;
    int *resnodes;
    size_t nresnodes;
    int64_t resfree_total;
    int64_t res_start;
    int64_t res_bound; /* the head's start guaranteed by time limits (reserve_bound) */
    bool bf_pred;      /* some backfill candidate is ordered by its prediction */
    bool has_res;
    bool *topo;
    int maxng;
    struct nid *nids;
    /* running jobs: flattened alloc node indices */
    size_t *run_aoff;
    int *run_anode;
    int *run_team;
    unsigned char *run_pre;
    unsigned char *run_borrow;
    int *cands; /* quota: borrowing preemptible jobs newest first; LAS: victims */
    size_t ncands;
    /* teams */
    int64_t *tid;
    size_t nt;
    int64_t *t_used;
    int *t_quota;
    double *t_w;
    double *t_share; /* t_used / quota / weight, kept current */
    int *job_team;
    unsigned char *job_ok;
    /* ordering */
    int *order;
    size_t norder;
    bool lazy_order; /* fifo over a queue in submit order: order[] unused */
    size_t *bstart;  /* fair: bucket starts, (prio * nt + team) */
    size_t *bpos;
    /* topology groups, built on the first multi-node placement */
    bool groups_built;
    int *grp_start, *grp_mem;
    size_t nsw, ngrp;
    /* placement scratch */
    int *pick_node;
    uint64_t *pick_mask;
    int npick;
    int *tmp1, *tmp2;
    int preempt_tries;
    size_t res_off;
    /* sites: the job being placed may use only the nodes of its site */
    int64_t node_site;   /* the one non-zero site of all nodes, 0 none, -1 several */
    int64_t site;        /* the current job's site (sched_site_set) */
    bool site_only;      /* some nodes are of another site: placement hides them */
    int *hid;            /* scratch: nodes hidden from an index */
    uint64_t *hid_avail; /* scratch: what they had available */
};

static inline int popc(uint64_t m)
{
    return __builtin_popcountll(m);
}

static inline uint64_t gpu_bits(int ng)
{
    if (ng <= 0)
        return 0;
    return ng >= 64 ? ~0ULL : ((1ULL << ng) - 1);
}

/* ---- sched.c ---- */
/* Is queued job j valid (what sched_plan skips otherwise)? Fills e when not. */
bool sched_job_valid(const struct sched_job *j, struct err *e);
/* Fill P's node part from P->c (nids, topo, the main index of READY free
 * GPUs, maxng, node_site, placement scratch); P zeroed, P->c set. RC_EINVAL
 * (e says why) on a malformed node list, RC_ENOMEM. The forecast's event
 * simulation uses it to place with sched_place() exactly as a pass does. */
enum rc sched_prep_nodes(struct pass *P, struct err *e);
/* Free everything a pass allocated (any subset; NULL fields are fine). */
void sched_pass_free(struct pass *P);

/* ---- sched_place.c ---- */
/*
 * Make site the current job's site for sched_feasible/sched_place. Returns
 * true when that hides nodes of other sites: such a job's failures say
 * nothing about other jobs of the same shape (no fail memos).
 */
bool sched_site_set(struct pass *P, int64_t site);
void sched_idx_link(struct idx *x, int n);
void sched_idx_set(struct idx *x, int n, uint64_t m);
int sched_idx_alloc(struct idx *x, size_t n);
void sched_idx_free(struct idx *x);
void sched_idx_copy(struct idx *dst, const struct idx *src);
/* Exact: does some placement of (g GPUs, gpn per node) exist in x? */
bool sched_feasible(struct pass *P, struct idx *x, int g, int gpn);
/* Place (g, gpn) in x, take its GPUs, leave them in P->pick_*: 1 placed, 0 no fit, -1 ENOMEM. */
int sched_place(struct pass *P, struct idx *x, int g, int gpn);

#endif
