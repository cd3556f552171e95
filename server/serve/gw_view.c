/*
 * gw_view.c - the routing view (gw_view.h). The snapshot is the two JSON
 * arrays db_gw_view() returns, turned into flat arrays once per refresh so
 * that a pick is a scan of a few entries under a reader lock. Round-robin
 * counters live outside the snapshot (per deployment id, hashed into a
 * small table of atomics) so that a refresh does not restart the rotation.
 */
#include "gw_view.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "clock.h"
#include "db.h"
#include "db_gateway.h"
#include "log.h"
#include "loop_wait.h"

#define GW_VIEW_RR_SLOTS 256

struct view_dep {
    int64_t id;
    char name[64];
    int active;
    int64_t primary_version_id;
    int64_t canary_version_id;
    int canary_weight;
    int keep_texts_days;
    char primary_manifest[65];
    size_t first, count; /* its replicas in the snapshot's replica array */
};

struct view_replica {
    int64_t job_id;
    int64_t version_id;
    char manifest[65];
    char url_base[96];
    char token[160];
};

struct view_snap {
    struct view_dep *deps;
    size_t ndeps;
    struct view_replica *reps;
    size_t nreps;
};

struct gw_view {
    struct srv_app *app;
    pthread_rwlock_t lock; /* guards snap */
    struct view_snap snap;
    atomic_uint rr[GW_VIEW_RR_SLOTS];
    struct loop_wait wait;
    pthread_t thread;
    int started;
};

static int64_t jid(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    int64_t v = 0;

    if (s != NULL && db_parse_i64(s, &v) == RC_OK)
        return v;
    return json_is_integer(json_object_get(o, k)) ? json_integer_value(json_object_get(o, k)) : 0;
}

