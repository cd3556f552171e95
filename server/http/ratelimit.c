/*
 * ratelimit.c - fixed-size open-addressing table of (key hash, window start,
 * count). When the table is full the oldest entry is evicted: an attacker
 * flooding keys can at worst reset other keys' counts, never block them.
 */
#include "ratelimit.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"

#define RL_SLOTS 4096

struct rl_entry {
    char key[65]; /* SHA-256 hex of the key; "" = free */
    int64_t window_start_ms;
    int count;
};

struct ratelimit {
    pthread_mutex_t lock;
    int max_failures;
    int64_t window_ms;
    struct rl_entry slots[RL_SLOTS];
};

struct ratelimit *ratelimit_new(int max_failures, int window_s)
{
    struct ratelimit *rl = calloc(1, sizeof(*rl));

    if (rl == NULL)
        return NULL;
    pthread_mutex_init(&rl->lock, NULL);
    rl->max_failures = max_failures;
    rl->window_ms = (int64_t)window_s * 1000;
    return rl;
}

void ratelimit_free(struct ratelimit *rl)
{
    if (rl == NULL)
        return;
    pthread_mutex_destroy(&rl->lock);
    free(rl);
}

/* Find key's slot, or a slot to use for it (create=1). Lock held. */
static struct rl_entry *lookup(struct ratelimit *rl, const char *hkey, int create, int64_t now_ms)
{
    unsigned h = 0;
    struct rl_entry *oldest = NULL;

    for (int i = 0; i < 8; i++) /* hkey is lower-case hex */
        h = h * 16 + (unsigned)(hkey[i] <= '9' ? hkey[i] - '0' : hkey[i] - 'a' + 10);
    for (unsigned i = 0; i < 64; i++) {
        struct rl_entry *e = &rl->slots[(h + i) % RL_SLOTS];
        if (strcmp(e->key, hkey) == 0)
            return e;
        if (!create)
            continue;
        if (e->key[0] == '\0' || now_ms - e->window_start_ms > rl->window_ms) {
            memset(e, 0, sizeof(*e));
            memcpy(e->key, hkey, sizeof(e->key));
            return e;
        }
        if (oldest == NULL || e->window_start_ms < oldest->window_start_ms)
            oldest = e;
    }
    if (oldest != NULL) {
        memset(oldest, 0, sizeof(*oldest));
        memcpy(oldest->key, hkey, sizeof(oldest->key));
    }
    return oldest;
}

int ratelimit_blocked(struct ratelimit *rl, const char *key, int64_t now_ms)
{
    char h[65];
    struct rl_entry *e;
    int blocked = 0;

    crypto_sha256_hex(key, strlen(key), h);
    pthread_mutex_lock(&rl->lock);
    e = lookup(rl, h, 0, now_ms);
    if (e != NULL && now_ms - e->window_start_ms <= rl->window_ms)
        blocked = e->count >= rl->max_failures;
    pthread_mutex_unlock(&rl->lock);
    return blocked;
}

void ratelimit_fail(struct ratelimit *rl, const char *key, int64_t now_ms)
{
    char h[65];
    struct rl_entry *e;

    crypto_sha256_hex(key, strlen(key), h);
    pthread_mutex_lock(&rl->lock);
    e = lookup(rl, h, 1, now_ms);
    if (e != NULL) {
        if (e->count == 0 || now_ms - e->window_start_ms > rl->window_ms) {
            e->window_start_ms = now_ms;
            e->count = 0;
        }
        e->count++;
    }
    pthread_mutex_unlock(&rl->lock);
}

void ratelimit_reset(struct ratelimit *rl, const char *key)
{
    char h[65];
    struct rl_entry *e;

    crypto_sha256_hex(key, strlen(key), h);
    pthread_mutex_lock(&rl->lock);
    e = lookup(rl, h, 0, 0);
    if (e != NULL)
        memset(e, 0, sizeof(*e));
    pthread_mutex_unlock(&rl->lock);
}
