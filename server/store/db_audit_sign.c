/*
 * db_audit_sign.c - checkpoints, retention and the export cursor (see
 * db_audit_sign.h and docs/audit-export.md).
 *
 * Checkpoints are signed here, on the caller's thread, with the server's key;
 * the stored "signed" text is the object as signed (compact, keys sorted),
 * so a checkpoint read back verifies without re-serialising anything but
 * what audit_signed_text() does on both sides.
 */
#include "db_audit_sign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "audit_canon.h"
#include "db.h"
#include "db_audit.h"
#include "jx.h"
#include "log.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static int64_t now_unix_us(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

/* Copy a 64-hex-digit column value into out ("" when it is not one). */
static void copy_hash(char out[CRYPTO_SHA256_HEX_LEN + 1], const char *v)
{
    snprintf(out, CRYPTO_SHA256_HEX_LEN + 1, "%s", strlen(v) == CRYPTO_SHA256_HEX_LEN ? v : "");
}

/*
 * Sign a checkpoint of (seq, hash) and insert it in conn's open transaction.
 * *id_out receives audit_checkpoints.id.
 */
static enum rc checkpoint_insert(PGconn *conn, const struct audit_key *key, const char *kind,
                                 int64_t seq, const char *hash, int64_t *id_out, const char *req_id)
{
    enum rc rc = RC_ENOMEM;
    char seqbuf[24], ts[40];
    json_t *obj = NULL;
    char *text = NULL;
    PGresult *res = NULL;

    db_i64(seq, seqbuf, sizeof(seqbuf));
    audit_format_ts(now_unix_us(), ts, sizeof(ts));
    obj =
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "type", "trainyard.audit.checkpoint", "seq", seqbuf,
                  "hash", hash, "created_at", ts, "kind", kind, "key_id", audit_key_id(key));
    if (obj == NULL)
        goto out;
    if ((rc = audit_sign_object(key, obj)) != RC_OK)
        goto out;
    text = jx_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
    if (text == NULL) {
        rc = RC_ENOMEM;
        goto out;
    }
    {
        const char *p[] = {seqbuf,
                           hash,
                           ts,
                           kind,
                           audit_key_id(key),
                           json_string_value(json_object_get(obj, "signature")),
                           text};
        res = db_exec(conn,
                      "INSERT INTO audit_checkpoints (seq, hash, created_at, kind, key_id, "
                      "signature, signed) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
                      7, p);
    }
    if ((rc = db_result_rc(res, req_id)) != RC_OK)
        goto out;
    if (PQntuples(res) != 1 || db_parse_i64(PQgetvalue(res, 0, 0), id_out) != RC_OK)
        rc = RC_EINTERNAL;
out:
    PQclear(res);
    free(text);
    json_decref(obj);
    return rc;
}

enum rc audit_checkpoint_periodic(PGconn *conn, const struct audit_key *key, int only_first,
                                  int *made, int64_t *seq_out, const char *req_id)
{
    enum rc rc;
    PGresult *res = NULL;
    int64_t seq = 0, id = 0;
    char hash[CRYPTO_SHA256_HEX_LEN + 1];
    int none, moved;

    *made = 0;
    if ((rc = db_begin(conn)) != RC_OK)
        return rc;
    /* No lock on the head: its (seq, hash) row is always a committed pair,
     * and appends need not wait for a checkpoint. */
    res = db_exec(conn,
                  "SELECT h.seq, h.hash, (SELECT c.seq FROM audit_checkpoints c ORDER BY c.id "
                  "DESC LIMIT 1) FROM audit_head h",
                  0, NULL);
    if ((rc = db_result_rc(res, req_id)) != RC_OK)
        goto out;
    if (PQntuples(res) != 1 || db_parse_i64(PQgetvalue(res, 0, 0), &seq) != RC_OK) {
        rc = RC_EINTERNAL;
        goto out;
    }
    copy_hash(hash, PQgetvalue(res, 0, 1));
    none = PQgetisnull(res, 0, 2);
    moved = none || strcmp(PQgetvalue(res, 0, 2), PQgetvalue(res, 0, 0)) != 0;
    if (none || (!only_first && moved)) {
        rc = checkpoint_insert(conn, key, AUDIT_CKPT_PERIODIC, seq, hash, &id, req_id);
        if (rc == RC_OK)
            *made = 1;
    }
out:
    PQclear(res);
    if (rc == RC_OK)
        rc = db_commit(conn);
    if (rc != RC_OK) {
        db_rollback(conn);
        *made = 0;
    }
    if (seq_out != NULL)
        *seq_out = seq;
    return rc;
}

