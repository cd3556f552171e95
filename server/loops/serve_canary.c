/*
 * serve_canary.c - the automatic canary rollback (see serve_canary.h).
 *
 * Threading: one thread owns the struct; only `wait` (loop_wait.h) is
 * shared, with serve_canary_stop(), which cuts a sleep short.
 */
#include "serve_canary.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_target.h"
#include "clock.h"
#include "db.h"
#include "db_audit.h"
#include "db_deployments.h"
#include "db_jobs.h"
#include "db_webhooks.h"
#include "log.h"
#include "loop_wait.h"
#include "metrics.h"
#include "notify.h"
#include "srv.h"
#include "waiters.h"

#define ACTOR "system:canary"

struct serve_canary {
    struct srv_app *app;
    pthread_t thread;
    struct loop_wait wait; /* its sleeps, cut short by the stop */
};

/* One turn's transaction; reset at the start of each run. */
struct turn {
    struct serve_canary *t;
    PGconn *c;
    json_t *nodes; /* owned: nodes of cancelled replicas, to wake after the commit */
    int rolled;    /* canaries rolled back */
};

static int64_t id_of(const json_t *o, const char *k)
{
    int64_t v = 0;

    if (db_parse_i64(json_string_value(json_object_get(o, k)), &v) != RC_OK)
        return 0;
    return v;
}

/* Whether fig (a db_canary_figures row) is past its bound; *why says which. */
static int broken(const json_t *fig, const char **why)
{
    const json_t *b = json_object_get(fig, "bound");
    const json_t *er = json_object_get(b, "max_error_rate"),
                 *p99 = json_object_get(b, "max_p99_ms");
    json_int_t n = json_integer_value(json_object_get(fig, "requests"));
    json_int_t errs = json_integer_value(json_object_get(fig, "errors"));
    json_int_t min = json_integer_value(json_object_get(b, "min_requests"));
    const json_t *got = json_object_get(fig, "p99_ms");

    if (n < (min > 0 ? min : 1))
        return 0;
    if (json_is_number(er) && (double)errs / (double)n > json_number_value(er)) {
        *why = "max_error_rate";
        return 1;
    }
    if (json_is_number(p99) && json_is_number(got) &&
        json_number_value(got) > json_number_value(p99)) {
        *why = "max_p99_ms";
        return 1;
    }
    return 0;
}

/* Roll fig's canary back, in the open transaction. */
static enum rc roll_back(struct turn *x, const json_t *fig, const char *why)
{
    const char *name = json_string_value(json_object_get(fig, "name"));
    int64_t cv = id_of(fig, "canary_version_id");
    struct db_deployment d;
    json_t *live = NULL, *cancelled = json_array(), *details = NULL, *r;
    int64_t *ids = NULL;
    size_t n = 0, i;
    char target[AUDIT_TARGET_SIZE], msg[256];
    enum rc rc = cancelled ? db_deployment_load(x->c, name, 1, &d, "canary") : RC_ENOMEM;

