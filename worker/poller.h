/*
 * poller.h - the assignment long-poll and the queue it fills.
 *
 * One poller thread asks GET /api/v1/agent/assignments?wait=30 in a loop,
 * validates each assignment (assign.h) and queues it, a refusal for one
 * that is invalid, and each cancel, for the control thread. After a poll
 * that got no answer the next asks with resend=1: the server may have
 * committed a handout in a response that never arrived (it died after its
 * commit). Attempt ids received before (a ring of the last
 * WRK_POLL_SEEN_MAX) are dropped, since a resend may repeat them.
 *
 * Threads: wrk_poller_start() and wrk_poller_stop() belong to the control
 * thread, which also takes the queue (wrk_poller_pop(), wrk_poller_wait()).
 * The queue is guarded by mu, never held across HTTP or spawn; the seen
 * ring belongs to the poller thread alone. A queued assignment carries its
 * own copy of its JSON, never a reference shared with the poller.
 */
#ifndef TY_WORKER_POLLER_H
#define TY_WORKER_POLLER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include <jansson.h>

#include "assign.h"
#include "err.h"
#include "http.h"

#define WRK_POLL_WAIT_S 30
/* Attempt ids the poller remembers having received, to drop those a resend
 * hands out again. A resend carries only attempts not yet reported started,
 * so the most recent ones are enough. */
#define WRK_POLL_SEEN_MAX 512

/* One queued item: an assignment to launch, a refusal, or a cancel. */
struct wrk_qitem {
    struct wrk_qitem *next;
    struct wrk_assignment *a; /* owned; NULL for a refusal or a cancel */
    char attempt_id[WRK_ID_MAX + 1];
    int is_cancel;
    char reason[256]; /* refusal */
    const char *code; /* refusal: its RSN_* code (static) */
    json_t *networks; /* owned; the assignment's "allowed_networks", or NULL */
};

/* Caller storage (wrk_poller_init() / wrk_poller_cleanup()). */
struct wrk_poller {
    struct wrk_http *http; /* borrowed from wrk_poller_start(): the poller thread's own */
    pthread_t thr;
    int started;
    atomic_int stop;
    atomic_int draining;
    char seen[WRK_POLL_SEEN_MAX][WRK_ID_MAX + 1]; /* poller thread only: a ring of received ids */
    size_t nseen;                                 /* poller thread only: ids ever put in seen */
    pthread_mutex_t mu;
    pthread_cond_t cv;               /* signalled when an item is queued */
    struct wrk_qitem *qhead, *qtail; /* under mu */
};

/* Make p ready (an empty queue, no thread). Cannot fail. */
void wrk_poller_init(struct wrk_poller *p);

/*
 * Start the poller thread on http (borrowed; it must outlive
 * wrk_poller_stop() and be used by no other thread). RC_OK or RC_EINTERNAL.
 */
enum rc wrk_poller_start(struct wrk_poller *p, struct wrk_http *http) TY_WUR;

/* Ask for no more work (shutdown): the thread idles until stopped. */
void wrk_poller_drain(struct wrk_poller *p);

/* Abort the poll in flight and join the thread; a no-op when none was started. */
void wrk_poller_stop(struct wrk_poller *p);

/* Take the oldest queued item (the caller owns it: wrk_qitem_free()), or NULL. */
struct wrk_qitem *wrk_poller_pop(struct wrk_poller *p);

/* Wait up to ms for an item to be queued; returns at once when one is. */
void wrk_poller_wait(struct wrk_poller *p, int ms);

/* Free q with its assignment and networks. NULL is a no-op. */
void wrk_qitem_free(struct wrk_qitem *q);

/* Free what is still queued and the lock. After wrk_poller_stop(). */
void wrk_poller_cleanup(struct wrk_poller *p);

#endif
