/*
 * cache.h - a small in-memory cache of byte strings with a time to live and
 * a generation, for answers that are read far more often than they change.
 *
 * Used for (1) caller identities (token or session -> principal), so an API
 * request does not cost a database round trip just to authenticate, and
 * (2) job-list pages. Both are bounded in staleness: entries expire after
 * their TTL; job pages are also dropped as soon as the local jobs generation
 * moves (db_jobs.h). Changes made through another replica are seen after
 * the TTL at most. Revocations and logouts on this replica clear the
 * identity cache at once.
 *
 * Thread-safety: all functions are thread-safe (one mutex; the critical
 * sections copy a few KiB at most).
 */
#ifndef TY_SERVER_CACHE_H
#define TY_SERVER_CACHE_H

#include <stddef.h>
#include <stdint.h>

struct cache;

/* A cache of at most nslots entries, each value at most max_value bytes. */
struct cache *cache_new(size_t nslots, size_t max_value);
void cache_free(struct cache *c);

/*
 * Copy the value of key into a new buffer (*out, free() it; *len its size)
 * if it has not expired at now_ms and was stored under generation gen.
 * Returns 1 on a hit, 0 on a miss.
 */
int cache_get(struct cache *c, const char *key, int64_t now_ms, uint64_t gen, char **out,
              size_t *len);

/* Store a copy of value under key until expires_ms, tagged with gen. Values
 * larger than the cache's max_value are not stored. */
void cache_put(struct cache *c, const char *key, const void *value, size_t len, int64_t expires_ms,
               uint64_t gen);

/* Forget every entry. */
void cache_clear(struct cache *c);

#endif
