/*
 * db_audit.h - appending to and reading the hash-chained audit trail.
 *
 * audit_append() must run inside the caller's open transaction, so an event
 * commits or rolls back with the change it records. It locks the chain head
 * row, which serializes concurrent writers and keeps ids gapless; the lock is
 * held only until the caller's transaction ends, so callers keep those
 * transactions short and append the event last.
 *
 * Thread-safety: any thread, with its own PGconn.
 */
#ifndef TY_SERVER_DB_AUDIT_H
#define TY_SERVER_DB_AUDIT_H

#include <jansson.h>
#include <libpq-fe.h>

#include "audit_canon.h"
#include "audit_target.h"
#include "err.h"

struct audit_event {
    const char *actor;   /* borrowed; "user:alice", "system", "node:gpu-1" */
    const char *source;  /* borrowed; client address, "" for internal */
    const char *action;  /* borrowed; "job.submit" */
    const char *target;  /* borrowed; built with audit_target.h: "job:42", "node:gpu-1", "" */
    const char *outcome; /* borrowed; "success", "failure", "denied" */
    json_t *details;     /* borrowed; object or NULL */
};

/*
 * Append ev in the open transaction on conn. RC_EINTERNAL, and nothing
 * written, when ev->target has none of the forms of audit_target_valid().
 */
enum rc audit_append(PGconn *conn, const struct audit_event *ev, const char *req_id) TY_WUR;

/*
 * Page through events (newest first) as a JSON array. Filters may be NULL:
 * action (exact or prefix ending in '.'), actor, target, since/until (ISO
 * timestamps), before_id (cursor). limit 1..500. Result new reference.
 * Keyset paging on id, so a page costs the same at any depth; each filter
 * walks an index (sql/011, sql/012). A time bound is also turned into an id
 * bound through the ts index, since ids and timestamps rise together: the
 * events are stamped under the chain head's lock. That holds to within
 * AUDIT_LIST_SKEW (replicas whose clocks differ by more could see an event
 * missing from a time-filtered list, never a wrong one).
 */
#define AUDIT_LIST_SKEW "interval '1 hour'"

enum rc audit_list(PGconn *conn, const char *action, const char *actor, const char *target,
                   const char *since, const char *until, const char *before_id, int limit,
                   json_t **out, const char *req_id) TY_WUR;

struct audit_key;

struct audit_verify_result {
    int64_t checked;           /* events recomputed */
    int64_t bad_id;            /* first bad event id; 0 when all verify */
    int64_t from_seq;          /* the chain was checked from after this event: the newest
                                  retention checkpoint's seq, 0 for genesis */
    int64_t checkpoints;       /* checkpoints whose signature and hash were checked */
    int64_t bad_checkpoint_id; /* first audit_checkpoints.id that failed; 0 when none */
    const char *reason;        /* static text of the first failure; "" when valid */
};

/*
 * Recompute the chain from the database and check every link, in one
 * REPEATABLE READ snapshot (conn must be idle; the transaction ends before
 * return). The chain starts from the newest retention checkpoint (its seq
 * and hash), or from genesis. Every checkpoint from there on must carry a
 * valid signature by the key its key_id names (key, or a key of audit_keys
 * from before a rotation; an unknown key id is a failure) and the hash of
 * its event. For tests and
 * the "verify" endpoint; reads in pages.
 */
enum rc audit_verify_db(PGconn *conn, const struct audit_key *key, struct audit_verify_result *out,
                        const char *req_id) TY_WUR;

/* The columns of a whole event, in the order audit_fields_of_row() reads
 * them (the stored hash is column 9). */
#define AUDIT_EVENT_COLUMNS                                                                        \
    "id, ts_text, actor, source, action, target, outcome, details, prev_hash, hash"

/*
 * Row i of a result selected with AUDIT_EVENT_COLUMNS as event fields. The
 * strings are borrowed from res; details (parsed by the caller, which decides
 * what text that is not JSON becomes) is borrowed too.
 */
struct audit_fields audit_fields_of_row(const PGresult *res, int i, int64_t id,
                                        const json_t *details);

#endif
