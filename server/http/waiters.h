/*
 * waiters.h - long-poll requests parked on a key (a node id) until something
 * for that key happens or their deadline passes.
 *
 * A handler that has nothing to answer sets req->suspended, req->resume_fn and
 * req->poll_deadline_ms, then calls waiters_add(); http.c suspends the
 * connection (no thread is held).
 *
 * No lost wake-ups: a handler stamps req->poll_checked_us just before it
 * looks for news. A notification for its key at or after that stamp, which
 * may land between the look and the park, makes waiters_add() resume the
 * request at once instead of parking it. waiters_notify(key) or the deadline resumes
 * it, and libmicrohttpd calls resume_fn on a pool thread to answer.
 *
 * Threads: one timer thread resumes expired waiters. All functions are
 * thread-safe. Lock order: the waiters lock is a leaf; it is never held while
 * calling into libmicrohttpd except MHD_resume_connection, which only signals.
 */
#ifndef TY_SERVER_WAITERS_H
#define TY_SERVER_WAITERS_H

#include <stdint.h>

#include "srv.h"

struct waiters;
struct srv_app;

/* Start the timer thread. NULL on failure. */
struct waiters *waiters_new(struct srv_app *app);

/*
 * Park req (its connection already suspended) under key. When it cannot be
 * parked (out of memory), req->resume_rc becomes RC_ENOMEM (req->err filled)
 * and req is resumed at once: the resume answers that error instead of
 * waiting. req is borrowed until it is resumed.
 */
void waiters_add(struct waiters *w, struct srv_req *req, int64_t key);

/* Resume every request parked under key (key 0: every request). */
void waiters_notify(struct waiters *w, int64_t key);

/* Resume everything and stop the timer thread (before http_stop). */
void waiters_stop(struct waiters *w);

/* Free; waiters_stop() must have run. NULL is a no-op. */
void waiters_free(struct waiters *w);

#endif
