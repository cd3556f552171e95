/*
 * db.h - the libpq connection pool, transactions, SQLSTATE mapping and
 * schema migrations.
 *
 * A fixed number of connections is opened lazily; db_acquire() hands one to
 * exactly one thread until db_release(). Broken connections are reset on
 * release. All SQL in the server goes through PQexecParams with $n
 * parameters (see db_exec); no value is ever formatted into SQL text.
 *
 * Thread-safety: db_acquire/db_release are thread-safe; a PGconn is used by
 * one thread at a time.
 *
 * Lock order (written down here only; DESIGN.md "Data model" states it). Every
 * transaction takes its row locks in this order, so that no two wait on each
 * other in a cycle:
 *
 *   0. the leader's lease row (leader_lease, db_lease.h): a leader-only write
 *      (a pass's apply, the stored forecast) share-locks it first, as its
 *      fence (db_lease_fence). The lease's own statements (take, renew) run
 *      alone and lock nothing else, and a follower ending a stale leader's
 *      session locks no row at all, so a hung holder cannot block it.
 *   1. node rows (nodes): a node's own requests lock its row first; the
 *      monitor locks the nodes it declares lost in id order.
 *   1b. a deployment's row (db_deployment_load lock=1), before the rows of
 *      its replica jobs; nothing that holds a job row locks a deployment.
 *   2. job rows, in ascending id, every one the transaction will change,
 *      before anything that belongs to them: db_jobs_lock() (ORDER BY id FOR
 *      UPDATE), or one job row by itself (db_job_brief, db_attempt_info).
 *      Always FOR UPDATE, the mode db_job_transition() asks for, so that no
 *      transaction upgrades its own lock later: an upgrade waits for the
 *      key-share locks that inserts referencing the job hold.
 *   3. rows that belong to a job: its attempts, allocations, events, logs,
 *      metrics and checkpoints. They are written only by a transaction that
 *      holds the job's row (db_assignments_take and the register path lock
 *      their jobs first for this), so holding a job also settles who may
 *      touch these.
 *   4. the audit head (audit_append), last: once a transaction holds it, it
 *      locks no further job row; it may still write rows of the jobs it holds
 *      (3.) and new rows, which nobody else can be holding.
 *
 * Other tables' rows (users, sites, exports, webhooks...) come before the
 * audit head. One known exception: enqueueing a webhook delivery after a job
 * transition key-share-locks the webhook row after the audit head, so it can
 * meet a webhook's deletion (webhook row, then audit head); and a register
 * can find an attempt handed to the node just after it locked the node's
 * jobs, and lock that job late. PostgreSQL breaks such a cycle (40P01) and
 * db_tx() runs the transaction again.
 * Sites that follow this order say so in a comment naming "Lock order".
 */
#ifndef TY_SERVER_DB_H
#define TY_SERVER_DB_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"

struct db;

/*
 * Create a pool of at most size connections to url (a libpq conninfo or
 * URI). Connects once to check the URL; RC_EUNAVAIL if that fails.
 * The caller owns *out (free with db_free()).
 */
enum rc db_open(const char *url, int size, struct db **out) TY_WUR;

/*
 * The libpq keywords and values every session of the server opens with
 * (PQconnectdbParams or PQconnectStartParams, expand_dbname 1): url, the
 * client's keepalives, and as startup options the server's keepalives and
 * TimeZone=UTC, which a PQreset() keeps. keys and vals end with NULL; they
 * borrow url and app_name (which must outlive the connect) and ci's own
 * storage. RC_OK, or RC_ENOMEM (then nothing to clean up). Thread-safe.
 */
struct db_conninfo {
    const char *keys[12];
    const char *vals[12];
    char *options; /* owned: the startup options vals points at */
};
enum rc db_conninfo_init(struct db_conninfo *ci, const char *url, const char *app_name) TY_WUR;

/* Free what db_conninfo_init() allocated; the keys and vals are then void. */
void db_conninfo_cleanup(struct db_conninfo *ci);

/* Close every connection and free the pool; NULL is a no-op. */
void db_free(struct db *db);

/*
 * Borrow a connection, waiting up to timeout_ms for one to be free.
 * Returns NULL when none could be had (busy or database unreachable).
 */
PGconn *db_acquire(struct db *db, int timeout_ms);

/* Give a connection back; a connection left inside a transaction is rolled back. */
void db_release(struct db *db, PGconn *conn);

/* Whether the database answers a trivial query now (for /readyz). */
int db_ping(struct db *db);

/*
 * Run sql with n text parameters (NULL entries are SQL NULL). Returns the
 * result (caller PQclear()s it; never NULL: an allocation failure yields a
 * PGRES_FATAL_ERROR-like NULL-safe result via db_ok()).
 */
