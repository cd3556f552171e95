/*
 * db.c - libpq pool and migrations.
 *
 * The pool is an array of slots guarded by one mutex and a condition
 * variable. Connections are opened lazily on first use so a server can start
 * (and answer /healthz) while the database is still coming up. The mutex is
 * never held while talking to the server, only while picking a slot.
 */
#include "db.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-events.h>

#include "jx.h"
#include "log.h"
#include "metrics.h"

/* The generated table of embedded migrations (cmake/embed.cmake). */
struct ty_embedded {
    const char *name;
    const unsigned char *data;
    size_t len;
};
extern const struct ty_embedded ty_migrations[];
extern const unsigned ty_migrations_count;

struct db_slot {
    /* Owned; NULL until first use. Written only by the thread that has the
     * slot checked out, and then under db->lock, because db_acquire() and
     * db_release() read every slot's conn under it; that thread alone may
     * read it without the lock. */
    PGconn *conn;
    int busy; /* checked out by a thread; under db->lock */
};

struct db {
    char *url; /* owned; never logged */
    int size;
    struct db_slot *slots; /* owned, size entries */
    pthread_mutex_t lock;
    pthread_cond_t freed;
};

/*
 * How soon a session whose peer vanished (a host powered off, a cable
 * pulled: no FIN, no RST) is given up, on both ends. Linux's defaults wait
 * about two hours, and PostgreSQL keeps a dead session's locks until it
 * notices: the scheduling leader's advisory lock among them, so a vanished
 * leader host would stop scheduling for two hours. Idle 5 s, then a probe
 * every 2 s, 3 unanswered: about 11 s; data unacknowledged for 10 s gives up
 * too. On a Unix socket all of it is ignored.
 */
#define DB_KEEPALIVE_IDLE_S "5"
#define DB_KEEPALIVE_INTERVAL_S "2"
#define DB_KEEPALIVE_COUNT "3"
#define DB_TCP_USER_TIMEOUT_MS "10000"

/*
 * The session settings, as startup options: PostgreSQL applies them when
 * the session starts, so every connection has them, and so does every
 * PQreset() of one (db_acquire), which reconnects with the same options but
 * runs nothing after. (A SET after connecting was lost at the first
 * database restart: the server's end back to two hours of dead-peer
 * detection, and timestamps in the database's own time zone.)
 *
 * The server's end probes this client the way the client keys above probe
 * the server, so that PostgreSQL ends the session of a vanished replica and
 * frees its locks in seconds. The site's own options (the URL's, else
 * PGOPTIONS, which an explicit options key would hide) come after them, so
 * the same settings there win, as the URL's keepalive keys do on the
 * client's end; the time zone comes last and always holds: iso_ts() reads
 * "+00" as UTC.
 */
#define DB_SERVER_OPTIONS                                                                          \
    "-c tcp_keepalives_idle=" DB_KEEPALIVE_IDLE_S                                                  \
    " -c tcp_keepalives_interval=" DB_KEEPALIVE_INTERVAL_S                                         \
    " -c tcp_keepalives_count=" DB_KEEPALIVE_COUNT " -c tcp_user_timeout=" DB_TCP_USER_TIMEOUT_MS
#define DB_TIME_ZONE_OPTION "-c TimeZone=UTC"

/* The options the URL (or PGOPTIONS) names; "" when none or url does not
 * parse (the connection then fails and says why). Owned by the caller. */
static char *site_options(const char *url)
{
    PQconninfoOption *opts = PQconninfoParse(url, NULL);
    const char *v = NULL;
    char *copy;

    for (PQconninfoOption *o = opts; o != NULL && o->keyword != NULL; o++)
        if (strcmp(o->keyword, "options") == 0 && o->val != NULL)
            v = o->val;
    if (v == NULL || *v == '\0')
        v = getenv("PGOPTIONS");
    copy = strdup(v != NULL ? v : "");
    PQconninfoFree(opts);
    return copy;
}

enum rc db_conninfo_init(struct db_conninfo *ci, const char *url, const char *app_name)
{
    char *site = site_options(url);
    size_t n;