static const char *jstr(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static void snap_free(struct view_snap *s)
{
    free(s->deps);
    free(s->reps);
    memset(s, 0, sizeof(*s));
}

/* The two arrays (ordered by deployment id) into a snapshot. */
static enum rc snap_build(const json_t *deps, const json_t *reps, struct view_snap *out)
{
    size_t i, r = 0;

    memset(out, 0, sizeof(*out));
    out->deps = calloc(json_array_size(deps) + 1, sizeof(*out->deps));
    out->reps = calloc(json_array_size(reps) + 1, sizeof(*out->reps));
    if (out->deps == NULL || out->reps == NULL) {
        snap_free(out);
        return RC_ENOMEM;
    }
    for (i = 0; i < json_array_size(reps); i++) {
        const json_t *o = json_array_get(reps, i);
        struct view_replica *x = &out->reps[i];
        x->job_id = jid(o, "job_id");
        x->version_id = jid(o, "version_id");
        snprintf(x->manifest, sizeof(x->manifest), "%s", jstr(o, "manifest"));
        snprintf(x->token, sizeof(x->token), "%s", jstr(o, "token"));
        snprintf(x->url_base, sizeof(x->url_base), "http://%s:%lld", jstr(o, "host"),
                 (long long)jid(o, "port"));
    }
    out->nreps = json_array_size(reps);
    for (i = 0; i < json_array_size(deps); i++) {
        const json_t *o = json_array_get(deps, i);
        struct view_dep *d = &out->deps[i];
        d->id = jid(o, "id");
        snprintf(d->name, sizeof(d->name), "%s", jstr(o, "name"));
        d->active = strcmp(jstr(o, "state"), "active") == 0;
        d->primary_version_id = jid(o, "primary_version_id");
        d->canary_version_id = jid(o, "canary_version_id");
        d->canary_weight = (int)jid(o, "canary_weight");
        d->keep_texts_days = (int)jid(o, "keep_texts_days");
        snprintf(d->primary_manifest, sizeof(d->primary_manifest), "%s",
                 jstr(o, "primary_manifest"));
        /* Replicas come ordered by deployment id, as the deployments do. */
        while (r < out->nreps && jid(json_array_get(reps, r), "deployment_id") < d->id)
            r++;
        d->first = r;
        while (r < out->nreps && jid(json_array_get(reps, r), "deployment_id") == d->id)
            r++;
        d->count = r - d->first;
    }
    out->ndeps = json_array_size(deps);
    return RC_OK;
}

static void refresh(struct gw_view *v)
{
    PGconn *c = db_acquire(v->app->db, 1000);
    json_t *deps = NULL, *reps = NULL;
    struct view_snap fresh, old;
    enum rc rc;

    if (c == NULL)
        return; /* keep routing by the last view while the database is away */
    rc = db_gw_view(c, &deps, &reps, "gw-view");
    db_release(v->app->db, c);
    if (rc == RC_OK)
        rc = snap_build(deps, reps, &fresh);
    json_decref(deps);
    json_decref(reps);
    if (rc != RC_OK) {
        LOG_WARN("gateway", "cannot read the routing view", "rc=%s", rc_str(rc));
        return;
    }
    pthread_rwlock_wrlock(&v->lock);
    old = v->snap;
    v->snap = fresh;
    pthread_rwlock_unlock(&v->lock);
    snap_free(&old);
}

static void *view_main(void *arg)
{
    struct gw_view *v = arg;

    while (loop_wait_until(&v->wait, srv_now_ms() + GW_VIEW_REFRESH_MS))
        refresh(v);
    return NULL;
}

struct gw_view *gw_view_new(struct srv_app *app)
{
    struct gw_view *v = calloc(1, sizeof(*v));

    if (v == NULL)
        return NULL;
    v->app = app;
    pthread_rwlock_init(&v->lock, NULL);
    loop_wait_init(&v->wait);
    refresh(v);
    if (pthread_create(&v->thread, NULL, view_main, v) != 0) {
        gw_view_free(v);
        return NULL;
    }
    v->started = 1;
    return v;
}

static const struct view_dep *find_dep(const struct view_snap *s, const char *name)
{
    for (size_t i = 0; i < s->ndeps; i++)
        if (strcmp(s->deps[i].name, name) == 0)
            return &s->deps[i];
    return NULL;
}

int gw_view_has(struct gw_view *v, const char *name)
{
    int has;

    pthread_rwlock_rdlock(&v->lock);
    has = find_dep(&v->snap, name) != NULL;
    pthread_rwlock_unlock(&v->lock);
    return has;
}

/* Replica k (0..n) of d's replicas in group canary (1) or primary (0). */
static const struct view_replica *nth_in_group(const struct view_snap *s, const struct view_dep *d,
                                               int canary, int64_t avoid_job, size_t k, size_t *n)
{
    const struct view_replica *hit = NULL;

    *n = 0;
    for (size_t i = d->first; i < d->first + d->count; i++) {
        const struct view_replica *x = &s->reps[i];
        int is_canary = d->canary_version_id != 0 && x->version_id == d->canary_version_id;
        if (is_canary != canary || x->job_id == avoid_job)
            continue;
        if (*n == k)
            hit = x;
        (*n)++;
    }
    return hit;
}

enum rc gw_view_pick(struct gw_view *v, const char *name, int64_t avoid_job, struct gw_target *out)
{
    const struct view_dep *d;
    const struct view_replica *x = NULL;
    enum rc rc = RC_EUNAVAIL;
    int canary;
    size_t n = 0;
    unsigned turn;

    memset(out, 0, sizeof(*out));
    pthread_rwlock_rdlock(&v->lock);
    d = find_dep(&v->snap, name);
    if (d == NULL) {
        pthread_rwlock_unlock(&v->lock);
        return RC_ENOTFOUND;
    }
    out->deployment_id = d->id;
    out->keep_texts_days = d->keep_texts_days;
    canary = d->canary_version_id != 0 && d->canary_weight > 0 &&
             (int)(arc4random_uniform(100)) < d->canary_weight;
    out->version_id = canary ? d->canary_version_id : d->primary_version_id;
    snprintf(out->manifest, sizeof(out->manifest), "%s", d->primary_manifest);
    turn = atomic_fetch_add(&v->rr[(uint64_t)d->id % GW_VIEW_RR_SLOTS], 1);
    if (d->active) {
        (void)nth_in_group(&v->snap, d, canary, avoid_job, (size_t)-1, &n);
        if (n == 0 && canary) {
            /* The canary has no ready replica: the primary answers. */
            canary = 0;
            (void)nth_in_group(&v->snap, d, 0, avoid_job, (size_t)-1, &n);
        }
        if (n > 0)
            x = nth_in_group(&v->snap, d, canary, avoid_job, turn % n, &n);
    }
    if (x != NULL) {
        out->version_id = x->version_id;
        out->replica_job_id = x->job_id;
        memcpy(out->manifest, x->manifest, sizeof(out->manifest));
        memcpy(out->url_base, x->url_base, sizeof(out->url_base));
        memcpy(out->token, x->token, sizeof(out->token));
        rc = RC_OK;
    }
    pthread_rwlock_unlock(&v->lock);
    return rc;
}

void gw_view_free(struct gw_view *v)
{
    if (v == NULL)
        return;
    loop_wait_stop(&v->wait);
    if (v->started)
        pthread_join(v->thread, NULL);
    loop_wait_cleanup(&v->wait);
    pthread_rwlock_destroy(&v->lock);
    snap_free(&v->snap);
    free(v);
}
