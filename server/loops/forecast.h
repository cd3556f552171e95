/*
 * forecast.h - the leader's queue forecast (docs/queue.md): the
 * runtime predictor (predictor/predictor.h) learned from the jobs that
 * finished (db_forecast.h says which count), its predictions put into each
 * scheduler snapshot (queued jobs' predicted_ms, running jobs'
 * expected_end_ms), and after the pass a sched_forecast() of the snapshot
 * stored for every replica (db_forecast_store).
 *
 * Never from a job's own future: the predictor only ever sees jobs that
 * ended before the pass that asks it, and a job is never its own sample (a
 * queued or running job has not succeeded).
 *
 * Bounded: a pass learns at most FORECAST_LEARN_PER_PASS new jobs (the
 * first pass of a new leader reads up to FORECAST_LEARN_AT_START), the
 * simulation is bounded by forecast_horizon_s and forecast_max_events, and
 * a forecast is stored at most every forecast_interval_ms, and no sooner
 * than FORECAST_COST_FACTOR times what the last one took after it.
 *
 * Thread-safety: one per thread; the scheduler thread owns it.
 */
#ifndef TY_SERVER_FORECAST_H
#define TY_SERVER_FORECAST_H

#include <libpq-fe.h>

#include "config.h"
#include "db_sched.h"
#include "err.h"
#include "sched.h"
#include "sched_forecast.h"

/* A refresh waits at least this many times what the last one took, so that
 * forecasting takes at most 1 / (1 + factor) of the scheduler thread. */
#define FORECAST_COST_FACTOR 4

#define FORECAST_LEARN_PER_PASS 5000
#define FORECAST_LEARN_AT_START 200000

struct forecast;

/* A new forecaster (*out owned; forecast_free it) for cfg (borrowed, must outlive it). */
enum rc forecast_new(const struct srv_config *cfg, struct forecast **out) TY_WUR;

/* Free f; NULL is a no-op. */
void forecast_free(struct forecast *f);

/* Forget what was learned (this replica stopped leading, or its session
 * ended): the next forecast_prepare() learns again from the start. Called
 * when this replica takes the lead: each stored forecast is fenced by
 * lease_epoch, the scheduling lease's epoch (db_lease.h). */
void forecast_reset(struct forecast *f, int64_t lease_epoch);

/* The options sched_forecast() runs with under cfg (caller storage). */
void forecast_opts(const struct srv_config *cfg, struct sched_forecast_opts *out);

/*
 * Before the pass: learn from the jobs that finished since the last call,
 * then set snap's queued jobs' predicted_ms and running jobs'
 * expected_end_ms from the predictor (0 where it has nothing). A failure to
 * read leaves the predictions at 0 (the time limits rule, as before) and is
 * returned for the log; the pass goes on.
 */
enum rc forecast_prepare(struct forecast *f, PGconn *c, struct db_sched_snapshot *snap) TY_WUR;

/*
 * After the pass whose decisions are d (applied or not, applied says):
 * unless the last stored forecast is younger than forecast_interval_ms (or
 * than FORECAST_COST_FACTOR times what making it took),
 * simulate snap under policy and store the result in one transaction. The
 * jobs d placed are left out (they no longer wait) and the rest renumbered.
 * *stored (may be NULL) is set to 1 when a forecast was stored.
 */
enum rc forecast_refresh(struct forecast *f, PGconn *c, const struct sched_policy *policy,
                         const struct db_sched_snapshot *snap, const struct sched_decisions *d,
                         int applied, int *stored) TY_WUR;

#endif