    memset(ci, 0, sizeof(*ci));
    if (site == NULL)
        return RC_ENOMEM;
    n = sizeof(DB_SERVER_OPTIONS) + strlen(site) + sizeof(DB_TIME_ZONE_OPTION) + 2;
    ci->options = malloc(n);
    if (ci->options == NULL) {
        free(site);
        return RC_ENOMEM;
    }
    snprintf(ci->options, n, "%s %s%s%s", DB_SERVER_OPTIONS, site, *site ? " " : "",
             DB_TIME_ZONE_OPTION);
    free(site);
    /* The keepalive keys come before dbname, so that the same keys in the
     * URL (a site's own choice) override them; options after it, since
     * they carry the URL's own. */
    {
        const char *keys[] = {"keepalives",
                              "keepalives_idle",
                              "keepalives_interval",
                              "keepalives_count",
                              "tcp_user_timeout",
                              "dbname",
                              "options",
                              "application_name",
                              "connect_timeout",
                              NULL};
        const char *vals[] = {"1",
                              DB_KEEPALIVE_IDLE_S,
                              DB_KEEPALIVE_INTERVAL_S,
                              DB_KEEPALIVE_COUNT,
                              DB_TCP_USER_TIMEOUT_MS,
                              url,
                              ci->options,
                              app_name,
                              "5",
                              NULL};
        _Static_assert(sizeof(keys) <= sizeof(ci->keys), "db_conninfo.keys is too small");
        _Static_assert(sizeof(vals) == sizeof(keys), "one value per key");
        memcpy(ci->keys, keys, sizeof(keys));
        memcpy(ci->vals, vals, sizeof(vals));
    }
    return RC_OK;
}

void db_conninfo_cleanup(struct db_conninfo *ci)
{
    free(ci->options);
    ci->options = NULL;
}

static PGconn *connect_url(const char *url)
{
    struct db_conninfo ci;
    PGconn *c;

    if (db_conninfo_init(&ci, url, "trainyard-server") != RC_OK)
        return NULL;
    c = PQconnectdbParams(ci.keys, ci.vals, 1);
    db_conninfo_cleanup(&ci);
    if (c != NULL && PQstatus(c) != CONNECTION_OK) {
        LOG_WARN("db", "connect failed", "error=\"%s\"", PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    return c;
}

enum rc db_open(const char *url, int size, struct db **out)
{
    struct db *db = NULL;
    PGconn *probe = NULL;

    if (url == NULL || size < 1)
        return RC_EINVAL;
    db = calloc(1, sizeof(*db));
    if (db == NULL)
        return RC_ENOMEM;
    db->url = strdup(url);
    db->slots = calloc((size_t)size, sizeof(*db->slots));
    if (db->url == NULL || db->slots == NULL) {
        free(db->url);
        free(db->slots);
        free(db);
        return RC_ENOMEM;
    }
    db->size = size;
    pthread_mutex_init(&db->lock, NULL);
    pthread_cond_init(&db->freed, NULL);
    probe = connect_url(url);
    if (probe == NULL) {
        db_free(db);
        return RC_EUNAVAIL;
    }
    db->slots[0].conn = probe;
    *out = db;
    return RC_OK;
}

void db_free(struct db *db)
{
    if (db == NULL)
        return;
    for (int i = 0; i < db->size; i++)
        if (db->slots[i].conn != NULL)
            PQfinish(db->slots[i].conn);
    pthread_mutex_destroy(&db->lock);
    pthread_cond_destroy(&db->freed);
    free(db->slots);
    free(db->url);
    free(db);
}

PGconn *db_acquire(struct db *db, int timeout_ms)
{
    struct timespec deadline;
    PGconn *conn;
    int idx = -1;
    struct timespec wait_start = {0, 0}; /* set when no slot was free at once */

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&db->lock);
    for (;;) {
        /* Prefer an open idle connection, then an empty slot. */
        for (int i = 0; i < db->size && idx < 0; i++)
            if (!db->slots[i].busy && db->slots[i].conn != NULL)
                idx = i;
        for (int i = 0; i < db->size && idx < 0; i++)
            if (!db->slots[i].busy)
                idx = i;
        if (idx >= 0)
            break;
        if (wait_start.tv_sec == 0)
            clock_gettime(CLOCK_MONOTONIC, &wait_start);
        if (pthread_cond_timedwait(&db->freed, &db->lock, &deadline) == ETIMEDOUT)
            break;
    }
    if (idx >= 0)
        db->slots[idx].busy = 1;
    pthread_mutex_unlock(&db->lock);
    if (wait_start.tv_sec != 0) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        metrics_db_pool_wait((int64_t)(now.tv_sec - wait_start.tv_sec) * 1000000 +
                                 (now.tv_nsec - wait_start.tv_nsec) / 1000,
                             idx < 0);
    }
    if (idx < 0)
        return NULL;
    conn = db->slots[idx].conn; /* the slot is ours: nobody else writes it */
    if (conn == NULL) {
        /* Connect without the lock (it never covers talking to the server),
         * store with it: other threads scan every slot's conn. */
        conn = connect_url(db->url);
        pthread_mutex_lock(&db->lock);
        db->slots[idx].conn = conn;
        pthread_mutex_unlock(&db->lock);
    }
    if (conn != NULL && PQstatus(conn) != CONNECTION_OK)
        PQreset(conn); /* the same PGconn, reconnected */
    if (conn == NULL || PQstatus(conn) != CONNECTION_OK) {
        pthread_mutex_lock(&db->lock);
        db->slots[idx].busy = 0;
        pthread_cond_signal(&db->freed);
        pthread_mutex_unlock(&db->lock);
        return NULL;
    }
    return conn;
}

