/*
 * loop_wait.h - a background loop's sleep that its stop can cut short: a
 * stop flag under a mutex, paired with a condition variable.
 *
 * The mutex guards only the flag and is never held across SQL or anything
 * else that blocks, so it is a leaf in every lock order.
 *
 * Thread-safety: loop_wait_until() on the loop's own thread,
 * loop_wait_stop() on any other; init and cleanup by the owner, while no
 * other thread uses it.
 */
#ifndef TY_SERVER_LOOP_WAIT_H
#define TY_SERVER_LOOP_WAIT_H

#include <pthread.h>
#include <stdint.h>

#include "err.h"

struct loop_wait {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stop; /* guarded by lock */
};

/* Set up w (caller's storage), not stopped. */
void loop_wait_init(struct loop_wait *w);

/* Release what loop_wait_init() set up. */
void loop_wait_cleanup(struct loop_wait *w);

/* Sleep until deadline_ms (srv_now_ms(), monotonic) or a stop; returns 0
 * when stopping, 1 otherwise. A deadline already past returns at once. */
int loop_wait_until(struct loop_wait *w, int64_t deadline_ms);

/* Stop: a sleep in progress returns 0 at once, and so does every later one. */
void loop_wait_stop(struct loop_wait *w);

/*
 * A loop's thread with its wait: loop_thread_start() sets w up and runs
 * fn(arg) on a new thread (*thread); RC_EINTERNAL, w cleaned up again, when
 * the thread cannot start. loop_thread_stop() stops w, joins the thread and
 * cleans w up. The caller's thread; the loop's struct holds both.
 */
enum rc loop_thread_start(struct loop_wait *w, pthread_t *thread, void *(*fn)(void *), void *arg);
void loop_thread_stop(struct loop_wait *w, pthread_t thread);

#endif
