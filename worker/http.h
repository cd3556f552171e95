/*
 * http.h - the worker's JSON-over-HTTP(S) client for docs/agent-protocol.md.
 *
 * One struct wrk_http per thread (it wraps one common/httpc.h client, so
 * connections are reused); only wrk_http_abort() may be called from another
 * thread. curl_global_init() must have run before the first wrk_http_new()
 * (trainyard-worker does it in main() before starting threads). Response
 * bodies are capped at WRK_HTTP_MAX_BODY; the credential is sent as
 * "Authorization: Bearer ..." and never logged.
 */
#ifndef TY_WORKER_HTTP_H
#define TY_WORKER_HTTP_H

#include <jansson.h>

#include "err.h"

#define WRK_HTTP_MAX_BODY (8 * 1024 * 1024)

struct wrk_http;

/*
 * base_url like "https://server:8443" (copied; a trailing '/' is dropped);
 * ca_file may be NULL (default CA bundle). RC_OK, RC_EINVAL (not http/https) or
 * RC_ENOMEM.
 */
enum rc wrk_http_new(const char *base_url, const char *ca_file, struct wrk_http **out) TY_WUR;

void wrk_http_free(struct wrk_http *h);

/* Use cred (copied; NULL clears) for the Authorization header. */
enum rc wrk_http_set_credential(struct wrk_http *h, const char *cred) TY_WUR;

/* Make the request in flight, and every later one, fail fast. Thread-safe. */
void wrk_http_abort(struct wrk_http *h);

/*
 * method "GET" or "POST"; path like "/api/v1/agent/heartbeat" (borrowed);
 * body may be NULL. On RC_OK the exchange completed: *status holds the HTTP
 * status and *resp (may be NULL to ignore) the parsed JSON body or NULL when
 * it was empty or not JSON; the caller owns *resp. RC_EUNAVAIL: no answer
 * (connection, timeout, abort); RC_ETOOBIG: the body exceeded the cap.
 */
enum rc wrk_http_request(struct wrk_http *h, const char *method, const char *path,
                         const json_t *body, long timeout_ms, long *status, json_t **resp) TY_WUR;

#endif