void db_release(struct db *db, PGconn *conn)
{
    if (conn == NULL)
        return;
    if (PQtransactionStatus(conn) != PQTRANS_IDLE) {
        PGresult *r = PQexec(conn, "ROLLBACK");
        PQclear(r);
    }
    pthread_mutex_lock(&db->lock);
    for (int i = 0; i < db->size; i++) {
        if (db->slots[i].conn == conn) {
            db->slots[i].busy = 0;
            break;
        }
    }
    pthread_cond_signal(&db->freed);
    pthread_mutex_unlock(&db->lock);
}

int db_ping(struct db *db)
{
    PGconn *c = db_acquire(db, 1000);
    PGresult *r;
    int ok;

    if (c == NULL)
        return 0;
    r = PQexec(c, "SELECT 1");
    ok = PQresultStatus(r) == PGRES_TUPLES_OK;
    PQclear(r);
    db_release(db, c);
    return ok;
}

/*
 * Prepared statements, cached per connection. Every SQL text in the server
 * is a string literal, so its address identifies it: the first use on a
 * connection prepares it (PQprepare), later uses only bind and execute
 * (PQexecPrepared). That saves the parse and plan of every call, which was
 * most of PostgreSQL's time per API request (bench/RESULTS.md, "API").
 * The cache hangs off the PGconn as libpq instance data and is dropped when
 * the connection is reset or closed, since the server forgets statements
 * then too. A connection is used by one thread at a time, so no lock.
 */
#define DB_STMT_CACHE 256

struct stmt_cache {
    const char *sql[DB_STMT_CACHE]; /* borrowed literals */
    int n;
};

static int stmt_event(PGEventId id, void *info, void *pass)
{
    (void)pass;
    if (id == PGEVT_CONNRESET || id == PGEVT_CONNDESTROY) {
        PGconn *c = id == PGEVT_CONNRESET ? ((PGEventConnReset *)info)->conn
                                          : ((PGEventConnDestroy *)info)->conn;
        struct stmt_cache *sc = PQinstanceData(c, stmt_event);
        if (sc != NULL && id == PGEVT_CONNRESET)
            sc->n = 0;
        if (sc != NULL && id == PGEVT_CONNDESTROY) {
            free(sc);
            PQsetInstanceData(c, stmt_event, NULL);
        }
    }
    return 1;
}

/* The connection's cache, created on first use; NULL if that fails. */
static struct stmt_cache *stmt_cache_of(PGconn *conn)
{
    struct stmt_cache *sc = PQinstanceData(conn, stmt_event);

    if (sc != NULL)
        return sc;
    if (!PQregisterEventProc(conn, stmt_event, "trainyard-stmts", NULL))
        return NULL;
    sc = calloc(1, sizeof(*sc));
    if (sc != NULL && !PQsetInstanceData(conn, stmt_event, sc)) {
        free(sc);
        sc = NULL;
    }
    return sc;
}

