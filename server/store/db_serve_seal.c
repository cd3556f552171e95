/*
 * db_serve_seal.c - see db_serve_seal.h.
 */
#include "db_serve_seal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_target.h"
#include "db.h"
#include "db_audit.h"
#include "log.h"
#include "merkle.h"

/* How long the seal transaction may sit idle between its statements before
 * PostgreSQL ends the session: far above what a statement gap takes, far
 * below what a hung sealer holding the audit head would cost everyone. */
#define SEAL_IDLE_TX "5s"

struct seal {
    PGconn *c;
    int max;
    struct db_seal_result *out;
    /* the batch's members, filled by each run of the body */
    uint8_t (*values)[MERKLE_HASH_LEN];
    char *ids; /* "{1,2,...}" */
    size_t ids_cap;
};

/* The records to seal, locked, in id order: their hashes into s->values and
 * their ids into s->ids. */
static enum rc take_records(struct seal *s, int *n)
{
    char lim[16];
    const char *p[] = {lim};
    PGresult *r;
    enum rc rc;
    size_t off = 0;

    *n = 0;
    snprintf(lim, sizeof(lim), "%d", s->max);
    r = db_exec(s->c,
                "SELECT id, record_sha256 FROM serve_requests WHERE batch_id IS NULL "
                "ORDER BY id LIMIT $1::int FOR UPDATE",
                1, p);
    if ((rc = db_result_rc(r, "seal")) != RC_OK)
        goto out;
    s->ids[off++] = '{';
    for (int i = 0; i < PQntuples(r); i++) {
        const char *id = PQgetvalue(r, i, 0), *h = PQgetvalue(r, i, 1);
        if (merkle_from_hex(h, s->values[i]) != 0) {
            LOG_ERROR("seal", "a request record's record_sha256 is not 64 lower-case hex digits",
                      "id=%s", id);
            rc = RC_EINTERNAL;
            goto out;
        }
        off += (size_t)snprintf(s->ids + off, s->ids_cap - off, "%s%s", i ? "," : "", id);
        if ((i == 0 && db_parse_i64(id, &s->out->first_id) != RC_OK) ||
            (i == PQntuples(r) - 1 && db_parse_i64(id, &s->out->last_id) != RC_OK)) {
            rc = RC_EINTERNAL;
            goto out;
        }
    }
    snprintf(s->ids + off, s->ids_cap - off, "}");
    *n = PQntuples(r);
out:
    PQclear(r);
    return rc;
}

static enum rc append_event(struct seal *s)
{
    struct db_seal_result *o = s->out;
    char target[AUDIT_TARGET_SIZE], b[24], f[24], l[24];
    json_t *details = NULL;
    struct audit_event ev;
    enum rc rc;

    if (audit_target_id(AUDIT_TARGET_SERVE_BATCH, o->batch_id, target) != RC_OK)
        return RC_EINTERNAL;
    details = json_pack("{s:s,s:s,s:s,s:i,s:s}", "batch", db_i64(o->batch_id, b, sizeof(b)),
                        "first_id", db_i64(o->first_id, f, sizeof(f)), "last_id",
                        db_i64(o->last_id, l, sizeof(l)), "count", o->count, "root", o->root);
    if (details == NULL)
        return RC_ENOMEM;
    ev = (struct audit_event){.actor = "system",
                              .source = "",
                              .action = "serve.requests.seal",
                              .target = target,
                              .outcome = "success",
                              .details = details};
    rc = audit_append(s->c, &ev, "seal");
    json_decref(details);
    return rc;
}

static enum rc seal_body(void *arg)
{
    struct seal *s = arg;
    struct db_seal_result *o = s->out;
    uint8_t root[MERKLE_HASH_LEN];
    char cnt[16], bid[24];
    PGresult *r = NULL;
    enum rc rc;
    int n = 0;

