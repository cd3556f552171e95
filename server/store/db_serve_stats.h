/*
 * db_serve_stats.h - a deployment's gateway traffic per minute, from the
 * request records (serve_requests, docs/serving.md): what the dashboard's
 * deployment page draws as request rate, errors and latency.
 *
 * Thread-safety: reentrant; each call works on the caller's connection.
 */
#ifndef TY_SERVER_DB_SERVE_STATS_H
#define TY_SERVER_DB_SERVE_STATS_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"

/* The longest window db_serve_stats() answers, in minutes (one day). */
#define DB_SERVE_STATS_MAX_MINUTES 1440

/*
 * The last `minutes` whole and current minutes (1..DB_SERVE_STATS_MAX_MINUTES,
 * oldest first, the current one last), each
 *   {"minute": RFC 3339 UTC start of the minute, "requests": n,
 *    "errors": n (status >= 400), "p50_latency_us": n | null,
 *    "p99_latency_us": n | null}
 * with every minute present (0 requests and null latencies when idle). *out
 * is a new array the caller frees. RC_OK; RC_EUNAVAIL / RC_EINTERNAL /
 * RC_ENOMEM.
 */
enum rc db_serve_stats(PGconn *c, int64_t deployment_id, int minutes, json_t **out /* out */,
                       const char *req_id) TY_WUR;

#endif