PGresult *db_exec(PGconn *conn, const char *sql, int n, const char *const *params)
{
    struct stmt_cache *sc;
    char name[16];
    int i;

    /* Inside a failed transaction nothing can be prepared; let PostgreSQL
     * answer with its error as it would for the statement itself. */
    if (PQtransactionStatus(conn) == PQTRANS_INERROR || (sc = stmt_cache_of(conn)) == NULL)
        return PQexecParams(conn, sql, n, NULL, params, NULL, NULL, 0);
    for (i = 0; i < sc->n; i++)
        if (sc->sql[i] == sql)
            break;
    if (i == sc->n) {
        PGresult *r;
        if (sc->n == DB_STMT_CACHE)
            return PQexecParams(conn, sql, n, NULL, params, NULL, NULL, 0);
        snprintf(name, sizeof(name), "ty%d", i);
        r = PQprepare(conn, name, sql, n, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            return r; /* the statement's own error (syntax, types) */
        PQclear(r);
        sc->sql[sc->n++] = sql;
    }
    snprintf(name, sizeof(name), "ty%d", i);
    return PQexecPrepared(conn, name, n, params, NULL, NULL, 0);
}

enum rc db_result_rc(const PGresult *res, const char *req_id)
{
    const char *state;
    ExecStatusType st;

    if (res == NULL)
        return RC_EUNAVAIL;
    st = PQresultStatus(res);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
        return RC_OK;
    state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    if (state == NULL && st == PGRES_FATAL_ERROR) {
        /* Every error PostgreSQL sends carries a SQLSTATE; one without is
         * libpq's own: the connection was lost (a database restart, a
         * network failure) or could not be used. That is "unavailable"
         * (503, try again), not an internal error: the pool reconnects at
         * the next checkout. */
        LOG_WARN("db", "database connection lost", "req_id=%s error=\"%s\"", req_id ? req_id : "-",
                 PQresultErrorMessage(res));
        return RC_EUNAVAIL;
    }
    if (state == NULL)
        state = "";
    if (strcmp(state, "23505") == 0)
        return RC_ECONFLICT;
    if (strcmp(state, "23503") == 0)
        return RC_ENOTFOUND;
    if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0) {
        const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
        /* Handled where db_tx() runs the transaction again, but worth
         * knowing of: a deadlock means two transactions took their locks in
         * different orders. */
        LOG_WARN("db", "transaction conflict", "req_id=%s sqlstate=%s error=\"%s\"",
                 req_id ? req_id : "-", state, msg ? msg : "");
        return RC_ERETRY;
    }
    if (strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0)
        return RC_EUNAVAIL;
    if (strncmp(state, "22", 2) == 0 || strncmp(state, "23", 2) == 0)
        return RC_EINVAL;
    LOG_ERROR("db", "statement failed", "req_id=%s sqlstate=%s error=\"%s\"", req_id ? req_id : "-",
              state, PQresultErrorMessage(res));
    return RC_EINTERNAL;
}

enum rc db_exec_ok(PGconn *conn, const char *req_id, const char *sql, int n,
                   const char *const *params)
{
    PGresult *r = db_exec(conn, sql, n, params);
    enum rc rc = db_result_rc(r, req_id);

    PQclear(r);
    return rc;
}

enum rc db_begin(PGconn *conn)
{
    return db_exec_ok(conn, NULL, "BEGIN", 0, NULL);
}

enum rc db_commit(PGconn *conn)
{
    return db_exec_ok(conn, NULL, "COMMIT", 0, NULL);
}

void db_rollback(PGconn *conn)
{
    PGresult *r = PQexec(conn, "ROLLBACK");
    PQclear(r);
}

long db_tx_backoff_us(int run, unsigned rnd)
{
    long base;

    if (run < 2)
        return 0;
    if (run > DB_TX_TRIES)
        run = DB_TX_TRIES;
    base = 500L << (run - 2);
    return base + (long)(rnd % (unsigned)base);
}

