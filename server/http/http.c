/*
 * http.c - libmicrohttpd glue: body collection with a limit, routing,
 * authentication, CSRF, JSON parsing, responses, the access log, static
 * files and suspend/resume for long-polls.
 *
 * Each connection's request state (struct http_ctx) is created on the first
 * callback, lives in *con_cls, and is freed in the completion callback, which
 * also writes the access-log line. In-flight requests are counted so that a
 * graceful stop can wait for them.
 */
#include "http.h"
#include "tls.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "db.h"
#include "jx.h"
#include "log.h"
#include "metrics.h"
#include "router.h"
#include "static_files.h"
#include "streams.h"
#include "waiters.h"

/* Retry-After of a request refused for too many open streams, in seconds. */
#define HTTP_STREAMS_RETRY_S 5

/* Deepest JSON nesting accepted; real specs need 3 or 4 levels. */
#define HTTP_MAX_JSON_DEPTH 32

struct http_ctx {
    struct srv_req req;
    char *body; /* owned; collected upload, NUL-terminated */
    size_t body_len;
    int too_big; /* the body passed the limit: answer 413 */
    int resumed; /* called again after a suspend */
    int route;   /* app->routes index or METRICS_ROUTE_*, for metrics.h */
};

static atomic_int g_inflight;
static atomic_uint g_req_counter;

int srv_http_status(enum rc rc)
{
    switch (rc) {
    case RC_OK:
        return 200;
    case RC_EINVAL:
        return 400;
    case RC_EAUTH:
        return 401;
    case RC_EPERM:
        return 403;
    case RC_EPOLICY:
        return 403;
    case RC_ENOTFOUND:
        return 404;
    case RC_EMETHOD:
        return 405;
    case RC_ECONFLICT:
        return 409;
    case RC_ETOOBIG:
        return 413;
    case RC_EMEDIATYPE:
        return 415;
    case RC_EGONE:
        return 410;
    case RC_ERATE:
        return 429;
    case RC_EUNAVAIL:
        return 503;
    case RC_ERETRY:
        return 503;
    case RC_ENOMEM:
        return 500;
    case RC_EINTERNAL:
        return 500;
    }
    return 500;
}

PGconn *srv_db(struct srv_req *req)
{
    if (req->db == NULL)
        req->db = db_acquire(req->app->db, 5000);
    return req->db;
}

const char *srv_query(struct srv_req *req, const char *key)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *srv_header(struct srv_req *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

enum rc srv_reply(struct srv_req *req, int status, json_t *body)
{
    json_decref(req->resp);
    req->resp = body;
    req->status = status;
    return RC_OK;
}

enum rc srv_fail(struct srv_req *req, enum rc rc, const char *field, const char *fmt, ...)
{
    va_list ap;

    err_set(&req->err, rc, field, "%s", "");
    va_start(ap, fmt);
    vsnprintf(req->err.message, sizeof(req->err.message), fmt, ap);
    va_end(ap);
    return rc;
}

enum rc srv_fail_params(struct srv_req *req, enum rc rc, json_t *params)
{
    json_decref(req->err_params);
    req->err_params = params;
    return rc;
}

void srv_actor(const struct srv_req *req, char *out, size_t out_size)
{
    if (req->who.node_id != 0)
        snprintf(out, out_size, "node:%s", req->who.node_name);
    else if (req->who.authenticated)
        snprintf(out, out_size, "user:%s", req->who.username);
    else
        snprintf(out, out_size, "anonymous");
}

/* ------------------------------------------------------------------ */
/* Responses                                                            */

static void release_db(struct srv_req *req)
{
    if (req->db != NULL) {
        db_release(req->app->db, req->db);
        req->db = NULL;
    }
}

static void add_common_headers(struct MHD_Response *r, const struct srv_req *req)
{
    MHD_add_response_header(r, "X-Request-Id", req->req_id);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    for (int i = 0; i < req->nresp_hdr; i++)
        MHD_add_response_header(r, req->resp_hdr[i][0], req->resp_hdr[i][1]);
}

enum rc srv_add_header(struct srv_req *req, const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value);

    if (nl == 0 || nl >= sizeof(req->resp_hdr[0][0]) || vl >= sizeof(req->resp_hdr[0][1]) ||
        strpbrk(name, "\r\n:") != NULL || strpbrk(value, "\r\n") != NULL)
        return RC_EINVAL;
    if (req->nresp_hdr >= SRV_MAX_RESP_HEADERS)
        return RC_ENOMEM;
    memcpy(req->resp_hdr[req->nresp_hdr][0], name, nl + 1);
    memcpy(req->resp_hdr[req->nresp_hdr][1], value, vl + 1);
    req->nresp_hdr++;
    return RC_OK;
}

