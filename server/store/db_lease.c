/*
 * db_lease.c - the scheduling leader's lease (see db_lease.h).
 *
 * Every time is the database's (clock_timestamp(), which moves within a
 * transaction, unlike now()): replicas' clocks may disagree, the database's
 * is the one clock they share.
 */
#include "db_lease.h"

#include <stdio.h>
#include <string.h>

#include "db.h"
#include "log.h"

/* The advisory lock a bigint key takes, as pg_locks shows it: the key's
 * high and low 32 bits in classid and objid, objsubid 1, in this database. */
#define LOCK_HELD_BY(pid, key)                                                                     \
    "SELECT 1 FROM pg_locks l WHERE l.pid = " pid " AND l.locktype = 'advisory' AND l.granted "    \
    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "           \
    "AND l.classid = (" key "::bigint >> 32)::oid AND l.objid = (" key                             \
    "::bigint & 4294967295)::oid AND l.objsubid = 1"

/* The expiry lease_ms ($n) from now, by the database's clock. */
#define EXPIRY(n) "clock_timestamp() + " n "::int * interval '1 millisecond'"

enum rc db_lease_acquire(PGconn *c, const char *name, const char *holder, int lease_ms,
                         int64_t *epoch)
{
    char ms[16];
    const char *p[] = {name, holder, ms};
    PGresult *r;
    enum rc rc;

    snprintf(ms, sizeof(ms), "%d", lease_ms);
    r = db_exec(c,
                "UPDATE leader_lease SET epoch = epoch + 1, holder = $2, backend_pid = "
                "pg_backend_pid(), renewed_at = clock_timestamp(), expires_at = " EXPIRY(
                    "$3") " WHERE name = $1 RETURNING epoch",
                3, p);
    rc = db_result_rc(r, "lease");
    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 0), epoch);
    PQclear(r);
    return rc;
}

enum rc db_lease_renew(PGconn *c, const char *name, int64_t epoch, int lease_ms, int *held)
{
    char ep[24], ms[16];
    const char *p[] = {name, ep, ms};
    PGresult *r;
    enum rc rc;

    snprintf(ep, sizeof(ep), "%lld", (long long)epoch);
    snprintf(ms, sizeof(ms), "%d", lease_ms);
    r = db_exec(c,
                "UPDATE leader_lease SET renewed_at = clock_timestamp(), expires_at = " EXPIRY(
                    "$3") " WHERE name = $1 AND epoch = $2 AND backend_pid = pg_backend_pid()",
                3, p);
    rc = db_result_rc(r, "lease");
    *held = rc == RC_OK && strcmp(PQcmdTuples(r), "1") == 0;
    PQclear(r);
    return rc;
}

enum rc db_lease_read(PGconn *c, const char *name, int64_t lock_key, struct db_lease_view *out)
{
    char key[24];
    const char *p[] = {name, key};
    PGresult *r;
    enum rc rc;

    memset(out, 0, sizeof(*out));
    snprintf(key, sizeof(key), "%lld", (long long)lock_key);
    r = db_exec(
        c,
        "SELECT e.epoch, e.holder, e.backend_pid, e.expires_at < clock_timestamp(), "
        "greatest(0, extract(epoch FROM clock_timestamp() - e.expires_at) * 1000)::bigint, "
        "EXISTS (" LOCK_HELD_BY("e.backend_pid", "$2") ") FROM leader_lease e WHERE e.name = $1",
        2, p);
    rc = db_result_rc(r, "lease");
    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 0), &out->epoch);
    if (rc == RC_OK) {
        int64_t pid = 0;
        snprintf(out->holder, sizeof(out->holder), "%s", PQgetvalue(r, 0, 1));
        rc = db_parse_i64(PQgetvalue(r, 0, 2), &pid);
        out->backend_pid = (int)pid;
        out->expired = PQgetvalue(r, 0, 3)[0] == 't';
        if (rc == RC_OK)
            rc = db_parse_i64(PQgetvalue(r, 0, 4), &out->overdue_ms);
        out->holder_has_lock = PQgetvalue(r, 0, 5)[0] == 't';
    }
    PQclear(r);
    return rc;
}

enum rc db_lease_end_holder(PGconn *c, const char *name, int64_t epoch, int64_t lock_key,
                            int wait_ms, int *ended)
{
    char ep[24], key[24], ms[16];
    const char *p[] = {name, ep, key, ms};
    const char *state;
    PGresult *r;
    enum rc rc;

    *ended = 0;
    snprintf(ep, sizeof(ep), "%lld", (long long)epoch);
    snprintf(key, sizeof(key), "%lld", (long long)lock_key);
    snprintf(ms, sizeof(ms), "%d", wait_ms);
    /* No row lock on the lease: a holder hung inside a fenced transaction
     * share-locks it, and waiting for that would hang this replica too. */
    r = db_exec(c,
                "SELECT pg_terminate_backend(e.backend_pid, $4::int) FROM leader_lease e "
                "WHERE e.name = $1 AND e.epoch = $2 AND e.expires_at < clock_timestamp() "
                "AND EXISTS (" LOCK_HELD_BY("e.backend_pid", "$3") ")",
                4, p);
    state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    if (state != NULL && strcmp(state, "42501") == 0) {
        LOG_ERROR("sched", "cannot end a stale leader's session: this database role may not",
                  "error=\"%s\"", PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY));
        PQclear(r);
        return RC_EPERM;
    }
    rc = db_result_rc(r, "lease");
    *ended = rc == RC_OK && PQntuples(r) == 1;
    PQclear(r);
    return rc;
}

enum rc db_lease_fence(PGconn *c, const char *name, int64_t epoch, const char *req_id)
{
    char ep[24];
    const char *p[] = {name, ep};
    PGresult *r;
    enum rc rc;

    snprintf(ep, sizeof(ep), "%lld", (long long)epoch);
    /* Lock order (db.h): the lease row first, before any node or job row. */
    r = db_exec(c,
                "SELECT 1 FROM leader_lease WHERE name = $1 AND epoch = $2 AND backend_pid = "
                "pg_backend_pid() AND expires_at > clock_timestamp() FOR SHARE",
                2, p);
    rc = db_result_rc(r, req_id);
    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ECONFLICT;
    PQclear(r);
    return rc;
}