enum rc db_tx_run(const struct db_tx_ops *ops, void *ctx, db_tx_body body, void *arg,
                  const char *req_id)
{
    enum rc rc = RC_EINTERNAL;

    for (int run = 1; run <= DB_TX_TRIES; run++) {
        if (run > 1) {
            /* Two transactions that deadlocked are often started together
             * again; a random pause lets one of them go first. Not security
             * relevant, so the clock's low bits will do as randomness. */
            struct timespec now;
            long us;
            clock_gettime(CLOCK_MONOTONIC, &now);
            us = db_tx_backoff_us(run, (unsigned)now.tv_nsec * 2654435761u);
            LOG_INFO("db", "transaction retried", "req_id=%s run=%d pause_us=%ld",
                     req_id ? req_id : "-", run, us);
            ops->pause_us(ctx, us);
        }
        if ((rc = ops->begin(ctx)) != RC_OK)
            return rc;
        rc = body(arg);
        if (rc == RC_OK)
            rc = ops->commit(ctx);
        if (rc != RC_OK)
            ops->rollback(ctx);
        if (rc != RC_ERETRY)
            return rc;
    }
    LOG_WARN("db", "transaction given up after conflicts", "req_id=%s runs=%d",
             req_id ? req_id : "-", DB_TX_TRIES);
    return rc;
}

static enum rc pq_begin(void *ctx)
{
    return db_begin(ctx);
}

static enum rc pq_commit(void *ctx)
{
    return db_commit(ctx);
}

static void pq_rollback(void *ctx)
{
    db_rollback(ctx);
}

static void pq_pause_us(void *ctx, long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};

    (void)ctx;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

enum rc db_tx(PGconn *conn, db_tx_body body, void *arg, const char *req_id)
{
    static const struct db_tx_ops pq_ops = {pq_begin, pq_commit, pq_rollback, pq_pause_us};

    return db_tx_run(&pq_ops, conn, body, arg, req_id);
}

enum rc db_parse_i64(const char *s, int64_t *out)
{
    char *end = NULL;
    long long v;

    if (s == NULL || *s == '\0')
        return RC_EINVAL;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return RC_EINVAL;
    *out = (int64_t)v;
    return RC_OK;
}

/* Version number from a migration file name "NNN_name.sql"; -1 if malformed. */
static int migration_version(const char *name)
{
    int v = 0, digits = 0;

    for (const char *p = name; *p >= '0' && *p <= '9'; p++, digits++)
        v = v * 10 + (*p - '0');
    return (digits == 3 && name[3] == '_') ? v : -1;
}

int db_schema_version_known(void)
{
    int max = 0;

    for (unsigned i = 0; i < ty_migrations_count; i++) {
        int v = migration_version(ty_migrations[i].name);
        if (v > max)
            max = v;
    }
    return max;
}

static enum rc apply_migration(PGconn *c, const struct ty_embedded *m, int version)
{
    char vbuf[16];
    const char *params[2];
    PGresult *r = NULL;
    enum rc rc;

    snprintf(vbuf, sizeof(vbuf), "%d", version);
    params[0] = vbuf;
    params[1] = m->name;
    if ((rc = db_begin(c)) != RC_OK)
        return rc;
    /* PQexec runs the whole multi-statement file in this transaction. */
    r = PQexec(c, (const char *)m->data);
    rc = db_result_rc(r, NULL);
    PQclear(r);
    if (rc == RC_OK)
        rc = db_exec_ok(c, NULL, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", 2,
                        params);
    if (rc == RC_OK)
        rc = db_commit(c);
    else
        db_rollback(c);
    if (rc == RC_OK)
        LOG_INFO("db", "migration applied", "version=%d name=%s", version, m->name);
    return rc;
}

enum rc db_migrate(struct db *db)
{
    PGconn *c = db_acquire(db, 10000);
    PGresult *r = NULL;
    enum rc rc = RC_EINTERNAL;
    int have = 0, known = db_schema_version_known();

