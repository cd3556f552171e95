/*
 * ratelimit.h - counts failures per key inside a sliding window (login
 * attempts per username and per source address).
 *
 * In memory: with several replicas each keeps its own counts, which still
 * bounds guessing to replicas x limit per window.
 *
 * Thread-safety: all functions are thread-safe.
 */
#ifndef TY_SERVER_RATELIMIT_H
#define TY_SERVER_RATELIMIT_H

#include <stdint.h>

#include "err.h"

struct ratelimit;

/* A limiter allowing max_failures per window_s per key. NULL on ENOMEM. */
struct ratelimit *ratelimit_new(int max_failures, int window_s);
void ratelimit_free(struct ratelimit *rl);

/* Whether key is currently blocked at time now_ms. */
int ratelimit_blocked(struct ratelimit *rl, const char *key, int64_t now_ms);

/* Record a failure for key at now_ms. */
void ratelimit_fail(struct ratelimit *rl, const char *key, int64_t now_ms);

/* Forget key (after a successful login). */
void ratelimit_reset(struct ratelimit *rl, const char *key);

#endif
