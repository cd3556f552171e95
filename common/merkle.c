/*
 * merkle.c - RFC 6962 Merkle trees (see merkle.h).
 *
 * A tree is kept as its 2n-1 nodes in one array, in the order the
 * recursive split of RFC 6962 visits them (a node, then its left subtree,
 * then its right one), each with the indexes of its children. A proof then
 * walks from the root down, taking the sibling of each step, and is
 * reversed to run from the leaf up.
 */
#include "merkle.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

struct node {
    uint8_t hash[MERKLE_HASH_LEN];
    size_t left, right; /* children's indexes; 0 for a leaf (the root is never a child) */
};

struct merkle_tree {
    size_t n;           /* values */
    struct node *nodes; /* 2n-1, the root first */
};

/* SHA-256 of a one-byte prefix and up to two 32-byte parts. */
static void hash_parts(uint8_t prefix, const uint8_t *a, const uint8_t *b,
                       uint8_t out[MERKLE_HASH_LEN])
{
    uint8_t in[1 + 2 * MERKLE_HASH_LEN];
    size_t len = 1 + MERKLE_HASH_LEN;
    unsigned olen = 0;

    in[0] = prefix;
    memcpy(in + 1, a, MERKLE_HASH_LEN);
    if (b != NULL) {
        memcpy(in + 1 + MERKLE_HASH_LEN, b, MERKLE_HASH_LEN);
        len += MERKLE_HASH_LEN;
    }
    /* EVP_Digest() cannot fail for SHA-256 over memory short of an OpenSSL
     * that cannot allocate; out is then all zeros, which no proof meets. */
    if (EVP_Digest(in, len, out, &olen, EVP_sha256(), NULL) != 1 || olen != MERKLE_HASH_LEN)
        memset(out, 0, MERKLE_HASH_LEN);
}

void merkle_leaf_hash(const uint8_t value[MERKLE_HASH_LEN], uint8_t out[MERKLE_HASH_LEN])
{
    hash_parts(0x00, value, NULL, out);
}

void merkle_node_hash(const uint8_t left[MERKLE_HASH_LEN], const uint8_t right[MERKLE_HASH_LEN],
                      uint8_t out[MERKLE_HASH_LEN])
{
    hash_parts(0x01, left, right, out);
}

/* The largest power of two below n (n >= 2). */
static size_t split_of(size_t n)
{
    size_t k = 1;

    while (k < n - k) /* k * 2 < n without overflow */
        k <<= 1;
    return k;
}

/* Build the subtree over values[lo..lo+n) at nodes[*next]; returns its index. */
static size_t build(struct merkle_tree *t, const uint8_t (*values)[MERKLE_HASH_LEN], size_t lo,
                    size_t n, size_t *next)
{
    size_t me = (*next)++, k;
    struct node *nd = &t->nodes[me];

    if (n == 1) {
        merkle_leaf_hash(values[lo], nd->hash);
        nd->left = nd->right = 0;
        return me;
    }
    k = split_of(n);
    nd->left = build(t, values, lo, k, next);
    nd->right = build(t, values, lo + k, n - k, next);
    merkle_node_hash(t->nodes[nd->left].hash, t->nodes[nd->right].hash, nd->hash);
    return me;
}

enum rc merkle_tree_new(const uint8_t (*values)[MERKLE_HASH_LEN], size_t n,
                        struct merkle_tree **out)
{
    struct merkle_tree *t;
    size_t next = 0;

    *out = NULL;
    if (n == 0 || n > (SIZE_MAX / sizeof(struct node)) / 2)
        return RC_EINVAL;
    if ((t = calloc(1, sizeof(*t))) == NULL)
        return RC_ENOMEM;
    if ((t->nodes = malloc((2 * n - 1) * sizeof(*t->nodes))) == NULL) {
        free(t);
        return RC_ENOMEM;
    }
    t->n = n;
    (void)build(t, values, 0, n, &next);
    *out = t;
    return RC_OK;
}

