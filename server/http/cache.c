/*
 * cache.c - open hashing with one entry per slot: a colliding key replaces
 * the older entry, which only costs a miss later.
 */
#include "cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"

struct cache_entry {
    char key[65]; /* SHA-256 hex of the caller's key; "" = empty */
    int64_t expires_ms;
    uint64_t gen;
    char *value; /* owned */
    size_t len;
};

struct cache {
    pthread_mutex_t lock;
    size_t nslots, max_value;
    struct cache_entry *slots; /* owned, nslots */
};

struct cache *cache_new(size_t nslots, size_t max_value)
{
    struct cache *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->slots = calloc(nslots, sizeof(*c->slots));
    if (c->slots == NULL) {
        free(c);
        return NULL;
    }
    c->nslots = nslots;
    c->max_value = max_value;
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

void cache_free(struct cache *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->nslots; i++)
        free(c->slots[i].value);
    pthread_mutex_destroy(&c->lock);
    free(c->slots);
    free(c);
}

static struct cache_entry *slot_of(struct cache *c, const char *hkey)
{
    size_t h = 0;

    for (int i = 0; i < 12; i++) /* hkey is lower-case hex */
        h = h * 16 + (size_t)(hkey[i] <= '9' ? hkey[i] - '0' : hkey[i] - 'a' + 10);
    return &c->slots[h % c->nslots];
}

int cache_get(struct cache *c, const char *key, int64_t now_ms, uint64_t gen, char **out,
              size_t *len)
{
    char h[65];
    struct cache_entry *e;
    int hit = 0;

    crypto_sha256_hex(key, strlen(key), h);
    pthread_mutex_lock(&c->lock);
    e = slot_of(c, h);
    if (strcmp(e->key, h) == 0 && e->expires_ms > now_ms && e->gen == gen) {
        *out = malloc(e->len + 1);
        if (*out != NULL) {
            memcpy(*out, e->value, e->len);
            (*out)[e->len] = '\0';
            *len = e->len;
            hit = 1;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return hit;
}

void cache_put(struct cache *c, const char *key, const void *value, size_t len, int64_t expires_ms,
               uint64_t gen)
{
    char h[65];
    char *copy;
    struct cache_entry *e;

    if (len > c->max_value || (copy = malloc(len + 1)) == NULL)
        return;
    memcpy(copy, value, len);
    copy[len] = '\0';
    crypto_sha256_hex(key, strlen(key), h);
    pthread_mutex_lock(&c->lock);
    e = slot_of(c, h);
    free(e->value);
    memcpy(e->key, h, sizeof(e->key));
    e->value = copy;
    e->len = len;
    e->expires_ms = expires_ms;
    e->gen = gen;
    pthread_mutex_unlock(&c->lock);
}

void cache_clear(struct cache *c)
{
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->nslots; i++) {
        free(c->slots[i].value);
        memset(&c->slots[i], 0, sizeof(c->slots[i]));
    }
    pthread_mutex_unlock(&c->lock);
}
