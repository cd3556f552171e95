/*
 * api_metrics.c - see api_metrics.h.
 *
 * Threads: api_metrics() runs on the API's pool threads; the metrics
 * listener (when configured) is one more libmicrohttpd daemon with its own
 * internal thread. Both go through scrape(), which reads the cache under
 * g_cache_lock (a leaf lock, held only to copy or to wait on g_cache_cond)
 * and queries PostgreSQL without it; at most one scrape queries at a time
 * while the cache is on (snapshot()).
 */
#include "api_metrics.h"
#include "gateway.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "db.h"
#include "db_scrape.h"
#include "log.h"
#include "metrics.h"
#include "routes.h"

#define METRICS_CTYPE "text/plain; version=0.0.4; charset=utf-8"
/* A scrape waits this long for a pooled connection, then answers without
 * the cluster's state (trainyard_db_up 0) rather than queue behind the API. */
#define METRICS_DB_WAIT_MS 1000

struct metrics_listener {
    struct MHD_Daemon *daemon;
    struct srv_app *app;
};

/* A scrape that finds the cache stale while another scrape reads waits this
 * long for that read (its pool wait plus a query), then answers without the
 * cluster's state. */
#define METRICS_FLIGHT_WAIT_MS 10000

static pthread_mutex_t g_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cache_cond = PTHREAD_COND_INITIALIZER; /* a read ended */
static struct db_scrape_snapshot g_cache;                      /* guarded by g_cache_lock */
static int64_t g_cache_ms;              /* when g_cache was read; 0 = never */
static int g_reading;                   /* a scrape is reading the database now */
static uint64_t g_read_gen;             /* reads ended, ever */
static enum rc g_read_rc = RC_EUNAVAIL; /* how the last read ended */

/* Read the cluster's state from the database into *snap. */
static enum rc read_db(struct srv_app *app, struct db_scrape_snapshot *snap)
{
    PGconn *c = db_acquire(app->db, METRICS_DB_WAIT_MS);
    enum rc rc;

    if (c == NULL)
        return RC_EUNAVAIL;
    metrics_state_read();
    rc = db_scrape_read(c, snap);
    db_release(app->db, c);
    return rc;
}

/* Wait (g_cache_lock held) until the read in flight ends or the wait is
 * too long; returns that read's rc, RC_EUNAVAIL when it did not end. */
static enum rc wait_flight(void)
{
    uint64_t gen = g_read_gen;
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += METRICS_FLIGHT_WAIT_MS / 1000;
    while (g_reading && g_read_gen == gen)
        if (pthread_cond_timedwait(&g_cache_cond, &g_cache_lock, &ts) != 0)
            break;
    return g_read_gen != gen ? g_read_rc : RC_EUNAVAIL;
}

/*
 * The snapshot into *snap: from the cache when fresh, else from the
 * database (then cached). Single-flight: while one scrape reads, the others
 * that find the cache stale wait for its result instead of querying too, so
 * an expiry costs one query however many scrapes arrive. RC_EUNAVAIL when
 * the database cannot be read.
 */
static enum rc snapshot(struct srv_app *app, struct db_scrape_snapshot *snap)
{
    int ttl = app->cfg->metrics_cache_ms;
    enum rc rc, got;

    if (ttl <= 0)
        return read_db(app, snap); /* no cache: every scrape reads */
    pthread_mutex_lock(&g_cache_lock);
    if (g_cache_ms != 0 && srv_now_ms() - g_cache_ms < ttl) {
        rc = db_scrape_copy(snap, &g_cache);
        pthread_mutex_unlock(&g_cache_lock);
        return rc;
    }
    if (g_reading) {
        /* The read in flight answers this scrape too, fresh or not by now. */
        if ((rc = wait_flight()) == RC_OK)
            rc = db_scrape_copy(snap, &g_cache);
        pthread_mutex_unlock(&g_cache_lock);
        return rc;
    }
    g_reading = 1;
    pthread_mutex_unlock(&g_cache_lock);

    got = read_db(app, snap);

    pthread_mutex_lock(&g_cache_lock);
    rc = got;
    if (got == RC_OK) {
        db_scrape_cleanup(&g_cache);
        if (db_scrape_copy(&g_cache, snap) == RC_OK) {
            g_cache_ms = srv_now_ms();
        } else {
            g_cache_ms = 0;
            rc = RC_ENOMEM; /* the waiters find nothing cached */
        }
    }
    g_read_rc = rc;
    g_read_gen++;
    g_reading = 0;
    pthread_cond_broadcast(&g_cache_cond);
    pthread_mutex_unlock(&g_cache_lock);
    return got; /* this scrape has its own copy, cached or not */
}

static enum rc scrape(struct srv_app *app, char **out, size_t *len)
{
    struct db_scrape_snapshot snap = {NULL, 0};
    enum rc have = snapshot(app, &snap);
    size_t nroutes;
    enum rc rc;

    (void)routes_table(&nroutes);
    rc = metrics_render(app, have == RC_OK ? &snap : NULL, nroutes, routes_name, out, len);
    if (rc == RC_OK) {
        size_t cap = *len + 1;
        rc = serve_gw_metrics(app->gateway, out, len, &cap);
        if (rc != RC_OK) {
            free(*out);
            *out = NULL;
        }
    }

