/*
 * audit_sign.h - the server's Ed25519 audit key, and the signed forms that
 * the server writes and the CLI verifies offline (docs/audit-export.md).
 *
 * The key is OpenSSL's Ed25519. Its id is the first 16 hex digits of the
 * SHA-256 of the raw 32-byte public key, so an export names the key that
 * signed it and a verifier can tell a wrong key from a bad signature.
 *
 * Signatures are over the canonical text of a JSON object: compact, keys
 * sorted, non-ASCII escaped (the same rules as audit_canon.h), without its
 * "signature" member. audit_sign_object() / audit_verify_object() do that.
 *
 * Thread-safety: a loaded key is immutable and may be used from any thread.
 */
#ifndef TY_COMMON_AUDIT_SIGN_H
#define TY_COMMON_AUDIT_SIGN_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"

#define AUDIT_KEY_ID_LEN 16        /* hex digits */
#define AUDIT_PUBLIC_B64_LEN 44    /* base64 of 32 bytes */
#define AUDIT_SIGNATURE_B64_LEN 88 /* base64 of 64 bytes */

struct audit_key;

/*
 * Load the private key at path (PKCS#8 PEM), or create it when the file does
 * not exist: the file is written with mode 0600 (O_EXCL, so two replicas
 * starting together do not both create one; the loser loads the winner's).
 * Refuses a key file that group or others may read or write, and a file
 * that is not an Ed25519 key. *created is set to 1 when a key was made.
 * Parent directories are not created. e may be NULL.
 */
enum rc audit_key_load_or_create(const char *path, struct audit_key **out, int *created,
                                 struct err *e) TY_WUR;

/*
 * A verify-only key from text in any of the forms the server publishes: a
 * PEM "PUBLIC KEY", the base64 of the raw 32 bytes, or the JSON document of
 * GET /api/v1/audit/public-key (its "public_key" member). e may be NULL.
 */
enum rc audit_key_from_public(const char *text, size_t len, struct audit_key **out,
                              struct err *e) TY_WUR;

void audit_key_free(struct audit_key *key);

/* The key id (AUDIT_KEY_ID_LEN hex digits) and the base64 raw public key. */
const char *audit_key_id(const struct audit_key *key);
const char *audit_key_public_b64(const struct audit_key *key);

/* The public key as PEM; malloc'ed, free with free(). NULL on no memory. */
char *audit_key_public_pem(const struct audit_key *key);

/* Whether the key can sign (was loaded from the private key file). */
int audit_key_can_sign(const struct audit_key *key);

/* Sign msg[0..len); out receives the base64 signature + NUL. */
enum rc audit_sign(const struct audit_key *key, const void *msg, size_t len,
                   char out[AUDIT_SIGNATURE_B64_LEN + 1]) TY_WUR;

/* 1 when sig_b64 is a valid signature of msg by key, else 0. */
int audit_verify(const struct audit_key *key, const void *msg, size_t len, const char *sig_b64);

/*
 * The canonical text of obj without its "signature" member (obj is not
 * changed). malloc'ed; NULL when obj is not an object or on no memory.
 */
char *audit_signed_text(const json_t *obj);

/* Set obj's "signature" to the signature of audit_signed_text(obj). */
enum rc audit_sign_object(const struct audit_key *key, json_t *obj) TY_WUR;

/* 1 when obj's "signature" is a valid signature of audit_signed_text(obj). */
int audit_verify_object(const struct audit_key *key, const json_t *obj);

#endif
