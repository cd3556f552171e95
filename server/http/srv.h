/*
 * srv.h - the HTTP core of trainyard-server: one struct srv_req per request,
 * the handler signature, JSON responses and the one rc -> HTTP status map.
 *
 * Flow: libmicrohttpd calls http.c, which collects the body (bounded), finds
 * the route (router.h), authenticates the caller (auth.h), checks the route's
 * access rule and the CSRF token, parses JSON, then calls the handler. A
 * handler fills req->status and req->resp, or returns an rc and fills req->err;
 * http.c turns either into a response with the request id.
 *
 * Threads: handlers run on libmicrohttpd's pool threads, concurrently. Each
 * request owns its srv_req; the database connection it checks out with
 * srv_db() is released when the request ends.
 */
#ifndef TY_SERVER_SRV_H
#define TY_SERVER_SRV_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "clock.h" /* srv_now_ms, srv_mono_us */
#include "err.h"
#include "streams.h"

struct srv_app;
struct MHD_Connection;

/* Answer headers a handler may add (srv_add_header). */
#define SRV_MAX_RESP_HEADERS 6
/* The longest answer header value a handler may add, with its NUL (a
 * widget page's Content-Security-Policy names its allowed origins). */
#define SRV_RESP_HEADER_VALUE 640

/* Who may call a route. */
enum srv_auth {
    SRV_AUTH_NONE = 0,  /* anyone */
    SRV_AUTH_USER = 1,  /* any signed-in user (cookie or API token) */
    SRV_AUTH_ADMIN = 2, /* role admin */
    SRV_AUTH_AUDIT = 3, /* role admin or auditor */
    SRV_AUTH_AGENT = 4  /* a worker node's credential */
};

enum srv_role { SRV_ROLE_NONE = 0, SRV_ROLE_MEMBER, SRV_ROLE_AUDITOR, SRV_ROLE_ADMIN };

struct srv_principal {
    int authenticated;     /* 1 once a credential checked out */
    int via_cookie;        /* authenticated by session cookie: CSRF applies */
    int64_t user_id;       /* users.id, 0 for nodes */
    enum srv_role role;    /* the user's role */
    char username[64];     /* for audit actor strings */
    char csrf[64];         /* the session's CSRF token (cookie sessions) */
    char session_hash[65]; /* sessions.token_hash (cookie sessions) */
    int64_t token_id;      /* api_tokens.id when authenticated by token */
    int64_t node_id;       /* nodes.id for agent credentials */
    char node_name[64];    /* node name for agent credentials */
};

struct srv_req {
    struct srv_app *app;         /* borrowed; server-wide state */
    struct MHD_Connection *conn; /* borrowed; libmicrohttpd's connection */
    char method[8];              /* "GET", ... */
    char path[2049];             /* URL path without the query */
    char req_id[24];             /* "r-1a2b3c4d" */
    char client_addr[64];        /* peer address */
    char params[4][129];         /* route captures, in pattern order */
    int nparams;
    json_t *body;             /* owned; parsed JSON body or NULL */
    struct srv_principal who; /* the caller */
    PGconn *db;               /* checked out lazily by srv_db() */
    int status;               /* HTTP status of the answer */
    json_t *resp;             /* owned; JSON answer */
    char *resp_raw;           /* owned; non-JSON answer (with resp_ctype) */
    size_t resp_raw_len;
    const char *resp_ctype; /* static string */
    char *set_cookie;       /* owned; Set-Cookie value, if any */
    struct err err;         /* filled when a handler fails */
    json_t *err_params;     /* owned; optional "params" of the error answer (srv_fail_params) */
    int64_t start_us;       /* monotonic start, for the access log */
    /* Long-poll: a handler may suspend the request (see srv_suspend). */
    int suspended;
    enum rc (*resume_fn)(struct srv_req *req); /* called when resumed */
    void *poll_state;                          /* owned by the handler that suspended */
    void (*poll_state_free)(void *);
    int64_t poll_deadline_ms;  /* monotonic deadline of the wait */
    int64_t poll_arg;          /* handler-defined value kept across a wait */
    int poll_flag;             /* handler-defined flag kept across a wait */
    int64_t poll_checked_us;   /* when the handler last looked for news (waiters.h) */
    struct srv_req *poll_next; /* link in the waiters list (waiters.c) */
    enum rc resume_rc;         /* not RC_OK: the wait was not parked; resuming answers this */
    /* Streaming answers (Server-Sent Events): see srv_reply_stream. */
    long (*stream_fn)(void *cls, uint64_t pos, char *buf, size_t max);
    void *stream_cls;
    void (*stream_free)(void *cls);
    /* A file answer: see srv_reply_file. */
    int resp_fd_set;        /* 1 while resp_fd is owned and not yet sent */
    int resp_fd;            /* owned while resp_fd_set */
    uint64_t resp_fd_size;  /* bytes to send */
    char resp_filename[96]; /* Content-Disposition file name, sanitized */
    /* A long-lived request's count against its caller's caps (srv_hold). */
    struct streams_slot stream_slot; /* given back when the request ends */
    int retry_after_s;               /* > 0: a Retry-After header on the answer */
    /* The body as it came (routes under /v1/, the inference gateway, only:
     * it forwards these bytes and parses them itself); borrowed from the
     * connection's state, valid until the request ends. */
    const char *raw_body;
    size_t raw_body_len;
    /* More answer headers (srv_add_header), sent with any answer. */
    char resp_hdr[SRV_MAX_RESP_HEADERS][2][SRV_RESP_HEADER_VALUE];
    int nresp_hdr;
};

