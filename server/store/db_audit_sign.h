/*
 * db_audit_sign.h - the signed side of the audit trail in PostgreSQL:
 * checkpoints (audit_checkpoints), retention, and the cursor the export
 * reads through (docs/audit-export.md is the contract).
 *
 * A checkpoint is a signed object {"type":"trainyard.audit.checkpoint",
 * "seq","hash","created_at","kind","key_id","signature"} stored whole in
 * audit_checkpoints.signed. Retention removes the events up to a signed
 * kind 'retention' checkpoint in one transaction; the chain that remains
 * starts from that checkpoint's hash (sql/005_audit_signing.sql lets the
 * DELETE through only then).
 *
 * Thread-safety: any thread, with its own PGconn; a loaded audit_key is
 * immutable and shared.
 */
#ifndef TY_SERVER_DB_AUDIT_SIGN_H
#define TY_SERVER_DB_AUDIT_SIGN_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "audit_sign.h"
#include "crypto.h"
#include "db_audit.h"
#include "err.h"

#define AUDIT_CKPT_PERIODIC "periodic"
#define AUDIT_CKPT_RETENTION "retention"

/*
 * Make a periodic checkpoint of the chain head, in its own transaction on
 * the idle conn: when there is no checkpoint at all, or (unless only_first)
 * when the newest checkpoint's seq is not the head's. *made is 1 when one
 * was inserted, *seq_out (may be NULL) its seq. Not audited itself: an event
 * per checkpoint would move the head and call for the next checkpoint.
 */
enum rc audit_checkpoint_periodic(PGconn *conn, const struct audit_key *key, int only_first,
                                  int *made, int64_t *seq_out, const char *req_id) TY_WUR;

/*
 * Checkpoints newest first as a JSON array (new reference): each row has id,
 * seq (string), hash, created_at, kind, key_id, signature and "signed", the
 * signed object itself. before_id is a cursor or NULL; limit 1..500.
 */
enum rc audit_checkpoint_list(PGconn *conn, const char *before_id, int limit, json_t **out,
                              const char *req_id) TY_WUR;

struct audit_retention_result {
    int64_t removed;       /* events deleted */
    int64_t through;       /* last deleted event id; 0 when none */
    int64_t checkpoint_id; /* audit_checkpoints.id of the retention checkpoint; 0 when none */
    int64_t event_id;      /* the audit.retention event; 0 when none */
    int retention_days;    /* the age used: the policy's audit_retention_days, or min_days
                              when that is longer */
    int64_t serve_records; /* gateway request records deleted with their seal events */
};

/*
 * Retention now, in one transaction on the idle conn: lock the chain head,
 * find the newest event older than compliance_policy.audit_retention_days
 * or min_days, whichever is longer (and older than every event after it), insert a signed
 * 'retention' checkpoint for it, delete the events up to it and append an "audit.retention" event
 * by who (actor, source; action etc. are ignored). Nothing is written when there is nothing to
 * remove (out->removed 0).
 *
 * The gateway request records of the batches whose seal events go, and
 * those batches, go too (details.serve_records counts them when there are
 * any). They are deleted first, before the head is locked (lock order: other
 * tables' rows, then the audit head), for the target found then; the target
 * found under the head's lock is the same or later (the cut-off is the
 * transaction's now()), so every record deleted had its seal event deleted
 * in the same transaction, and a record whose event stays is never deleted.
 */
enum rc audit_retention_run(PGconn *conn, const struct audit_key *key, int min_days,
                            const char *actor, const char *source,
                            struct audit_retention_result *out, const char *req_id) TY_WUR;

/* The range of an export; NULL members are open. Strings borrowed. */
struct audit_export_range {
    const char *from_id; /* decimal event id, inclusive */
    const char *to_id;   /* decimal event id, inclusive */
    const char *from_ts; /* RFC 3339, inclusive */
    const char *to_ts;   /* RFC 3339, exclusive */
};

/*
 * Start an export on the idle conn: a REPEATABLE READ READ ONLY transaction
 * and the cursor "audit_export" over the events of r after the newest
 * retention checkpoint, in id order. *base_seq/base_hash receive that
 * checkpoint's seq and hash (0 and the genesis hash when there is none).
 * The caller FETCHes with audit_export_fetch() and ends with
 * audit_export_close() (or releases the connection, which rolls back).
 */
enum rc audit_export_open(PGconn *conn, const struct audit_export_range *r, int64_t *base_seq,
                          char base_hash[CRYPTO_SHA256_HEX_LEN + 1], const char *req_id) TY_WUR;

/* Events fetched per audit_export_fetch(): bounds the memory of an export. */
#define AUDIT_EXPORT_BATCH 2000

/*
 * The next up to AUDIT_EXPORT_BATCH events of the cursor: *out (PQclear it)
 * has the columns id, ts_text, actor, source, action, target, outcome,
 * details, prev_hash, hash; no rows at the end.
 */
enum rc audit_export_fetch(PGconn *conn, PGresult **out, const char *req_id) TY_WUR;

/*
 * Inside the export's transaction: the hash of the event just before a
 * range (the manifest's prev_hash), never empty:
 *   seq >= 0: the hash of event seq as the chain knows it: base_hash when
 *             seq is base_seq (genesis or the retention checkpoint), else the
 *             event's stored hash, else a checkpoint's at seq;
 *   otherwise (or when none of those exists, say the event was removed by
 *             hand) the hash of the newest event after base_seq with
 *             id < seq (when seq >= 0) and ts < before_ts (when not NULL),
 *             else base_hash.
 */
enum rc audit_export_anchor(PGconn *conn, int64_t base_seq, const char *base_hash, int64_t seq,
                            const char *before_ts, char out[CRYPTO_SHA256_HEX_LEN + 1],
                            const char *req_id) TY_WUR;

/*
 * Inside the export's transaction: the signed checkpoint objects with
 * lo <= seq <= hi, by seq then id, as a JSON array (new reference).
 */
enum rc audit_export_checkpoints(PGconn *conn, int64_t lo, int64_t hi, json_t **out,
                                 const char *req_id) TY_WUR;

/* End the export's transaction. */
enum rc audit_export_close(PGconn *conn, const char *req_id) TY_WUR;

#endif