    db_scrape_cleanup(&snap);
    return rc;
}

/* 1 when no token is configured or auth is "Bearer <the token>". */
static int token_ok(const struct srv_app *app, const char *auth)
{
    const char *want = app->cfg->metrics_token;

    if (want[0] == '\0')
        return 1;
    if (auth == NULL || strncmp(auth, "Bearer ", 7) != 0)
        return 0;
    return crypto_str_equal(auth + 7, want);
}

enum rc api_metrics(struct srv_req *req)
{
    const struct srv_config *cfg = req->app->cfg;
    char *text = NULL;
    size_t len = 0;
    enum rc rc;

    /* Off, or served on a listener of its own: this one does not know it. */
    if (cfg->metrics_listen[0] != '\0' || cfg->metrics_token[0] == '\0')
        return srv_fail(req, RC_ENOTFOUND, "", "no such route: %s %s", req->method, req->path);
    if (!token_ok(req->app, srv_header(req, "Authorization")))
        return srv_fail(req, RC_EAUTH, "", "send the metrics token as a bearer token");
    if ((rc = scrape(req->app, &text, &len)) != RC_OK)
        return srv_fail(req, rc, "", "out of memory");
    req->resp_raw = text;
    req->resp_raw_len = len;
    req->resp_ctype = METRICS_CTYPE;
    req->status = 200;
    return RC_OK;
}

/* ------------------------------------------------------------------ */
/* The listener of its own                                              */

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *ctype,
                              char *body, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    enum MHD_Result ret;

    if (r == NULL) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", ctype);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (status == 401)
        MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result answer_error(struct MHD_Connection *conn, enum rc rc, const char *msg)
{
    char *body = NULL;
    int n =
        asprintf(&body, "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}", rc_api_code(rc), msg);

    if (n < 0)
        return MHD_NO;
    return answer(conn, (unsigned)srv_http_status(rc), "application/json; charset=utf-8", body,
                  (size_t)n);
}

static enum MHD_Result on_scrape(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
    struct metrics_listener *l = cls;
    static int first_call_marker;
    char *text = NULL;
    size_t len = 0;

    (void)version;
    (void)upload_data;
    if (*con_cls == NULL) {
        *con_cls = &first_call_marker; /* headers only; the body (if any) follows */
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        *upload_data_size = 0; /* a scrape has no body: drop it */
        return MHD_YES;
    }
    if (strcmp(url, "/metrics") != 0)
        return answer_error(conn, RC_ENOTFOUND, "no such route");
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return answer_error(conn, RC_EMETHOD, "only GET is allowed here");
    if (!token_ok(l->app, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization")))
        return answer_error(conn, RC_EAUTH, "send the metrics token as a bearer token");
    if (scrape(l->app, &text, &len) != RC_OK)
        return answer_error(conn, RC_ENOMEM, "internal error");
    return answer(conn, 200, METRICS_CTYPE, text, len);
}

enum rc metrics_listener_start(struct srv_app *app, struct metrics_listener **out)
{
    struct srv_config tmp;
    struct metrics_listener *l = NULL;
    struct sockaddr_in sin4;
    char host[128];
    int port;

    *out = NULL;
    if (app->cfg->metrics_listen[0] == '\0')
        return RC_OK;
    tmp = *app->cfg;
    snprintf(tmp.listen, sizeof(tmp.listen), "%s", app->cfg->metrics_listen);
    memset(&sin4, 0, sizeof(sin4));
    if (srv_config_listen(&tmp, host, sizeof(host), &port) != RC_OK ||
        inet_pton(AF_INET, host, &sin4.sin_addr) != 1) {
        LOG_ERROR("metrics", "metrics_listen must be IPv4-ADDRESS:PORT", "metrics_listen=\"%s\"",
                  app->cfg->metrics_listen);
        return RC_EINVAL;
    }
    sin4.sin_family = AF_INET;
    sin4.sin_port = htons((uint16_t)port);
    l = calloc(1, sizeof(*l));
    if (l == NULL)
        return RC_ENOMEM;
    l->app = app;
    l->daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, (uint16_t)port, NULL, NULL, on_scrape, l,
        MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&sin4, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)30, MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_END);
    if (l->daemon == NULL) {
        LOG_ERROR("metrics", "cannot listen", "metrics_listen=\"%s\"", app->cfg->metrics_listen);
        free(l);
        return RC_EUNAVAIL;
    }
    LOG_INFO("metrics", "listening", "addr=%s port=%d token=%s", host, metrics_listener_port(l),
             app->cfg->metrics_token[0] ? "required" : "none");
    *out = l;
    return RC_OK;
}

int metrics_listener_port(const struct metrics_listener *l)
{
    const union MHD_DaemonInfo *di;

    if (l == NULL || l->daemon == NULL)
        return 0;
    di = MHD_get_daemon_info(l->daemon, MHD_DAEMON_INFO_BIND_PORT);
    return di ? di->port : 0;
}

void metrics_listener_stop(struct metrics_listener *l)
{
    if (l == NULL)
        return;
    MHD_stop_daemon(l->daemon);
    free(l);
}
