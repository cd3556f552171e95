/*
 * gateway.h - the inference gateway: the OpenAI-compatible routes of
 * docs/serving.md ("The gateway") served by trainyard-server.
 *
 * A request: the key (Authorization: Bearer, gw_limits.h), the body's
 * "model" (the deployment), the token quota and the rate limit, a replica
 * (gw_view.h), then the call (gw_proxy.h) while the request is parked
 * (srv_suspend): no HTTP pool thread waits for a replica. A non-streamed
 * answer is relayed with the replica's status and body once whole; a
 * streamed one (the replica answers 200 text/event-stream) is relayed as
 * each piece arrives, its request parked between pieces (srv_stream_wait).
 * A connection that could not be made is tried once on another ready
 * replica; a call that failed after it was sent is a 502 upstream_error.
 *
 * Every request, refused ones included, ends in one record (gw_records.h)
 * and the metrics (gw_metrics.h), from the request-completed callback: the
 * record's latency_us runs until the answer was sent.
 *
 * A gateway request counts as a long-lived request of its source address
 * while it waits (streams.h, stream_max_per_address): a caller past that
 * cap is answered 429 too_many_streams in the server's error shape.
 *
 * Threads: handlers on the HTTP pool; the gateway's own threads are the
 * view's refresh, the proxy and the record writer. Stop order: after
 * http_stop (in-flight requests answered), then serve_gw_free() writes the
 * last records.
 */
#ifndef TY_SERVER_GATEWAY_H
#define TY_SERVER_GATEWAY_H

#include <stddef.h>

#include "err.h"
#include "srv.h"

struct srv_app;
struct serve_gw;

/* Start the gateway's threads. RC_OK with *out, RC_ENOMEM/RC_EUNAVAIL. */
enum rc serve_gw_new(struct srv_app *app, struct serve_gw **out /* out */) TY_WUR;

/* Stop the threads (the last records are written) and free. NULL: no-op. */
void serve_gw_free(struct serve_gw *gw);

/* Append the gateway's /metrics series to *buf (see gw_metrics_render).
 * gw NULL appends nothing. */
enum rc serve_gw_metrics(struct serve_gw *gw, char **buf, size_t *len, size_t *cap) TY_WUR;

/* The routes (docs/serving.md): no user authentication, the gateway checks
 * its own keys; errors in the OpenAI shape. */
enum rc serve_gw_models(struct srv_req *req);
enum rc serve_gw_chat(struct srv_req *req);
enum rc serve_gw_completions(struct srv_req *req);
enum rc serve_gw_embeddings(struct srv_req *req);
enum rc serve_gw_predict(struct srv_req *req);

#endif
