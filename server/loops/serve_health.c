/*
 * serve_health.c - the replicas' health checks (see serve_health.h).
 *
 * Threading: one thread owns the struct and its libcurl handle; only `wait`
 * (loop_wait.h) is shared, with serve_health_stop(), which cuts a sleep
 * short. The failure counts live here only: a replica of the server that
 * takes the lock over starts counting afresh, which at worst keeps a
 * failing replica ready for SERVE_HEALTH_FAILS more probes.
 */
#include "serve_health.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "db.h"
#include "db_deployments.h"
#include "httpc.h"
#include "jx.h"
#include "log.h"
#include "loop_wait.h"
#include "srv.h"

/* The most replicas whose failures are counted; more are probed alike, and
 * those past it turn not ready at their first failure. */
#define MAX_TRACKED 1024

struct fails {
    int64_t job_id;
    int attempt;
    int count;
};

struct serve_health {
    struct srv_app *app;
    pthread_t thread;
    struct loop_wait wait; /* its sleeps, cut short by the stop */
    struct httpc *http;    /* owned; this thread's only */
    struct fails fails[MAX_TRACKED];
    size_t nfails;
};

static int lead(PGconn *c, int take)
{
    const char *p[] = {SERVE_HEALTH_LEADER_KEY};
    PGresult *r = db_exec(c,
                          take ? "SELECT pg_try_advisory_lock($1::bigint)"
                               : "SELECT pg_advisory_unlock($1::bigint)",
                          1, p);
    int ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQgetvalue(r, 0, 0)[0] == 't';

    PQclear(r);
    return ok;
}

/* The failure count of (job, attempt), made 0 on a new attempt; NULL when
 * the table is full. */
static struct fails *fails_of(struct serve_health *h, int64_t job_id, int attempt)
{
    for (size_t i = 0; i < h->nfails; i++)
        if (h->fails[i].job_id == job_id) {
            if (h->fails[i].attempt != attempt)
                h->fails[i] = (struct fails){job_id, attempt, 0};
            return &h->fails[i];
        }
    if (h->nfails == MAX_TRACKED)
        return NULL;
    h->fails[h->nfails] = (struct fails){job_id, attempt, 0};
    return &h->fails[h->nfails++];
}

/* Keep only the counts of replicas still probed (targets, borrowed). */
static void fails_prune(struct serve_health *h, const json_t *targets)
{
    size_t k = 0;

    for (size_t i = 0; i < h->nfails; i++) {
        const json_t *t;
        size_t j;
        int keep = 0;
        json_array_foreach(targets, j, t)
        {
            int64_t id = 0;
            if (db_parse_i64(json_string_value(json_object_get(t, "job_id")), &id) == RC_OK &&
                id == h->fails[i].job_id)
                keep = 1;
        }
        if (keep)
            h->fails[k++] = h->fails[i];
    }
    h->nfails = k;
}

/* 1 when the replica at host:port answered /health with 200. */
static int probe(struct serve_health *h, const char *host, int port)
{
    char url[320];
    struct httpc_req req = {0};
    struct httpc_resp resp;
    int ok;

    if (port <= 0 || host[0] == '\0')
        return 0;
    /* An IPv6 address goes in brackets. */
    snprintf(url, sizeof(url), strchr(host, ':') ? "http://[%s]:%d/health" : "http://%s:%d/health",
             host, port);
    req.url = url;
    req.connect_timeout_ms = SERVE_HEALTH_CONNECT_MS;
    req.timeout_ms = SERVE_HEALTH_TIMEOUT_MS;
    req.max_body = 4096;
    req.discard_body = 1;
    ok = httpc_perform(h->http, &req, &resp) == RC_OK && resp.status == 200;
    httpc_resp_cleanup(&resp);
    return ok;
}

/* The targets to probe (new array, or NULL this turn), with what is stale
 * cleared, under the leader's lock. */
static json_t *read_targets(struct serve_health *h)
{
    PGconn *c = db_acquire(h->app->db, 1000);
    json_t *targets = NULL;
    int n = 0;

    if (c == NULL)
        return NULL;
    if (lead(c, 1)) {
        if (db_serve_unready_stale(c, &n, "serve") != RC_OK ||
            db_serve_probe_targets(c, &targets, "serve") != RC_OK) {
            json_decref(targets);
            targets = NULL;
        }
        (void)lead(c, 0);
    }
    db_release(h->app->db, c);
    return targets;
}

/* Record the outcomes (targets[i]."ok" set by the probes) under the lock. */
static void record(struct serve_health *h, json_t *targets)
{
    PGconn *c = db_acquire(h->app->db, 1000);
    json_t *t;
    size_t i;

    if (c == NULL)
        return;
    if (lead(c, 1)) {
        json_array_foreach(targets, i, t)
        {
            int64_t id = 0;
            int attempt = (int)json_integer_value(json_object_get(t, "attempt")), changed = 0;
            int ready = json_is_true(json_object_get(t, "ok"));
            struct fails *f;
            if (db_parse_i64(json_string_value(json_object_get(t, "job_id")), &id) != RC_OK)
                continue;
            f = fails_of(h, id, attempt);
            if (ready && f != NULL)
                f->count = 0;
            /* A ready replica stays ready through a few failed probes. */
            if (!ready && f != NULL && ++f->count < SERVE_HEALTH_FAILS &&
                json_is_true(json_object_get(t, "ready")) &&
                json_integer_value(json_object_get(t, "replica_attempt")) == attempt)
                continue;
            if (db_serve_set_ready(c, id, attempt, ready, &changed, "serve") != RC_OK)
                break;
            if (changed)
                LOG_INFO("serve", ready ? "replica ready" : "replica not ready",
                         "job_id=%lld attempt=%d", (long long)id, attempt);
        }
        (void)lead(c, 0);
    }
    db_release(h->app->db, c);
}

static void *serve_health_main(void *arg)
{
    struct serve_health *h = arg;
    int64_t next = srv_now_ms();

    for (;;) {
        json_t *targets, *t;
        size_t i;
        if (!loop_wait_until(&h->wait, next))
            break;
        next = srv_now_ms() + SERVE_HEALTH_INTERVAL_MS;
        if ((targets = read_targets(h)) == NULL)
            continue;
        fails_prune(h, targets);
        json_array_foreach(targets, i, t)
        {
            if (app_stopping(h->app))
                break;
            json_object_set_new(
                t, "ok",
                json_boolean(probe(h, json_string_value(json_object_get(t, "host")),
                                   (int)json_integer_value(json_object_get(t, "port")))));
        }
        if (!app_stopping(h->app))
            record(h, targets);
        json_decref(targets);
    }
    return NULL;
}

enum rc serve_health_start(struct srv_app *app, struct serve_health **out)
{
    struct serve_health *h;

    *out = NULL;
    if ((h = calloc(1, sizeof(*h))) == NULL)
        return RC_ENOMEM;
    h->app = app;
    if (httpc_new(&h->http) != RC_OK) {
        free(h);
        return RC_ENOMEM;
    }
    loop_wait_init(&h->wait);
    if (pthread_create(&h->thread, NULL, serve_health_main, h) != 0) {
        loop_wait_cleanup(&h->wait);
        httpc_free(h->http);
        free(h);
        return RC_EINTERNAL;
    }
    *out = h;
    return RC_OK;
}

void serve_health_stop(struct serve_health *h)
{
    if (h == NULL)
        return;
    loop_wait_stop(&h->wait);
    httpc_abort(h->http);
    pthread_join(h->thread, NULL);
    loop_wait_cleanup(&h->wait);
    httpc_free(h->http);
    free(h);
}
