/*
 * forecast.c - the leader's queue forecast (see forecast.h).
 *
 * The snapshot's arrays come sorted by job id (db_sched.c reads them ORDER
 * BY id), so each job's predictor key and prediction are found by binary
 * search instead of a table of its own.
 */
#include "forecast.h"

#include <stdlib.h>
#include <string.h>

#include "db_forecast.h"
#include "log.h"
#include "predictor.h"
#include "srv.h"

struct forecast {
    const struct srv_config *cfg; /* borrowed */
    struct pred_state *pred;      /* owned; NULL until the first learn */
    struct db_forecast_mark mark; /* how far finished jobs were read */
    int64_t last_store_us;        /* monotonic; 0 = never stored */
    int64_t last_cost_us;         /* what the last refresh took, simulation and store */
    /* What forecast_prepare() predicted for the snapshot, parallel to its
     * jobs and running arrays (the times themselves are in the snapshot). */
    int64_t *q_run_ms; /* predicted run, with the time limit as fallback */
    enum pred_source *q_src;
    int64_t *q_user_id; /* the job's user (0 = not known), stored for the queue's filters */
    size_t q_cap;
    int64_t *r_run_ms;
    enum pred_source *r_src;
    int64_t *r_user_id;
    size_t r_cap;
    size_t nq, nr;             /* entries valid for the last prepared snapshot */
    struct sched_forecast out; /* the last simulation */
    struct db_forecast_entry *entries;
    size_t e_cap;
    int64_t lease_epoch; /* the lease the stored forecasts are fenced by (db_lease.h) */
};

enum rc forecast_new(const struct srv_config *cfg, struct forecast **out)
{
    struct forecast *f = calloc(1, sizeof(*f));

    *out = NULL;
    if (f == NULL)
        return RC_ENOMEM;
    f->cfg = cfg;
    db_forecast_mark_init(&f->mark);
    sched_forecast_init(&f->out);
    *out = f;
    return RC_OK;
}

void forecast_free(struct forecast *f)
{
    if (f == NULL)
        return;
    pred_free(f->pred);
    free(f->q_run_ms);
    free(f->q_src);
    free(f->q_user_id);
    free(f->r_run_ms);
    free(f->r_src);
    free(f->r_user_id);
    free(f->entries);
    sched_forecast_cleanup(&f->out);
    free(f);
}

void forecast_reset(struct forecast *f, int64_t lease_epoch)
{
    f->lease_epoch = lease_epoch;
    pred_free(f->pred);
    f->pred = NULL;
    db_forecast_mark_init(&f->mark);
    f->last_store_us = 0;
    f->last_cost_us = 0;
}

void forecast_opts(const struct srv_config *cfg, struct sched_forecast_opts *out)
{
    memset(out, 0, sizeof(*out));
    out->horizon_ms = (int64_t)cfg->forecast_horizon_s * 1000;
    out->max_events = (size_t)cfg->forecast_max_events;
    out->default_duration_ms = (int64_t)cfg->forecast_default_run_s * 1000;
    out->resolution_ms = cfg->forecast_resolution_ms;
}

static struct pred_key key_of(const struct db_forecast_job *j)
{
    struct pred_key k = {j->template_id, j->command, j->team_id, j->user_id, j->gpus};
    return k;
}

/* Learn from the jobs that finished since the last call: all of them (up to
 * FORECAST_LEARN_AT_START) on a new leader's first call, else one page. */
static enum rc learn(struct forecast *f, PGconn *c)
{
    struct db_forecast_rows rows = {0};
    size_t total = 0, budget = FORECAST_LEARN_PER_PASS;
    enum rc rc = RC_OK;

    if (f->pred == NULL) {
        rc = pred_new(NULL, &f->pred);
        if (rc != RC_OK)
            return rc;
        budget = FORECAST_LEARN_AT_START;
    }
    while (rc == RC_OK && total < budget) {
        rc = db_forecast_finished(c, &f->mark, FORECAST_LEARN_PER_PASS, &rows);
        for (size_t i = 0; rc == RC_OK && i < rows.n; i++) {
            struct pred_key k = key_of(&rows.jobs[i]);
            if (rows.jobs[i].run_ms > 0)
                rc = pred_observe(f->pred, &k, rows.jobs[i].run_ms);
        }
        total += rows.n;
        if (rows.n < FORECAST_LEARN_PER_PASS)
            break;
    }
    if (total > 0)
        LOG_DEBUG("sched", "run times learned", "jobs=%zu up_to=\"%s\" rc=%s", total,
                  f->mark.finished_at, rc_str(rc));
    db_forecast_rows_cleanup(&rows);
    return rc;
}

static int cmp_job(const void *a, const void *b)
{
    int64_t x = ((const struct db_forecast_job *)a)->job_id;
    int64_t y = ((const struct db_forecast_job *)b)->job_id;
    return (x > y) - (x < y);
}

static const struct db_forecast_job *find_key(const struct db_forecast_rows *rows, int64_t id)
{
    struct db_forecast_job k = {.job_id = id};
    return rows->n ? bsearch(&k, rows->jobs, rows->n, sizeof(*rows->jobs), cmp_job) : NULL;
}

