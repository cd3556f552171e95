/*
 * loop_wait.c - see loop_wait.h.
 */
#include "loop_wait.h"

#include <time.h>

#include "clock.h"

void loop_wait_init(struct loop_wait *w)
{
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    w->stop = 0;
}

void loop_wait_cleanup(struct loop_wait *w)
{
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->cond);
}

int loop_wait_until(struct loop_wait *w, int64_t deadline_ms)
{
    int stop;

    pthread_mutex_lock(&w->lock);
    while (!w->stop) {
        int64_t left = deadline_ms - srv_now_ms();
        struct timespec ts;
        if (left <= 0)
            break;
        if (left > 1000)
            left = 1000; /* re-read the monotonic clock now and then */
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += left / 1000;
        ts.tv_nsec += (long)(left % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&w->cond, &w->lock, &ts);
    }
    stop = w->stop;
    pthread_mutex_unlock(&w->lock);
    return !stop;
}

void loop_wait_stop(struct loop_wait *w)
{
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

enum rc loop_thread_start(struct loop_wait *w, pthread_t *thread, void *(*fn)(void *), void *arg)
{
    loop_wait_init(w);
    if (pthread_create(thread, NULL, fn, arg) != 0) {
        loop_wait_cleanup(w);
        return RC_EINTERNAL;
    }
    return RC_OK;
}

void loop_thread_stop(struct loop_wait *w, pthread_t thread)
{
    loop_wait_stop(w);
    pthread_join(thread, NULL);
    loop_wait_cleanup(w);
}
