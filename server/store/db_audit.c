/*
 * db_audit.c - the audit chain in PostgreSQL (see db_audit.h and
 * common/audit_canon.h for the hashed form).
 */
#include "db_audit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "audit_canon.h"
#include "audit_sign.h"
#include "audit_target.h"
#include "db.h"
#include "jx.h"
#include "log.h"

static int64_t now_unix_us(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

struct audit_fields audit_fields_of_row(const PGresult *res, int i, int64_t id,
                                        const json_t *details)
{
    return (struct audit_fields){id,
                                 PQgetvalue(res, i, 1),
                                 PQgetvalue(res, i, 2),
                                 PQgetvalue(res, i, 3),
                                 PQgetvalue(res, i, 4),
                                 PQgetvalue(res, i, 5),
                                 PQgetvalue(res, i, 6),
                                 details,
                                 PQgetvalue(res, i, 8)};
}

enum rc audit_append(PGconn *conn, const struct audit_event *ev, const char *req_id)
{
    enum rc rc;
    PGresult *res = NULL;
    char ts[40], idbuf[32], hash[CRYPTO_SHA256_HEX_LEN + 1], prev[CRYPTO_SHA256_HEX_LEN + 1];
    char *details = NULL;
    json_t *empty = NULL;
    int64_t seq;
    struct audit_fields f;

#ifdef TY_BENCH_NO_AUDIT
    /* Exists for bench/api/audit_cost_http.sh only (CMake option
     * TRAINYARD_BENCH_NO_AUDIT, off by default, never on in a product
     * build): the request without its audit write, to measure what the
     * write costs. main.c warns at start when built so. */
    return RC_OK;
#endif
    /* Targets come from audit_target.h only: one form per kind of object, so
     * that a filter on one target finds all of an object's events. */
    if (NEVER(!audit_target_valid(ev->target))) {
        LOG_ERROR("audit", "refusing an event whose target has no documented form",
                  "req_id=%s action=%s target=\"%.96s\"", req_id ? req_id : "", ev->action,
                  ev->target);
        return RC_EINTERNAL;
    }
    res = db_exec(conn, "SELECT seq, hash FROM audit_head FOR UPDATE", 0, NULL);
    if ((rc = db_result_rc(res, req_id)) != RC_OK)
        goto out;
    if (PQntuples(res) != 1 || db_parse_i64(PQgetvalue(res, 0, 0), &seq) != RC_OK) {
        rc = RC_EINTERNAL;
        goto out;
    }
    snprintf(prev, sizeof(prev), "%s", PQgetvalue(res, 0, 1));
    PQclear(res);
    res = NULL;

    audit_format_ts(now_unix_us(), ts, sizeof(ts));
    if (ev->details == NULL)
        empty = json_object();
    f = (struct audit_fields){.id = seq + 1,
                              .ts = ts,
                              .actor = ev->actor,
                              .source = ev->source,
                              .action = ev->action,
                              .target = ev->target,
                              .outcome = ev->outcome,
                              .details = ev->details ? ev->details : empty,
                              .prev_hash = prev};
    if ((rc = audit_hash(&f, hash)) != RC_OK)
        goto out;
    details = jx_dumps(f.details, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
    if (details == NULL) {
        rc = RC_ENOMEM;
        goto out;
    }
    snprintf(idbuf, sizeof(idbuf), "%lld", (long long)(seq + 1));
    {
        const char *p[] = {idbuf,
                           ts,
                           ts,
                           ev->actor ? ev->actor : "",
                           ev->source ? ev->source : "",
                           ev->action,
                           ev->target ? ev->target : "",
                           ev->outcome,
                           details,
                           prev,
                           hash};
        /* One round trip for the row and the head: the head's row lock is
         * held from the SELECT above to COMMIT, and every audited write in
         * the installation waits for it, so each round trip saved here is
         * throughput for all of them. */
        rc =
            db_exec_ok(conn, req_id,
                       "WITH ev AS (INSERT INTO audit_events (id, ts, ts_text, actor, source, "
                       "action, target, outcome, details, prev_hash, hash) VALUES ($1, "
                       "$2::timestamptz, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id, hash) "
                       "UPDATE audit_head SET seq = ev.id, hash = ev.hash FROM ev",
                       11, p);
    }
out:
    json_decref(empty);
    free(details);
    PQclear(res);
    return rc;
}

enum rc audit_list(PGconn *conn, const char *action, const char *actor, const char *target,
                   const char *since, const char *until, const char *before_id, int limit,
                   json_t **out, const char *req_id)
{
    char lim[16], hi[72];
    const char *p[9];
    size_t alen = action != NULL ? strlen(action) : 0;
    int prefix = alen > 0 && alen < sizeof(hi) && action[alen - 1] == '.';
    PGresult *res;
    enum rc rc;
    json_t *arr = NULL;

    snprintf(lim, sizeof(lim), "%d", limit);
    /* A prefix "job." is the byte range ["job.", "job/") in the C collation,
     * which the index on action COLLATE "C" serves (starts_with() is not). */
    if (prefix) {
        memcpy(hi, action, alen - 1);
        hi[alen - 1] = '/';
        hi[alen] = '\0';
    }
    p[0] = prefix ? NULL : action;
    p[1] = actor;
    p[2] = target;
    p[3] = since;
    p[4] = until;
    p[5] = before_id;
    p[6] = lim;
    p[7] = prefix ? action : NULL;
    p[8] = prefix ? hi : NULL;
    res = db_exec(
        conn,
        "SELECT id, ts_text AS ts, actor, source, action, target, outcome, "
        "details::jsonb AS details, prev_hash, hash FROM audit_events "
        "WHERE ($1::text IS NULL OR action = $1) AND ($8::text IS NULL OR (action COLLATE "
        "\"C\" >= $8 AND action COLLATE \"C\" < $9::text)) AND ($2::text IS NULL OR actor = $2) "
        "AND ($3::text IS NULL OR target = $3) "
        "AND ($4::timestamptz IS NULL OR (ts >= $4 AND id > coalesce((SELECT e.id FROM "
        "audit_events e WHERE e.ts < $4::timestamptz - " AUDIT_LIST_SKEW " ORDER BY e.ts DESC "
        "LIMIT 1), 0))) AND ($5::timestamptz IS NULL OR (ts < $5 AND id < coalesce((SELECT "
        "e.id FROM audit_events e WHERE e.ts >= $5::timestamptz + " AUDIT_LIST_SKEW " ORDER "
        "BY e.ts LIMIT 1), 9223372036854775807))) "
        "AND ($6::bigint IS NULL OR id < $6) ORDER BY id DESC LIMIT $7",
        9, p);
    rc = db_result_rc(res, req_id);
    if (rc == RC_OK) {
        arr = json_array();
        for (int i = 0; arr != NULL && i < PQntuples(res); i++)
            json_array_append_new(arr, db_row_to_json(res, i));
        rc = arr ? RC_OK : RC_ENOMEM;
    }
    PQclear(res);
    *out = arr;
    return rc;
}

/* The key that signed checkpoint row i: key when its key_id is key's, else
 * the audit_keys public key in column 5 (NULL when the key id is unknown
 * there). A key made here is put in *owned (free it). */
static const struct audit_key *checkpoint_key(const struct audit_key *key, const PGresult *res,
                                              int i, struct audit_key **owned)
{
    const char *b64;

    *owned = NULL;
    if (strcmp(PQgetvalue(res, i, 3), audit_key_id(key)) == 0)
        return key;
    if (PQgetisnull(res, i, 5))
        return NULL;
    b64 = PQgetvalue(res, i, 5);
    if (audit_key_from_public(b64, strlen(b64), owned, NULL) != RC_OK)
        return NULL;
    if (strcmp(audit_key_id(*owned), PQgetvalue(res, i, 3)) != 0) {
        audit_key_free(*owned);
        *owned = NULL;
    }
    return *owned;
}

/* Why checkpoint row i (id, seq, hash, key_id, signed, audit_keys.public_key)
 * is not a valid checkpoint of an event whose hash is want; NULL when it is.
 * It is verified with the key its key_id names (key, or one in audit_keys). */
static const char *checkpoint_fault(const struct audit_key *key, const PGresult *res, int i,
                                    const char *want)
{
    const char *seq = PQgetvalue(res, i, 1), *hash = PQgetvalue(res, i, 2);
    struct audit_key *owned = NULL;
    const struct audit_key *signer = checkpoint_key(key, res, i, &owned);
    json_t *obj;
    const char *why = NULL;

    if (signer == NULL)
        return "checkpoint signed by a key id that is not in audit_keys";
    obj = jx_loads(PQgetvalue(res, i, 4), 0);
    if (obj == NULL || !audit_verify_object(signer, obj))
        why = "checkpoint signature does not verify";
    else if (!json_is_string(json_object_get(obj, "seq")) ||
             strcmp(json_string_value(json_object_get(obj, "seq")), seq) != 0 ||
             !json_is_string(json_object_get(obj, "hash")) ||
             strcmp(json_string_value(json_object_get(obj, "hash")), hash) != 0 ||
             !json_is_string(json_object_get(obj, "key_id")) ||
             strcmp(json_string_value(json_object_get(obj, "key_id")), PQgetvalue(res, i, 3)) != 0)
        why = "checkpoint row differs from its signed object";
    else if (want == NULL || strcmp(want, hash) != 0)
        why = "checkpoint hash differs from the event's hash";
    json_decref(obj);
    audit_key_free(owned);
    return why;
}

/* The newest retention checkpoint: the chain's starting point. */
static enum rc verify_base(PGconn *conn, const struct audit_key *key,
                           struct audit_verify_result *out, char prev[CRYPTO_SHA256_HEX_LEN + 1],
                           const char *req_id)
{
    PGresult *res = db_exec(conn,
                            "SELECT c.id, c.seq, c.hash, c.key_id, c.signed, k.public_key "
                            "FROM audit_checkpoints c LEFT JOIN audit_keys k USING (key_id) "
                            "WHERE c.kind = 'retention' ORDER BY c.seq DESC, c.id DESC LIMIT 1",
                            0, NULL);
    enum rc rc = db_result_rc(res, req_id);
    const char *why;

    if (rc == RC_OK && PQntuples(res) == 1) {
        if (db_parse_i64(PQgetvalue(res, 0, 1), &out->from_seq) != RC_OK) {
            rc = RC_EINTERNAL;
        } else {
            snprintf(prev, CRYPTO_SHA256_HEX_LEN + 1, "%s", PQgetvalue(res, 0, 2));
            why = checkpoint_fault(key, res, 0, PQgetvalue(res, 0, 2));
            if (why != NULL) {
                out->reason = why;
                out->bad_id = out->from_seq + 1;
                out->bad_checkpoint_id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
            }
        }
    }
    PQclear(res);
    return rc;
}

/* Walk the events after out->from_seq, linking from prev. */
static enum rc verify_events(PGconn *conn, struct audit_verify_result *out,
                             char prev[CRYPTO_SHA256_HEX_LEN + 1], const char *req_id)
{
    char after[32];
    int64_t expect = out->from_seq;
    enum rc rc = RC_OK;

    snprintf(after, sizeof(after), "%lld", (long long)out->from_seq);
    for (;;) {
        const char *p[] = {after};
        PGresult *res = db_exec(conn,
                                "SELECT " AUDIT_EVENT_COLUMNS " FROM audit_events WHERE id > $1 "
                                "ORDER BY id LIMIT 5000",
                                1, p);
        int rows;
        if ((rc = db_result_rc(res, req_id)) != RC_OK) {
            PQclear(res);
            break;
        }
        rows = PQntuples(res);
        for (int i = 0; i < rows && out->bad_id == 0; i++) {
            int64_t id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
            char h[CRYPTO_SHA256_HEX_LEN + 1];
            json_t *details = jx_loads(PQgetvalue(res, i, 7), 0);
            struct audit_fields f = audit_fields_of_row(res, i, id, details);
            if (id != expect + 1) {
                out->reason = id > expect + 1 ? "events are missing" : "events are out of order";
                out->bad_id = expect + 1;
            } else if (strcmp(f.prev_hash, prev) != 0) {
                out->reason = "the event does not link to its predecessor";
                out->bad_id = id;
            } else if (details == NULL || audit_hash(&f, h) != RC_OK ||
                       strcmp(h, PQgetvalue(res, i, 9)) != 0) {
                out->reason = "the event does not match its hash";
                out->bad_id = id;
            }
            json_decref(details);
            expect = id;
            snprintf(prev, CRYPTO_SHA256_HEX_LEN + 1, "%s", PQgetvalue(res, i, 9));
            out->checked++;
        }
        if (rows > 0)
            snprintf(after, sizeof(after), "%s", PQgetvalue(res, rows - 1, 0));
        PQclear(res);
        if (rows == 0 || out->bad_id != 0)
            break;
    }
    return rc;
}

/* Every checkpoint from the base on: signed by the key its key_id names
 * (key, or one in audit_keys), vouching for its event. */
static enum rc verify_checkpoints(PGconn *conn, const struct audit_key *key,
                                  struct audit_verify_result *out, const char *base_hash,
                                  const char *req_id)
{
    char from[32];
    const char *p[] = {from};
    PGresult *res;
    enum rc rc;

    snprintf(from, sizeof(from), "%lld", (long long)out->from_seq);
    res = db_exec(conn,
                  "SELECT c.id, c.seq, c.hash, c.key_id, c.signed, k.public_key, e.hash "
                  "FROM audit_checkpoints c LEFT JOIN audit_keys k USING (key_id) "
                  "LEFT JOIN audit_events e ON e.id = c.seq WHERE c.seq >= $1::bigint "
                  "ORDER BY c.id",
                  1, p);
    if ((rc = db_result_rc(res, req_id)) == RC_OK) {
        for (int i = 0; i < PQntuples(res) && out->bad_checkpoint_id == 0; i++) {
            int64_t seq = strtoll(PQgetvalue(res, i, 1), NULL, 10);
            const char *want = PQgetisnull(res, i, 6) ? NULL : PQgetvalue(res, i, 6);
            const char *why;
            if (seq == out->from_seq)
                want = base_hash;
            why = checkpoint_fault(key, res, i, want);
            out->checkpoints++;
            if (why != NULL) {
                out->bad_checkpoint_id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
                if (out->reason[0] == '\0')
                    out->reason = why;
            }
        }
    }
    PQclear(res);
    return rc;
}

enum rc audit_verify_db(PGconn *conn, const struct audit_key *key, struct audit_verify_result *out,
                        const char *req_id)
{
    char prev[CRYPTO_SHA256_HEX_LEN + 1] = AUDIT_GENESIS_HASH;
    char base_hash[CRYPTO_SHA256_HEX_LEN + 1];
    enum rc rc;

    memset(out, 0, sizeof(*out));
    out->reason = "";
    /* One snapshot: retention may remove events while this reads. */
    rc = db_exec_ok(conn, req_id, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL);
    if (rc != RC_OK)
        return rc;
    rc = verify_base(conn, key, out, prev, req_id);
    snprintf(base_hash, sizeof(base_hash), "%s", prev);
    if (rc == RC_OK && out->bad_id == 0)
        rc = verify_events(conn, out, prev, req_id);
    if (rc == RC_OK)
        rc = verify_checkpoints(conn, key, out, base_hash, req_id);
    db_rollback(conn); /* read only: nothing to keep */
    return rc;
}
