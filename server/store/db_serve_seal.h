/*
 * db_serve_seal.h - sealing the gateway's request records into the audit
 * chain (sql/023_serving.sql serve_requests, serve_batches; the contract is
 * docs/serving.md, "Request records and their seal").
 *
 * db_serve_seal() takes the unsealed records (batch_id IS NULL) in id order,
 * at most max_records of them, and in ONE transaction inserts their
 * serve_batches row, sets their batch_id, and appends the event
 * "serve.requests.seal" (target "serve:batch:<id>", details batch, first_id,
 * last_id (decimal strings), count (number), root (64 hex digits): the RFC
 * 6962 Merkle root over their record_sha256 in id order, common/merkle.h).
 * The batch row's audit_seq is that event's id.
 *
 * Batch membership is by batch_id, never by id range: a record inserted by
 * a transaction that commits after a later id was sealed is simply sealed
 * by a later batch, whose first_id is then below the previous batch's
 * last_id; the proof orders a batch's members by id. So first_id..last_id
 * says where a batch's members lie, not that every id between belongs to it.
 *
 * One sealer at a time: the transaction first takes a transaction-level
 * advisory lock (key 7243005); a replica that finds it taken seals nothing
 * this turn. The lock, the records' row locks and the audit head are held
 * only while the transaction runs, and the transaction bounds its own idle
 * time, so a sealer stopped half-way (SIGSTOP) frees them within seconds
 * instead of holding every audited write of the installation behind the
 * audit head. Even two sealers could never seal a record twice: the
 * records are locked FOR UPDATE and re-read after a wait.
 *
 * Lock order (db.h): the records' rows (another table's rows), then the
 * audit head last; the batch row is new (nobody else holds it).
 *
 * Thread-safety: any thread with its own PGconn, idle (no open transaction).
 */
#ifndef TY_SERVER_DB_SERVE_SEAL_H
#define TY_SERVER_DB_SERVE_SEAL_H

#include <libpq-fe.h>
#include <stdint.h>

#include "crypto.h"
#include "err.h"

/* Advisory lock key of the sealer (the retention leader's is 7243004). */
#define DB_SERVE_SEAL_LOCK "7243005"
/* The most records one batch seals. */
#define DB_SERVE_SEAL_MAX 65536

struct db_seal_result {
    int count;        /* records sealed; 0: none waited, or another replica is sealing */
    int busy;         /* 1: another replica holds the sealer's lock */
    int64_t batch_id; /* the new serve_batches row (0 when count is 0) */
    int64_t first_id; /* the lowest and highest record id of the batch */
    int64_t last_id;  /* */
    int64_t event_id; /* the seal event's id (= serve_batches.audit_seq) */
    char root[CRYPTO_SHA256_HEX_LEN + 1]; /* the Merkle root, hex */
};

/*
 * Seal at most max_records (1..DB_SERVE_SEAL_MAX) unsealed records as one
 * batch, as the header says. RC_OK with out->count 0 when there was nothing
 * to seal (or out->busy); RC_EINVAL for max_records out of range;
 * RC_EINTERNAL, nothing sealed, when a record's record_sha256 is not 64
 * lower-case hex digits (logged with its id: the gateway wrote a bad row);
 * else the rc of the failing statement (rolled back).
 */
enum rc db_serve_seal(PGconn *c, int max_records, struct db_seal_result *out) TY_WUR;

/* ---- the export (api/api_audit.c): a seal event's batch, read inside the
 * export's snapshot ---------------------------------------------------- */

/* The batch that event event_id sealed: *batch_id. RC_ENOTFOUND when no
 * batch names that event. */
enum rc db_serve_batch_of_event(PGconn *c, int64_t event_id, int64_t *batch_id /* out */,
                                const char *req_id) TY_WUR;

/*
 * The record hashes of batch_id in id order: *values (returned-owned,
 * free()) holds *n 32-byte values; a stored hash that is not 64 lower-case
 * hex digits becomes 32 zero bytes (what the proofs are then built over, so
 * that the verifier finds the record, instead of the export hiding it).
 * RC_OK (*n may be 0), RC_ENOMEM, or the statement's rc.
 */
enum rc db_serve_batch_hashes(PGconn *c, int64_t batch_id, uint8_t (**values)[32] /* out */,
                              size_t *n /* out */, const char *req_id) TY_WUR;

/* The columns db_serve_batch_records() returns, in this order. */
#define DB_SERVE_RECORD_COLUMNS                                                                    \
    "id, request_id, ts_text, key_id, deployment_id, version_id, replica_job_id, "                 \
    "manifest_sha256, route, status, error_code, prompt_sha256, answer_sha256, prompt_tokens, "    \
    "completion_tokens, latency_us, ttft_us, client_addr, record_sha256, prompt_text, answer_text"

/* Up to limit records of batch_id with an id above after_id, in id order,
 * with DB_SERVE_RECORD_COLUMNS: *out (PQclear it). RC_OK or the statement's rc. */
enum rc db_serve_batch_records(PGconn *c, int64_t batch_id, int64_t after_id, int limit,
                               PGresult **out /* out */, const char *req_id) TY_WUR;

#endif