enum rc audit_checkpoint_list(PGconn *conn, const char *before_id, int limit, json_t **out,
                              const char *req_id)
{
    char lim[16];
    const char *p[] = {before_id, lim};

    snprintf(lim, sizeof(lim), "%d", limit);
    return db_query_json(conn,
                         "SELECT id, seq::text AS seq, hash, created_at, kind, key_id, signature, "
                         "signed::json AS signed FROM audit_checkpoints "
                         "WHERE ($1::bigint IS NULL OR id < $1) ORDER BY id DESC LIMIT $2",
                         2, p, 0, out, req_id);
}

/* The events to remove: the newest one older than the cutoff that has no
 * newer-stamped event before it, so a clock step back never takes a young
 * event along. Locked head held by the caller. */
static enum rc retention_target(PGconn *conn, int min_days, int *days, int64_t *through, char *hash,
                                const char *req_id)
{
    enum rc rc;
    PGresult *res;
    char dbuf[16];
    const char *p[1];

    *through = 0;
    res = db_exec(conn, "SELECT audit_retention_days FROM compliance_policy", 0, NULL);
    if ((rc = db_result_rc(res, req_id)) != RC_OK) {
        PQclear(res);
        return rc;
    }
    *days = PQntuples(res) == 1 ? (int)strtol(PQgetvalue(res, 0, 0), NULL, 10) : 180;
    PQclear(res);
    if (*days < 1)
        *days = 180;
    if (*days < min_days)
        *days = min_days;
    snprintf(dbuf, sizeof(dbuf), "%d", *days);
    p[0] = dbuf;
    res = db_exec(conn,
                  "SELECT e.id, e.hash FROM audit_events e "
                  "WHERE e.ts < now() - make_interval(days => $1::int) AND e.id < "
                  "coalesce((SELECT min(y.id) FROM audit_events y "
                  "WHERE y.ts >= now() - make_interval(days => $1::int)), "
                  "9223372036854775807) ORDER BY e.id DESC LIMIT 1",
                  1, p);
    if ((rc = db_result_rc(res, req_id)) == RC_OK && PQntuples(res) == 1) {
        if (db_parse_i64(PQgetvalue(res, 0, 0), through) != RC_OK)
            rc = RC_EINTERNAL;
        copy_hash(hash, PQgetvalue(res, 0, 1));
    }
    PQclear(res);
    return rc;
}

/* The gateway request records of the batches sealed by events up to
 * through, and those batches; *removed the records. */
static enum rc delete_serve_records(PGconn *conn, int64_t through, int64_t *removed,
                                    const char *req_id)
{
    char tbuf[24];
    const char *p[] = {db_i64(through, tbuf, sizeof(tbuf))};
    PGresult *res = db_exec(conn,
                            "DELETE FROM serve_requests WHERE batch_id IN (SELECT id FROM "
                            "serve_batches WHERE audit_seq <= $1::bigint)",
                            1, p);
    enum rc rc = db_result_rc(res, req_id);

    if (rc == RC_OK && db_parse_i64(PQcmdTuples(res), removed) != RC_OK)
        rc = RC_EINTERNAL;
    PQclear(res);
    if (rc == RC_OK)
        rc = db_exec_ok(conn, req_id, "DELETE FROM serve_batches WHERE audit_seq <= $1::bigint", 1,
                        p);
    return rc;
}

enum rc audit_retention_run(PGconn *conn, const struct audit_key *key, int min_days,
                            const char *actor, const char *source,
                            struct audit_retention_result *out, const char *req_id)
{
    enum rc rc;
    PGresult *res = NULL;
    char hash[CRYPTO_SHA256_HEX_LEN + 1] = "", tbuf[24], cbuf[24];
    json_t *details = NULL;
    struct audit_event ev;
    int64_t records_through = 0;

