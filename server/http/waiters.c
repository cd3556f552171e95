/*
 * waiters.c - see waiters.h. A singly linked list is enough: a server has at
 * most one waiting request per node, i.e. a few hundred entries.
 */
#include "waiters.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "app.h"
#include "http.h"
#include "log.h"
#include "metrics.h"

struct waiter_entry {
    struct srv_req *req; /* borrowed; valid while suspended */
    int64_t key;
    struct waiter_entry *next;
};

#define WAITERS_RECENT 1024

struct waiters {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct waiter_entry *head;
    /* When each key was last notified (hashed; collisions only cause an
     * early, harmless resume). recent_all_us: the last notify of every key. */
    int64_t recent_key[WAITERS_RECENT];
    int64_t recent_us[WAITERS_RECENT];
    int64_t recent_all_us;
    int stop;
    pthread_t thread;
    int started;
};

static size_t recent_slot(int64_t key)
{
    uint64_t k = (uint64_t)key * 0x9E3779B97F4A7C15ULL;
    return (size_t)(k >> 54) % WAITERS_RECENT;
}

/* Detach entries matching key (0 = all) or expired ones; resume them unlocked. */
static void resume_matching(struct waiters *w, int64_t key, int expired_only)
{
    struct waiter_entry *ready = NULL, **pp;
    int64_t now = srv_now_ms();

    pthread_mutex_lock(&w->lock);
    if (!expired_only) {
        int64_t us = srv_mono_us();
        if (key == 0) {
            w->recent_all_us = us;
        } else {
            w->recent_key[recent_slot(key)] = key;
            w->recent_us[recent_slot(key)] = us;
        }
    }
    pp = &w->head;
    while (*pp != NULL) {
        struct waiter_entry *e = *pp;
        int hit = expired_only ? e->req->poll_deadline_ms <= now : (key == 0 || e->key == key);
        if (hit) {
            *pp = e->next;
            e->next = ready;
            ready = e;
        } else {
            pp = &e->next;
        }
    }
    pthread_mutex_unlock(&w->lock);
    while (ready != NULL) {
        struct waiter_entry *next = ready->next;
        metrics_long_polls_parked_add(-1);
        if (expired_only)
            metrics_long_poll_expired();
        http_resume(ready->req);
        free(ready);
        ready = next;
    }
}

static void *timer_main(void *arg)
{
    struct waiters *w = arg;

    pthread_mutex_lock(&w->lock);
    while (!w->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&w->cond, &w->lock, &ts);
        pthread_mutex_unlock(&w->lock);
        resume_matching(w, 0, 1);
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

struct waiters *waiters_new(struct srv_app *app)
{
    struct waiters *w = calloc(1, sizeof(*w));

    (void)app;
    if (w == NULL)
        return NULL;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    if (pthread_create(&w->thread, NULL, timer_main, w) != 0) {
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->cond);
        free(w);
        return NULL;
    }
    w->started = 1;
    return w;
}

void waiters_add(struct waiters *w, struct srv_req *req, int64_t key)
{
    struct waiter_entry *e = calloc(1, sizeof(*e));

    if (e == NULL) {
        /* The connection is suspended already and, with no entry in the
         * list, nothing would ever resume it: resume it here, to answer an
         * error. */
        LOG_ERROR("http", "cannot park a long-poll: out of memory", "req_id=%s", req->req_id);
        srv_fail(req, RC_ENOMEM, "", "out of memory");
        req->resume_rc = RC_ENOMEM;
        http_resume(req);
        return;
    }
    e->req = req;
    e->key = key;
    pthread_mutex_lock(&w->lock);
    {
        size_t s = recent_slot(key);
        int missed = w->recent_all_us >= req->poll_checked_us ||
                     (w->recent_key[s] == key && w->recent_us[s] >= req->poll_checked_us);
        if (missed) {
            /* News came after the handler looked: answer now. */
            pthread_mutex_unlock(&w->lock);
            free(e);
            http_resume(req);
            return;
        }
    }
    e->next = w->head;
    w->head = e;
    /* Under the lock, so that a resume that detaches e cannot count it down
     * before this counts it up: the gauge never goes below zero. */
    metrics_long_polls_parked_add(1);
    pthread_mutex_unlock(&w->lock);
}

void waiters_notify(struct waiters *w, int64_t key)
{
    if (w != NULL)
        resume_matching(w, key, 0);
}

void waiters_stop(struct waiters *w)
{
    if (w == NULL || !w->started)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    w->started = 0;
    resume_matching(w, 0, 0);
}

void waiters_free(struct waiters *w)
{
    if (w == NULL)
        return;
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->cond);
    free(w);
}
