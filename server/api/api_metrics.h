/*
 * api_metrics.h - GET /metrics, on the API's listener or on one of its own.
 *
 * Access (docs/metrics.md):
 *  - metrics_listen set: /metrics is served only there (a second
 *    libmicrohttpd daemon with one thread); the API's listener answers 404;
 *  - metrics_token set: every scrape must send "Authorization: Bearer
 *    TOKEN", else 401; both may be set;
 *  - neither set: metrics are off, /metrics answers 404.
 *
 * The cluster's state (db_scrape.h) is cached for metrics_cache_ms; the
 * cache's lock is a leaf, never held across SQL.
 *
 * Thread-safety: the handler runs on HTTP pool threads concurrently; the
 * listener has its own thread.
 */
#ifndef TY_SERVER_API_METRICS_H
#define TY_SERVER_API_METRICS_H

#include "app.h"
#include "err.h"
#include "srv.h"

struct metrics_listener;

/* The route handler of GET /metrics on the API's listener. */
enum rc api_metrics(struct srv_req *req);

/* Start the metrics listener when cfg->metrics_listen is set (*out is NULL
 * otherwise). Returns RC_OK, RC_EINVAL (bad address) or RC_EUNAVAIL (cannot
 * listen). *out is returned-owned: metrics_listener_stop(). Main thread. */
enum rc metrics_listener_start(struct srv_app *app, struct metrics_listener **out /* out */) TY_WUR;

/* The port the metrics listener bound (0 when none). */
int metrics_listener_port(const struct metrics_listener *l);

/* Stop and free; NULL is a no-op. Main thread. */
void metrics_listener_stop(struct metrics_listener *l);

#endif