PGresult *db_exec(PGconn *conn, const char *sql, int n, const char *const *params);

/*
 * Map a result to enum rc: RC_OK for PGRES_COMMAND_OK/TUPLES_OK, otherwise by
 * SQLSTATE: 23505 -> RC_ECONFLICT, 23503 -> RC_ENOTFOUND, 40001/40P01 ->
 * RC_ERETRY, class 08 and 57P -> RC_EUNAVAIL, an error of libpq's own (no
 * SQLSTATE: the connection was lost) -> RC_EUNAVAIL, 22xxx/23xxx ->
 * RC_EINVAL, else RC_EINTERNAL. Logs unexpected errors with req_id. res may
 * be NULL (RC_EUNAVAIL).
 */
enum rc db_result_rc(const PGresult *res, const char *req_id);

/* Execute and check in one go; the result is discarded. */
enum rc db_exec_ok(PGconn *conn, const char *req_id, const char *sql, int n,
                   const char *const *params) TY_WUR;

enum rc db_begin(PGconn *conn) TY_WUR;
enum rc db_commit(PGconn *conn) TY_WUR;
void db_rollback(PGconn *conn);

/* How many times db_tx() runs a body in all before it gives up. */
#define DB_TX_TRIES 5

/*
 * A transaction body: the database work of one transaction on a connection
 * that arg names. It runs again from its start when the transaction is
 * retried, so it must reset whatever it fills in arg, and do nothing outside
 * the database (no reply to a client, no waking of waiters or workers, no
 * webhook sent, no in-memory change); NOTIFY is fine, it is delivered at
 * commit. Those side effects belong after db_tx() returns RC_OK.
 */
typedef enum rc (*db_tx_body)(void *arg);

/*
 * Run body(arg) in one transaction on conn: BEGIN, the body, COMMIT when it
 * returns RC_OK, ROLLBACK otherwise. When PostgreSQL broke a deadlock
 * (40P01) or a serialization failure (40001) ended the transaction
 * (RC_ERETRY, from the body or from COMMIT), it is rolled back and run again
 * after a short jittered pause, at most DB_TX_TRIES times in all. Returns the
 * rc of the last run (RC_ERETRY when every run met a conflict). Never call
 * it inside an open transaction, nor with a body that waits on a client.
 */
enum rc db_tx(PGconn *conn, db_tx_body body, void *arg, const char *req_id) TY_WUR;

/*
 * The retry loop of db_tx() apart from libpq, so that it can be tested alone:
 * ops->begin/commit/rollback/pause(ctx, ...) stand for BEGIN, COMMIT, ROLLBACK
 * and the pause between runs. db_tx() is db_tx_run(&pq_ops, conn, ...).
 */
struct db_tx_ops {
    enum rc (*begin)(void *ctx);
    enum rc (*commit)(void *ctx);
    void (*rollback)(void *ctx);
    void (*pause_us)(void *ctx, long us);
};
enum rc db_tx_run(const struct db_tx_ops *ops, void *ctx, db_tx_body body, void *arg,
                  const char *req_id) TY_WUR;

/* The pause before run number run (2..DB_TX_TRIES) in microseconds, given a
 * random value: in [500 << (run - 2), 1000 << (run - 2)); 0 before the first. */
long db_tx_backoff_us(int run, unsigned rnd);

/*
 * Apply the migrations compiled into the binary (sql/NNN_*.sql) that the
 * database lacks, each in its own transaction, under an advisory lock so
 * replicas starting together do not race. RC_ECONFLICT when the database
 * has a schema version newer than this binary knows.
 */
enum rc db_migrate(struct db *db) TY_WUR;

/* The newest schema version compiled into this binary. */
int db_schema_version_known(void);

/* Parse a base-10 int64 column value; RC_EINVAL if it is not one. */
enum rc db_parse_i64(const char *s, int64_t *out) TY_WUR;

/*
 * Run sql and return the result as JSON (new reference in *out): with one=1
 * the first row as an object (RC_ENOTFOUND when there is none), otherwise
 * every row in an array. Rows convert as db_row_to_json() says.
 */
enum rc db_query_json(PGconn *conn, const char *sql, int n, const char *const *params, int one,
                      json_t **out, const char *req_id) TY_WUR;

/* v as decimal text in buf (at least 24 bytes); returns buf, for parameters. */
const char *db_i64(int64_t v, char *buf, size_t size);

/*
 * One result row as a JSON object (new reference, NULL on ENOMEM): columns
 * named "id" or ending in "_id" become strings, other integers numbers,
 * booleans booleans, json/jsonb parsed values, timestamptz ISO-8601 UTC
 * strings, SQL NULL null, the rest strings.
 */
json_t *db_row_to_json(const PGresult *res, int row);

#endif
