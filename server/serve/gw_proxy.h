/*
 * gw_proxy.h - the gateway's calls to model replicas: one thread drives
 * every transfer with a libcurl multi handle, so that no HTTP pool thread
 * waits for a replica. A handler submits a call and parks its request
 * (srv_suspend / srv_stream_wait) on the call's key; the proxy thread
 * wakes it (waiters_notify) when bytes arrive and when the call ends.
 *
 * libcurl directly rather than common/httpc.h: httpc is one blocking
 * transfer per thread, and this needs many at once on one thread. What
 * httpc guarantees that matters here holds: http:// to the replica's
 * address only, no redirects, bounded bodies (GW_PROXY_MAX_BODY: a call
 * whose answer passes it ends with an error), a total timeout. Connections
 * to a replica are kept alive and reused across calls (the multi handle's
 * connection cache).
 *
 * A call is shared by the request and the proxy thread (a reference each);
 * its fields are read under its lock.
 *
 * Threads: every function is thread-safe. Locks: the proxy's queue lock and
 * each call's lock are leaves; waiters_notify() is called with neither held.
 */
#ifndef TY_SERVER_GW_PROXY_H
#define TY_SERVER_GW_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define GW_PROXY_MAX_BODY (16 << 20)

struct gw_proxy;
struct gw_call;
struct waiters;

/* Start the proxy thread; calls notify waiters w (borrowed). timeout_s:
 * the longest one call may take. NULL on failure. */
struct gw_proxy *gw_proxy_new(struct waiters *w, int timeout_s);

/*
 * A POST of body (copied, len bytes) to url (copied) with "Authorization:
 * Bearer <token>" (copied), notifying key. Returns a call holding one
 * reference for the caller (gw_call_release), NULL when out of memory.
 */
struct gw_call *gw_call_new(const char *url, const char *token, const char *body, size_t len,
                            int64_t key);

/* Hand call to the proxy thread (it takes its own reference). RC_OK or
 * RC_EUNAVAIL when the proxy is stopping (the call then ends at once with
 * a failure). */
enum rc gw_proxy_submit(struct gw_proxy *p, struct gw_call *call) TY_WUR;

/* What a call has now (a copy). */
struct gw_call_state {
    int done;              /* the transfer ended */
    int failed;            /* ended without a whole answer */
    int connect_failed;    /* failed before a byte was sent: another replica may be tried */
    long status;           /* the replica's HTTP status (0 before the headers) */
    int event_stream;      /* its Content-Type is text/event-stream */
    size_t have;           /* answer bytes received so far */
    int64_t first_byte_us; /* srv_mono_us() of the first answer byte, 0 before */
};
void gw_call_state(struct gw_call *call, struct gw_call_state *out /* out */);

/* Copy answer bytes from offset pos into buf (at most max) and drop them
 * and every byte before them (a stream's reader: what it relayed is not
 * kept); returns the count (0 when none yet). A call read this way has no
 * whole body any more. The bound GW_PROXY_MAX_BODY is on what is kept. */
size_t gw_call_read(struct gw_call *call, size_t pos, char *buf, size_t max);

/* The whole answer (borrowed; valid until the release, and only once state
 * says done, when nothing writes it any more; for a call never read with
 * gw_call_read). */
const char *gw_call_body(struct gw_call *call, size_t *len /* out */);

/* Drop the caller's reference; a call still running is cancelled. NULL is
 * a no-op. */
void gw_call_release(struct gw_call *call);

/* Stop the thread (running calls end as failed) and free. NULL is a no-op. */
void gw_proxy_free(struct gw_proxy *p);

#endif
