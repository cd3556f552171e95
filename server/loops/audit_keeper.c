/*
 * audit_keeper.c - the audit key at start-up and the keeper thread (see
 * audit_keeper.h).
 *
 * Threading: one thread owns the struct; only `wait` (loop_wait.h) is
 * shared, with audit_keeper_stop(), which cuts a sleep short.
 */
#include "audit_keeper.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "db.h"
#include "db_audit_keys.h"
#include "db_audit_sign.h"
#include "log.h"
#include "loop_wait.h"
#include "srv.h"

/* Advisory lock key of the audit keeper (the scheduler's is 7243002). */
#define KEEPER_LEADER_KEY "7243003"
/* How often a replica that does not lead tries to take over. */
#define KEEPER_RETRY_MS 5000
/* Retention runs daily: events are kept for days, so finer is pointless. */
#define KEEPER_RETENTION_MS (24LL * 3600 * 1000)

struct audit_keeper {
    struct srv_app *app;
    pthread_t thread;
    struct loop_wait wait; /* its sleeps, cut short by the stop */
};

/* mkdir -p with mode for each missing component. */
static int make_dirs(const char *path, mode_t mode)
{
    char buf[SRV_CFG_STR];
    size_t n = strlen(path);

    if (n == 0 || n >= sizeof(buf))
        return -1;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        buf[i] = '\0';
        if (mkdir(buf, mode) != 0 && errno != EEXIST)
            return -1;
        if (i < n)
            buf[i] = '/';
    }
    return 0;
}

enum rc audit_keeper_load_key(const struct srv_config *cfg, struct audit_key **out)
{
    struct err e;
    int created = 0;
    enum rc rc;

    err_init(&e);
    *out = NULL;
    if (make_dirs(cfg->data_dir, 0700) != 0) {
        LOG_ERROR("audit", "cannot create the data directory", "path=\"%s\" error=\"%s\"",
                  cfg->data_dir, strerror(errno));
        return RC_EUNAVAIL;
    }
    rc = audit_key_load_or_create(cfg->audit_key_path, out, &created, &e);
    if (rc != RC_OK) {
        LOG_ERROR("audit", "refusing to start: the audit signing key cannot be used",
                  "path=\"%s\" error=\"%s\"", cfg->audit_key_path, e.message);
        return rc;
    }
    LOG_INFO("audit", created ? "audit signing key created" : "audit signing key loaded",
             "key_id=%s path=\"%s\"", audit_key_id(*out), cfg->audit_key_path);
    return RC_OK;
}

enum rc audit_keeper_register_key(struct srv_app *app)
{
    char from[AUDIT_KEY_ID_LEN + 1] = "";
    PGconn *c = db_acquire(app->db, 10000);
    enum rc rc;

    if (c == NULL) {
        LOG_ERROR("audit", "cannot record the audit signing key: no database connection", "");
        return RC_EUNAVAIL;
    }
    rc = audit_keys_register(c, app->audit_key, from);
    db_release(app->db, c);
    if (rc != RC_OK)
        LOG_ERROR("audit", "cannot record the audit signing key", "rc=%s key_id=%s", rc_str(rc),
                  audit_key_id(app->audit_key));
    else if (from[0] != '\0')
        LOG_WARN("audit", "audit signing key rotated", "from=%s to=%s", from,
                 audit_key_id(app->audit_key));
    return rc;
}

static int try_lead(PGconn *c)
{
    const char *p[] = {KEEPER_LEADER_KEY};
    PGresult *r = db_exec(c, "SELECT pg_try_advisory_lock($1::bigint)", 1, p);
    int leader = PQresultStatus(r) == PGRES_TUPLES_OK && PQgetvalue(r, 0, 0)[0] == 't';

    PQclear(r);
    return leader;
}

static void checkpoint(struct audit_keeper *k, PGconn *c, int only_first)
{
    int made = 0;
    int64_t seq = 0;
    enum rc rc = audit_checkpoint_periodic(c, k->app->audit_key, only_first, &made, &seq, NULL);

    if (rc != RC_OK)
        LOG_WARN("audit", "checkpoint failed", "rc=%s", rc_str(rc));
    else if (made)
        LOG_INFO("audit", "checkpoint signed", "seq=%lld", (long long)seq);
}

