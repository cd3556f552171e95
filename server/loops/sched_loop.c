/*
 * sched_loop.c - the scheduler thread (see sched_loop.h).
 *
 * The thread keeps one connection from the pool for its whole life: the
 * leader's advisory lock is a session lock and must stay on one session.
 */
#include "sched_loop.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "db.h"
#include "db_sched.h"
#include "forecast.h"
#include "log.h"
#include "metrics.h"
#include "notify.h"
#include "sched.h"
#include "srv.h"
#include "waiters.h"

/* Shortest time between two passes. A pass reads the whole queue, so a burst
 * of submits (each waking the scheduler) would otherwise run passes back to
 * back; this coalesces them at a cost of at most this much launch latency
 * during bursts, and none when the scheduler has been idle. */
#define SCHED_MIN_GAP_MS 25

/* Advisory lock key of the scheduling leader ("trainyard" in a bigint). */
#define SCHED_LEADER_KEY "7243002"
#define SCHED_MAX_TOUCHED 4096

struct sched_loop {
    struct srv_app *app;
    pthread_t thread;
    const struct sched_policy *policy;
    struct sched_decisions decisions;
    struct forecast *forecast; /* the predictor and the stored forecast (forecast.h) */
    int64_t touched[SCHED_MAX_TOUCHED];
};

static int try_lead(PGconn *c)
{
    const char *p[] = {SCHED_LEADER_KEY};
    PGresult *r = db_exec(c, "SELECT pg_try_advisory_lock($1::bigint)", 1, p);
    int leader = PQresultStatus(r) == PGRES_TUPLES_OK && PQgetvalue(r, 0, 0)[0] == 't';

    PQclear(r);
    return leader;
}

static void one_pass(struct sched_loop *loop, PGconn *c)
{
    struct db_sched_snapshot snap;
    size_t ntouched = 0;
    int placed = 0;
    int64_t t0 = srv_mono_us();
    enum rc rc = db_sched_snapshot(c, &snap), frc;
    int snap_ok = rc == RC_OK;

    /* Predictions for the pass itself (backfill order, reservations) and for
     * the forecast after it; without them the time limits rule, as before. */
    if (rc == RC_OK && (frc = forecast_prepare(loop->forecast, c, &snap)) != RC_OK)
        LOG_WARN("sched", "no run-time predictions this pass", "rc=%s", rc_str(frc));
    if (rc == RC_OK)
        rc = sched_plan(loop->policy, &snap.cluster, &snap.queue, snap.now_ms, &loop->decisions);
    if (rc == RC_OK && (loop->decisions.nplacements > 0 || loop->decisions.npreemptions > 0))
        rc = db_sched_apply(c, &snap, &loop->decisions, loop->app->cfg->rendezvous_port_min,
                            loop->app->cfg->rendezvous_port_max, &placed, loop->touched,
                            SCHED_MAX_TOUCHED, &ntouched);
    metrics_sched_pass(srv_mono_us() - t0, rc == RC_OK);
    if (rc != RC_OK)
        LOG_WARN("sched", "pass failed", "rc=%s", rc_str(rc));
    else if (placed > 0 || loop->decisions.npreemptions > 0)
        LOG_INFO("sched", "pass", "queued=%zu placed=%d preempted=%zu blocked=%zu duration_us=%lld",
                 snap.queue.njobs, placed, loop->decisions.npreemptions, loop->decisions.nblocked,
                 (long long)(srv_mono_us() - t0));
    for (size_t i = 0; i < ntouched; i++)
        waiters_notify(loop->app->waiters, loop->touched[i]);
    /* Workers long-polling other replicas: db_sched_apply() has committed,
     * so this NOTIFY goes right after, on the same connection. A failure is
     * logged there; those workers then learn at their poll's deadline. */
    if (ntouched > 0)
        (void)notify_send(loop->app, c, loop->touched, ntouched, 0, "sched");
    /* The forecast of this snapshot, after the workers were woken so that it
     * never delays a launch; bounded by forecast_max_events and the horizon. */
    if (snap_ok && (frc = forecast_refresh(loop->forecast, c, loop->policy, &snap, &loop->decisions,
                                           rc == RC_OK, NULL)) != RC_OK)
        LOG_WARN("sched", "queue forecast failed", "rc=%s", rc_str(frc));
    db_sched_snapshot_free(&snap);
}

