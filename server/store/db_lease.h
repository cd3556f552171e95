/*
 * db_lease.h - the scheduling leader's lease (table leader_lease,
 * sql/019_leader_lease.sql; docs/operations.md "High availability").
 *
 * The leader holds a session advisory lock (loops/sched_loop.c), and with
 * it a lease row it renews: its epoch, its session's backend pid, and an
 * expiry by the database's clock. A process that hangs with its host alive
 * keeps its session, and so the lock, for ever; its lease, though, is no
 * longer renewed. A follower that finds the lease expired ends the session
 * recorded with it (pg_terminate_backend, which the server's own role may do
 * to its own sessions), which frees the lock; it then takes the lock and the
 * lease with the next epoch.
 *
 * Fencing: every leader-only write transaction calls db_lease_fence() with
 * the epoch it was decided under, first. It share-locks the lease row only
 * if the epoch is still current and held by this very session, so a leader
 * that wakes up after being stopped, even if its session had somehow
 * survived, cannot apply what it decided under a lost lease; and a takeover
 * (an UPDATE of that row) waits for a fenced transaction in flight to end.
 *
 * Lock order (db.h): the lease row comes first, before node and job rows. The
 * lease's own statements (acquire, renew, read) each run alone in their own
 * transaction and lock nothing else.
 *
 * Thread-safety: any thread with its own connection; in practice the
 * scheduler thread's, whose session holds the advisory lock.
 */
#ifndef TY_SERVER_DB_LEASE_H
#define TY_SERVER_DB_LEASE_H

#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"

/* The lease's row (leader_lease.name) of the scheduling leader. */
#define DB_LEASE_SCHEDULER "scheduler"

/* A lease as a follower reads it. */
struct db_lease_view {
    int64_t epoch;       /* the current epoch; 0 = never taken */
    char holder[128];    /* host:pid of the server that took it */
    int backend_pid;     /* the holder's session */
    int expired;         /* 1: past expires_at by the database's clock */
    int64_t overdue_ms;  /* how long past expires_at (0 when not expired) */
    int holder_has_lock; /* 1: that session still holds advisory lock lock_key */
};

/*
 * Take the lease named name for this session (which must hold the advisory
 * lock that guards it): the next epoch, holder (borrowed, host:pid), this
 * session's backend pid, an expiry lease_ms from now by the database's
 * clock. *epoch receives the new epoch. RC_OK, RC_ENOTFOUND (no such lease
 * row: the schema lacks migration 019), RC_EUNAVAIL (the session is gone),
 * or another rc of db_result_rc().
 */
enum rc db_lease_acquire(PGconn *c, const char *name, const char *holder, int lease_ms,
                         int64_t *epoch /* out */) TY_WUR;

/*
 * Renew the lease for lease_ms from now, only if epoch is still current and
 * held by this session. *held receives 1 when renewed, 0 when the lease was
 * taken by another (or this session is not its holder). RC_OK, or an rc of
 * db_result_rc() (RC_EUNAVAIL: the session is gone).
 */
enum rc db_lease_renew(PGconn *c, const char *name, int64_t epoch, int lease_ms,
                       int *held /* out */) TY_WUR;

/*
 * Read the lease into *out, and whether its holder's session still holds
 * the advisory lock lock_key (a bigint) in this database. RC_OK,
 * RC_ENOTFOUND (no such row) or an rc of db_result_rc().
 */
enum rc db_lease_read(PGconn *c, const char *name, int64_t lock_key,
                      struct db_lease_view *out /* out */) TY_WUR;

/*
 * End the session of the holder of epoch, waiting up to wait_ms for it to
 * exit (which frees its advisory lock), only if that lease is still expired
 * by the database's clock and its session still holds the advisory lock
 * lock_key: all checked in the one statement, so a lease renewed meanwhile,
 * or a pid reused by an unrelated session, is left alone. *ended receives 1
 * when a session was ended. RC_OK, RC_EPERM (this role may not end that
 * session: it is another role's, not granted pg_signal_backend), or an rc
 * of db_result_rc().
 */
enum rc db_lease_end_holder(PGconn *c, const char *name, int64_t epoch, int64_t lock_key,
                            int wait_ms, int *ended /* out */) TY_WUR;

/*
 * The fence of a leader-only write: inside the caller's open transaction,
 * share-lock the lease row if epoch is current and held by this session.
 * RC_OK, RC_ECONFLICT when the lease is lost (the caller rolls back and
 * steps down), or an rc of db_result_rc().
 */
enum rc db_lease_fence(PGconn *c, const char *name, int64_t epoch, const char *req_id) TY_WUR;

#endif
