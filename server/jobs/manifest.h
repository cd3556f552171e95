/*
 * manifest.h - what a model version (or a dataset) is made of: the SHA-256
 * of every regular file under a directory, or of one file, and the digest of
 * the whole (docs/serving.md, "Registry").
 *
 * The manifest is a JSON array of {"path": relative path, "size": bytes,
 * "sha256": lower-case hex}, sorted by path in byte order. Its canonical text
 * is one line per file, in that order, "<sha256> <size> <path>\n" (size in
 * decimal), and manifest_sha256 is the SHA-256 of that text. The model server
 * checks every file against it before it loads anything, and a dataset's
 * digest in a version's lineage is the same digest over the dataset's files.
 *
 * Files are found and opened with the output-directory machinery
 * (outputs.h): the walk never enters a linked directory, keeps a linked file
 * only when it resolves to a regular file inside the directory, leaves out
 * names that could not be exported (control characters, invalid UTF-8) and
 * goes at most OUTPUTS_MAX_DEPTH levels down; every file is opened with
 * outputs_open(), which checks it again through /proc/self/fd after open(2).
 * A file that changes size while it is hashed fails the manifest.
 *
 * Limits (MANIFEST_MAX_FILES, MANIFEST_MAX_BYTES, or the caller's): past
 * them the manifest is refused (RC_ETOOBIG), never cut short, so that a
 * manifest always covers every file it was asked for. Hashing reads every
 * byte once, at what OpenSSL's SHA-256 does on one core (about 1.4 GB/s with
 * the CPU's SHA extensions, `openssl speed -evp sha256`; a third of that
 * without) plus the disk: seconds for a large model, so callers run it
 * outside any transaction.
 *
 * No SQL and no HTTP here. Thread-safety: reentrant; no globals.
 */
#ifndef TY_SERVER_MANIFEST_H
#define TY_SERVER_MANIFEST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto.h"
#include "err.h"

/* Files one manifest lists at most. */
#define MANIFEST_MAX_FILES 10000
/* Bytes one manifest hashes at most: 64 GiB, a 30-billion-parameter model
 * in 16-bit floats with room to spare. */
#define MANIFEST_MAX_BYTES (UINT64_C(64) << 30)

/* Bounds of one manifest; a NULL pointer means the two defaults above. */
struct manifest_limits {
    size_t max_files;
    uint64_t max_bytes;
};

/* A manifest. Caller storage: filled by manifest_dir() / manifest_file() /
 * manifest_path(), released with manifest_cleanup(). */
struct manifest {
    json_t *files;                          /* owned; the sorted array above */
    char sha256[CRYPTO_SHA256_HEX_LEN + 1]; /* manifest_sha256 */
    uint64_t total_bytes;                   /* the sizes summed */
    size_t count;                           /* entries of files */
};

/* Release what a manifest holds; safe on a zeroed struct. */
void manifest_cleanup(struct manifest *m);

/*
 * The manifest of every regular file below real_dir (an absolute directory
 * already resolved and checked against the storage roots, as
 * outputs_resolve_dir() does). An empty directory gives an empty manifest
 * (the digest of the empty text). On failure *out is zeroed and e filled:
 * RC_ETOOBIG (code "too_large": more files or bytes than the limits),
 * RC_ECONFLICT (a file changed while it was hashed), RC_EPOLICY (a file was
 * swapped for a link out of the directory between the walk and its open),
 * RC_EUNAVAIL (the directory or a file cannot be read), RC_ENOMEM.
 * real_dir and lim borrowed; e may be NULL.
 */
enum rc manifest_dir(const char *real_dir, const struct manifest_limits *lim,
                     struct manifest *out /* out */, struct err *e) TY_WUR;

/*
 * The manifest of the one file rel (a plain name or relative path, no "..")
 * of real_dir: one entry whose path is rel. As manifest_dir(), plus
 * RC_ENOTFOUND when there is no such file and RC_EPOLICY when it is not a
 * regular file inside real_dir.
 */
enum rc manifest_file(const char *real_dir, const char *rel, const struct manifest_limits *lim,
                      struct manifest *out /* out */, struct err *e) TY_WUR;

/*
 * The manifest of path (absolute), a directory or a regular file, which must
 * lie inside one of roots lexically and after realpath(3): a directory as
 * manifest_dir(), a file as manifest_file() of its directory with its base
 * name as the one entry's path. On RC_OK real (real_size >= PATHPOL_BUF_SIZE
 * suffices; may be NULL) holds the resolved path. RC_EPOLICY (code
 * "policy_violation") when it is outside the roots or neither a directory
 * nor a regular file, RC_ENOTFOUND when it does not exist, else as
 * manifest_dir(). Pointers borrowed; e may be NULL.
 */
enum rc manifest_path(const char *path, const char *const *roots, size_t nroots,
                      const struct manifest_limits *lim, char *real, size_t real_size,
                      struct manifest *out /* out */, struct err *e) TY_WUR;

/*
 * manifest_sha256 of a manifest array (files, borrowed: the shape above, in
 * its order) into out. RC_EINVAL when an entry lacks a field, RC_ENOMEM.
 */
enum rc manifest_digest(const json_t *files, char out[CRYPTO_SHA256_HEX_LEN + 1]) TY_WUR;

#endif
