/*
 * notify.c - cross-replica wake-ups over LISTEN/NOTIFY (see notify.h).
 *
 * The listener thread owns its connection and its parse buffer; nothing in
 * struct notify_listener is shared after start, so there is no lock. It
 * sleeps in poll() on the connection's socket for at most NOTIFY_POLL_MS at
 * a time so that it notices app_stopping(app). The connection is made with
 * PQconnectStartParams/PQconnectPoll for the same reason: a database that
 * does not answer must not hold up a shutdown.
 *
 * The two SQL statements (LISTEN, pg_notify) live here rather than in a
 * db_*.c file because they are this module's whole transport, like the
 * advisory-lock statements of sched_loop.c.
 */
#include "notify.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "db.h"
#include "log.h"
#include "srv.h"
#include "waiters.h"

#define NOTIFY_POLL_MS 200
#define NOTIFY_CONNECT_TIMEOUT_MS 10000
#define NOTIFY_BACKOFF_MIN_MS 100
#define NOTIFY_BACKOFF_MAX_MS 5000

struct notify_listener {
    struct srv_app *app; /* borrowed */
    pthread_t thread;
    PGconn *conn;          /* owned by the thread; NULL while disconnected */
    struct notify_msg msg; /* parse buffer (32 KiB: kept off the stack) */
};