    if (c == NULL)
        return RC_EUNAVAIL;
    /* Replicas starting at once take turns; the lock ends with the session's use. */
    rc = db_exec_ok(c, NULL, "SELECT pg_advisory_lock(7243001)", 0, NULL);
    if (rc != RC_OK)
        goto out;
    rc = db_exec_ok(c, NULL,
                    "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, "
                    "name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
                    0, NULL);
    if (rc != RC_OK)
        goto unlock;
    r = PQexec(c, "SELECT coalesce(max(version), 0) FROM schema_migrations");
    if ((rc = db_result_rc(r, NULL)) != RC_OK)
        goto unlock;
    have = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
    if (have > known) {
        LOG_ERROR("db", "database schema is newer than this server",
                  "db_version=%d known_version=%d", have, known);
        rc = RC_ECONFLICT;
        goto unlock;
    }
    for (int v = have + 1; v <= known && rc == RC_OK; v++) {
        for (unsigned i = 0; i < ty_migrations_count; i++)
            if (migration_version(ty_migrations[i].name) == v)
                rc = apply_migration(c, &ty_migrations[i], v);
    }
unlock:
    PQclear(r);
    r = PQexec(c, "SELECT pg_advisory_unlock(7243001)");
out:
    PQclear(r);
    db_release(db, c);
    return rc;
}

/* libpq type OIDs (server/catalog/pg_type.dat). */
#define OID_BOOL 16
#define OID_INT8 20
#define OID_INT2 21
#define OID_INT4 23
#define OID_JSON 114
#define OID_FLOAT4 700
#define OID_FLOAT8 701
#define OID_TIMESTAMPTZ 1184
#define OID_JSONB 3802

static int is_id_column(const char *name)
{
    size_t n = strlen(name);
    return strcmp(name, "id") == 0 || (n > 3 && strcmp(name + n - 3, "_id") == 0);
}

/* "2026-11-29 19:18:37.123+00" -> "2026-11-29T19:18:37.123Z" (sessions run in UTC). */
static json_t *iso_ts(const char *v)
{
    char buf[64];
    size_t n = strlen(v);

    if (n >= sizeof(buf) || n < 19)
        return json_string(v);
    memcpy(buf, v, n + 1);
    buf[10] = 'T';
    if (n > 3 && strcmp(buf + n - 3, "+00") == 0) {
        buf[n - 3] = 'Z';
        buf[n - 2] = '\0';
    }
    return json_string(buf);
}

json_t *db_row_to_json(const PGresult *res, int row)
{
    json_t *o = json_object();
    int ncols = PQnfields(res);

    if (o == NULL)
        return NULL;
    for (int c = 0; c < ncols; c++) {
        const char *name = PQfname(res, c);
        const char *v = PQgetvalue(res, row, c);
        Oid t = PQftype(res, c);
        json_t *j;
        if (PQgetisnull(res, row, c)) {
            j = json_null();
        } else if (is_id_column(name)) {
            j = json_string(v);
        } else if (t == OID_INT8 || t == OID_INT4 || t == OID_INT2) {
            j = json_integer(strtoll(v, NULL, 10));
        } else if (t == OID_FLOAT4 || t == OID_FLOAT8) {
            j = json_real(strtod(v, NULL));
        } else if (t == OID_BOOL) {
            j = json_boolean(v[0] == 't');
        } else if (t == OID_JSON || t == OID_JSONB) {
            j = jx_loads(v, JSON_DECODE_ANY);
            if (j == NULL)
                j = json_null();
        } else if (t == OID_TIMESTAMPTZ) {
            j = iso_ts(v);
        } else {
            j = json_string(v);
        }
        if (j == NULL || json_object_set_new(o, name, j) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

enum rc db_query_json(PGconn *conn, const char *sql, int n, const char *const *params, int one,
                      json_t **out, const char *req_id)
{
    PGresult *res = db_exec(conn, sql, n, params);
    enum rc rc = db_result_rc(res, req_id);

    *out = NULL;
    if (rc == RC_OK && one) {
        if (PQntuples(res) < 1)
            rc = RC_ENOTFOUND;
        else if ((*out = db_row_to_json(res, 0)) == NULL)
            rc = RC_ENOMEM;
    } else if (rc == RC_OK) {
        *out = json_array();
        for (int i = 0; *out != NULL && i < PQntuples(res); i++)
            json_array_append_new(*out, db_row_to_json(res, i));
        if (*out == NULL)
            rc = RC_ENOMEM;
    }
    PQclear(res);
    return rc;
}

const char *db_i64(int64_t v, char *buf, size_t size)
{
    snprintf(buf, size, "%lld", (long long)v);
    return buf;
}
