/*
 * httpc.h - the one libcurl client of trainyard: a request goes out, its
 * answer (status, bounded body) comes back. The worker (worker/http.c), the
 * command line (cli/client.c) and the server's webhook sender
 * (server/loops/webhooks.c) build their protocols on it; like curl's lib/
 * under src/, it knows nothing of JSON, tokens or routes.
 *
 * What every request gets, whatever the caller asks:
 *  - http:// and https:// only, for a redirect too;
 *  - TLS verification of peer and host name, always (an optional CA file
 *    replaces the system bundle, it never turns checking off);
 *  - no redirects unless the request asks for them (a redirect could carry
 *    an Authorization header to another host);
 *  - a body kept only up to the request's max_body: more is RC_ETOOBIG;
 *  - the copies libcurl makes of the request headers are wiped after the
 *    request (some carry credentials); a body kept in a response is wiped
 *    by httpc_resp_cleanup().
 * Nothing is added to the caller's headers: pass "Expect:" to stop libcurl's
 * 100-continue, "Name:" in general to drop a header libcurl would send.
 *
 * Threads: curl_global_init() must have run once, on the main thread, before
 * any thread exists and before the first httpc_new() (each main() does it).
 * A struct httpc is used by one thread at a time (one per thread is the rule:
 * it keeps that thread's connections alive between requests); only
 * httpc_abort() may be called from another thread. httpc_escape() is
 * thread-safe.
 *
 * Errors: the rc of httpc_perform() says whether an answer came, not whether
 * it was a success: a 404 or a 503 is RC_OK with its status.
 */
#ifndef TY_COMMON_HTTPC_H
#define TY_COMMON_HTTPC_H

#include <stddef.h>

#include "err.h"

/* Size of struct httpc_resp's error text (libcurl's CURL_ERROR_SIZE). */
#define HTTPC_ERROR_MAX 256

struct httpc;

/* Called with each piece of the body of a 2xx answer, as it arrives; returns
 * 0 to go on, anything else to stop the transfer (the request then ends with
 * RC_OK and resp->stopped set). */
typedef int (*httpc_data_fn)(const char *data, size_t n, void *ud);

/* Called with each header line of the answer (the status line included, not
 * NUL-terminated, with its CRLF); data is borrowed for the call only. */
typedef void (*httpc_header_fn)(const char *line, size_t n, void *ud);

/*
 * One request. Caller storage: zero it ({0}) and set what you need. Every
 * pointer is borrowed for the duration of httpc_perform() only.
 */
struct httpc_req {
    const char *method;         /* "GET" (also when NULL), "POST", or any other verb */
    const char *url;            /* absolute http:// or https:// URL */
    const char *const *headers; /* "Name: value" lines, NULL-terminated; NULL = none */
    const char *body;           /* sent as is (not copied) with POST and custom verbs; NULL =
                                   none (a POST then sends an empty body); ignored by GET */
    size_t body_len;            /* bytes of body */
    const char *ca_file;        /* PEM bundle to verify the server with; NULL = system's */
    const char *user_agent;     /* NULL = no User-Agent header */
    long connect_timeout_ms;    /* to a connected (and TLS-established) socket; 0 = libcurl's
                                   default of 300 s, still cut by timeout_ms */
    long timeout_ms;            /* the whole exchange, connect to last byte; 0 = none */
    long idle_s;                /* cut a transfer that moves no byte for so long; 0 = never */
    size_t max_body;            /* most bytes of body kept in resp; more is RC_ETOOBIG */
    int follow_redirects;       /* 0: a 3xx comes back as it is; 1: follow up to 5 */
    int discard_body;           /* read the body and drop it: no cap, resp->body stays NULL */
    httpc_data_fn on_data;      /* NULL, or takes a 2xx body (not kept, not capped); the
                                   body of any other status is kept in resp as usual */
    void *data_ud;              /* handed to on_data */
    httpc_header_fn on_header;  /* NULL, or sees every answer header line */
    void *header_ud;            /* handed to on_header */
};

/* What came back. Caller storage, filled by httpc_perform(). */
struct httpc_resp {
    long status;                 /* HTTP status; 0 when none came (also set when the transfer
                                    failed after the status line) */
    char *body;                  /* kept body, NUL-terminated (the NUL not counted), or NULL
                                    when empty, discarded, streamed or over max_body; owned:
                                    free with httpc_resp_cleanup() */
    size_t body_len;             /* bytes of body */
    int stopped;                 /* on_data asked to stop (rc is RC_OK) */
    int tls_failed;              /* RC_EUNAVAIL came from a certificate or TLS handshake
                                    failure: configuration, not a passing outage */
    int fail_code;               /* libcurl's code for an RC_EUNAVAIL, to tell one failure
                                    from another (log once per kind); 0 otherwise */
    char error[HTTPC_ERROR_MAX]; /* why, for a person, when rc is not RC_OK; else "" */
};

/*
 * A client (one libcurl easy handle). RC_OK with *out set (free with
 * httpc_free()), or RC_ENOMEM. Thread-safe once curl_global_init() has run.
 */
enum rc httpc_new(struct httpc **out /* out */) TY_WUR;

/* Closes the client's connections and frees it; no-op on NULL. */
void httpc_free(struct httpc *h);

/* Makes the request in flight, and every later one, end at once with
 * RC_EUNAVAIL (shutdown of a long-poll). Thread-safe; cannot be undone. */
void httpc_abort(struct httpc *h);

/*
 * Sends req and fills *resp (need not be initialised; call
 * httpc_resp_cleanup() afterwards whatever the rc). Returns:
 *  RC_OK        an answer came (any status; a 3xx when not following), or
 *               on_data stopped the transfer;
 *  RC_EUNAVAIL  no complete answer: name resolution, connection, TLS, the
 *               timeout or idle cut, a connection lost midway, httpc_abort();
 *               resp->error says which;
 *  RC_ETOOBIG   the body to keep was over req->max_body (resp->body NULL);
 *  RC_ENOMEM    an allocation failed;
 *  RC_EINVAL    req or its url is NULL.
 * Blocks the calling thread for at most req->timeout_ms when it is set.
 */
enum rc httpc_perform(struct httpc *h, const struct httpc_req *req,
                      struct httpc_resp *resp /* out */) TY_WUR;

/* Wipes and frees resp's body; resp stays usable storage. No-op on NULL. */
void httpc_resp_cleanup(struct httpc_resp *resp);

/*
 * s percent-encoded for one URL path segment or query value (RFC 3986:
 * all but ALPHA, DIGIT and "-._~"). *out is owned: free with free().
 * RC_OK or RC_ENOMEM. Thread-safe.
 */
enum rc httpc_escape(const char *s, char **out /* out */) TY_WUR;

#endif
