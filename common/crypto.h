/*
 * crypto.h - the few primitives trainyard needs, all from OpenSSL: SHA-256,
 * random tokens, password hashing (PBKDF2-HMAC-SHA256) and constant-time
 * comparison. Nothing here is hand-rolled cryptography.
 *
 * Thread-safety: all functions are thread-safe.
 */
#ifndef TY_COMMON_CRYPTO_H
#define TY_COMMON_CRYPTO_H

#include <stddef.h>

#include "err.h"

#define CRYPTO_SHA256_HEX_LEN 64
/* PBKDF2 iterations for new password hashes (OWASP 2023 figure for SHA-256). */
#define CRYPTO_PBKDF2_ITERATIONS 600000
/* Upper bound of a stored password hash string, NUL included. */
#define CRYPTO_PWHASH_MAX 160

/* Hex SHA-256 of data into out (65 bytes: 64 hex digits and a NUL). */
void crypto_sha256_hex(const void *data, size_t len, char out[CRYPTO_SHA256_HEX_LEN + 1]);

/*
 * Hex SHA-256 of what read(2) gives from fd until end of file, into out.
 * *nread receives the bytes hashed. RC_OK; RC_ETOOBIG when more than
 * max_bytes could be read (hashing stops there); RC_EUNAVAIL when a read
 * fails (errno kept). fd is borrowed and read from its current offset.
 */
enum rc crypto_sha256_fd_hex(int fd, unsigned long long max_bytes, unsigned long long *nread,
                             char out[CRYPTO_SHA256_HEX_LEN + 1]) TY_WUR;

/*
 * A new random token: prefix followed by nbytes of CSPRNG output in
 * base64url without padding. out_size must hold it; RC_EINVAL if it does not,
 * RC_EINTERNAL if the CSPRNG fails.
 */
enum rc crypto_random_token(const char *prefix, size_t nbytes, char *out, size_t out_size) TY_WUR;

/*
 * Hash a password as "pbkdf2-sha256$ITER$SALT_B64$HASH_B64" with a fresh
 * 16-byte salt. iterations 0 means CRYPTO_PBKDF2_ITERATIONS. out holds at least
 * CRYPTO_PWHASH_MAX bytes.
 */
enum rc crypto_password_hash(const char *password, unsigned iterations,
                             char out[CRYPTO_PWHASH_MAX]) TY_WUR;

/*
 * Check password against a stored hash in constant time. Returns RC_OK on a
 * match, RC_EAUTH on a mismatch, RC_EINVAL if the stored string is malformed.
 */
enum rc crypto_password_verify(const char *password, const char *stored) TY_WUR;

/* HMAC-SHA256 of msg under key into out (32 bytes). */
void crypto_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                        unsigned char out[32]);

/* Standard base64 (with padding) of in into out; out_size >= 4*ceil(n/3)+1.
 * Returns the length written. */
size_t crypto_base64(const unsigned char *in, size_t n, char *out, size_t out_size);

/* Lower-case hex of in into out (2n+1 bytes). */
void crypto_hex(const unsigned char *in, size_t n, char *out);

/* Constant-time equality of two NUL-terminated strings (length leaks only). */
int crypto_str_equal(const char *a, const char *b);

/*
 * Overwrite the n bytes at p with zeros (OPENSSL_cleanse). Unlike a memset,
 * the compiler cannot drop it as a dead store when the memory is freed or
 * goes out of scope next, which is exactly when secrets are wiped.
 */
void crypto_wipe(void *p, size_t n);

/* Wipe the NUL-terminated secret s (taken; may be NULL) and free it. */
void crypto_free_secret(char *s);

#endif
