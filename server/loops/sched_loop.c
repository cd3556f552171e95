/*
 * sched_loop.c - the scheduler thread (see sched_loop.h).
 *
 * The thread keeps one connection from the pool for its whole life: the
 * leader's advisory lock is a session lock and must stay on one session,
 * the one its lease records (db_lease.h). The lease is renewed by this
 * thread, between passes, so that a thread that hangs (a deadlock, a stuck
 * disk, the process stopped) stops renewing and is replaced; a renewal from
 * a thread of its own would keep a hung scheduler leading.
 */
#include "sched_loop.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "db_lease.h"
#include "db_sched.h"
#include "forecast.h"
#include "lease.h"
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
#define SCHED_LEADER_KEY_NUM 7243002
#define SCHED_MAX_TOUCHED 4096
/* How long a follower waits for a stale leader's session to exit once it
 * asked PostgreSQL to end it (an idle session exits at once). */
#define SCHED_END_WAIT_MS 5000

struct sched_loop {
    struct srv_app *app;
    pthread_t thread;
    const struct sched_policy *policy;
    struct sched_decisions decisions;
    struct forecast *forecast; /* the predictor and the stored forecast (forecast.h) */
    struct lease_holder lease; /* epoch 0 while following */
    char holder[128];          /* host:pid, recorded with the lease */
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

/* One pass; returns the apply's rc, or RC_ECONFLICT when the fence refused
 * the apply or the forecast's store: the caller then checks its lease at
 * once. */
static enum rc one_pass(struct sched_loop *loop, PGconn *c)
{
    struct db_sched_snapshot snap;
    size_t ntouched = 0;
    int placed = 0;
    int64_t t0 = srv_mono_us();
    enum rc rc = db_sched_snapshot(c, &snap), frc = RC_OK;
    int snap_ok = rc == RC_OK;

