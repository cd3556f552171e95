/*
 * monitor.c - see monitor.h.
 */
#include "monitor.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "db.h"
#include "db_agent.h"
#include "db_audit.h"
#include "db_jobs.h"
#include "db_webhooks.h"
#include "lifecycle.h"
#include "log.h"
#include "notify.h"
#include "waiters.h"

struct monitor {
    struct srv_app *app;
    pthread_t thread;
    int64_t started_ms; /* monotonic: when this monitor began to listen */
};

static int64_t mono_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* One lost node, in the open transaction. */
static enum rc handle_lost_node(PGconn *c, const json_t *node, int timeout_s)
{
    const char *name = json_string_value(json_object_get(node, "node"));
    int64_t node_id = strtoll(json_string_value(json_object_get(node, "node_id")), NULL, 10);
    const json_t *allocs = json_object_get(node, "allocations"), *a;
    char target[AUDIT_TARGET_SIZE];
    struct job_reason why;
    json_t *d = json_pack("{s:s,s:s,s:s}", "from", "ready", "to", "down", "reason",
                          "no heartbeat within the node timeout");
    struct audit_event ev = {"system:monitor", "", "node.state", target, "success", d};
    size_t i;
    enum rc rc;

    rc = audit_target_name(AUDIT_TARGET_NODE, name, target);
    if (rc == RC_OK)
        rc = audit_append(c, &ev, "monitor");
    json_decref(d);
    job_reason_init(&why, RSN_NODE_LOST, json_pack("{s:s}", "node", name),
                    "node %s lost (no heartbeat)", name);
    json_array_foreach(allocs, i, a)
    {
        int64_t attempt = strtoll(json_string_value(json_object_get(a, "attempt_id")), NULL, 10);
        int64_t job = strtoll(json_string_value(json_object_get(a, "job_id")), NULL, 10);
        if (rc == RC_OK)
            rc = lifecycle_node_lost(c, attempt, job, node_id, &why, timeout_s + 5,
                                     "system:monitor", "monitor");
    }
    job_reason_cleanup(&why);
    return rc;
}

/* One check's writes, as a db_tx() body; lost is reset on each run. */
struct check_tx {
    struct monitor *m;
    PGconn *c;
    json_t *lost; /* owned: what db_nodes_mark_lost() found */
};

/* Lock order (db.h): the nodes (db_nodes_mark_lost), then every job with an
 * allocation on them in id order, and only then the audit head. */
static enum rc lock_lost_jobs(PGconn *c, const json_t *lost)
{
    size_t n = 0, cap = 0, i, k;
    int64_t *ids;
    json_t *node, *a;
    enum rc rc;

    json_array_foreach(lost, i, node)
    {
        cap += json_array_size(json_object_get(node, "allocations"));
    }
    if ((ids = malloc((cap + 1) * sizeof(*ids))) == NULL)
        return RC_ENOMEM;
    json_array_foreach(lost, i, node)
    {
        json_array_foreach(json_object_get(node, "allocations"), k, a)
        {
            ids[n++] = strtoll(json_string_value(json_object_get(a, "job_id")), NULL, 10);
        }
    }
    rc = db_jobs_lock(c, ids, n, "monitor");
    free(ids);
    return rc;
}

static enum rc check_body(void *arg)
{
    struct check_tx *x = arg;
    json_t *node;
    size_t i;
    enum rc rc;

    json_decref(x->lost);
    x->lost = NULL;
    rc = db_nodes_mark_lost(x->c, x->m->app->cfg->node_timeout_s, &x->lost, "monitor");
    if (rc == RC_OK)
        rc = lock_lost_jobs(x->c, x->lost);
    json_array_foreach(x->lost, i, node)
    {
        if (rc == RC_OK)
            rc = handle_lost_node(x->c, node, x->m->app->cfg->node_timeout_s);
    }
    /* As below, for the other replicas (delivered at commit). */
    if (rc == RC_OK && json_array_size(x->lost) > 0) {
        const int64_t all = 0;
        rc = notify_send(x->m->app, x->c, &all, 1, 1, "monitor");
    }
    return rc;
}

static void check_nodes(struct monitor *m, PGconn *c)
{
    struct check_tx x = {m, c, NULL};
    json_t *node;
    size_t i;
    enum rc rc = db_tx(c, check_body, &x, "monitor");

    if (rc == RC_OK && json_array_size(x.lost) > 0)
        db_jobs_changed();
    if (rc != RC_OK)
        LOG_WARN("monitor", "node check failed", "rc=%s", rc_str(rc));
    json_array_foreach(x.lost, i, node)
    {
        LOG_WARN("monitor", "node lost", "node=%s",
                 json_string_value(json_object_get(node, "node")));
    }
    if (rc == RC_OK && json_array_size(x.lost) > 0) {
        /* The jobs' other nodes must stop their ranks; the GPUs are free. */
        waiters_notify(m->app->waiters, 0);
        app_wake_scheduler(m->app);
    }
    json_decref(x.lost);
}

static void *monitor_main(void *arg)
{
    struct monitor *m = arg;

    while (!app_stopping(m->app)) {
        struct timespec ts = {0, 500 * 1000000L};
        /* A node is judged silent only on a full node_timeout_s during which
         * this server could hear it: the time the server was down (a
         * restart) is no evidence, and a node that heartbeat up to then
         * has not yet found the new server. Without this, a restart longer
         * than the timeout declared every node lost at once and restarted
         * their jobs, whose ranks ran everything again (a followed log
         * showed each line twice). Other replicas, if any, kept watching. */
        if (mono_ms() - m->started_ms >= (int64_t)m->app->cfg->node_timeout_s * 1000) {
            PGconn *c = db_acquire(m->app->db, 1000);
            if (c != NULL) {
                check_nodes(m, c);
                db_release(m->app->db, c);
            }
        }
        nanosleep(&ts, NULL);
    }
    return NULL;
}

enum rc monitor_start(struct srv_app *app, struct monitor **out)
{
    struct monitor *m = calloc(1, sizeof(*m));

    if (m == NULL)
        return RC_ENOMEM;
    m->app = app;
    m->started_ms = mono_ms();
    if (pthread_create(&m->thread, NULL, monitor_main, m) != 0) {
        free(m);
        return RC_EINTERNAL;
    }
    *out = m;
    return RC_OK;
}

void monitor_stop(struct monitor *m)
{
    if (m == NULL)
        return;
    pthread_join(m->thread, NULL);
    free(m);
}