static void retention(struct audit_keeper *k, PGconn *c)
{
    struct audit_retention_result r;
    enum rc rc;

    if (k->app->cfg->audit_retention_days == 0) {
        LOG_INFO("audit", "audit retention is off: events are kept forever",
                 "audit_retention_days=0");
        return;
    }
    rc = audit_retention_run(c, k->app->audit_key, k->app->cfg->audit_retention_days, "system", "",
                             &r, NULL);

    if (rc != RC_OK)
        LOG_WARN("audit", "retention failed", "rc=%s", rc_str(rc));
    else if (r.removed > 0)
        LOG_INFO("audit", "retention removed events",
                 "count=%lld through=%lld checkpoint_id=%lld retention_days=%d",
                 (long long)r.removed, (long long)r.through, (long long)r.checkpoint_id,
                 r.retention_days);
}

static void *keeper_main(void *arg)
{
    struct audit_keeper *k = arg;
    struct srv_app *app = k->app;
    int64_t interval_ms = (int64_t)app->cfg->audit_checkpoint_interval_s * 1000;
    int64_t next_ckpt = 0, next_retention = 0, wake;
    PGconn *c = NULL;
    int leader = 0;

    for (;;) {
        if (c == NULL && (c = db_acquire(app->db, 1000)) == NULL) {
            if (!loop_wait_until(&k->wait, srv_now_ms() + 1000))
                break;
            continue;
        }
        if (!leader) {
            if (!try_lead(c)) {
                /* Someone else keeps: do not sit on a pooled connection. */
                db_release(app->db, c);
                c = NULL;
                if (!loop_wait_until(&k->wait, srv_now_ms() + KEEPER_RETRY_MS))
                    break;
                continue;
            }
            leader = 1;
            LOG_INFO("audit", "this replica keeps the audit checkpoints",
                     "interval_s=%d audit_retention_days=%d", app->cfg->audit_checkpoint_interval_s,
                     app->cfg->audit_retention_days);
            checkpoint(k, c, 1);
            next_ckpt = srv_now_ms() + interval_ms;
            next_retention = srv_now_ms();
        }
        if (srv_now_ms() >= next_ckpt) {
            checkpoint(k, c, 0);
            next_ckpt = srv_now_ms() + interval_ms;
        }
        if (srv_now_ms() >= next_retention) {
            retention(k, c);
            next_retention = srv_now_ms() + KEEPER_RETENTION_MS;
        }
        if (PQstatus(c) != CONNECTION_OK) {
            /* The session (and with it the lock) is gone: start over. */
            db_release(app->db, c);
            c = NULL;
            leader = 0;
            continue;
        }
        wake = next_ckpt < next_retention ? next_ckpt : next_retention;
        if (!loop_wait_until(&k->wait, wake))
            break;
    }
    if (c != NULL) {
        const char *p[] = {KEEPER_LEADER_KEY};
        PGresult *r = db_exec(c, "SELECT pg_advisory_unlock($1::bigint)", 1, p);
        PQclear(r);
        db_release(app->db, c);
    }
    return NULL;
}

enum rc audit_keeper_start(struct srv_app *app, struct audit_keeper **out)
{
    struct audit_keeper *k;

    *out = NULL;
    if (app->audit_key == NULL)
        return RC_EINVAL;
    if ((k = calloc(1, sizeof(*k))) == NULL)
        return RC_ENOMEM;
    k->app = app;
    if (loop_thread_start(&k->wait, &k->thread, keeper_main, k) != RC_OK) {
        free(k);
        return RC_EINTERNAL;
    }
    *out = k;
    return RC_OK;
}

void audit_keeper_stop(struct audit_keeper *k)
{
    if (k == NULL)
        return;
    loop_thread_stop(&k->wait, k->thread);
    free(k);
}
