/*
 * sched_forecast.h - the queue forecast (docs/queue.md): why each queued job waits
 * and when it will start. Pure like sched.h: no I/O, clock, globals or
 * threads; the snapshot goes in, one entry per queued job comes out.
 *
 * How: one sched_plan() pass at now gives the reasons (which job starts now,
 * which waits and for what); then the queue is simulated forward under the
 * same policy, from one predicted end of a running (or simulated) job to the
 * next, until every job has a start, the horizon or the event bound is
 * reached, or nothing can start any more. By default the simulation keeps
 * its state between ends (sched_forecast_fast.c: the capacity index, the
 * order, the head's reservation) and costs O(log n) per end and per start;
 * opts->exact makes every simulated event a full sched_plan() instead (the
 * reference, one pass over the whole queue per end: seconds at 10,000 jobs).
 *
 * Main structures: struct sched_forecast is caller storage whose arrays the
 * library owns (sched_forecast_init / sched_forecast_cleanup), like struct
 * sched_decisions. Thread-safety: one thread owns a struct sched_forecast;
 * distinct ones may be computed concurrently over one read-only snapshot.
 */
#ifndef TY_SCHED_FORECAST_H
#define TY_SCHED_FORECAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "sched.h"

/* Why a queued job does not start now: one code plus its detail. */
enum sched_wait {
    SCHED_WAIT_NONE = 0,     /* starts in this pass */
    SCHED_WAIT_GPUS = 1,     /* needs need_gpus; free_gpus free on the nodes that could take it */
    SCHED_WAIT_QUOTA = 2,    /* its team is over quota (it has a quota and its GPUs in use plus
                                need_gpus exceed it), so it cannot take GPUs back: it waits for
                                free ones */
    SCHED_WAIT_PRIORITY = 3, /* behind higher-priority (or earlier) jobs; other_job_id = the first
                                one ahead */
    SCHED_WAIT_RESERVED = 4, /* the GPUs it could use are reserved for other_job_id */
    SCHED_WAIT_SITE_TOO_SMALL = 5, /* its site has too few nodes of that size: never starts */
    SCHED_WAIT_DRAINING = 6        /* the only nodes that fit are draining (or down) */
};

/* "none", "gpus", "quota", "priority", "reserved", "site_too_small", "draining"; static.
 * "unknown" for any other value. */
const char *sched_wait_code(enum sched_wait w);

struct sched_forecast_job {
    int64_t job_id;
    size_t position;        /* 0-based place in scheduling order */
    int64_t start_ms;       /* estimated start; SCHED_TIME_UNKNOWN = never / past the horizon */
    enum sched_wait reason; /* why it does not start now (NONE if it does) */
    int need_gpus;          /* the job's GPUs */
    int free_gpus;          /* GPUs free now on nodes that could take it (after this pass's
                               placements, reserved ones included) */
    int64_t other_job_id;   /* PRIORITY / RESERVED: the job in the way; else 0 */
};

struct sched_forecast_opts {
    int64_t horizon_ms;          /* simulate at most this far ahead; 0 = 30 days */
    size_t max_events;           /* bound on simulated events; 0 = 4 * (queued + running) */
    int64_t default_duration_ms; /* a job with neither prediction nor time limit; 0 = 1 h */
    int64_t resolution_ms;       /* 0 = exact; else each simulated event waits for the next multiple
                                    of this after now, taking every end up to it: fewer passes,
                                    starts later by at most this */
    bool exact; /* every simulated event a sched_plan() (also preemptions after now); the
                   event simulation differs in what sched_forecast_fast.c lists. tiresias-las
                   (which preempts) always simulates this way */
};

struct sched_forecast_int; /* scratch; internal */

struct sched_forecast {
    struct sched_forecast_job *jobs; /* owned; njobs entries, in scheduling order */
    size_t njobs;
    bool truncated;                /* the horizon or event bound cut the simulation */
    struct sched_forecast_int *in; /* owned scratch */
};

/* Prepare f (caller storage) for sched_forecast(). Cannot fail. */
void sched_forecast_init(struct sched_forecast *f);

/* Free what f owns; f may be reused after sched_forecast_init(). NULL is a no-op. */
void sched_forecast_cleanup(struct sched_forecast *f);

/*
 * Simulate the queue forward from the snapshot under policy (NULL = "trainyard"):
 * running jobs end at expected_end_ms (else, or when later, end_by_ms; a job past both ends at
 * the first simulated event; one with neither runs default_duration_ms from
 * its start), queued jobs run for predicted_ms (else time_limit_ms, else
 * opts->default_duration_ms), and the queue moves on at each next end as
 * the policy would (see How, above). A job preempted in the simulation returns to the simulated
 * queue with the rest of its run (opts->exact; by default only the first pass preempts). Node
 * states do not change.
 *
 * out->jobs: every valid queued job (those sched_plan() skips as invalid are
 * left out), in scheduling order: by estimated start (never last), then
 * priority (high first), submit time and id. Inputs are borrowed and only
 * read; opts may be NULL. Returns RC_OK; RC_EINVAL (malformed snapshot, as
 * sched_plan, or a job id that appears twice among the queued and running
 * jobs); RC_ENOMEM. On error out is empty. Cost: one sched_plan(), then
 * O((queued + running) log) plus one placement try per job shape per
 * simulated event; opts->exact: one sched_plan() per simulated event.
 */
enum rc sched_forecast(const struct sched_policy *policy, const struct sched_cluster *cluster,
                       const struct sched_queue *queue, int64_t now_ms,
                       const struct sched_forecast_opts *opts, struct sched_forecast *out) TY_WUR;

#endif
