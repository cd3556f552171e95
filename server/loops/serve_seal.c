/*
 * serve_seal.c - the sealing thread (see serve_seal.h).
 *
 * Threading: one thread owns the struct; only `wait` (loop_wait.h) is
 * shared, with serve_seal_stop(), which cuts a sleep short.
 */
#include "serve_seal.h"

#include <pthread.h>
#include <stdlib.h>

#include "db.h"
#include "db_serve_seal.h"
#include "log.h"
#include "loop_wait.h"
#include "metrics.h"
#include "srv.h"

struct serve_seal {
    struct srv_app *app;
    pthread_t thread;
    struct loop_wait wait; /* its sleeps, cut short by the stop */
};

/* One turn: batches until none comes out full. */
static void turn(struct serve_seal *t, PGconn *c)
{
    for (int b = 0; b < SERVE_SEAL_MAX_BATCHES && !app_stopping(t->app); b++) {
        struct db_seal_result r;
        enum rc rc = db_serve_seal(c, SERVE_SEAL_BATCH, &r);
        if (rc != RC_OK) {
            LOG_WARN("seal", "sealing request records failed", "rc=%s", rc_str(rc));
            return;
        }
        if (r.count == 0)
            return; /* nothing waits, or another replica seals */
        metrics_serve_sealed(r.count);
        LOG_DEBUG("seal", "request records sealed",
                  "batch=%lld count=%d first_id=%lld last_id=%lld event_id=%lld root=%s",
                  (long long)r.batch_id, r.count, (long long)r.first_id, (long long)r.last_id,
                  (long long)r.event_id, r.root);
        if (r.count < SERVE_SEAL_BATCH)
            return;
    }
}

static void *seal_main(void *arg)
{
    struct serve_seal *t = arg;
    struct srv_app *app = t->app;
    int64_t next = srv_now_ms();

    for (;;) {
        PGconn *c;
        if (!loop_wait_until(&t->wait, next))
            break;
        next = srv_now_ms() + SERVE_SEAL_INTERVAL_MS;
        /* A connection only for the turn: between turns this thread holds
         * none, so a small pool keeps its connections for requests. */
        if ((c = db_acquire(app->db, 1000)) == NULL)
            continue;
        turn(t, c);
        db_release(app->db, c);
    }
    return NULL;
}

enum rc serve_seal_start(struct srv_app *app, struct serve_seal **out)
{
    struct serve_seal *t;

    *out = NULL;
    if ((t = calloc(1, sizeof(*t))) == NULL)
        return RC_ENOMEM;
    t->app = app;
    if (loop_thread_start(&t->wait, &t->thread, seal_main, t) != RC_OK) {
        free(t);
        return RC_EINTERNAL;
    }
    *out = t;
    return RC_OK;
}

void serve_seal_stop(struct serve_seal *t)
{
    if (t == NULL)
        return;
    loop_thread_stop(&t->wait, t->thread);
    free(t);
}
