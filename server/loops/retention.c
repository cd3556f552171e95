/*
 * retention.c - the retention leader (see retention.h).
 *
 * Threading: one thread owns the struct; only `wait` (loop_wait.h) is
 * shared, with retention_stop(), which cuts a sleep short.
 */
#include "retention.h"

#include <pthread.h>
#include <stdlib.h>

#include "clock.h"
#include "config.h"
#include "db.h"
#include "db_retention.h"
#include "log.h"
#include "loop_wait.h"
#include "srv.h"

/* Advisory lock key of the retention leader (the audit keeper's is 7243003). */
#define RETENTION_LEADER_KEY "7243004"

struct retention {
    struct srv_app *app;
    pthread_t thread;
    struct loop_wait wait; /* its sleeps, cut short by the stop */
};

static int stopping(const void *arg)
{
    return app_stopping(arg);
}

static int lead(PGconn *c, int take)
{
    const char *p[] = {RETENTION_LEADER_KEY};
    PGresult *r = db_exec(c,
                          take ? "SELECT pg_try_advisory_lock($1::bigint)"
                               : "SELECT pg_advisory_unlock($1::bigint)",
                          1, p);
    int ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQgetvalue(r, 0, 0)[0] == 't';

    PQclear(r);
    return ok;
}

static void pass(struct retention *t, PGconn *c)
{
    const struct srv_config *cfg = t->app->cfg;
    const int days[DB_RETAIN_NKINDS] = {
        [DB_RETAIN_SESSIONS] = cfg->retain_sessions_days,
        [DB_RETAIN_WEBHOOK_DELIVERIES] = cfg->retain_webhook_deliveries_days,
        [DB_RETAIN_JOB_LOGS] = cfg->retain_job_logs_days,
        [DB_RETAIN_JOB_METRICS] = cfg->retain_job_metrics_days,
        [DB_RETAIN_JOB_EVENTS] = cfg->retain_job_events_days,
        /* Each record's deployment says how long its texts stay. */
        [DB_RETAIN_SERVE_TEXTS] = 1,
    };

    for (int k = 0; k < DB_RETAIN_NKINDS && !app_stopping(t->app); k++) {
        struct db_retention_pass r;
        enum rc rc;
        if (days[k] == 0)
            continue; /* kept forever */
        rc = db_retention_run(c, (enum db_retention_kind)k, days[k], cfg->retention_batch_rows,
                              RETENTION_MAX_BATCHES, stopping, t->app, &r);
        if (rc != RC_OK)
            LOG_WARN("retention", "retention pass failed", "kind=%s rc=%s removed=%lld",
                     db_retention_kind_name((enum db_retention_kind)k), rc_str(rc),
                     (long long)r.removed);
        else if (r.reported > 0)
            LOG_INFO("retention", "retention removed rows",
                     "kind=%s count=%lld reported=%lld batches=%d retain_days=%d",
                     db_retention_kind_name((enum db_retention_kind)k), (long long)r.removed,
                     (long long)r.reported, r.batches, days[k]);
    }
}

static void fold(PGconn *c)
{
    enum rc rc = db_state_counts_fold(c);

    if (rc != RC_OK)
        LOG_WARN("retention", "folding the job counts failed", "rc=%s", rc_str(rc));
}

static void *retention_main(void *arg)
{
    struct retention *t = arg;
    struct srv_app *app = t->app;
    int64_t interval_ms = (int64_t)app->cfg->retention_interval_s * 1000;
    int64_t fold_ms = interval_ms < RETENTION_FOLD_MS ? interval_ms : RETENTION_FOLD_MS;
    int64_t next_pass = srv_now_ms(), next_fold = next_pass;
    PGconn *c;

    for (;;) {
        int64_t wake = next_fold < next_pass ? next_fold : next_pass;
        if (!loop_wait_until(&t->wait, wake))
            break;
        /* A connection only for the work: between passes this thread holds
         * none, so a small pool keeps its connections for requests. */
        if ((c = db_acquire(app->db, 1000)) == NULL)
            continue; /* busy or unreachable: again at once, after a wait */
        if (lead(c, 1)) {
            if (srv_now_ms() >= next_fold)
                fold(c);
            if (srv_now_ms() >= next_pass)
                pass(t, c);
            (void)lead(c, 0);
        }
        db_release(app->db, c);
        if (srv_now_ms() >= next_fold)
            next_fold = srv_now_ms() + fold_ms;
        if (srv_now_ms() >= next_pass)
            next_pass = srv_now_ms() + interval_ms;
    }
    return NULL;
}

enum rc retention_start(struct srv_app *app, struct retention **out)
{
    struct retention *t;

    *out = NULL;
    if ((t = calloc(1, sizeof(*t))) == NULL)
        return RC_ENOMEM;
    t->app = app;
    if (loop_thread_start(&t->wait, &t->thread, retention_main, t) != RC_OK) {
        free(t);
        return RC_EINTERNAL;
    }
    *out = t;
    return RC_OK;
}

void retention_stop(struct retention *t)
{
    if (t == NULL)
        return;
    loop_thread_stop(&t->wait, t->thread);
    free(t);
}