/* Make room for nq queued and nr running jobs' predictions. A failure
 * leaves the arrays as they were or larger, and the capacities as they were. */
static enum rc reserve(struct forecast *f, size_t nq, size_t nr)
{
    if (nq > f->q_cap) {
        int64_t *run = realloc(f->q_run_ms, nq * sizeof(*run)), *user;
        enum pred_source *src;
        if (run == NULL)
            return RC_ENOMEM;
        f->q_run_ms = run;
        if ((src = realloc(f->q_src, nq * sizeof(*src))) == NULL)
            return RC_ENOMEM;
        f->q_src = src;
        if ((user = realloc(f->q_user_id, nq * sizeof(*user))) == NULL)
            return RC_ENOMEM;
        f->q_user_id = user;
        f->q_cap = nq;
    }
    if (nr > f->r_cap) {
        int64_t *run = realloc(f->r_run_ms, nr * sizeof(*run)), *user;
        enum pred_source *src;
        if (run == NULL)
            return RC_ENOMEM;
        f->r_run_ms = run;
        if ((src = realloc(f->r_src, nr * sizeof(*src))) == NULL)
            return RC_ENOMEM;
        f->r_src = src;
        if ((user = realloc(f->r_user_id, nr * sizeof(*user))) == NULL)
            return RC_ENOMEM;
        f->r_user_id = user;
        f->r_cap = nr;
    }
    return RC_OK;
}

enum rc forecast_prepare(struct forecast *f, PGconn *c, struct db_sched_snapshot *snap)
{
    struct db_forecast_rows rows = {0};
    size_t nq = snap->queue.njobs, nr = snap->cluster.nrunning;
    int64_t *ids = NULL;
    enum rc rc;

