/*
 * gw_limits.h - the gateway's key check and limits.
 *
 * Keys: a secret is looked up by its SHA-256 (serve_keys.token_hash) and the
 * answer, found or not, is kept GW_KEYS_TTL_MS: a revoked key is refused at
 * most that long after the revocation committed (on every server replica,
 * each with its own cache). The cache is direct-mapped (GW_KEYS_SLOTS
 * entries), so its memory is bounded whatever secrets callers send.
 *
 * Rate limit: a token bucket of rate_per_min per key (per key and visitor
 * address for a public key), refilled continuously, in this process's
 * memory. With several server replicas each keeps its own buckets, so a key
 * may get up to rate_per_min times the number of replicas behind a load
 * balancer; the buckets are also direct-mapped (GW_BUCKET_SLOTS), and a
 * bucket pushed out by a colliding one starts full again.
 *
 * Quota: tokens used is serve_usage's sum when the key was read, plus what
 * this process counted since (gw_limits_add_tokens); a key is refused once
 * that reaches token_quota. Records still in the writer's queue of another
 * replica are not seen, so the quota may be passed by what is in flight.
 *
 * Threads: every function is thread-safe; one mutex per table, leaves, none
 * held across SQL.
 */
#ifndef TY_SERVER_GW_LIMITS_H
#define TY_SERVER_GW_LIMITS_H

#include <libpq-fe.h>
#include <stdint.h>

#include "db_gateway.h"
#include "err.h"

#define GW_KEYS_TTL_MS 2000
#define GW_KEYS_SLOTS 4096
#define GW_BUCKET_SLOTS 8192

struct gw_limits;

/* New, empty tables. NULL when out of memory. */
struct gw_limits *gw_limits_new(void);

/* Where a key's row is read on a cache miss: a connection the caller holds
 * (or NULL when the database is unavailable). Called at most once. */
typedef PGconn *(*gw_limits_conn_fn)(void *cls);

/*
 * The key whose secret is secret (borrowed), from the cache or, past its
 * TTL, from the connection conn(cls) gives (so a hit costs no pooled
 * connection). RC_OK: *out filled (it may be revoked: the caller decides).
 * RC_ENOTFOUND: no such key. RC_EUNAVAIL and other database errors: not
 * cached.
 */
enum rc gw_limits_key(struct gw_limits *l, const char *secret, gw_limits_conn_fn conn, void *cls,
                      struct db_gw_key *out /* out */, const char *req_id) TY_WUR;

/* Take one request from the bucket of key (and addr for a public key).
 * 1: allowed; 0: refused, *retry_after_s the seconds until one is back. */
int gw_limits_rate(struct gw_limits *l, const struct db_gw_key *key, const char *addr,
                   int *retry_after_s /* out */);

/* 1 when the key has used up its token quota. */
int gw_limits_over_quota(struct gw_limits *l, const struct db_gw_key *key);

/* Count n tokens used by key id (for its quota until the next read). */
void gw_limits_add_tokens(struct gw_limits *l, int64_t key_id, int64_t n);

/* Free. NULL is a no-op. */
void gw_limits_free(struct gw_limits *l);

#endif
