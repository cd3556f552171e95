/*
 * verify.h - offline verification of an audit export against the server's
 * public key, as "What trainyard audit verify checks" in
 * docs/audit-export.md lays down.
 *
 * The manifest (read first by export_reader) is trusted only once its form,
 * key id and signature check out. With a key ring (keys from before a
 * rotation too) each signature is checked with the key its key_id names. Then one pass over the
 * records: each event line is checked against the line before it (link, hash, id); only when a link
 * does not hold does the verifier read up to VERIFY_LOOKAHEAD further lines to tell a reordered
 * line from a modified one. After the last line: the manifest's faults if any, then the counts, ids
 * and hashes at both ends, the checkpoints and events_sha256. It stops at the first failure and
 * names it by line number and, where there is one, event id.
 *
 * Gateway request records (docs/audit-export.md, "Gateway request records")
 * follow the seal event ("serve.requests.seal") of their batch, every one
 * of the batch in leaf order: each record's hash is recomputed from its
 * fields (common/serve_record.h) and its inclusion proof checked against
 * the root that event holds (common/merkle.h); a failure names the record by
 * its request id (request_id) and the seal event (event_id). Only the
 * current batch's root is kept, so memory still does not grow with the
 * export. An export without records (one from before them) verifies as it
 * always did.
 *
 * Thread-safety: reentrant; one reader per call.
 */
#ifndef TY_CLI_VERIFY_H
#define TY_CLI_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "audit_sign.h"
#include "err.h"
#include "export_reader.h"

/* Lines read ahead to diagnose a link that does not hold. */
#define VERIFY_LOOKAHEAD 4096

enum verify_kind {
    VERIFY_OK = 0,
    VERIFY_MODIFIED,  /* an event's bytes or hash were changed */
    VERIFY_MISSING,   /* events were removed (event_id: the first missing one) */
    VERIFY_INSERTED,  /* a line that is not part of the chain was added */
    VERIFY_REORDERED, /* a line is out of place */
    VERIFY_SIGNATURE, /* wrong key, or a signature does not verify */
    VERIFY_MANIFEST,  /* the manifest is missing, malformed or inconsistent */
    VERIFY_FORMAT,    /* a line does not parse */
};

/* "ok", "modified", "missing", ... (stable: used in --json output). */
const char *verify_kind_str(enum verify_kind kind);

/* The outcome of verify_export(); caller storage. */
struct verify_result {
    int ok;                            /* 1 when every check held */
    enum verify_kind kind;             /* VERIFY_OK when ok */
    enum export_format format;         /* the export's format */
    int64_t events;                    /* event lines read */
    int64_t first_id, last_id;         /* ids of the first and last event (0: none) */
    size_t checkpoints;                /* checkpoints in the manifest (all verified when ok) */
    char key_id[AUDIT_KEY_ID_LEN + 1]; /* the given key's id (ring: verify_export_ring) */
    int64_t event_id;                  /* on failure: the event named (0: none) */
    int64_t line;                      /* on failure: the 1-based line named (0: none) */
    char message[320];                 /* on failure: what is wrong (lower case, no period) */
    char request_id[128];              /* on failure: the request record named ("": none) */
    int64_t serve_records;             /* gateway request records proven (when ok) */
    int64_t serve_batches;             /* their sealed batches, each complete (when ok) */
};

/*
 * Verify the export behind r (borrowed; read to the end or to the failure)
 * with key (borrowed; a public key is enough). Returns RC_OK when a verdict
 * was reached: out->ok tells which, and on failure kind, event_id, line and
 * message say what. Returns RC_EUNAVAIL on a read error and RC_ENOMEM, with
 * out->message saying what failed.
 */
enum rc verify_export(struct export_reader *r, const struct audit_key *key,
                      struct verify_result *out) TY_WUR;

/*
 * The same with a key ring (every key the server has used, as the "keys"
 * of GET /api/v1/audit/public-key; borrowed, at least one): the manifest
 * must be signed by a key in the ring, and each checkpoint is verified with
 * the ring key its key_id names (a key id not in the ring is a signature
 * failure naming the checkpoint). out->key_id is the manifest's signer when
 * it is in the ring, else the last (newest) key of the ring.
 */
enum rc verify_export_ring(struct export_reader *r, const struct audit_key *const *keys,
                           size_t nkeys, struct verify_result *out) TY_WUR;

/* Most keys a ring may hold. */
#define VERIFY_RING_MAX 256

/*
 * The key ring in text: the JSON document of GET /api/v1/audit/public-key
 * with a "keys" array whose members each have "key_id" and "public_key"
 * (base64); each key id must be the id of its key, and the document's own
 * "public_key" (the current key), when present, one of them. *keys (a new array of
 * *nkeys new keys, oldest first) is freed with verify_ring_free().
 * RC_ENOTFOUND when text is not such a document (no "keys": a single key,
 * audit_key_from_public()), RC_EINVAL with e saying why when it is one but
 * is malformed. e may be NULL.
 */
enum rc verify_ring_from_public(const char *text, size_t len, struct audit_key ***keys,
                                size_t *nkeys, struct err *e) TY_WUR;

void verify_ring_free(struct audit_key **keys, size_t nkeys);

#endif
