/*
 * test_common_merkle.c - RFC 6962 trees (common/merkle.h) against vectors
 * computed apart from this code: tests/data/merkle/rfc6962.py writes
 * rfc6962.txt straight from the RFC's recursive definitions with Python's
 * hashlib. For every n of 1..17 and every leaf i: the root, the proof from
 * merkle_tree_proof() hash by hash, merkle_root() without a tree, and
 * merkle_verify() accepting the proof. Then every way of spoiling a proof
 * must be refused: each hash of it changed, a hash dropped or added, the
 * hashes reordered, the wrong index, the wrong value, the wrong root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crypto.h"
#include "merkle.h"

#ifndef TY_SOURCE_DIR
#define TY_SOURCE_DIR "."
#endif

#define MAXN 17

/* Value j: SHA-256 of "trainyard merkle test <j>", as rfc6962.py has it. */
static void value(size_t j, uint8_t out[MERKLE_HASH_LEN])
{
    char text[64], hex[CRYPTO_SHA256_HEX_LEN + 1];
    int n = snprintf(text, sizeof(text), "trainyard merkle test %zu", j);

    crypto_sha256_hex(text, (size_t)n, hex);
    assert_int_equal(merkle_from_hex(hex, out), 0);
}

struct vec {
    size_t n, i;
    uint8_t root[MERKLE_HASH_LEN];
    uint8_t path[MERKLE_MAX_PATH][MERKLE_HASH_LEN];
    size_t len;
};

/* Every line of the vector file; returns how many. */
static size_t load(struct vec *v, size_t cap)
{
    char path[1024], line[2048];
    size_t count = 0;
    FILE *f;

    snprintf(path, sizeof(path), "%s/tests/data/merkle/rfc6962.txt", TY_SOURCE_DIR);
    f = fopen(path, "r");
    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        char root[80], hashes[1600];
        struct vec *x = &v[count];
        assert_true(count < cap);
        assert_int_equal(sscanf(line, "%zu %zu %79s %1599s", &x->n, &x->i, root, hashes), 4);
        assert_int_equal(merkle_from_hex(root, x->root), 0);
        x->len = 0;
        if (strcmp(hashes, "-") != 0)
            for (char *tok = hashes; tok != NULL;) {
                char *comma = strchr(tok, ',');
                if (comma != NULL)
                    *comma = '\0';
                assert_int_equal(merkle_from_hex(tok, x->path[x->len++]), 0);
                tok = comma != NULL ? comma + 1 : NULL;
            }
        count++;
    }
    fclose(f);
    return count;
}

static struct vec vecs[MAXN * (MAXN + 1) / 2];
static uint8_t values[MAXN][MERKLE_HASH_LEN];

static int setup(void **state)
{
    (void)state;
    assert_int_equal(load(vecs, sizeof(vecs) / sizeof(vecs[0])), MAXN * (MAXN + 1) / 2);
    for (size_t j = 0; j < MAXN; j++)
        value(j, values[j]);
    return 0;
}

/* Every n and i: root and proof as the independent code has them. */
static void test_vectors(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof(vecs) / sizeof(vecs[0]); k++) {
        const struct vec *v = &vecs[k];
        struct merkle_tree *t = NULL;
        uint8_t root[MERKLE_HASH_LEN], path[MERKLE_MAX_PATH][MERKLE_HASH_LEN];
        size_t len = 99;

        assert_int_equal(merkle_tree_new((const uint8_t(*)[MERKLE_HASH_LEN])values, v->n, &t),
                         RC_OK);
        assert_int_equal(merkle_tree_size(t), v->n);
        merkle_tree_root(t, root);
        assert_memory_equal(root, v->root, MERKLE_HASH_LEN);
        assert_int_equal(merkle_root((const uint8_t(*)[MERKLE_HASH_LEN])values, v->n, root), RC_OK);
        assert_memory_equal(root, v->root, MERKLE_HASH_LEN);
        assert_int_equal(merkle_tree_proof(t, v->i, path, &len), RC_OK);
        assert_int_equal(len, v->len);
        for (size_t h = 0; h < len; h++)
            assert_memory_equal(path[h], v->path[h], MERKLE_HASH_LEN);
        assert_true(merkle_verify(values[v->i], v->i, v->n,
                                  (const uint8_t(*)[MERKLE_HASH_LEN])v->path, v->len, v->root));
        assert_int_equal(merkle_tree_proof(t, v->n, path, &len), RC_EINVAL);
        merkle_tree_free(t);
    }
}

