/*
 * sched_forecast_int.h - forecast internals shared by sched_forecast.c (the
 * API, the snapshot copy, the first pass at now and its reasons, the exact
 * simulation, the output order) and sched_forecast_fast.c (the event
 * simulation that gives the starts by default). Not part of the API.
 *
 * struct sim is the forecast's private world after the first pass: a copy
 * of the nodes whose free masks follow the simulated starts and ends, the
 * running jobs (the snapshot's, then the simulated ones) with their
 * allocations in one pool and their simulated end, and the simulated queue
 * sorted by job id, each entry with its index in the output (-1: a running
 * job the first pass preempted and queued again). Invariant: a running job's
 * GPUs are never in its nodes' free masks. Threading: none.
 */
#ifndef TY_SCHED_FORECAST_INT_H
#define TY_SCHED_FORECAST_INT_H

#include "sched_forecast.h"
#include "sched_int.h"

struct sim {
    const struct sched_policy *pol;
    const struct sched_cluster *c0;
    int64_t now, horizon_end, dflt;
    struct sched_node *nodes; /* owned copy */
    size_t nn;
    struct nid *nids; /* sorted node ids -> index */
    /* running jobs */
    struct sched_running *run;
    size_t *raoff; /* per running job: offset of its allocs in pool */
    int64_t *rend; /* per running job: simulated end */
    size_t nrun, caprun;
    struct sched_alloc *pool;
    size_t npool, cappool;
    /* queue, sorted by id */
    struct sched_job *q;
    long *qout;
    size_t nq, capq;
    unsigned char *gone; /* scratch per queued entry: placed in this pass */
    struct sched_forecast_job *out;
    size_t nout, left; /* left: output jobs without a start yet */
};

/* Grow *p (elements of elem bytes, capacity *cap) to hold need: capacity
 * doubles from 16. 0, or -1 on no memory (then *p and *cap are unchanged). */
int sched_fc_grow(void **p, size_t *cap, size_t need, size_t elem);

/* qsort order of int64_t values, ascending. */
int sched_fc_cmp_i64(const void *a, const void *b);

/* a + b, saturating below SCHED_TIME_UNKNOWN (b >= 0) */
int64_t sched_fc_sat_add(int64_t a, int64_t b);

/* The run time the simulation gives a queued job: its prediction, else its
 * limit, else the default (sjf-oracle: the truth, as it sees it). */
int64_t sched_fc_job_dur(const struct sim *S, const struct sched_job *j);

/* The simulated end of a job of S started at t: t + sched_fc_job_dur(), cut at
 * its time limit (where it is stopped) unless the policy reads true times. */
int64_t sched_fc_job_end(const struct sim *S, const struct sched_job *j, int64_t t);

/*
 * The starts of every output job still without one, by the event simulation
 * (sched_forecast_fast.c): from S as the first pass left it, on to each
 * simulated end (or, with opts->resolution_ms, to the next multiple of it),
 * under the policy's order. Writes S->out[].start_ms and S->left; sets
 * *truncated when the horizon or opts->max_events cut it. S's node and
 * running state is consumed (left inconsistent). RC_OK, RC_ENOMEM.
 */
enum rc sched_fc_simulate_fast(struct sim *S, const struct sched_forecast_opts *opts,
                               size_t max_events, bool *truncated);

#endif