    memset(out, 0, sizeof(*out));
    if ((rc = db_begin(conn)) != RC_OK)
        return rc;
    /* Lock order: the sealed records (rows of another table) before the
     * head. The target is found again under the head's lock. */
    if ((rc = retention_target(conn, min_days, &out->retention_days, &records_through, hash,
                               req_id)) != RC_OK)
        goto out;
    if (records_through > 0 &&
        (rc = delete_serve_records(conn, records_through, &out->serve_records, req_id)) != RC_OK)
        goto out;
    /* The head lock keeps appends out until the removal commits. */
    if ((rc = db_exec_ok(conn, req_id, "SELECT seq FROM audit_head FOR UPDATE", 0, NULL)) != RC_OK)
        goto out;
    if ((rc = retention_target(conn, min_days, &out->retention_days, &out->through, hash,
                               req_id)) != RC_OK)
        goto out;
    if (NEVER(out->through < records_through)) {
        rc = RC_EINTERNAL; /* the cut-off is the transaction's now(): it cannot move back */
        goto out;
    }
    if (out->through == 0)
        goto out; /* nothing old enough */
    if (hash[0] == '\0') {
        LOG_ERROR("audit", "retention target has a malformed hash", "req_id=%s id=%lld",
                  req_id ? req_id : "-", (long long)out->through);
        rc = RC_EINTERNAL;
        goto out;
    }
    rc = checkpoint_insert(conn, key, AUDIT_CKPT_RETENTION, out->through, hash, &out->checkpoint_id,
                           req_id);
    if (rc != RC_OK)
        goto out;
    db_i64(out->through, tbuf, sizeof(tbuf));
    {
        const char *p[] = {tbuf};
        rc = db_exec_ok(conn, req_id, "SELECT set_config('trainyard.retention_through', $1, true)",
                        1, p);
        if (rc != RC_OK)
            goto out;
        res = db_exec(conn, "DELETE FROM audit_events WHERE id <= $1::bigint", 1, p);
        if ((rc = db_result_rc(res, req_id)) != RC_OK)
            goto out;
        if (db_parse_i64(PQcmdTuples(res), &out->removed) != RC_OK) {
            rc = RC_EINTERNAL;
            goto out;
        }
        PQclear(res);
        res = NULL;
    }
    details =
        json_pack("{s:s,s:I,s:s,s:i}", "removed_through", tbuf, "count", (json_int_t)out->removed,
                  "checkpoint_id", db_i64(out->checkpoint_id, cbuf, sizeof(cbuf)), "retention_days",
                  out->retention_days);
    if (details == NULL ||
        (out->serve_records > 0 &&
         json_object_set_new(details, "serve_records", json_integer(out->serve_records)) != 0)) {
        rc = RC_ENOMEM;
        goto out;
    }
    ev = (struct audit_event){.actor = actor,
                              .source = source,
                              .action = "audit.retention",
                              .target = AUDIT_TARGET_AUDIT,
                              .outcome = "success",
                              .details = details};
    if ((rc = audit_append(conn, &ev, req_id)) != RC_OK)
        goto out;
    res = db_exec(conn, "SELECT seq FROM audit_head", 0, NULL);
    if ((rc = db_result_rc(res, req_id)) == RC_OK &&
        (PQntuples(res) != 1 || db_parse_i64(PQgetvalue(res, 0, 0), &out->event_id) != RC_OK))
        rc = RC_EINTERNAL;
out:
    PQclear(res);
    json_decref(details);
    if (rc == RC_OK)
        rc = db_commit(conn);
    if (rc != RC_OK) {
        db_rollback(conn);
        memset(out, 0, sizeof(*out));
    }
    return rc;
}

enum rc audit_export_open(PGconn *conn, const struct audit_export_range *r, int64_t *base_seq,
                          char base_hash[CRYPTO_SHA256_HEX_LEN + 1], const char *req_id)
{
    enum rc rc;
    PGresult *res = NULL;
    char bbuf[24];

    *base_seq = 0;
    snprintf(base_hash, CRYPTO_SHA256_HEX_LEN + 1, "%s", AUDIT_GENESIS_HASH);
    /* One snapshot for the events, the anchor and the checkpoints, so the
     * manifest describes exactly the lines sent. */
    rc = db_exec_ok(conn, req_id, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL);
    if (rc != RC_OK)
        return rc;
    res = db_exec(conn,
                  "SELECT seq, hash FROM audit_checkpoints WHERE kind = 'retention' "
                  "ORDER BY seq DESC, id DESC LIMIT 1",
                  0, NULL);
    if ((rc = db_result_rc(res, req_id)) != RC_OK)
        goto out;
    if (PQntuples(res) == 1) {
        if (db_parse_i64(PQgetvalue(res, 0, 0), base_seq) != RC_OK) {
            rc = RC_EINTERNAL;
            goto out;
        }
        copy_hash(base_hash, PQgetvalue(res, 0, 1));
    }
    {
        const char *p[] = {db_i64(*base_seq, bbuf, sizeof(bbuf)), r->from_id, r->to_id, r->from_ts,
                           r->to_ts};
        rc = db_exec_ok(conn, req_id,
                        "DECLARE audit_export NO SCROLL CURSOR FOR "
                        "SELECT " AUDIT_EVENT_COLUMNS " FROM audit_events WHERE id > $1::bigint "
                        "AND ($2::bigint IS NULL OR id >= $2::bigint) "
                        "AND ($3::bigint IS NULL OR id <= $3::bigint) "
                        "AND ($4::timestamptz IS NULL OR ts >= $4::timestamptz) "
                        "AND ($5::timestamptz IS NULL OR ts < $5::timestamptz) ORDER BY id",
                        5, p);
    }
out:
    PQclear(res);
    if (rc != RC_OK)
        db_rollback(conn);
    return rc;
}

