/*
 * serve_seal.h - the thread that seals the gateway's request records into
 * the audit chain, batch by batch (store/db_serve_seal.h; docs/serving.md,
 * "Request records and their seal").
 *
 * Every SERVE_SEAL_INTERVAL_MS it borrows a pooled connection and seals
 * what waits, SERVE_SEAL_BATCH records per batch; while a batch came out
 * full (more records wait) it seals the next at once, up to
 * SERVE_SEAL_MAX_BATCHES batches per turn, then gives the connection back.
 * Between turns it holds no connection.
 *
 * One replica seals at a time: each seal transaction takes the sealer's
 * transaction-level advisory lock first (db_serve_seal.h), so the lead
 * passes to whichever replica comes next when the sealer stops, hangs or
 * dies, with nothing to take over and no session to end. It is not the
 * scheduler's lease: sealing needs no fence, since a record locked and
 * sealed by one transaction is never sealed by another.
 *
 * Records inserted by a transaction that commits after a later id was
 * sealed are sealed by a later batch: a batch is its members (batch_id),
 * ordered by id in its Merkle tree, and batches may interleave in id.
 *
 * Counts: metrics_serve_sealed() for each batch (docs/metrics.md).
 *
 * Threads: one thread; main starts and stops it.
 */
#ifndef TY_SERVER_SERVE_SEAL_H
#define TY_SERVER_SERVE_SEAL_H

#include "app.h"
#include "err.h"

/* The most records one batch seals: a proof is then at most 12 hashes, and
 * the export holds one batch's record hashes (128 KiB) at a time. */
#define SERVE_SEAL_BATCH 4096
/* How often the thread looks for records to seal. */
#define SERVE_SEAL_INTERVAL_MS 1000
/* Batches per turn at most, so that a backlog is sealed in turns that each
 * give the connection back. */
#define SERVE_SEAL_MAX_BATCHES 64

struct serve_seal;

/* Start the thread. *out owned by the caller (serve_seal_stop). RC_ENOMEM,
 * RC_EINTERNAL when the thread cannot start. Main thread. */
enum rc serve_seal_start(struct srv_app *app, struct serve_seal **out) TY_WUR;

/* Stop and join the thread (a batch in flight commits or rolls back
 * first), free it; NULL is a no-op. Main thread. */
void serve_seal_stop(struct serve_seal *s);

#endif