    /* Changed since the figures were read: nothing to do this turn. */
    if (rc != RC_OK || d.canary_version_id != cv || d.canary_weight == 0 ||
        strcmp(d.state, "active") != 0) {
        json_decref(cancelled);
        return rc == RC_ENOTFOUND ? RC_OK : rc;
    }
    rc = db_serve_replicas_live(x->c, d.id, &live, "canary");
    if (rc == RC_OK && json_array_size(live) > 0 &&
        (ids = calloc(json_array_size(live), sizeof(*ids))) == NULL)
        rc = RC_ENOMEM;
    json_array_foreach(live, i, r)
    {
        if (id_of(r, "version_id") == cv)
            ids[n++] = id_of(r, "job_id");
    }
    if (rc == RC_OK)
        rc = db_jobs_lock(x->c, ids, n, "canary");
    d.canary_weight = 0;
    if (rc == RC_OK)
        rc = db_deployment_update(x->c, &d, "canary");
    for (i = 0; rc == RC_OK && i < n; i++) {
        json_t *nodes = NULL, *node;
        size_t k;
        int done = 0;
        rc = db_serve_replica_cancel(x->c, ids[i], ACTOR, "", &done, &nodes, "canary");
        if (rc == RC_OK && done)
            rc = notify_send_job(x->t->app, x->c, ids[i], nodes, 1, "canary");
        json_array_foreach(nodes, k, node)
        {
            if (rc == RC_OK && json_array_append(x->nodes, node) != 0)
                rc = RC_ENOMEM;
        }
        json_decref(nodes);
        if (rc == RC_OK && done && json_array_append_new(cancelled, json_integer(ids[i])) != 0)
            rc = RC_ENOMEM;
    }
    json_array_foreach(cancelled, i, r)
    {
        json_t *dd = json_pack("{s:s,s:s}", "deployment", d.name, "reason", "canary rollback");
        struct audit_event ev = {ACTOR, "", "job.cancel", target, "success", dd};
        if (rc == RC_OK)
            rc = audit_target_id(AUDIT_TARGET_JOB, json_integer_value(r), target);
        if (rc == RC_OK)
            rc = dd ? audit_append(x->c, &ev, "canary") : RC_ENOMEM;
        json_decref(dd);
    }
    if (rc == RC_OK) {
        details =
            json_pack("{s:s,s:s,s:I,s:i,s:O,s:O,s:O,s:O,s:O}", "op", "auto_rollback", "broke", why,
                      "canary_version_id", (json_int_t)cv, "from_weight",
                      (int)json_integer_value(json_object_get(fig, "canary_weight")), "requests",
                      json_object_get(fig, "requests"), "errors", json_object_get(fig, "errors"),
                      "p99_ms", json_object_get(fig, "p99_ms"), "bound",
                      json_object_get(fig, "bound"), "replicas_cancelled", cancelled);
        rc = details ? audit_target_name(AUDIT_TARGET_DEPLOYMENT, d.name, target) : RC_ENOMEM;
    }
    if (rc == RC_OK) {
        struct audit_event ev = {ACTOR, "", "deployment.canary", target, "success", details};
        rc = audit_append(x->c, &ev, "canary");
    }
    if (rc == RC_OK) {
        snprintf(msg, sizeof(msg), "deployment %s: canary rolled back (%s)", d.name, why);
        rc = webhooks_enqueue_team(x->c, d.team_id, "canary.rolled_back", msg, NULL, details,
                                   "canary");
    }
    if (rc == RC_OK)
        x->rolled++;
    free(ids);
    json_decref(live);
    json_decref(cancelled);
    json_decref(details);
    return rc;
}

static enum rc turn_body(void *arg)
{
    struct turn *x = arg;
    const char *p[] = {SERVE_CANARY_LEADER_KEY};
    json_t *figs = NULL, *fig;
    PGresult *r;
    size_t i;
    int lead;
    enum rc rc;

    json_decref(x->nodes);
    x->rolled = 0;
    if ((x->nodes = json_array()) == NULL)
        return RC_ENOMEM;
    r = db_exec(x->c, "SELECT pg_try_advisory_xact_lock($1::bigint)", 1, p);
    rc = db_result_rc(r, "canary");
    lead = rc == RC_OK && PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    if (!lead)
        return rc; /* another replica checks this turn */
    rc = db_canary_figures(x->c, &figs, "canary");
    json_array_foreach(figs, i, fig)
    {
        const char *why = NULL;
        if (rc == RC_OK && broken(fig, &why))
            rc = roll_back(x, fig, why);
    }
    json_decref(figs);
    return rc;
}

static void *canary_main(void *arg)
{
    struct serve_canary *t = arg;
    struct srv_app *app = t->app;
    int64_t next = srv_now_ms();

    for (;;) {
        struct turn x = {t, NULL, NULL, 0};
        json_t *n;
        size_t i;
        enum rc rc;
        if (!loop_wait_until(&t->wait, next))
            break;
        next = srv_now_ms() + SERVE_CANARY_INTERVAL_MS;
        if ((x.c = db_acquire(app->db, 1000)) == NULL)
            continue;
        rc = db_tx(x.c, turn_body, &x, "canary");
        db_release(app->db, x.c);
        if (rc != RC_OK) {
            LOG_WARN("canary", "the canary check failed", "rc=%s", rc_str(rc));
        } else if (x.rolled > 0) {
            for (int k = 0; k < x.rolled; k++)
                metrics_canary_rollback();
            LOG_INFO("canary", "canaries rolled back", "count=%d", x.rolled);
            json_array_foreach(x.nodes, i, n)
            {
                int64_t node_id = id_of(n, "node_id");
                if (node_id > 0)
                    waiters_notify(app->waiters, node_id);
            }
            app_wake_scheduler(app);
        }
        json_decref(x.nodes);
    }
    return NULL;
}

enum rc serve_canary_start(struct srv_app *app, struct serve_canary **out)
{
    struct serve_canary *t;

    *out = NULL;
    if ((t = calloc(1, sizeof(*t))) == NULL)
        return RC_ENOMEM;
    t->app = app;
    if (loop_thread_start(&t->wait, &t->thread, canary_main, t) != RC_OK) {
        free(t);
        return RC_EINTERNAL;
    }
    *out = t;
    return RC_OK;
}

void serve_canary_stop(struct serve_canary *t)
{
    if (t == NULL)
        return;
    loop_thread_stop(&t->wait, t->thread);
    free(t);
}