/* Wait for a wake-up or the interval; returns 0 when stopping. */
static int wait_for_work(struct srv_app *app)
{
    struct timespec ts;
    int ms = app->cfg->sched_interval_ms;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&app->wake_lock);
    while (!app->wake_pending && !app_stopping(app))
        if (pthread_cond_timedwait(&app->wake_cond, &app->wake_lock, &ts) != 0)
            break;
    app->wake_pending = 0;
    pthread_mutex_unlock(&app->wake_lock);
    return !app_stopping(app);
}

static void *loop_main(void *arg)
{
    struct sched_loop *loop = arg;
    struct srv_app *app = loop->app;
    PGconn *c = NULL;
    int leader = 0;
    int64_t last_pass_ms = 0;

    while (!app_stopping(app)) {
        if (c == NULL && (c = db_acquire(app->db, 1000)) == NULL) {
            wait_for_work(app);
            continue;
        }
        if (!leader) {
            leader = try_lead(c);
            if (leader)
                forecast_reset(loop->forecast); /* learn again: others led meanwhile */
            if (leader)
                LOG_INFO("sched", "this replica leads scheduling", "policy=%s", loop->policy->name);
        }
        if (leader) {
            int64_t gap = srv_now_ms() - last_pass_ms;
            if (gap < SCHED_MIN_GAP_MS) {
                struct timespec ts = {0, (long)(SCHED_MIN_GAP_MS - gap) * 1000000L};
                nanosleep(&ts, NULL);
            }
            one_pass(loop, c);
            last_pass_ms = srv_now_ms();
        }
        if (PQstatus(c) != CONNECTION_OK) {
            /* The session (and with it the lock) is gone: start over. A
             * session cut off from PostgreSQL is given up in about 11 s
             * on both ends (db.c, keepalives), so another replica leads by
             * then. */
            if (leader)
                LOG_WARN("sched", "lost the scheduling lock's session; another replica may lead",
                         "");
            db_release(app->db, c);
            c = NULL;
            leader = 0;
        }
        wait_for_work(app);
    }
    if (c != NULL) {
        PGresult *r = PQexec(c, "SELECT pg_advisory_unlock_all()");
        PQclear(r);
        db_release(app->db, c);
    }
    return NULL;
}

enum rc sched_loop_start(struct srv_app *app, struct sched_loop **out)
{
    struct sched_loop *loop = calloc(1, sizeof(*loop));

    if (loop == NULL)
        return RC_ENOMEM;
    loop->app = app;
    loop->policy = sched_policy_find(app->cfg->sched_policy);
    if (loop->policy == NULL) {
        LOG_ERROR("sched", "unknown scheduler policy", "policy=%s", app->cfg->sched_policy);
        free(loop);
        return RC_EINVAL;
    }
    sched_decisions_init(&loop->decisions);
    if (forecast_new(app->cfg, &loop->forecast) != RC_OK) {
        free(loop);
        return RC_ENOMEM;
    }
    if (pthread_create(&loop->thread, NULL, loop_main, loop) != 0) {
        sched_decisions_cleanup(&loop->decisions);
        forecast_free(loop->forecast);
        free(loop);
        return RC_EINTERNAL;
    }
    *out = loop;
    return RC_OK;
}

void sched_loop_stop(struct sched_loop *loop)
{
    if (loop == NULL)
        return;
    app_wake_scheduler(loop->app);
    pthread_join(loop->thread, NULL);
    sched_decisions_cleanup(&loop->decisions);
    forecast_free(loop->forecast);
    free(loop);
}