/* Each way of spoiling a valid proof is refused. */
static void test_tampered(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof(vecs) / sizeof(vecs[0]); k++) {
        const struct vec *v = &vecs[k];
        uint8_t path[MERKLE_MAX_PATH + 1][MERKLE_HASH_LEN], root[MERKLE_HASH_LEN],
            val[MERKLE_HASH_LEN];
        const uint8_t(*p)[MERKLE_HASH_LEN] = (const uint8_t(*)[MERKLE_HASH_LEN])path;

        memcpy(path, v->path, sizeof(v->path));
        /* one bit of one hash of the path */
        for (size_t h = 0; h < v->len; h++) {
            path[h][h % MERKLE_HASH_LEN] ^= 0x01;
            assert_false(merkle_verify(values[v->i], v->i, v->n, p, v->len, v->root));
            path[h][h % MERKLE_HASH_LEN] ^= 0x01;
        }
        assert_true(merkle_verify(values[v->i], v->i, v->n, p, v->len, v->root));
        /* a hash dropped from the end, or one added */
        if (v->len > 0)
            assert_false(merkle_verify(values[v->i], v->i, v->n, p, v->len - 1, v->root));
        memcpy(path[v->len], v->root, MERKLE_HASH_LEN);
        assert_false(merkle_verify(values[v->i], v->i, v->n, p, v->len + 1, v->root));
        /* the hashes in another order */
        if (v->len >= 2 && memcmp(path[0], path[1], MERKLE_HASH_LEN) != 0) {
            uint8_t tmp[MERKLE_HASH_LEN];
            memcpy(tmp, path[0], MERKLE_HASH_LEN);
            memcpy(path[0], path[1], MERKLE_HASH_LEN);
            memcpy(path[1], tmp, MERKLE_HASH_LEN);
            assert_false(merkle_verify(values[v->i], v->i, v->n, p, v->len, v->root));
            memcpy(path, v->path, sizeof(v->path));
        }
        /* another value: the neighbour's, or this one with a bit changed */
        if (v->n > 1)
            assert_false(merkle_verify(values[(v->i + 1) % v->n], v->i, v->n, p, v->len, v->root));
        memcpy(val, values[v->i], MERKLE_HASH_LEN);
        val[31] ^= 0x80;
        assert_false(merkle_verify(val, v->i, v->n, p, v->len, v->root));
        /* another index (a proof holds for one position only; the tree's
         * size is not bound by the path alone but by the signed count the
         * verifier takes it from) */
        for (uint64_t i = 0; i < v->n + 2; i++)
            if (i != v->i)
                assert_false(merkle_verify(values[v->i], i, v->n, p, v->len, v->root));
        /* an index past the tree's end */
        assert_false(merkle_verify(values[v->i], v->n, v->n, p, v->len, v->root));
        /* another root */
        memcpy(root, v->root, MERKLE_HASH_LEN);
        root[0] ^= 0x01;
        assert_false(merkle_verify(values[v->i], v->i, v->n, p, v->len, root));
    }
}

/* The leaf and node hashes are the RFC's, with their one-byte prefixes. */
static void test_prefixes(void **state)
{
    (void)state;
    uint8_t a[MERKLE_HASH_LEN], b[MERKLE_HASH_LEN], out[MERKLE_HASH_LEN];
    uint8_t in[1 + 2 * MERKLE_HASH_LEN], want[MERKLE_HASH_LEN];
    char hex[CRYPTO_SHA256_HEX_LEN + 1];

    value(0, a);
    value(1, b);
    in[0] = 0x00;
    memcpy(in + 1, a, MERKLE_HASH_LEN);
    crypto_sha256_hex(in, 1 + MERKLE_HASH_LEN, hex);
    assert_int_equal(merkle_from_hex(hex, want), 0);
    merkle_leaf_hash(a, out);
    assert_memory_equal(out, want, MERKLE_HASH_LEN);
    in[0] = 0x01;
    memcpy(in + 1 + MERKLE_HASH_LEN, b, MERKLE_HASH_LEN);
    crypto_sha256_hex(in, 1 + 2 * MERKLE_HASH_LEN, hex);
    assert_int_equal(merkle_from_hex(hex, want), 0);
    merkle_node_hash(a, b, out);
    assert_memory_equal(out, want, MERKLE_HASH_LEN);
    merkle_node_hash(a, b, a); /* out aliasing an input */
    assert_memory_equal(a, want, MERKLE_HASH_LEN);
}

static void test_edges(void **state)
{
    (void)state;
    struct merkle_tree *t = (struct merkle_tree *)1;
    uint8_t root[MERKLE_HASH_LEN] = {0};

    assert_int_equal(merkle_tree_new((const uint8_t(*)[MERKLE_HASH_LEN])values, 0, &t), RC_EINVAL);
    assert_null(t);
    assert_int_equal(merkle_root((const uint8_t(*)[MERKLE_HASH_LEN])values, 0, root), RC_EINVAL);
    assert_false(merkle_verify(values[0], 0, 0, NULL, 0, root));
    merkle_tree_free(NULL);
    assert_int_equal(merkle_from_hex("00", root), -1);
    assert_int_equal(
        merkle_from_hex("AC1A7D5A83E1010637E9BCFFE3E2E4DE20B31CD629ACEA1CF2F677EBD3AECB79", root),
        -1);
    assert_int_equal(
        merkle_from_hex("ac1a7d5a83e1010637e9bcffe3e2e4de20b31cd629acea1cf2f677ebd3aecb7g", root),
        -1);
}

/* A large batch, as the seal loop makes: every proof from the kept tree
 * verifies against merkle_root()'s root. */
static void test_large(void **state)
{
    (void)state;
    enum { N = 4099 };
    uint8_t(*vals)[MERKLE_HASH_LEN] = calloc(N, MERKLE_HASH_LEN);
    uint8_t root[MERKLE_HASH_LEN], path[MERKLE_MAX_PATH][MERKLE_HASH_LEN];
    struct merkle_tree *t = NULL;
    size_t len = 0;

    assert_non_null(vals);
    for (size_t j = 0; j < N; j++)
        value(j, vals[j]);
    assert_int_equal(merkle_tree_new((const uint8_t(*)[MERKLE_HASH_LEN])vals, N, &t), RC_OK);
    assert_int_equal(merkle_root((const uint8_t(*)[MERKLE_HASH_LEN])vals, N, root), RC_OK);
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(merkle_tree_proof(t, i, path, &len), RC_OK);
        assert_true(len >= 1 && len <= 13);
        assert_true(
            merkle_verify(vals[i], i, N, (const uint8_t(*)[MERKLE_HASH_LEN])path, len, root));
    }
    merkle_tree_free(t);
    free(vals);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),  cmocka_unit_test(test_tampered),
        cmocka_unit_test(test_prefixes), cmocka_unit_test(test_edges),
        cmocka_unit_test(test_large),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