    /* Predictions for the pass itself (backfill order, reservations) and for
     * the forecast after it; without them the time limits rule, as before. */
    if (rc == RC_OK && (frc = forecast_prepare(loop->forecast, c, &snap)) != RC_OK)
        LOG_WARN("sched", "no run-time predictions this pass", "rc=%s", rc_str(frc));
    if (rc == RC_OK)
        rc = sched_plan(loop->policy, &snap.cluster, &snap.queue, snap.now_ms, &loop->decisions);
    if (rc == RC_OK && (loop->decisions.nplacements > 0 || loop->decisions.npreemptions > 0))
        rc =
            db_sched_apply(c, loop->lease.epoch, &snap, &loop->decisions,
                           loop->app->cfg->rendezvous_port_min, loop->app->cfg->rendezvous_port_max,
                           &placed, loop->touched, SCHED_MAX_TOUCHED, &ntouched);
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
    return rc == RC_OK && frc == RC_ECONFLICT ? RC_ECONFLICT : rc;
}

/* Wait for a wake-up, the interval or ms, whichever comes first; returns 0
 * when stopping. */
static int wait_for_work(struct srv_app *app, int64_t ms)
{
    struct timespec ts;

    if (ms > app->cfg->sched_interval_ms)
        ms = app->cfg->sched_interval_ms;
    if (ms < 0)
        ms = 0;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
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

/* A leader stopped inside one of its transactions (a pass's apply holds
 * job rows and then the audit head) would block every other replica's
 * writes, heartbeats among them, until its session ends; the lease would
 * end it only after leader_lease_ms, by when nodes may have been declared
 * lost. Its transactions never wait on anything but this thread between
 * statements, so PostgreSQL ends a session left idle inside one for a
 * renewal period (at least a second, for a starved CPU): the row locks and
 * the advisory lock go with it. */
static void bound_idle_tx(PGconn *c, int ms)
{
    char v[24];
    const char *p[] = {v};

    snprintf(v, sizeof(v), "%dms", ms < 1000 ? 1000 : ms);
    if (db_exec_ok(c, "sched",
                   "SELECT set_config('idle_in_transaction_session_timeout', $1, false)", 1,
                   p) != RC_OK)
        LOG_WARN("sched", "could not bound the scheduler's idle transactions", "");
}

/* Take the advisory lock and then the lease; 1 when this replica now leads. */
static int take_lead(struct sched_loop *loop, PGconn *c)
{
    int64_t sent = srv_now_ms(), epoch = 0;
    int lease_ms = loop->app->cfg->leader_lease_ms;
    enum rc rc;

    if (!try_lead(c))
        return 0;
    rc = db_lease_acquire(c, DB_LEASE_SCHEDULER, loop->holder, lease_ms, &epoch);
    if (rc != RC_OK) {
        const char *p[] = {SCHED_LEADER_KEY};
        LOG_WARN("sched", "could not take the scheduling lease", "rc=%s", rc_str(rc));
        PQclear(db_exec(c, "SELECT pg_advisory_unlock($1::bigint)", 1, p));
        return 0;
    }
    loop->lease.epoch = epoch;
    loop->lease.lease_ms = lease_ms;
    loop->lease.renew_sent_ms = sent;
    forecast_reset(loop->forecast, epoch); /* learn again: others led meanwhile */
    metrics_lead_event(METRICS_LEAD_ACQUIRED);
    LOG_INFO("sched", "this replica leads scheduling", "policy=%s epoch=%lld lease_ms=%d holder=%s",
             loop->policy->name, (long long)epoch, lease_ms, loop->holder);
    return 1;
}

/* A follower's look at the lease: when it is stale and its holder's session
 * still holds the lock, end that session. 1 when one was ended (the lock
 * is free to take now). */
static int end_stale_leader(PGconn *c)
{
    struct db_lease_view v;
    int ended = 0;
    enum rc rc = db_lease_read(c, DB_LEASE_SCHEDULER, SCHED_LEADER_KEY_NUM, &v);

    if (rc != RC_OK || !lease_should_end_holder(v.expired, v.holder_has_lock))
        return 0;
    LOG_WARN("sched", "the scheduling leader stopped renewing its lease; ending its session",
             "holder=%s epoch=%lld backend_pid=%d overdue_ms=%lld", v.holder, (long long)v.epoch,
             v.backend_pid, (long long)v.overdue_ms);
    rc = db_lease_end_holder(c, DB_LEASE_SCHEDULER, v.epoch, SCHED_LEADER_KEY_NUM,
                             SCHED_END_WAIT_MS, &ended);
    if (rc != RC_OK || !ended)
        return 0;
    metrics_lead_event(METRICS_LEAD_TAKEOVER);
    LOG_WARN("sched", "ended the stale scheduling leader's session", "holder=%s epoch=%lld",
             v.holder, (long long)v.epoch);
    return 1;
}

/* Stop leading (the lease is lost or lapsed): give the lock back if the
 * session still has it, so that a follower need not end this session. */
static void step_down(struct sched_loop *loop, PGconn *c, enum lease_verdict why)
{
    const char *p[] = {SCHED_LEADER_KEY};

    LOG_WARN("sched", "lost the scheduling lease; this replica follows now", "reason=%s epoch=%lld",
             lease_verdict_str(why), (long long)loop->lease.epoch);
    if (why != LEASE_LOST_SESSION && PQstatus(c) == CONNECTION_OK)
        PQclear(db_exec(c, "SELECT pg_advisory_unlock($1::bigint)", 1, p));
    metrics_lead_event(METRICS_LEAD_LOST);
    loop->lease.epoch = 0;
}

/* Renew the lease; 1 while this replica still leads. */
static int renew(struct sched_loop *loop, PGconn *c)
{
    int64_t sent = srv_now_ms();
    int held = 0;
    enum rc rc =
        db_lease_renew(c, DB_LEASE_SCHEDULER, loop->lease.epoch, loop->lease.lease_ms, &held);
    enum lease_verdict v;

    /* Ended by PostgreSQL with an error of its own (an idle transaction's
     * timeout: 25P03) rather than by a follower (57P01): gone all the same. */
    if (rc != RC_OK && PQstatus(c) != CONNECTION_OK)
        rc = RC_EUNAVAIL;
    v = lease_after_renew(&loop->lease, sent, srv_now_ms(), rc, held);

    if (v == LEASE_KEEP)
        return 1;
    if (v == LEASE_RETRY) {
        LOG_WARN("sched", "scheduling lease not renewed; trying again", "rc=%s epoch=%lld",
                 rc_str(rc), (long long)loop->lease.epoch);
        return 1;
    }
    step_down(loop, c, v);
    return 0;
}

static void *loop_main(void *arg)
{
    struct sched_loop *loop = arg;
    struct srv_app *app = loop->app;
    PGconn *c = NULL;
    int64_t last_pass_ms = 0, next_look_ms = 0;
    int period_ms = lease_renew_period_ms(app->cfg->leader_lease_ms);

    while (!app_stopping(app)) {
        int leader = loop->lease.epoch > 0;
        int64_t wait_ms = period_ms;

        if (c == NULL) {
            if ((c = db_acquire(app->db, 1000)) == NULL) {
                wait_for_work(app, period_ms);
                continue;
            }
            bound_idle_tx(c, period_ms);
        }
        if (!leader) {
            leader = take_lead(loop, c);
            /* The lease is read once a renewal period, not at every wake-up
             * (each submit wakes followers too). */
            if (!leader && srv_now_ms() >= next_look_ms) {
                next_look_ms = srv_now_ms() + period_ms;
                leader = end_stale_leader(c) && take_lead(loop, c);
            }
        } else if (srv_now_ms() >= lease_next_renew_ms(&loop->lease))
            leader = renew(loop, c);
        if (leader) {
            int64_t gap = srv_now_ms() - last_pass_ms;
            if (gap < SCHED_MIN_GAP_MS) {
                struct timespec ts = {0, (long)(SCHED_MIN_GAP_MS - gap) * 1000000L};
                nanosleep(&ts, NULL);
            }
            /* A pass the fence refused, or one that ran past the lease:
             * the lease is checked now, not at the next renewal. */
            if (one_pass(loop, c) == RC_ECONFLICT || lease_lapsed(&loop->lease, srv_now_ms()))
                leader = renew(loop, c);
            last_pass_ms = srv_now_ms();
        }
        if (PQstatus(c) != CONNECTION_OK) {
            /* The session (and with it the lock) is gone: start over. A
             * session cut off from PostgreSQL is given up in about 11 s
             * on both ends (db.c, keepalives), so another replica leads by
             * then. */
            if (leader)
                step_down(loop, c, LEASE_LOST_SESSION);
            db_release(app->db, c);
            c = NULL;
        }
        if (loop->lease.epoch > 0)
            wait_ms = lease_next_renew_ms(&loop->lease) - srv_now_ms();
        wait_for_work(app, wait_ms);
    }
    if (c != NULL) {
        PGresult *r = PQexec(c, "SELECT pg_advisory_unlock_all()");
        PQclear(r);
        /* The pool's other users keep PostgreSQL's default. */
        PQclear(PQexec(c, "RESET idle_in_transaction_session_timeout"));
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
    {
        char host[64] = "";
        if (gethostname(host, sizeof(host) - 1) != 0)
            snprintf(host, sizeof(host), "unknown");
        snprintf(loop->holder, sizeof(loop->holder), "%s:%ld", host, (long)getpid());
    }
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
