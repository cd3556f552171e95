/*
 * gw_limits.c - key cache, token buckets and quota counts (gw_limits.h).
 * Both tables are arrays indexed by a hash; an entry is replaced by the
 * next one that hashes to its slot.
 */
#include "gw_limits.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "crypto.h"

struct key_slot {
    char hash[65]; /* "" = empty */
    int found;     /* 0: no such key (a negative answer) */
    int64_t fetched_ms;
    int64_t local_tokens; /* counted by this process since fetched_ms */
    struct db_gw_key key;
};

struct bucket {
    int64_t key_id; /* 0 = empty */
    char addr[64];  /* visitor address of a public key; "" otherwise */
    double tokens;
    int64_t last_us;
};

struct gw_limits {
    pthread_mutex_t keys_lock; /* guards keys */
    struct key_slot keys[GW_KEYS_SLOTS];
    pthread_mutex_t buckets_lock; /* guards buckets */
    struct bucket buckets[GW_BUCKET_SLOTS];
};

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

struct gw_limits *gw_limits_new(void)
{
    struct gw_limits *l = calloc(1, sizeof(*l));

    if (l == NULL)
        return NULL;
    pthread_mutex_init(&l->keys_lock, NULL);
    pthread_mutex_init(&l->buckets_lock, NULL);
    return l;
}

enum rc gw_limits_key(struct gw_limits *l, const char *secret, gw_limits_conn_fn conn, void *cls,
                      struct db_gw_key *out, const char *req_id)
{
    PGconn *c;
    char hash[CRYPTO_SHA256_HEX_LEN + 1];
    struct key_slot *s;
    struct db_gw_key fresh;
    int64_t now = srv_now_ms();
    enum rc rc;

    crypto_sha256_hex(secret, strlen(secret), hash);
    s = &l->keys[fnv(hash, 64, 0xcbf29ce484222325ULL) % GW_KEYS_SLOTS];
    pthread_mutex_lock(&l->keys_lock);
    if (strcmp(s->hash, hash) == 0 && now - s->fetched_ms < GW_KEYS_TTL_MS) {
        rc = s->found ? RC_OK : RC_ENOTFOUND;
        *out = s->key;
        out->tokens_used += s->local_tokens;
        pthread_mutex_unlock(&l->keys_lock);
        return rc;
    }
    pthread_mutex_unlock(&l->keys_lock);
    if ((c = conn(cls)) == NULL)
        return RC_EUNAVAIL;
    rc = db_gw_key_by_hash(c, hash, &fresh, req_id);
    if (rc != RC_OK && rc != RC_ENOTFOUND)
        return rc;
    pthread_mutex_lock(&l->keys_lock);
    memcpy(s->hash, hash, sizeof(s->hash));
    s->found = rc == RC_OK;
    s->fetched_ms = now;
    s->local_tokens = 0;
    s->key = fresh;
    pthread_mutex_unlock(&l->keys_lock);
    *out = fresh;
    return rc;
}

int gw_limits_rate(struct gw_limits *l, const struct db_gw_key *key, const char *addr,
                   int *retry_after_s)
{
    const char *a = key->is_public && addr != NULL ? addr : "";
    uint64_t h = fnv(&key->id, sizeof(key->id), 0xcbf29ce484222325ULL);
    struct bucket *b;
    int64_t now = srv_mono_us();
    double per_us = key->rate_per_min / 60e6, cap = key->rate_per_min;
    int ok;

    h = fnv(a, strlen(a), h);
    b = &l->buckets[h % GW_BUCKET_SLOTS];
    pthread_mutex_lock(&l->buckets_lock);
    if (b->key_id != key->id || strcmp(b->addr, a) != 0) {
        b->key_id = key->id;
        snprintf(b->addr, sizeof(b->addr), "%s", a);
        b->tokens = cap;
        b->last_us = now;
    }
    b->tokens += (double)(now - b->last_us) * per_us;
    if (b->tokens > cap)
        b->tokens = cap;
    b->last_us = now;
    ok = b->tokens >= 1.0;
    if (ok)
        b->tokens -= 1.0;
    else
        *retry_after_s = (int)((1.0 - b->tokens) / per_us / 1e6) + 1;
    pthread_mutex_unlock(&l->buckets_lock);
    return ok;
}

int gw_limits_over_quota(struct gw_limits *l, const struct db_gw_key *key)
{
    (void)l;
    return key->token_quota > 0 && key->tokens_used >= key->token_quota;
}

void gw_limits_add_tokens(struct gw_limits *l, int64_t key_id, int64_t n)
{
    pthread_mutex_lock(&l->keys_lock);
    for (size_t i = 0; i < GW_KEYS_SLOTS; i++) {
        struct key_slot *s = &l->keys[i];
        if (s->found && s->key.id == key_id) {
            s->local_tokens += n;
            break;
        }
    }
    pthread_mutex_unlock(&l->keys_lock);
}

void gw_limits_free(struct gw_limits *l)
{
    if (l == NULL)
        return;
    pthread_mutex_destroy(&l->keys_lock);
    pthread_mutex_destroy(&l->buckets_lock);
    free(l);
}