/* A route handler. Returns RC_OK after setting status/resp, or an error rc
 * with req->err filled (srv_fail helps). */
typedef enum rc (*srv_handler_fn)(struct srv_req *req);

/* The request's database connection, checked out on first call. NULL if the
 * database is unavailable (the handler returns RC_EUNAVAIL). */
PGconn *srv_db(struct srv_req *req);

/*
 * Attach machine-readable values to the error answer of req (its "params"
 * object, so that a client can word the message itself); takes ownership of
 * params (an object; NULL is ignored). Returns rc, to chain after srv_fail.
 */
enum rc srv_fail_params(struct srv_req *req, enum rc rc, json_t *params);

/* A query-string value (borrowed, valid during the request) or NULL. */
const char *srv_query(struct srv_req *req, const char *key);

/* A request header (borrowed, valid during the request) or NULL. */
const char *srv_header(struct srv_req *req, const char *name);

/*
 * Send the header name: value (both borrowed, copied; each under 128 bytes,
 * no CR or LF) with the answer, whatever it is. RC_EINVAL when it does not
 * fit or holds a line break, RC_ENOMEM past SRV_MAX_RESP_HEADERS; nothing
 * is added then.
 */
enum rc srv_add_header(struct srv_req *req, const char *name, const char *value) TY_WUR;

/* Set a JSON answer; takes ownership of body. Returns RC_OK. */
enum rc srv_reply(struct srv_req *req, int status, json_t *body);

/* Fill req->err and return rc: `return srv_fail(req, RC_EINVAL, "gpus", "...")`. */
enum rc srv_fail(struct srv_req *req, enum rc rc, const char *field, const char *fmt, ...)
    TY_PRINTF(4, 5);

/*
 * Count req as a long-lived request of its caller (a node credential, else
 * the signed-in user and the source address; streams.h) until it ends,
 * however it ends. Idempotent. srv_suspend() and srv_reply_stream() call it;
 * a handler calls it first to refuse before it changes anything.
 * RC_ERATE (429 too_many_streams, params {limit}, Retry-After) when the
 * caller holds its cap already, RC_ENOMEM; req->err filled.
 */
enum rc srv_hold(struct srv_req *req) TY_WUR;

/*
 * Park a long-poll: release the database connection, suspend the connection
 * and register it under key in the waiters (waiters.h). The handler then
 * returns RC_OK without a reply; resume_fn is called on a pool thread when
 * waiters_notify(key) runs or deadline_ms (monotonic) passes, and answers
 * (or parks again). When the wait cannot be parked (out of memory, or
 * srv_hold() refuses) the request is resumed at once and answers that
 * error without calling resume_fn.
 * Call only from a handler.
 */
void srv_suspend(struct srv_req *req, int64_t key, int64_t deadline_ms,
                 enum rc (*resume_fn)(struct srv_req *req));

/*
 * Answer with a stream of unknown length (Server-Sent Events). fn is called
 * on a pool thread whenever the connection can take more: it returns the
 * bytes written to buf, 0 after parking itself with srv_stream_wait(), -1
 * to end the stream, or -2 to abort it (the connection is cut, so the client
 * cannot take a partial body for a whole one). cls is freed with free_fn
 * when the request ends, whether the client read it all or went away, also
 * when this returns an error. Set req->resp_filename first to send it as an
 * attachment of that name. RC_OK, or srv_hold()'s refusal.
 */
enum rc srv_reply_stream(struct srv_req *req, const char *ctype,
                         long (*fn)(void *cls, uint64_t pos, char *buf, size_t max), void *cls,
                         void (*free_fn)(void *cls));

/*
 * Answer 200 with the file open on fd (taken: closed when the answer is sent
 * or the request ends), size bytes from its start, as an attachment named
 * filename (borrowed; reduced to [A-Za-z0-9._-], others become '_').
 * Returns RC_OK.
 */
enum rc srv_reply_file(struct srv_req *req, int fd, uint64_t size, const char *filename);

/* From inside a stream callback: suspend until waiters_notify(key) or
 * deadline_ms (monotonic), then the callback runs again. When the wait
 * cannot be parked (out of memory) the stream is resumed and cut off. */
void srv_stream_wait(struct srv_req *req, int64_t key, int64_t deadline_ms);

/* The one map from rc to HTTP status. */
int srv_http_status(enum rc rc);

/* "user:alice", "node:gpu-07" or "anonymous" for audit records. */
void srv_actor(const struct srv_req *req, char *out, size_t out_size);

#endif
