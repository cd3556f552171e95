/*
 * gw_records.c - the record writer (gw_records.h). The queue is a JSON
 * array swapped out whole by the writer, so a push is an append under the
 * lock and the write happens with no lock held.
 */
#include "gw_records.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "app.h"
#include "db.h"
#include "db_gateway.h"
#include "log.h"

struct gw_records {
    struct srv_app *app;
    pthread_mutex_t lock; /* guards queue and stop */
    pthread_cond_t cond;
    json_t *queue; /* array of rows waiting */
    int stop;
    atomic_llong dropped;
    pthread_t thread;
    int started;
};

/* Write batch; on failure put it back in front of what came since. */
static void write_batch(struct gw_records *r, json_t *batch)
{
    PGconn *c = db_acquire(r->app->db, 1000);
    enum rc rc = RC_EUNAVAIL;

    if (c != NULL) {
        rc = db_gw_records_write(c, batch, "gw-records");
        db_release(r->app->db, c);
    }
    if (rc == RC_OK) {
        json_decref(batch);
        return;
    }
    LOG_WARN("gateway", "cannot write request records; will retry", "rc=%s count=%zu", rc_str(rc),
             json_array_size(batch));
    pthread_mutex_lock(&r->lock);
    if (json_array_size(batch) + json_array_size(r->queue) <= GW_RECORDS_MAX_QUEUED &&
        json_array_extend(batch, r->queue) == 0) {
        json_decref(r->queue);
        r->queue = batch;
        batch = NULL;
    }
    pthread_mutex_unlock(&r->lock);
    if (batch != NULL) {
        atomic_fetch_add(&r->dropped, (long long)json_array_size(batch));
        LOG_ERROR("gateway", "request records dropped: queue full", "count=%zu",
                  json_array_size(batch));
        json_decref(batch);
    }
}

static void *writer_main(void *arg)
{
    struct gw_records *r = arg;
    int stop = 0;

    while (!stop) {
        json_t *batch = NULL;
        struct timespec ts;

        pthread_mutex_lock(&r->lock);
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += GW_RECORDS_FLUSH_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (!r->stop && json_array_size(r->queue) < GW_RECORDS_BATCH)
            pthread_cond_timedwait(&r->cond, &r->lock, &ts);
        stop = r->stop;
        if (json_array_size(r->queue) > 0) {
            batch = r->queue;
            r->queue = json_array();
            if (r->queue == NULL) { /* keep the rows; try again next turn */
                r->queue = batch;
                batch = NULL;
            }
        }
        pthread_mutex_unlock(&r->lock);
        if (batch != NULL)
            write_batch(r, batch);
    }
    return NULL;
}

struct gw_records *gw_records_new(struct srv_app *app)
{
    struct gw_records *r = calloc(1, sizeof(*r));

    if (r == NULL)
        return NULL;
    r->app = app;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cond, NULL);
    r->queue = json_array();
    if (r->queue == NULL || pthread_create(&r->thread, NULL, writer_main, r) != 0) {
        gw_records_free(r);
        return NULL;
    }
    r->started = 1;
    return r;
}

void gw_records_push(struct gw_records *r, json_t *row)
{
    int full;

    if (row == NULL)
        return;
    pthread_mutex_lock(&r->lock);
    if (json_array_size(r->queue) >= GW_RECORDS_MAX_QUEUED) {
        full = 1;
        json_decref(row);
    } else {
        full = json_array_append_new(r->queue, row) != 0; /* frees row when it fails */
    }
    if (!full && json_array_size(r->queue) >= GW_RECORDS_BATCH)
        pthread_cond_signal(&r->cond);
    pthread_mutex_unlock(&r->lock);
    if (full) {
        atomic_fetch_add(&r->dropped, 1);
        LOG_ERROR("gateway", "a request record was dropped: queue full", "");
    }
}

int64_t gw_records_dropped(struct gw_records *r)
{
    return r ? (int64_t)atomic_load(&r->dropped) : 0;
}

void gw_records_free(struct gw_records *r)
{
    if (r == NULL)
        return;
    if (r->started) {
        pthread_mutex_lock(&r->lock);
        r->stop = 1;
        pthread_cond_signal(&r->cond);
        pthread_mutex_unlock(&r->lock);
        pthread_join(r->thread, NULL);
    }
    /* The last turn wrote what was queued, or could not (logged): either
     * way nothing more can be done for those rows. */
    json_decref(r->queue);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->cond);
    free(r);
}
