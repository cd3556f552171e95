/*
 * audit_canon.h - the canonical form of an audit event and its chain hash.
 *
 * Shared by the server (which appends events) and the CLI (which verifies
 * exports offline), so both sides hash exactly the same bytes:
 *
 *   canonical = compact JSON, keys sorted, non-ASCII escaped, of
 *     {"action","actor","details","id","outcome","prev_hash","source","target","ts"}
 *   hash      = lower-case hex SHA-256 of canonical
 *
 * id is the decimal event number as a string (gapless, starting at 1), ts is
 * UTC "YYYY-MM-DDTHH:MM:SS.ffffffZ", details is a JSON object, prev_hash is
 * the previous event's hash or AUDIT_GENESIS_HASH for event 1.
 *
 * Thread-safety: reentrant.
 */
#ifndef TY_COMMON_AUDIT_CANON_H
#define TY_COMMON_AUDIT_CANON_H

#include <jansson.h>
#include <stdint.h>

#include "crypto.h"
#include "err.h"

#define AUDIT_GENESIS_HASH "0000000000000000000000000000000000000000000000000000000000000000"

struct audit_fields {
    int64_t id;            /* event number, >= 1 */
    const char *ts;        /* borrowed; UTC with microseconds */
    const char *actor;     /* borrowed; "user:alice", "node:gpu-07", "system" */
    const char *source;    /* borrowed; client address or "" */
    const char *action;    /* borrowed; "job.submit", "auth.login", ... */
    const char *target;    /* borrowed; "job:42", "" */
    const char *outcome;   /* borrowed; "success" | "failure" | "denied" */
    const json_t *details; /* borrowed; a JSON object (NULL = {}) */
    const char *prev_hash; /* borrowed; 64 hex digits */
};

/*
 * The canonical string of f. Returns a malloc'ed string (free with free()) or
 * NULL on allocation failure.
 */
char *audit_canonical(const struct audit_fields *f);

/* Canonical string and hash in one go: out receives 64 hex digits + NUL. */
enum rc audit_hash(const struct audit_fields *f, char out[CRYPTO_SHA256_HEX_LEN + 1]) TY_WUR;

/* Format a UTC timestamp with microseconds into out (at least 32 bytes). */
void audit_format_ts(int64_t unix_us, char *out, size_t out_size);

#endif