static int sender_valid(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n >= NOTIFY_SENDER_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

enum rc notify_format(const char *sender, const int64_t *keys, size_t n, int wake_scheduler,
                      char *buf, size_t size)
{
    size_t off, limit = size < NOTIFY_PAYLOAD_MAX ? size : NOTIFY_PAYLOAD_MAX;
    int all = 0, w;

    if (size > 0)
        buf[0] = '\0';
    /* The longest fallback, "<sender>:s,0", must always fit. */
    if (sender == NULL || !sender_valid(sender) || limit < strlen(sender) + 5)
        return RC_EINVAL;
    w = snprintf(buf, limit, "%s:%s", sender, wake_scheduler ? "s" : "");
    off = (size_t)w;
    for (size_t i = 0; i < n && !all; i++) {
        if (keys[i] == 0) {
            all = 1;
            break;
        }
        w = snprintf(buf + off, limit - off, "%s%lld", buf[off - 1] == ':' ? "" : ",",
                     (long long)keys[i]);
        if (w < 0 || (size_t)w >= limit - off)
            all = 1; /* does not fit: wake everyone instead */
        else
            off += (size_t)w;
    }
    if (all)
        snprintf(buf, limit, "%s:%s0", sender, wake_scheduler ? "s," : "");
    return RC_OK;
}

/* One decimal int64 from s[0..len), nothing else. */
static int parse_key(const char *s, size_t len, int64_t *out)
{
    char tmp[24], *end = NULL;
    long long v;

    if (len == 0 || len >= sizeof(tmp))
        return 0;
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    if (!(tmp[0] == '-' || (tmp[0] >= '0' && tmp[0] <= '9')))
        return 0;
    errno = 0;
    v = strtoll(tmp, &end, 10);
    if (errno != 0 || end != tmp + len)
        return 0;
    *out = (int64_t)v;
    return 1;
}

enum rc notify_parse(const char *payload, struct notify_msg *out)
{
    const char *colon, *p;
    size_t len;

    memset(out, 0, sizeof(*out));
    if (payload == NULL || strnlen(payload, NOTIFY_PAYLOAD_MAX) >= NOTIFY_PAYLOAD_MAX)
        return RC_EINVAL;
    colon = strchr(payload, ':');
    if (colon == NULL || (size_t)(colon - payload) >= NOTIFY_SENDER_MAX)
        return RC_EINVAL;
    memcpy(out->sender, payload, (size_t)(colon - payload));
    if (!sender_valid(out->sender) || colon[1] == '\0')
        goto bad;
    for (p = colon + 1;; p += len + 1) {
        int64_t key;
        len = strcspn(p, ",");
        if (len == 1 && p[0] == 's') {
            out->wake_scheduler = 1;
        } else if (parse_key(p, len, &key)) {
            if (out->nkeys < NOTIFY_MAX_KEYS) {
                out->keys[out->nkeys++] = key;
            } else {
                out->keys[0] = 0; /* too many: everyone */
                out->nkeys = 1;
            }
        } else {
            goto bad;
        }
        if (p[len] == '\0')
            break;
    }
    /* A key 0 anywhere covers the rest. */
    for (size_t i = 0; i < out->nkeys; i++)
        if (out->keys[i] == 0) {
            out->keys[0] = 0;
            out->nkeys = 1;
            break;
        }
    return RC_OK;
bad:
    memset(out, 0, sizeof(*out));
    return RC_EINVAL;
}

enum rc notify_send(struct srv_app *app, PGconn *c, const int64_t *keys, size_t n,
                    int wake_scheduler, const char *req_id)
{
    static const char sql[] = "SELECT pg_notify('" NOTIFY_CHANNEL "', $1)";
    char payload[NOTIFY_PAYLOAD_MAX];
    const char *p[] = {payload};
    PGresult *r;
    enum rc rc;

    if (n == 0 && !wake_scheduler)
        return RC_OK;
    rc = notify_format(app->replica_id, keys, n, wake_scheduler, payload, sizeof(payload));
    if (rc != RC_OK)
        return rc;
    r = db_exec(c, sql, 1, p);
    rc = db_result_rc(r, req_id);
    PQclear(r);
    if (rc != RC_OK)
        LOG_WARN("notify", "cannot send a wake-up to the other replicas", "req_id=%s rc=%s", req_id,
                 rc_str(rc));
    return rc;
}

enum rc notify_send_job(struct srv_app *app, PGconn *c, int64_t job_id, const json_t *nodes,
                        int wake_scheduler, const char *req_id)
{
    /* A job spans a few nodes; past this many, waking everyone is as good. */
    int64_t keys[128];
    size_t n = 0, i;
    const json_t *node;

    json_array_foreach(nodes, i, node)
    {
        int64_t id;
        if (n == sizeof(keys) / sizeof(keys[0]) - 1) {
            keys[0] = 0;
            n = 1;
            break;
        }
        if (db_parse_i64(json_string_value(json_object_get(node, "node_id")), &id) == RC_OK)
            keys[n++] = id;
    }
    keys[n++] = -job_id;
    return notify_send(app, c, keys, n, wake_scheduler, req_id);
}

/* Sleep ms in slices, returning early (0) once the server stops. */
static int nap(struct srv_app *app, int ms)
{
    while (ms > 0 && !app_stopping(app)) {
        int step = ms < NOTIFY_POLL_MS ? ms : NOTIFY_POLL_MS;
        struct timespec ts = {step / 1000, (long)(step % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
    return !app_stopping(app);
}

/* Connect without blocking past NOTIFY_POLL_MS at a time; NULL on failure. */
static PGconn *connect_db(struct srv_app *app)
{
    struct db_conninfo ci;
    PGconn *c;
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    int64_t deadline = srv_now_ms() + NOTIFY_CONNECT_TIMEOUT_MS;

    /* The pool's keepalives and session settings (db.h): a listener on a
     * vanished database host notices in seconds, not hours. */
    if (db_conninfo_init(&ci, app->cfg->database_url, "trainyard-server-notify") != RC_OK)
        return NULL;
    c = PQconnectStartParams(ci.keys, ci.vals, 1);
    db_conninfo_cleanup(&ci);
    if (c == NULL)
        return NULL;
    if (PQstatus(c) == CONNECTION_BAD)
        goto fail;
    while (st != PGRES_POLLING_OK) {
        struct pollfd pfd = {PQsocket(c), st == PGRES_POLLING_READING ? POLLIN : POLLOUT, 0};
        int r;
        if (st == PGRES_POLLING_FAILED || app_stopping(app) || srv_now_ms() > deadline ||
            pfd.fd < 0)
            goto fail;
        r = poll(&pfd, 1, NOTIFY_POLL_MS);
        if (r < 0 && errno != EINTR)
            goto fail;
        if (r > 0)
            st = PQconnectPoll(c);
    }
    return c;
fail:
    PQfinish(c);
    return NULL;
}

/* libpq prints notices to stderr by default, among them the FATAL a
 * terminated session sends before it closes; the loss itself is logged. */
static void quiet_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* Connect and LISTEN; 1 when listening. */
static int start_listening(struct notify_listener *l)
{
    PGresult *r;
    int ok;

    l->conn = connect_db(l->app);
    if (l->conn == NULL)
        return 0;
    PQsetNoticeProcessor(l->conn, quiet_notice, NULL);
    r = PQexec(l->conn, "LISTEN " NOTIFY_CHANNEL);
    ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok) {
        PQfinish(l->conn);
        l->conn = NULL;
    }
    return ok;
}

static void apply(struct notify_listener *l, const PGnotify *n)
{
    struct srv_app *app = l->app;

    if (strcmp(n->relname, NOTIFY_CHANNEL) != 0)
        return;
    if (notify_parse(n->extra, &l->msg) != RC_OK) {
        LOG_WARN("notify", "ignored a malformed wake-up", "bytes=%zu backend_pid=%d",
                 strlen(n->extra), n->be_pid);
        return;
    }
    if (strcmp(l->msg.sender, app->replica_id) == 0)
        return; /* ours: applied locally when it was sent */
    LOG_DEBUG("notify", "wake-up from a replica", "sender=%s keys=%zu scheduler=%d", l->msg.sender,
              l->msg.nkeys, l->msg.wake_scheduler);
    for (size_t i = 0; i < l->msg.nkeys; i++)
        waiters_notify(app->waiters, l->msg.keys[i]);
    if (l->msg.wake_scheduler)
        app_wake_scheduler(app);
}

/* Wait for and apply notifications until the connection breaks or the
 * server stops. */
static void listen_loop(struct notify_listener *l)
{
    while (!app_stopping(l->app)) {
        struct pollfd pfd = {PQsocket(l->conn), POLLIN, 0};
        PGnotify *n;
        int r;

        if (pfd.fd < 0)
            return;
        r = poll(&pfd, 1, NOTIFY_POLL_MS);
        if (r < 0 && errno != EINTR)
            return;
        if (r > 0 && !PQconsumeInput(l->conn))
            return;
        while ((n = PQnotifies(l->conn)) != NULL) {
            apply(l, n);
            PQfreemem(n);
        }
        if (PQstatus(l->conn) != CONNECTION_OK)
            return;
    }
}

static void *listener_main(void *arg)
{
    struct notify_listener *l = arg;
    struct srv_app *app = l->app;
    int backoff = NOTIFY_BACKOFF_MIN_MS, warned = 0;

    while (!app_stopping(app)) {
        if (!start_listening(l)) {
            if (!warned)
                LOG_WARN("notify", "cannot listen for wake-ups from other replicas; retrying",
                         "retry_ms=%d", backoff);
            warned = 1;
            nap(app, backoff);
            backoff = backoff * 2 > NOTIFY_BACKOFF_MAX_MS ? NOTIFY_BACKOFF_MAX_MS : backoff * 2;
            continue;
        }
        if (warned)
            LOG_INFO("notify", "listening for wake-ups from other replicas again", "");
        warned = 0;
        backoff = NOTIFY_BACKOFF_MIN_MS;
        /* Whatever was sent while nobody listened is lost (and at start a
         * long-poll may have parked before LISTEN): look again everywhere. */
        waiters_notify(app->waiters, 0);
        app_wake_scheduler(app);
        listen_loop(l);
        if (!app_stopping(app))
            LOG_WARN("notify", "lost the wake-up connection to the database; reconnecting", "");
        PQfinish(l->conn);
        l->conn = NULL;
        if (!app_stopping(app))
            nap(app, backoff);
    }
    return NULL;
}

enum rc notify_listener_start(struct srv_app *app, struct notify_listener **out)
{
    struct notify_listener *l = calloc(1, sizeof(*l));

    if (l == NULL)
        return RC_ENOMEM;
    l->app = app;
    if (pthread_create(&l->thread, NULL, listener_main, l) != 0) {
        free(l);
        return RC_EINTERNAL;
    }
    *out = l;
    return RC_OK;
}

void notify_listener_stop(struct notify_listener *l)
{
    if (l == NULL)
        return;
    pthread_join(l->thread, NULL);
    free(l);
}