    memset(o, 0, sizeof(*o));
    if ((rc = db_exec_ok(s->c, "seal",
                         "SELECT set_config('idle_in_transaction_session_timeout', '" SEAL_IDLE_TX
                         "', true)",
                         0, NULL)) != RC_OK)
        return rc;
    r = db_exec(s->c, "SELECT pg_try_advisory_xact_lock(" DB_SERVE_SEAL_LOCK ")", 0, NULL);
    if ((rc = db_result_rc(r, "seal")) != RC_OK)
        goto out;
    if (PQgetvalue(r, 0, 0)[0] != 't') {
        o->busy = 1;
        goto out;
    }
    PQclear(r);
    r = NULL;
    if ((rc = take_records(s, &n)) != RC_OK || n == 0)
        goto out;
    if ((rc = merkle_root((const uint8_t(*)[MERKLE_HASH_LEN])s->values, (size_t)n, root)) != RC_OK)
        goto out;
    crypto_hex(root, sizeof(root), o->root);
    o->count = n;
    snprintf(cnt, sizeof(cnt), "%d", n);
    {
        /* audit_seq is the event's id, known once the event is appended
         * under the head's lock: 0 until then, in this same transaction. */
        char f[24], l[24];
        const char *p[] = {db_i64(o->first_id, f, sizeof(f)), db_i64(o->last_id, l, sizeof(l)), cnt,
                           o->root};
        r = db_exec(s->c,
                    "INSERT INTO serve_batches (first_id, last_id, count, merkle_root, audit_seq) "
                    "VALUES ($1, $2, $3, $4, 0) RETURNING id",
                    4, p);
    }
    if ((rc = db_result_rc(r, "seal")) != RC_OK)
        goto out;
    if (PQntuples(r) != 1 || db_parse_i64(PQgetvalue(r, 0, 0), &o->batch_id) != RC_OK) {
        rc = RC_EINTERNAL;
        goto out;
    }
    PQclear(r);
    r = NULL;
    {
        /* By the ids read, never by range: a row committed since then with
         * an id in between is not in this batch's tree. */
        const char *p[] = {db_i64(o->batch_id, bid, sizeof(bid)), s->ids};
        r = db_exec(s->c, "UPDATE serve_requests SET batch_id = $1 WHERE id = ANY($2::bigint[])", 2,
                    p);
    }
    if ((rc = db_result_rc(r, "seal")) != RC_OK)
        goto out;
    if (strcmp(PQcmdTuples(r), cnt) != 0) {
        rc = RC_EINTERNAL;
        goto out;
    }
    PQclear(r);
    r = NULL;
    /* Lock order: the audit head last. */
    if ((rc = append_event(s)) != RC_OK)
        goto out;
    {
        const char *p[] = {bid};
        r = db_exec(s->c,
                    "UPDATE serve_batches SET audit_seq = h.seq FROM audit_head h WHERE id = $1 "
                    "RETURNING h.seq",
                    1, p);
    }
    if ((rc = db_result_rc(r, "seal")) == RC_OK &&
        (PQntuples(r) != 1 || db_parse_i64(PQgetvalue(r, 0, 0), &o->event_id) != RC_OK))
        rc = RC_EINTERNAL;
out:
    PQclear(r);
    return rc;
}

enum rc db_serve_seal(PGconn *c, int max_records, struct db_seal_result *out)
{
    struct seal s = {.c = c, .max = max_records, .out = out};
    enum rc rc;

    memset(out, 0, sizeof(*out));
    if (max_records < 1 || max_records > DB_SERVE_SEAL_MAX)
        return RC_EINVAL;
    s.ids_cap = (size_t)max_records * 21 + 3;
    s.values = malloc((size_t)max_records * MERKLE_HASH_LEN);
    s.ids = malloc(s.ids_cap);
    if (s.values == NULL || s.ids == NULL) {
        rc = RC_ENOMEM;
        goto out;
    }
    rc = db_tx(c, seal_body, &s, "seal");
    if (rc != RC_OK)
        memset(out, 0, sizeof(*out));
out:
    free(s.values);
    free(s.ids);
    return rc;
}

enum rc db_serve_batch_of_event(PGconn *c, int64_t event_id, int64_t *batch_id, const char *req_id)
{
    char e[24];
    const char *p[] = {db_i64(event_id, e, sizeof(e))};
    PGresult *r =
        db_exec(c, "SELECT id FROM serve_batches WHERE audit_seq = $1 ORDER BY id LIMIT 1", 1, p);
    enum rc rc = db_result_rc(r, req_id);

    *batch_id = 0;
    if (rc == RC_OK && PQntuples(r) == 0)
        rc = RC_ENOTFOUND;
    else if (rc == RC_OK && db_parse_i64(PQgetvalue(r, 0, 0), batch_id) != RC_OK)
        rc = RC_EINTERNAL;
    PQclear(r);
    return rc;
}

enum rc db_serve_batch_hashes(PGconn *c, int64_t batch_id, uint8_t (**values)[32], size_t *n,
                              const char *req_id)
{
    char b[24];
    const char *p[] = {db_i64(batch_id, b, sizeof(b))};
    PGresult *r = db_exec(c,
                          "SELECT record_sha256 FROM serve_requests WHERE batch_id = $1 "
                          "ORDER BY id",
                          1, p);
    enum rc rc = db_result_rc(r, req_id);
    size_t rows;

    *values = NULL;
    *n = 0;
    if (rc != RC_OK)
        goto out;
    rows = (size_t)PQntuples(r);
    if (rows > 0 && (*values = calloc(rows, MERKLE_HASH_LEN)) == NULL) {
        rc = RC_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < rows; i++)
        if (merkle_from_hex(PQgetvalue(r, (int)i, 0), (*values)[i]) != 0)
            memset((*values)[i], 0, MERKLE_HASH_LEN);
    *n = rows;
out:
    PQclear(r);
    return rc;
}

enum rc db_serve_batch_records(PGconn *c, int64_t batch_id, int64_t after_id, int limit,
                               PGresult **out, const char *req_id)
{
    char b[24], a[24], l[16];
    const char *p[] = {db_i64(batch_id, b, sizeof(b)), db_i64(after_id, a, sizeof(a)), l};
    enum rc rc;

    snprintf(l, sizeof(l), "%d", limit);
    *out = db_exec(c,
                   "SELECT " DB_SERVE_RECORD_COLUMNS " FROM serve_requests WHERE batch_id = $1 "
                   "AND id > $2 ORDER BY id LIMIT $3::int",
                   3, p);
    if ((rc = db_result_rc(*out, req_id)) != RC_OK) {
        PQclear(*out);
        *out = NULL;
    }
    return rc;
}
