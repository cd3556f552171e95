/*
 * serve_proof.h - one gateway request record of an audit export with its
 * inclusion proof, parsed and checked in form (docs/audit-export.md,
 * "Gateway request records"). The verifier (verify.c) then recomputes the
 * record's hash (common/serve_record.h) and checks the proof against the
 * root of the seal event it follows (common/merkle.h).
 *
 * The record object is strict: every member below present with its type,
 * nothing else; ids are decimal strings without leading zeros (the record's
 * own ids may be null: missing), hashes 64 lower-case hex digits (the
 * record's *_sha256 fields as the gateway wrote them: any string), counts
 * and tokens JSON integers. A failure says which member and why.
 *
 * Thread-safety: reentrant.
 */
#ifndef TY_CLI_SERVE_PROOF_H
#define TY_CLI_SERVE_PROOF_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto.h"
#include "err.h"
#include "merkle.h"
#include "serve_record.h"

/* The most records one batch may hold in an export (a sanity bound far
 * above the server's batch size). */
#define SERVE_PROOF_MAX_COUNT (1LL << 40)

struct serve_proof {
    int64_t event;   /* the seal event's id */
    int64_t batch;   /* the batch's id */
    int64_t index;   /* the record's leaf index, 0 .. count-1 */
    int64_t count;   /* the batch's size as the line says it */
    int64_t id;      /* the record's row id (serve_requests.id) */
    size_t path_len; /* hashes in path */
    uint8_t path[MERKLE_MAX_PATH][MERKLE_HASH_LEN];
    struct serve_record rec;   /* strings borrowed from doc */
    const char *record_sha256; /* borrowed from doc: as exported (64 lower-case hex) */
    json_t *doc;               /* owned: what the strings point into */
};

/*
 * Parse the record object json[0..len) into *out (caller storage; release
 * with serve_proof_cleanup(), also after a failure). RC_OK; RC_EINVAL with
 * e saying what is wrong (e->field the member); RC_ENOMEM. e may be NULL.
 */
enum rc serve_proof_parse(const char *json, size_t len, struct serve_proof *out,
                          struct err *e) TY_WUR;

void serve_proof_cleanup(struct serve_proof *p);

#endif
