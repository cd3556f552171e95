/*
 * http.h - starts and stops the libmicrohttpd daemon that serves the API and
 * the dashboard's static files.
 *
 * Thread model: libmicrohttpd runs its own thread pool (cfg->http_threads)
 * with epoll; every handler runs on one of those threads. Long-poll requests
 * are suspended (MHD_suspend_connection) rather than holding a thread, and
 * resumed by waiters.c.
 */
#ifndef TY_SERVER_HTTP_H
#define TY_SERVER_HTTP_H

#include "app.h"
#include "err.h"
#include "srv.h"

/* Connections libmicrohttpd holds at once. Users' long-lived requests are
 * capped below it (stream_max_total, streams.h), so that nodes' long-polls
 * and short requests always find room. */
#define HTTP_CONNECTION_LIMIT 4096

/* Start listening on app->cfg->listen. Sets app->daemon. */
enum rc http_start(struct srv_app *app) TY_WUR;

/* The port actually bound (useful with port 0). */
int http_port(struct srv_app *app);

/*
 * Stop accepting, let in-flight requests finish (up to grace_ms), then stop
 * the daemon. Safe to call when not started.
 */
void http_stop(struct srv_app *app, int grace_ms);

/* Resume a suspended request (thread-safe; see waiters.c). */
void http_resume(struct srv_req *req);

#endif