enum rc audit_export_fetch(PGconn *conn, PGresult **out, const char *req_id)
{
    PGresult *res =
        db_exec(conn, "FETCH FORWARD " STR(AUDIT_EXPORT_BATCH) " FROM audit_export", 0, NULL);
    enum rc rc = db_result_rc(res, req_id);

    if (rc != RC_OK) {
        PQclear(res);
        res = NULL;
    }
    *out = res;
    return rc;
}

enum rc audit_export_anchor(PGconn *conn, int64_t base_seq, const char *base_hash, int64_t seq,
                            const char *before_ts, char out[CRYPTO_SHA256_HEX_LEN + 1],
                            const char *req_id)
{
    enum rc rc;
    PGresult *res;
    char sbuf[24], bbuf[24];

    snprintf(out, CRYPTO_SHA256_HEX_LEN + 1, "%s", base_hash);
    if (seq == base_seq)
        return RC_OK;
    if (seq >= 0) {
        const char *p[] = {db_i64(seq, sbuf, sizeof(sbuf))};
        res = db_exec(conn,
                      "SELECT hash FROM audit_events WHERE id = $1::bigint UNION ALL "
                      "(SELECT hash FROM audit_checkpoints WHERE seq = $1::bigint "
                      "ORDER BY kind = 'retention' DESC, id DESC LIMIT 1)",
                      1, p);
        int found;
        rc = db_result_rc(res, req_id);
        found = rc == RC_OK && PQntuples(res) > 0;
        if (found)
            copy_hash(out, PQgetvalue(res, 0, 0));
        PQclear(res);
        if (rc != RC_OK || found)
            return rc;
    }
    {
        const char *p[] = {db_i64(base_seq, bbuf, sizeof(bbuf)),
                           seq >= 0 ? db_i64(seq, sbuf, sizeof(sbuf)) : NULL, before_ts};
        res = db_exec(conn,
                      "SELECT hash FROM audit_events WHERE id > $1::bigint "
                      "AND ($2::bigint IS NULL OR id < $2::bigint) "
                      "AND ($3::timestamptz IS NULL OR ts < $3::timestamptz) "
                      "ORDER BY id DESC LIMIT 1",
                      3, p);
    }
    rc = db_result_rc(res, req_id);
    if (rc == RC_OK && PQntuples(res) > 0)
        copy_hash(out, PQgetvalue(res, 0, 0));
    PQclear(res);
    return rc;
}

enum rc audit_export_checkpoints(PGconn *conn, int64_t lo, int64_t hi, json_t **out,
                                 const char *req_id)
{
    enum rc rc;
    PGresult *res;
    char lbuf[24], hbuf[24];
    const char *p[] = {db_i64(lo, lbuf, sizeof(lbuf)), db_i64(hi, hbuf, sizeof(hbuf))};
    json_t *arr = NULL;

    *out = NULL;
    res = db_exec(conn,
                  "SELECT signed FROM audit_checkpoints WHERE seq BETWEEN $1::bigint AND "
                  "$2::bigint ORDER BY seq, id",
                  2, p);
    if ((rc = db_result_rc(res, req_id)) == RC_OK) {
        arr = json_array();
        for (int i = 0; arr != NULL && i < PQntuples(res); i++) {
            json_t *o = jx_loads(PQgetvalue(res, i, 0), 0);
            /* A stored object that does not parse is passed on as text: the
             * verifier then reports it rather than the server hiding it. */
            if (o == NULL)
                o = json_string(PQgetvalue(res, i, 0));
            if (json_array_append_new(arr, o) != 0) {
                json_decref(arr);
                arr = NULL;
            }
        }
        rc = arr != NULL ? RC_OK : RC_ENOMEM;
    }
    PQclear(res);
    *out = arr;
    return rc;
}

enum rc audit_export_close(PGconn *conn, const char *req_id)
{
    enum rc rc = db_exec_ok(conn, req_id, "COMMIT", 0, NULL);

    if (rc != RC_OK)
        db_rollback(conn);
    return rc;
}
