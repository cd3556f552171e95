/*
 * fuzz_cli_serve_proof.c - libFuzzer target for the request record object of
 * an audit export line (cli/serve_proof.h), which `trainyard audit verify`
 * parses from the file: bytes -> serve_proof_parse(), then, for a record it
 * accepts, the record's hash (common/serve_record.h) and the proof's
 * verification (common/merkle.h) as the verifier runs them. Checks that
 * nothing crashes or leaks, that a refusal says why, and that an accepted
 * record holds what the header promises (index below count, a proof of at
 * most MERKLE_MAX_PATH hashes, record_sha256 64 lower-case hex digits,
 * every string there).
 *
 * Seeds in corpus/fuzz_cli_serve_proof/: records as the server exports
 * them, and broken copies.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "export_reader.h"
#include "merkle.h"
#include "serve_proof.h"
#include "serve_record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct serve_proof p;
    struct err e;
    char hex[CRYPTO_SHA256_HEX_LEN + 1];
    uint8_t value[MERKLE_HASH_LEN], root[MERKLE_HASH_LEN] = {0};
    enum rc rc;

    err_init(&e);
    rc = serve_proof_parse((const char *)data, size, &p, &e);
    if (rc == RC_OK) {
        if (p.index < 0 || p.index >= p.count || p.path_len > MERKLE_MAX_PATH ||
            p.record_sha256 == NULL || !export_is_hex64(p.record_sha256, strlen(p.record_sha256)) ||
            p.rec.request_id == NULL || p.rec.ts_text == NULL || p.rec.client_addr == NULL ||
            p.event < 1 || p.batch < 1 || p.id < 1)
            abort();
        rc = serve_record_sha256(&p.rec, hex);
        if (rc == RC_OK) {
            if (merkle_from_hex(hex, value) != 0)
                abort();
            (void)merkle_verify(value, (uint64_t)p.index, (uint64_t)p.count,
                                (const uint8_t(*)[MERKLE_HASH_LEN])p.path, p.path_len, root);
        } else if (rc != RC_EINVAL && rc != RC_ETOOBIG) {
            abort();
        }
    } else if ((rc != RC_EINVAL && rc != RC_ENOMEM) || e.message[0] == '\0') {
        abort();
    }
    serve_proof_cleanup(&p);
    return 0;
}