static enum MHD_Result send_buffer(struct srv_req *req, int status, const char *ctype, char *buf,
                                   size_t len, enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, buf, mode);
    enum MHD_Result ret;

    if (r == NULL) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free(buf);
        return MHD_NO;
    }
    add_common_headers(r, req);
    MHD_add_response_header(r, "Content-Type", ctype);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    if (req->set_cookie != NULL)
        MHD_add_response_header(r, "Set-Cookie", req->set_cookie);
    if (req->retry_after_s > 0) {
        char secs[16];
        snprintf(secs, sizeof(secs), "%d", req->retry_after_s);
        MHD_add_response_header(r, "Retry-After", secs);
    }
    req->status = status;
    ret = MHD_queue_response(req->conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static json_t *error_body(const struct srv_req *req, enum rc rc)
{
    const struct err *e = &req->err;
    json_t *inner = json_object();
    const char *msg = e->message[0] ? e->message : rc_str(rc);

    /* A 5xx says only "internal error"; the details are in the log. */
    if (srv_http_status(rc) >= 500 && rc != RC_EUNAVAIL && rc != RC_ERETRY)
        msg = "internal error";
    json_object_set_new(inner, "code", json_string(e->code[0] ? e->code : rc_api_code(rc)));
    json_object_set_new(inner, "message", json_string(msg));
    if (e->detail[0])
        json_object_set_new(inner, "detail", json_string(e->detail));
    if (e->field[0])
        json_object_set_new(inner, "field", json_string(e->field));
    if (json_is_object(req->err_params) && srv_http_status(rc) < 500)
        json_object_set(inner, "params", req->err_params);
    json_object_set_new(inner, "request_id", json_string(req->req_id));
    return json_pack("{s:o}", "error", inner);
}

static enum MHD_Result send_json(struct srv_req *req, int status, const json_t *body)
{
    char *s = jx_dumps(body, JSON_COMPACT);

    if (s == NULL)
        return MHD_NO;
    return send_buffer(req, status, "application/json; charset=utf-8", s, strlen(s),
                       MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result send_error(struct srv_req *req, enum rc rc)
{
    json_t *body = error_body(req, rc);
    enum MHD_Result ret = send_json(req, srv_http_status(rc), body);

    json_decref(body);
    return ret;
}

static enum MHD_Result send_error_msg(struct srv_req *req, enum rc rc, const char *field,
                                      const char *msg)
{
    srv_fail(req, rc, field, "%s", msg);
    return send_error(req, rc);
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct srv_req *req = cls;
    long n;

    /* The stream's wait could not be parked (waiters_add): cut it off. */
    if (req->resume_rc != RC_OK)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    n = req->stream_fn(req->stream_cls, pos, buf, max);

    /* -2: a failure mid-stream; the client sees a cut-off body, not an end. */
    if (n == -2)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    return n < 0 ? MHD_CONTENT_READER_END_OF_STREAM : (ssize_t)n;
}

static enum MHD_Result send_stream(struct srv_req *req)
{
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 8192, stream_reader, req, NULL);
    enum MHD_Result ret;

    if (r == NULL)
        return MHD_NO;
    add_common_headers(r, req);
    MHD_add_response_header(r, "Content-Type", req->resp_ctype);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");
    if (req->resp_filename[0] != '\0') {
        char disp[160];
        snprintf(disp, sizeof(disp), "attachment; filename=\"%s\"", req->resp_filename);
        MHD_add_response_header(r, "Content-Disposition", disp);
    }
    req->status = 200;
    ret = MHD_queue_response(req->conn, 200, r);
    MHD_destroy_response(r);
    return ret;
}

enum rc srv_hold(struct srv_req *req)
{
    int node = req->who.node_id != 0, limit = 0;
    enum rc rc;

    rc = streams_take(req->app->streams, node ? STREAMS_NODE : STREAMS_USER,
                      node ? req->who.node_id : req->who.user_id, req->client_addr,
                      &req->stream_slot, &limit);
    if (rc == RC_ENOMEM)
        return srv_fail(req, rc, "", "out of memory");
    if (rc != RC_ERATE)
        return rc;
    LOG_WARN("http", "too many open streams",
             "req_id=%s client=%s user_id=%lld node_id=%lld limit=%d", req->req_id,
             req->client_addr, (long long)req->who.user_id, (long long)req->who.node_id, limit);
    srv_fail(req, RC_ERATE, "", "too many open streams: at most %d at once; close one and retry",
             limit);
    err_code(&req->err, "too_many_streams");
    req->retry_after_s = HTTP_STREAMS_RETRY_S;
    return srv_fail_params(req, RC_ERATE, json_pack("{s:i}", "limit", limit));
}

enum rc srv_reply_stream(struct srv_req *req, const char *ctype,
                         long (*fn)(void *cls, uint64_t pos, char *buf, size_t max), void *cls,
                         void (*free_fn)(void *cls))
{
    enum rc rc;

    /* cls is the request's from here, freed when it ends, refused or not. */
    req->stream_cls = cls;
    req->stream_free = free_fn;
    if ((rc = srv_hold(req)) != RC_OK)
        return rc;
    req->stream_fn = fn;
    req->resp_ctype = ctype;
    return RC_OK;
}

void srv_stream_wait(struct srv_req *req, int64_t key, int64_t deadline_ms)
{
    release_db(req);
    req->poll_deadline_ms = deadline_ms;
    MHD_suspend_connection(req->conn);
    waiters_add(req->app->waiters, req, key);
}

enum rc srv_reply_file(struct srv_req *req, int fd, uint64_t size, const char *filename)
{
    size_t n = 0;

    if (req->resp_fd_set)
        close(req->resp_fd);
    req->resp_fd = fd;
    req->resp_fd_set = 1;
    req->resp_fd_size = size;
    for (const char *p = filename; p != NULL && *p != '\0' && n + 1 < sizeof(req->resp_filename);
         p++, n++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        req->resp_filename[n] = ok ? c : '_';
    }
    req->resp_filename[n] = '\0';
    if (n == 0 || req->resp_filename[0] == '.')
        snprintf(req->resp_filename, sizeof(req->resp_filename), "download");
    req->status = 200;
    return RC_OK;
}

/* A file answer with the same fd-backed response as the static files. */
static enum MHD_Result send_file(struct srv_req *req)
{
    char disp[160];
    struct MHD_Response *r;
    enum MHD_Result ret;

    r = MHD_create_response_from_fd(req->resp_fd_size, req->resp_fd);
    if (r == NULL)
        return MHD_NO; /* on_completed closes the fd */
    /* libmicrohttpd owns the fd now and closes it with the response. */
    req->resp_fd_set = 0;
    snprintf(disp, sizeof(disp), "attachment; filename=\"%s\"", req->resp_filename);
    add_common_headers(r, req);
    MHD_add_response_header(r, "Content-Type", "application/octet-stream");
    MHD_add_response_header(r, "Content-Disposition", disp);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    req->status = 200;
    ret = MHD_queue_response(req->conn, 200, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_result(struct srv_req *req, enum rc rc)
{
    if (rc != RC_OK)
        return send_error(req, rc);
    if (req->stream_fn != NULL)
        return send_stream(req);
    if (req->resp_fd_set)
        return send_file(req);
    if (req->resp_raw != NULL) {
        char *raw = req->resp_raw;
        req->resp_raw = NULL;
        return send_buffer(req, req->status ? req->status : 200,
                           req->resp_ctype ? req->resp_ctype : "text/plain; charset=utf-8", raw,
                           req->resp_raw_len, MHD_RESPMEM_MUST_FREE);
    }
    if (req->resp == NULL)
        req->resp = json_object();
    return send_json(req, req->status ? req->status : 200, req->resp);
}

/* ------------------------------------------------------------------ */
/* Static files of the dashboard                                        */

/* A 304 for a file the browser has: the validators again, no body. */
static enum MHD_Result send_not_modified(struct srv_req *req, const char *etag, const char *date)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ret;

    if (r == NULL)
        return MHD_NO;
    add_common_headers(r, req);
    MHD_add_response_header(r, "ETag", etag);
    MHD_add_response_header(r, "Last-Modified", date);
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    req->status = 304;
    ret = MHD_queue_response(req->conn, 304, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result serve_static(struct srv_req *req)
{
    const char *web = req->app->cfg->web_dir;
    const char *rel = req->path, *vendor;
    char full[4096], etag[STATIC_ETAG_SIZE], date[STATIC_DATE_SIZE];
    struct stat st;
    struct MHD_Response *r;
    enum MHD_Result ret;
    int fd;

    if (web[0] == '\0' || (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0))
        return send_error_msg(req, RC_ENOTFOUND, "", "no such route");
    /* Only plain names: no "..", no hidden files, no encoded separators. */
    if (strstr(rel, "/.") != NULL || strchr(rel, '\\') != NULL || strchr(rel, '%') != NULL)
        return send_error_msg(req, RC_ENOTFOUND, "", "no such file");
    if (strcmp(rel, "/") == 0)
        rel = "/index.html";
    /* Third-party code only by its fixed paths; not web/vendor/ itself. */
    vendor = static_vendor_file(rel);
    if (vendor == NULL && strncmp(rel, "/vendor/", 8) == 0)
        return send_error_msg(req, RC_ENOTFOUND, "", "no such file");
    if (vendor != NULL)
        snprintf(full, sizeof(full), "%s/%s", web, vendor);
    else
        snprintf(full, sizeof(full), "%s%s", web, rel);
    fd = open(full, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return send_error_msg(req, RC_ENOTFOUND, "", "no such file");
    }
    static_etag((uint64_t)st.st_size, (int64_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, etag,
                sizeof(etag));
    static_http_date(st.st_mtim.tv_sec, date, sizeof(date));
    if (static_not_modified(srv_header(req, "If-None-Match"), srv_header(req, "If-Modified-Since"),
                            etag, st.st_mtim.tv_sec)) {
        close(fd);
        return send_not_modified(req, etag, date);
    }
    r = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
    if (r == NULL) {
        close(fd);
        return MHD_NO;
    }
    add_common_headers(r, req);
    MHD_add_response_header(r, "Content-Type", static_content_type(full));
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    MHD_add_response_header(r, "ETag", etag);
    MHD_add_response_header(r, "Last-Modified", date);
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'self'; img-src 'self' data:; style-src 'self' "
                            "'unsafe-inline'; frame-ancestors 'none'");
    req->status = 200;
    ret = MHD_queue_response(req->conn, 200, r);
    MHD_destroy_response(r);
    return ret;
}

/* ------------------------------------------------------------------ */
/* Dispatch                                                             */

/* Nesting depth of a JSON text, counting only brackets outside strings. */
static int json_depth_exceeds(const char *s, size_t n, int max)
{
    int depth = 0, in_str = 0;

    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '{' || c == '[') {
            if (++depth > max)
                return 1;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return 0;
}

static int is_mutating(const char *method)
{
    return strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0 &&
           strcmp(method, "OPTIONS") != 0;
}

static enum rc check_access(struct srv_req *req, enum srv_auth need)
{
    const struct srv_principal *w = &req->who;

    if (need == SRV_AUTH_NONE)
        return RC_OK;
    if (need == SRV_AUTH_AGENT)
        return w->node_id != 0 ? RC_OK
                               : srv_fail(req, RC_EAUTH, "", "a node credential is required");
    if (!w->authenticated || w->user_id == 0)
        return srv_fail(req, RC_EAUTH, "", "sign in or send an API token");
    if (need == SRV_AUTH_ADMIN && w->role != SRV_ROLE_ADMIN)
        return srv_fail(req, RC_EPERM, "", "this needs the admin role");
    if (need == SRV_AUTH_AUDIT && w->role != SRV_ROLE_ADMIN && w->role != SRV_ROLE_AUDITOR)
        return srv_fail(req, RC_EPERM, "", "this needs the admin or auditor role");
    return RC_OK;
}

static enum rc parse_body(struct http_ctx *ctx)
{
    struct srv_req *req = &ctx->req;
    const char *ctype;
    json_error_t jerr;
    enum rc rc;

    if (ctx->body_len == 0)
        return RC_OK;
    ctype = srv_header(req, "Content-Type");
    if (ctype == NULL || strncasecmp(ctype, "application/json", 16) != 0 ||
        (ctype[16] != '\0' && ctype[16] != ';' && ctype[16] != ' '))
        return srv_fail(req, RC_EMEDIATYPE, "", "the body must be application/json");
    if (json_depth_exceeds(ctx->body, ctx->body_len, HTTP_MAX_JSON_DEPTH))
        return srv_fail(req, RC_EINVAL, "", "the JSON body is nested deeper than %d levels",
                        HTTP_MAX_JSON_DEPTH);
    rc = jx_loadb(ctx->body, ctx->body_len, JSON_REJECT_DUPLICATES, &req->body, &jerr);
    if (rc == RC_ENOMEM)
        return srv_fail(req, RC_ENOMEM, "", "out of memory");
    if (rc != RC_OK) {
        srv_fail(req, RC_EINVAL, "", "malformed JSON body");
        err_detail(&req->err, "%s at line %d column %d", jerr.text, jerr.line, jerr.column);
        return RC_EINVAL;
    }
    return RC_OK;
}

static enum rc dispatch(struct http_ctx *ctx)
{
    struct srv_req *req = &ctx->req;
    struct router_match m;
    const struct router_route *route;
    enum rc rc;
    size_t nroutes = req->app->nroutes;
    const struct router_route *table = req->app->routes;

    rc = router_find(table, nroutes, req->method, req->path, &m);
    if (rc == RC_ENOTFOUND || rc == RC_EINVAL)
        return srv_fail(req, RC_ENOTFOUND, "", "no such route: %s %.200s", req->method, req->path);
    if (rc == RC_EMETHOD)
        return srv_fail(req, RC_EMETHOD, "", "method %s is not allowed here", req->method);
    route = m.route;
    ctx->route = (int)(route - table);
    req->nparams = m.nparams;
    for (int i = 0; i < m.nparams; i++)
        memcpy(req->params[i], m.params[i], sizeof(req->params[i]));

    if (route->auth != SRV_AUTH_NONE) {
        rc = auth_identify(req, route->auth == SRV_AUTH_AGENT);
        if (rc != RC_OK)
            return rc;
    }
    if ((rc = check_access(req, (enum srv_auth)route->auth)) != RC_OK)
        return rc;
    if (req->who.via_cookie && is_mutating(req->method)) {
        const char *csrf = srv_header(req, "X-CSRF-Token");
        if (csrf == NULL || !auth_csrf_ok(req, csrf))
            return srv_fail(req, RC_EPERM, "", "missing or wrong X-CSRF-Token header");
    }
    if (strncmp(req->path, "/v1/", 4) == 0) {
        /* The inference gateway forwards the body's bytes to a model
         * replica and answers a bad one in the OpenAI error shape itself. */
        req->raw_body = ctx->body ? ctx->body : "";
        req->raw_body_len = ctx->body_len;
    } else if ((rc = parse_body(ctx)) != RC_OK) {
        return rc;
    }
    return ((srv_handler_fn)route->handler)(req);
}

static void ctx_init(struct http_ctx *ctx, struct srv_app *app, struct MHD_Connection *conn,
                     const char *url, const char *method)
{
    struct srv_req *req = &ctx->req;
    const union MHD_ConnectionInfo *ci;
    unsigned n = atomic_fetch_add(&g_req_counter, 1);

    req->app = app;
    req->conn = conn;
    req->start_us = srv_mono_us();
    snprintf(req->method, sizeof(req->method), "%s", method);
    snprintf(req->path, sizeof(req->path), "%s", url);
    snprintf(req->req_id, sizeof(req->req_id), "r-%x-%x", (unsigned)getpid() & 0xffff, n);
    ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci != NULL && ci->client_addr != NULL) {
        const struct sockaddr *sa = ci->client_addr;
        if (sa->sa_family == AF_INET)
            inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr,
                      req->client_addr, sizeof(req->client_addr));
        else if (sa->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
                      req->client_addr, sizeof(req->client_addr));
    }
}

static enum MHD_Result finish(struct http_ctx *ctx, enum rc rc)
{
    struct srv_req *req = &ctx->req;

    if (req->suspended && rc == RC_OK)
        return MHD_YES; /* parked by srv_suspend(); resume_fn answers later */
    req->suspended = 0;
    release_db(req);
    return send_result(req, rc);
}

void srv_suspend(struct srv_req *req, int64_t key, int64_t deadline_ms,
                 enum rc (*resume_fn)(struct srv_req *req))
{
    /* The connection goes back first: the resume may run on another thread
     * before this one returns. */
    enum rc rc = srv_hold(req);

    release_db(req);
    req->suspended = 1;
    req->resume_fn = resume_fn;
    req->poll_deadline_ms = deadline_ms;
    MHD_suspend_connection(req->conn);
    if (rc != RC_OK) {
        /* Refused a slot (req->err filled): answer that at once, as
         * waiters_add() does when it cannot park. */
        req->resume_rc = rc;
        http_resume(req);
        return;
    }
    waiters_add(req->app->waiters, req, key);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    struct srv_app *app = cls;
    struct http_ctx *ctx = *con_cls;
    size_t limit = (size_t)app->cfg->body_limit_bytes;

    (void)version;
    if (ctx == NULL) {
        const char *cl;
        ctx = calloc(1, sizeof(*ctx));
        if (ctx == NULL)
            return MHD_NO;
        ctx_init(ctx, app, conn, url, method);
        ctx->route = METRICS_ROUTE_UNMATCHED;
        atomic_fetch_add(&g_inflight, 1);
        *con_cls = ctx;
        cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        if (cl != NULL && strtoull(cl, NULL, 10) > limit) {
            /* Answer before reading: libmicrohttpd then drops the rest. */
            return send_error_msg(&ctx->req, RC_ETOOBIG, "", "the request body is too large");
        }
        return MHD_YES;
    }
    if (ctx->req.status != 0 && !ctx->req.suspended && !ctx->resumed)
        return MHD_YES; /* answered early (413); swallow the rest */
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (ctx->too_big || ctx->body_len + n > limit) {
            ctx->too_big = 1;
            return MHD_YES;
        }
        char *nb = realloc(ctx->body, ctx->body_len + n + 1);
        if (nb == NULL)
            return MHD_NO;
        ctx->body = nb;
        memcpy(ctx->body + ctx->body_len, upload_data, n);
        ctx->body_len += n;
        ctx->body[ctx->body_len] = '\0';
        return MHD_YES;
    }
    if (ctx->req.suspended) {
        /* Resumed by waiters.c: let the handler finish its answer. */
        ctx->req.suspended = 0;
        ctx->resumed = 1;
        if (ctx->req.resume_rc != RC_OK)
            return finish(ctx, ctx->req.resume_rc); /* the wait was never parked */
        if (app_stopping(ctx->req.app))
            ctx->req.poll_deadline_ms = 0;
        return finish(ctx, ctx->req.resume_fn(&ctx->req));
    }
    if (ctx->too_big)
        return send_error_msg(&ctx->req, RC_ETOOBIG, "", "the request body is too large");
    if (strncmp(url, "/api/", 5) != 0 && strncmp(url, "/v1/", 4) != 0 &&
        strncmp(url, "/chat/", 6) != 0 && strcmp(url, "/healthz") != 0 &&
        strcmp(url, "/readyz") != 0 && strcmp(url, "/metrics") != 0) {
        ctx->route = METRICS_ROUTE_STATIC;
        return serve_static(&ctx->req);
    }
    return finish(ctx, dispatch(ctx));
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct srv_app *app = cls;
    struct http_ctx *ctx = *con_cls;
    struct srv_req *req;

    (void)conn;
    if (ctx == NULL)
        return;
    req = &ctx->req;
    metrics_http_observe(ctx->route, req->status, srv_mono_us() - req->start_us);
    if (app->cfg->access_log)
        LOG_INFO("http", "request",
                 "req_id=%s method=%s path=\"%.200s\" status=%d duration_us=%lld client=%s%s",
                 req->req_id, req->method, req->path, req->status,
                 (long long)(srv_mono_us() - req->start_us), req->client_addr,
                 toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " aborted=true");
    release_db(req);
    /* However the request ended (answered, refused, resumed, or the client
     * gone while parked): its slot goes back exactly once. */
    streams_give(app->streams, &req->stream_slot);
    if (req->poll_state_free != NULL)
        req->poll_state_free(req->poll_state);
    if (req->stream_free != NULL)
        req->stream_free(req->stream_cls);
    if (req->resp_fd_set)
        close(req->resp_fd);
    json_decref(req->body);
    json_decref(req->resp);
    json_decref(req->err_params);
    free(req->resp_raw);
    free(req->set_cookie);
    free(ctx->body);
    free(ctx);
    *con_cls = NULL;
    atomic_fetch_sub(&g_inflight, 1);
}

void http_resume(struct srv_req *req)
{
    MHD_resume_connection(req->conn);
}

enum rc http_start(struct srv_app *app)
{
    char host[128];
    int port;
    struct sockaddr_in sin4;
    struct sockaddr_in6 sin6;
    const struct sockaddr *sa;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_TCP_FASTOPEN * 0;

    if (srv_config_listen(app->cfg, host, sizeof(host), &port) != RC_OK) {
        LOG_ERROR("http", "bad listen address", "listen=\"%s\"", app->cfg->listen);
        return RC_EINVAL;
    }
    memset(&sin4, 0, sizeof(sin4));
    memset(&sin6, 0, sizeof(sin6));
    if (inet_pton(AF_INET, host, &sin4.sin_addr) == 1) {
        sin4.sin_family = AF_INET;
        sin4.sin_port = htons((uint16_t)port);
        sa = (const struct sockaddr *)&sin4;
    } else if (host[0] == '[' && strlen(host) > 2) {
        char h6[128];
        snprintf(h6, sizeof(h6), "%.*s", (int)strlen(host) - 2, host + 1);
        if (inet_pton(AF_INET6, h6, &sin6.sin6_addr) != 1)
            return RC_EINVAL;
        sin6.sin6_family = AF_INET6;
        sin6.sin6_port = htons((uint16_t)port);
        sa = (const struct sockaddr *)&sin6;
        flags |= MHD_USE_IPv6;
    } else {
        LOG_ERROR("http", "listen host must be an IP address", "listen=\"%s\"", app->cfg->listen);
        return RC_EINVAL;
    }
    if (app->tls != NULL && srv_tls_enabled(app->tls)) {
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
            LOG_ERROR("http", "this libmicrohttpd has no TLS; use a reverse proxy", "");
            return RC_EUNAVAIL;
        }
        app->daemon = MHD_start_daemon(
            flags | MHD_USE_TLS, (uint16_t)port, NULL, NULL, on_request, app,
            MHD_OPTION_HTTPS_MEM_CERT, app->tls->cert_pem, MHD_OPTION_HTTPS_MEM_KEY,
            app->tls->key_pem, MHD_OPTION_HTTPS_PRIORITIES, SRV_TLS_PRIORITIES,
            MHD_OPTION_SOCK_ADDR, sa, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)app->cfg->http_threads,
            MHD_OPTION_NOTIFY_COMPLETED, on_completed, app, MHD_OPTION_CONNECTION_TIMEOUT,
            (unsigned)120, MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONNECTION_LIMIT,
            MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024, MHD_OPTION_END);
    } else {
        /* Passwords, session cookies and tokens would cross the network in
         * the clear: say so where an operator looks. Said before the daemon
         * starts, because once it does it already answers /healthz, and
         * whoever waits for that (a supervisor, a test) must find the line. */
        if (!srv_host_is_loopback(host))
            LOG_WARN("http",
                     "serving plain HTTP on an address other machines can reach; "
                     "set tls_cert and tls_key, or put a TLS proxy in front",
                     "listen=\"%s\"", app->cfg->listen);
        app->daemon = MHD_start_daemon(
            flags, (uint16_t)port, NULL, NULL, on_request, app, MHD_OPTION_SOCK_ADDR, sa,
            MHD_OPTION_THREAD_POOL_SIZE, (unsigned)app->cfg->http_threads,
            MHD_OPTION_NOTIFY_COMPLETED, on_completed, app, MHD_OPTION_CONNECTION_TIMEOUT,
            (unsigned)120, MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONNECTION_LIMIT,
            MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024, MHD_OPTION_END);
    }
    if (app->daemon == NULL) {
        LOG_ERROR("http", "cannot listen", "listen=\"%s\" tls=%s", app->cfg->listen,
                  app->tls != NULL && srv_tls_enabled(app->tls)
                      ? "on (check the key matches the certificate)"
                      : "off");
        return RC_EUNAVAIL;
    }
    LOG_INFO("http", "listening", "addr=%s port=%d threads=%d tls=%s", host, http_port(app),
             app->cfg->http_threads, app->tls != NULL && srv_tls_enabled(app->tls) ? "on" : "off");
    return RC_OK;
}

int http_port(struct srv_app *app)
{
    const union MHD_DaemonInfo *di;

    if (app->daemon == NULL)
        return 0;
    di = MHD_get_daemon_info(app->daemon, MHD_DAEMON_INFO_BIND_PORT);
    return di ? di->port : 0;
}

void http_stop(struct srv_app *app, int grace_ms)
{
    int64_t deadline = srv_now_ms() + grace_ms;

    if (app->daemon == NULL)
        return;
    /* Stop accepting; requests already read keep going until they answer. */
    MHD_quiesce_daemon(app->daemon);
    while (atomic_load(&g_inflight) > 0 && srv_now_ms() < deadline) {
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    MHD_stop_daemon(app->daemon);
    app->daemon = NULL;
}