void merkle_tree_free(struct merkle_tree *t)
{
    if (t == NULL)
        return;
    free(t->nodes);
    free(t);
}

size_t merkle_tree_size(const struct merkle_tree *t)
{
    return t->n;
}

void merkle_tree_root(const struct merkle_tree *t, uint8_t out[MERKLE_HASH_LEN])
{
    memcpy(out, t->nodes[0].hash, MERKLE_HASH_LEN);
}

enum rc merkle_tree_proof(const struct merkle_tree *t, size_t i, uint8_t path[][MERKLE_HASH_LEN],
                          size_t *len)
{
    size_t at = 0, lo = 0, n = t->n, depth = 0;

    *len = 0;
    if (i >= t->n)
        return RC_EINVAL;
    while (n > 1) {
        size_t k = split_of(n);
        const struct node *nd = &t->nodes[at];
        if (NEVER(depth >= MERKLE_MAX_PATH))
            return RC_EINTERNAL;
        if (i < lo + k) {
            memcpy(path[depth++], t->nodes[nd->right].hash, MERKLE_HASH_LEN);
            at = nd->left;
            n = k;
        } else {
            memcpy(path[depth++], t->nodes[nd->left].hash, MERKLE_HASH_LEN);
            at = nd->right;
            lo += k;
            n -= k;
        }
    }
    /* Root-first as walked; the proof runs from the leaf up. */
    for (size_t a = 0, b = depth; a + 1 < b; a++, b--) {
        uint8_t tmp[MERKLE_HASH_LEN];
        memcpy(tmp, path[a], MERKLE_HASH_LEN);
        memcpy(path[a], path[b - 1], MERKLE_HASH_LEN);
        memcpy(path[b - 1], tmp, MERKLE_HASH_LEN);
    }
    *len = depth;
    return RC_OK;
}

static void root_of(const uint8_t (*values)[MERKLE_HASH_LEN], size_t n,
                    uint8_t out[MERKLE_HASH_LEN])
{
    uint8_t l[MERKLE_HASH_LEN], r[MERKLE_HASH_LEN];
    size_t k;

    if (n == 1) {
        merkle_leaf_hash(values[0], out);
        return;
    }
    k = split_of(n);
    root_of(values, k, l);
    root_of(values + k, n - k, r);
    merkle_node_hash(l, r, out);
}

enum rc merkle_root(const uint8_t (*values)[MERKLE_HASH_LEN], size_t n,
                    uint8_t out[MERKLE_HASH_LEN])
{
    if (n == 0)
        return RC_EINVAL;
    root_of(values, n, out);
    return RC_OK;
}

int merkle_verify(const uint8_t value[MERKLE_HASH_LEN], uint64_t i, uint64_t n,
                  const uint8_t path[][MERKLE_HASH_LEN], size_t len,
                  const uint8_t root[MERKLE_HASH_LEN])
{
    uint64_t fn = i, sn;
    uint8_t r[MERKLE_HASH_LEN];

    /* RFC 9162 2.1.3.2, step by step. */
    if (n == 0 || i >= n || len > MERKLE_MAX_PATH)
        return 0;
    sn = n - 1;
    merkle_leaf_hash(value, r);
    for (size_t k = 0; k < len; k++) {
        if (sn == 0)
            return 0; /* the path is longer than the tree is deep */
        if ((fn & 1) || fn == sn) {
            merkle_node_hash(path[k], r, r);
            while (!(fn & 1) && fn != 0) {
                fn >>= 1;
                sn >>= 1;
            }
        } else {
            merkle_node_hash(r, path[k], r);
        }
        fn >>= 1;
        sn >>= 1;
    }
    return sn == 0 && memcmp(r, root, MERKLE_HASH_LEN) == 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

int merkle_from_hex(const char *s, uint8_t out[MERKLE_HASH_LEN])
{
    if (s == NULL || strlen(s) != 2 * MERKLE_HASH_LEN)
        return -1;
    for (size_t i = 0; i < MERKLE_HASH_LEN; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}
