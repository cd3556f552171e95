/*
 * notify.h - wake-ups across server replicas over PostgreSQL LISTEN/NOTIFY.
 *
 * Long-polls (waiters.h) and the scheduler's wake-up (app_wake_scheduler)
 * are local to one process. With several replicas on one database, a worker
 * parked on replica B must still learn at once that the leader A placed work
 * on its node, a log follower on B that A stored output of its job, and the
 * leader that a job was submitted on B. Every change that wakes something
 * locally therefore also sends one NOTIFY on the channel NOTIFY_CHANNEL, and
 * each replica's listener thread replays it locally.
 *
 * Payload (text, at most NOTIFY_PAYLOAD_MAX bytes, PostgreSQL allows 8000):
 *
 *     <sender>:<item>[,<item>...]
 *
 * sender is the random replica id of the sending process (app->replica_id,
 * 1 to NOTIFY_SENDER_MAX - 1 of [A-Za-z0-9_-]); a listener skips its own
 * process's notifications, which were already applied locally (applying them
 * again is harmless but would run a second scheduler pass per submit). An
 * item is "s" (wake the scheduler) or a waiters key in decimal: a node id,
 * minus a job id (its log followers), or 0 (every waiter). Too many keys for
 * one payload collapse to "0".
 *
 * NOTIFY is transactional: sent inside a transaction it is delivered when
 * that transaction commits and never if it rolls back. Delivery is best
 * effort across connection loss; a listener that reconnects wakes every
 * local waiter and the scheduler, and long-poll deadlines and periodic
 * scheduler passes remain the backstop.
 *
 * Threads: notify_send runs on the caller's thread and connection. The
 * listener is one thread with its own connection (not from the pool, which
 * would lose LISTEN on reset and hold a pool slot forever).
 */
#ifndef TY_SERVER_NOTIFY_H
#define TY_SERVER_NOTIFY_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define NOTIFY_CHANNEL "trainyard_wake"
#define NOTIFY_PAYLOAD_MAX 7900 /* bytes with the NUL; PostgreSQL's limit is 8000 */
#define NOTIFY_SENDER_MAX 16    /* bytes with the NUL */
#define NOTIFY_MAX_KEYS 4096    /* keys one parsed payload holds; more mean "0" */

struct srv_app;
struct notify_listener;

/* One parsed payload (see the format above). */
struct notify_msg {
    char sender[NOTIFY_SENDER_MAX];
    int wake_scheduler;            /* "s" was present */
    size_t nkeys;                  /* entries used in keys */
    int64_t keys[NOTIFY_MAX_KEYS]; /* waiters keys; 0 means every waiter */
};

/*
 * Write the payload for keys[0..n) (borrowed; duplicates allowed) and the
 * scheduler flag into buf (size bytes). Keys that would not fit in
 * NOTIFY_PAYLOAD_MAX (or size, if smaller) are replaced by the single key 0.
 * RC_EINVAL if sender is not a valid sender or size cannot hold the
 * shortest payload; buf is then "". Pure; thread-safe.
 */
enum rc notify_format(const char *sender, const int64_t *keys, size_t n, int wake_scheduler,
                      char *buf, size_t size) TY_WUR;

/*
 * Parse payload (borrowed, from the database: untrusted) into *out. More
 * than NOTIFY_MAX_KEYS keys become the single key 0. RC_EINVAL, with *out
 * zeroed, when the payload does not follow the format (no sender, empty or
 * unknown item, a number out of the int64 range, over NOTIFY_PAYLOAD_MAX
 * bytes). Pure; thread-safe.
 */
enum rc notify_parse(const char *payload, struct notify_msg *out) TY_WUR;

/*
 * Send one NOTIFY with keys[0..n) (borrowed) and, when wake_scheduler is
 * set, "s", tagged with app->replica_id, on c (borrowed; the caller's
 * thread owns it). Inside an open transaction it is delivered at commit.
 * Does nothing when n is 0 and wake_scheduler is 0. Returns RC_OK or the
 * rc of the failed statement (which aborts the caller's transaction, as
 * any failed statement does). req_id: for the log (borrowed).
 */
enum rc notify_send(struct srv_app *app, PGconn *c, const int64_t *keys, size_t n,
                    int wake_scheduler, const char *req_id) TY_WUR;

/*
 * notify_send() for a job: the node ids in nodes (borrowed; an array of
 * {"node_id":"12"} as db_job_nodes() returns), the job's log followers
 * (-job_id) and, when wake_scheduler is set, the scheduler. Same contract
 * as notify_send().
 */
enum rc notify_send_job(struct srv_app *app, PGconn *c, int64_t job_id, const json_t *nodes,
                        int wake_scheduler, const char *req_id) TY_WUR;

/*
 * Start the listener thread: it connects to app->cfg->database_url on its
 * own connection, LISTENs on NOTIFY_CHANNEL and replays notifications of
 * other replicas with waiters_notify() and app_wake_scheduler(); it
 * reconnects with backoff when the connection drops. It stops once
 * app_stop() has been called (within about 200 ms). *out is owned by the
 * caller: notify_listener_stop() frees it. RC_ENOMEM / RC_EINTERNAL when the
 * thread cannot be started (a database that is down is not an error: the
 * thread keeps trying). Main thread only.
 */
enum rc notify_listener_start(struct srv_app *app, struct notify_listener **out) TY_WUR;

/*
 * Join the thread (call app_stop() first) and free it; NULL is a
 * no-op. Call before waiters_stop(). Main thread only.
 */
void notify_listener_stop(struct notify_listener *l);

#endif
