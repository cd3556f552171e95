/*
 * merkle.h - RFC 6962 (RFC 9162 section 2.1) Merkle tree hashes over a list
 * of 32-byte leaf values, inclusion proofs (audit paths) and their
 * verification. The seal loop builds a batch's tree over its records'
 * hashes, the export writes each record's proof, and `trainyard audit
 * verify` checks it (docs/serving.md, docs/audit-export.md).
 *
 *   leaf hash  = SHA-256(0x00 || value)            value: 32 bytes
 *   node hash  = SHA-256(0x01 || left || right)
 *   MTH(D[n])  = the leaf hash for n = 1; else, with k the largest power of
 *                two below n, node hash of MTH(D[0:k]) and MTH(D[k:n])
 *
 * A proof for leaf i of n is the list of sibling subtree hashes from the
 * leaf up to the root (RFC 9162 2.1.3.1), at most MERKLE_MAX_PATH long.
 * There is no tree of zero leaves here: every function takes n >= 1.
 *
 * Pure: no I/O, no global state (SHA-256 from OpenSSL); merkle_tree_new()
 * allocates. Thread-safety: any thread; a tree is read-only once built and
 * may be shared by readers.
 */
#ifndef TY_COMMON_MERKLE_H
#define TY_COMMON_MERKLE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define MERKLE_HASH_LEN 32
/* The longest proof: a tree of at most 2^63 leaves. */
#define MERKLE_MAX_PATH 63

/* SHA-256(0x00 || value): the leaf hash of one value. */
void merkle_leaf_hash(const uint8_t value[MERKLE_HASH_LEN], uint8_t out[MERKLE_HASH_LEN]);

/* SHA-256(0x01 || left || right). out may alias left or right. */
void merkle_node_hash(const uint8_t left[MERKLE_HASH_LEN], const uint8_t right[MERKLE_HASH_LEN],
                      uint8_t out[MERKLE_HASH_LEN]);

/* The tree over n values, with every node's hash kept, so that each proof
 * costs O(log n). Opaque. */
struct merkle_tree;

/*
 * Build the tree over values[0..n) (borrowed; 32 bytes each, copied as leaf
 * hashes). RC_OK and *out (free with merkle_tree_free()); RC_EINVAL when
 * n is 0 or too large to allocate its 2n-1 nodes; RC_ENOMEM.
 */
enum rc merkle_tree_new(const uint8_t (*values)[MERKLE_HASH_LEN], size_t n,
                        struct merkle_tree **out) TY_WUR;

void merkle_tree_free(struct merkle_tree *t);

/* The number of values the tree was built over. */
size_t merkle_tree_size(const struct merkle_tree *t);

/* MTH of the tree into out. */
void merkle_tree_root(const struct merkle_tree *t, uint8_t out[MERKLE_HASH_LEN]);

/*
 * The inclusion proof of value i: *len (out) hashes into path (caller
 * storage for MERKLE_MAX_PATH), the sibling of the leaf first. RC_OK, or
 * RC_EINVAL when i >= merkle_tree_size(t).
 */
enum rc merkle_tree_proof(const struct merkle_tree *t, size_t i,
                          uint8_t path[][MERKLE_HASH_LEN] /* out */, size_t *len /* out */) TY_WUR;

/*
 * MTH of values[0..n) into out without keeping the tree (O(n) hashes,
 * O(log n) stack). RC_OK, or RC_EINVAL when n is 0.
 */
enum rc merkle_root(const uint8_t (*values)[MERKLE_HASH_LEN], size_t n,
                    uint8_t out[MERKLE_HASH_LEN]) TY_WUR;

/*
 * 1 when path[0..len) proves that value is the one at index i of a tree of
 * n values whose root is root (RFC 9162 2.1.3.2), 0 otherwise: i >= n, a
 * path too short or too long, or any hash that does not lead to root.
 */
int merkle_verify(const uint8_t value[MERKLE_HASH_LEN], uint64_t i, uint64_t n,
                  const uint8_t path[][MERKLE_HASH_LEN], size_t len,
                  const uint8_t root[MERKLE_HASH_LEN]);

/* 32 bytes from 64 lower-case hex digits (as every hash in trainyard is
 * written). 0 on success, -1 when s is not exactly that. */
int merkle_from_hex(const char *s, uint8_t out[MERKLE_HASH_LEN]);

#endif