    f->nq = f->nr = 0;
    rc = reserve(f, nq, nr);
    if (rc == RC_OK)
        rc = learn(f, c);
    if (rc == RC_OK && nq + nr > 0 && (ids = malloc((nq + nr) * sizeof(*ids))) == NULL)
        rc = RC_ENOMEM;
    if (rc != RC_OK)
        goto out;
    for (size_t i = 0; i < nq; i++)
        ids[i] = snap->jobs[i].id;
    for (size_t i = 0; i < nr; i++)
        ids[nq + i] = snap->running[i].job_id;
    if (nq + nr > 0 && (rc = db_forecast_keys(c, ids, nq + nr, &rows)) != RC_OK)
        goto out;
    for (size_t i = 0; i < nq; i++) {
        struct sched_job *j = &snap->jobs[i];
        const struct db_forecast_job *k = find_key(&rows, j->id);
        struct pred_key key;
        enum pred_source src = PRED_NONE;
        int64_t ms = 0;
        if (k != NULL) {
            key = key_of(k);
            ms = pred_predict(f->pred, &key, j->time_limit_ms, &src);
        }
        /* Only what was learned: a time limit is already the library's
         * fallback, and "unknown" must stay 0. */
        j->predicted_ms = src != PRED_NONE && src != PRED_TIME_LIMIT ? ms : 0;
        f->q_run_ms[i] = ms;
        f->q_src[i] = src;
        f->q_user_id[i] = k != NULL ? k->user_id : 0;
    }
    for (size_t i = 0; i < nr; i++) {
        struct sched_running *r = &snap->running[i];
        const struct db_forecast_job *k = find_key(&rows, r->job_id);
        struct pred_key key;
        enum pred_source src = PRED_NONE;
        int64_t limit = r->end_by_ms != SCHED_TIME_UNKNOWN ? r->end_by_ms - r->start_ms : 0;
        int64_t ms = 0;
        if (k != NULL) {
            key = key_of(k);
            ms = pred_predict(f->pred, &key, limit, &src);
        }
        /* A job that has outlived its prediction ends by its time limit as
         * far as anyone knows. */
        r->expected_end_ms =
            src != PRED_NONE && src != PRED_TIME_LIMIT && r->start_ms + ms > snap->now_ms
                ? r->start_ms + ms
                : 0;
        f->r_run_ms[i] = ms;
        f->r_src[i] = src;
        f->r_user_id[i] = k != NULL ? k->user_id : 0;
    }
    f->nq = nq;
    f->nr = nr;
out:
    if (rc != RC_OK) {
        /* The pass goes on with the time limits alone. */
        for (size_t i = 0; i < nq; i++)
            snap->jobs[i].predicted_ms = 0;
        for (size_t i = 0; i < nr; i++)
            snap->running[i].expected_end_ms = 0;
    }
    free(ids);
    db_forecast_rows_cleanup(&rows);
    return rc;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_sched_job(const void *a, const void *b)
{
    int64_t x = ((const struct sched_job *)a)->id, y = ((const struct sched_job *)b)->id;
    return (x > y) - (x < y);
}

enum rc forecast_refresh(struct forecast *f, PGconn *c, const struct sched_policy *policy,
                         const struct db_sched_snapshot *snap, const struct sched_decisions *d,
                         int applied, int *stored)
{
    struct sched_forecast_opts opts;
    struct db_forecast_meta meta;
    int64_t t0 = srv_mono_us(), t_sim = 0, *placed = NULL;
    size_t nplaced = 0, n = 0;
    enum rc rc;

    if (stored != NULL)
        *stored = 0;
    /* The scheduler thread spends at most a fifth of its time forecasting:
     * a large queue's forecast (seconds) would otherwise follow every pass
     * and slow placements down; the forecast then just ages a little. */
    if (f->last_store_us != 0 &&
        t0 - f->last_store_us < (int64_t)f->cfg->forecast_interval_ms * 1000)
        return RC_OK;
    if (f->last_store_us != 0 && t0 - f->last_store_us < FORECAST_COST_FACTOR * f->last_cost_us)
        return RC_OK;
    forecast_opts(f->cfg, &opts);
    rc = sched_forecast(policy, &snap->cluster, &snap->queue, snap->now_ms, &opts, &f->out);
    t_sim = srv_mono_us() - t0;
    if (rc == RC_OK && f->out.njobs + snap->cluster.nrunning + 1 > f->e_cap) {
        size_t cap = f->out.njobs + snap->cluster.nrunning + 1;
        struct db_forecast_entry *e = realloc(f->entries, cap * sizeof(*e));
        if (e == NULL) {
            rc = RC_ENOMEM;
        } else {
            f->entries = e;
            f->e_cap = cap;
        }
    }
    if (rc == RC_OK && applied && d->nplacements > 0) {
        placed = malloc(d->nplacements * sizeof(*placed));
        if (placed == NULL)
            rc = RC_ENOMEM;
        for (size_t i = 0; rc == RC_OK && i < d->nplacements; i++)
            placed[nplaced++] = d->placements[i].job_id;
        if (placed != NULL)
            qsort(placed, nplaced, sizeof(*placed), cmp_i64);
    }
    if (rc != RC_OK)
        goto out;
    for (size_t i = 0; i < f->out.njobs; i++) {
        const struct sched_forecast_job *fj = &f->out.jobs[i];
        struct db_forecast_entry *e = &f->entries[n];
        struct sched_job key = {.id = fj->job_id};
        const struct sched_job *sj;
        size_t qi;
        if (nplaced > 0 && bsearch(&fj->job_id, placed, nplaced, sizeof(*placed), cmp_i64))
            continue; /* placed by this pass: no longer waits */
        sj = snap->queue.njobs
                 ? bsearch(&key, snap->jobs, snap->queue.njobs, sizeof(*snap->jobs), cmp_sched_job)
                 : NULL;
        qi = sj != NULL ? (size_t)(sj - snap->jobs) : SIZE_MAX;
        memset(e, 0, sizeof(*e));
        e->job_id = fj->job_id;
        e->position = (int)n;
        e->start_ms = fj->start_ms;
        e->reason = sched_wait_code(fj->reason);
        e->need_gpus = fj->need_gpus;
        e->free_gpus = fj->free_gpus;
        e->other_job_id = fj->other_job_id;
        e->run_ms = qi < f->nq ? f->q_run_ms[qi] : 0;
        e->source = pred_source_name(qi < f->nq ? f->q_src[qi] : PRED_NONE);
        e->team_id = sj != NULL ? sj->team_id : 0;
        e->user_id = qi < f->nq ? f->q_user_id[qi] : 0;
        n++;
    }
    for (size_t i = 0; i < snap->cluster.nrunning; i++) {
        const struct sched_running *r = &snap->running[i];
        struct db_forecast_entry *e = &f->entries[n++];
        memset(e, 0, sizeof(*e));
        e->job_id = r->job_id;
        e->running = true;
        e->end_ms = r->expected_end_ms > 0 && r->expected_end_ms != SCHED_TIME_UNKNOWN
                        ? r->expected_end_ms
                        : r->end_by_ms;
        e->reason = "none";
        e->run_ms = i < f->nr ? f->r_run_ms[i] : 0;
        e->source = pred_source_name(i < f->nr ? f->r_src[i] : PRED_NONE);
        e->team_id = r->team_id;
        e->user_id = i < f->nr ? f->r_user_id[i] : 0;
    }
    meta.generated_ms = snap->now_ms;
    meta.truncated = f->out.truncated;
    meta.duration_us = srv_mono_us() - t0;
    meta.lease_epoch = f->lease_epoch;
    rc = db_forecast_store(c, f->entries, n, &meta);
    if (rc == RC_OK) {
        f->last_store_us = srv_mono_us();
        f->last_cost_us = f->last_store_us - t0;
        if (stored != NULL)
            *stored = 1;
        LOG_DEBUG("sched", "forecast stored",
                  "queued=%zu running=%zu truncated=%d simulate_us=%lld duration_us=%lld",
                  f->out.njobs, snap->cluster.nrunning, (int)f->out.truncated, (long long)t_sim,
                  (long long)(srv_mono_us() - t0));
    }
out:
    free(placed);
    return rc;
}
