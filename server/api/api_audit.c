/*
 * api_audit.c - the audit trail over HTTP: events, chain verification, the
 * public key, signed checkpoints, retention and the signed export
 * (docs/audit-export.md is the contract for the export's bytes).
 *
 * The export streams: the handler records the "audit.export" event, opens a
 * REPEATABLE READ transaction with a cursor on the request's connection and
 * takes that connection over for the stream (struct export). libmicrohttpd
 * then calls export_read() whenever the socket can take more; it FETCHes
 * AUDIT_EXPORT_BATCH events at a time into a buffer, so memory stays bounded
 * by one batch however long the range. The SHA-256 of every byte sent is
 * kept as it goes; after the last event the manifest is built, signed and
 * sent. export_free() runs when the request ends, read to the end or not,
 * and gives the connection back to the pool (rolling back if needed).
 *
 * After the line of a "serve.requests.seal" event come its batch's gateway
 * request records, each with its inclusion proof (docs/audit-export.md,
 * "Gateway request records"): the rest of that FETCH waits in x->held while
 * the batch's Merkle tree (its record hashes, read once) gives the proofs
 * and its records are read EXPORT_SEAL_PAGE_ROWS at a time, in the same
 * snapshot. Memory stays bounded by one batch's tree and one page.
 *
 * The export is the one place where a transaction stays open across client
 * I/O (CONVENTIONS.md "SQL"): the manifest must describe exactly one
 * snapshot. It is read only, EXPORT_MAX_RUNNING bounds how many there are,
 * and libmicrohttpd's connection timeout ends one whose client stalls.
 *
 * Threads: handlers and stream callbacks run on libmicrohttpd's threads; an
 * export's state is used by one thread at a time. g_exports counts running
 * exports (each holds a pooled connection) to refuse more than
 * EXPORT_MAX_RUNNING at once.
 */
#include <openssl/evp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "api.h"
#include "api_util.h"
#include "app.h"
#include "audit_canon.h"
#include "audit_range.h"
#include "audit_sign.h"
#include "db.h"
#include "db_audit.h"
#include "db_audit_keys.h"
#include "db_audit_sign.h"
#include "db_serve_seal.h"
#include "jx.h"
#include "log.h"
#include "merkle.h"

/* Exports at once: each holds a database connection for its whole stream. */
#define EXPORT_MAX_RUNNING 2
/* A sealed batch's records are read this many at a time, and a buffer
 * stops taking more of them past EXPORT_SEAL_PAGE_BYTES: one refill holds
 * at most that much more than one record. */
#define EXPORT_SEAL_PAGE_ROWS 64
#define EXPORT_SEAL_PAGE_BYTES (1 << 20)
/* A record's prompt and answer texts together past this are left out of its
 * line ("texts_omitted"), which keeps the line under the 1 MiB the verifier
 * reads; the texts are not part of the record's hash. */
#define EXPORT_TEXTS_MAX (900 * 1024)
#define SEAL_ACTION "serve.requests.seal"

static atomic_int g_exports;

/* An ISO-8601 timestamp filter: digits, '-', ':', 'T', 'Z', '.', '+'. */
static int ts_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (s == NULL)
        return 1;
    if (n < 10 || n > 40)
        return 0;
    return strspn(s, "0123456789-:TZ.+ ") == n;
}

enum rc api_audit_events(struct srv_req *req)
{
    char cursor[24];
    int limit;
    json_t *rows = NULL, *last;
    const char *action = srv_query(req, "action"), *actor = srv_query(req, "actor"),
               *target = srv_query(req, "target"), *since = srv_query(req, "since"),
               *until = srv_query(req, "until");
    enum rc rc;

    if ((rc = api_page(req, 100, 500, &limit, cursor, sizeof(cursor))) != RC_OK)
        return rc;
    if (!ts_ok(since))
        return srv_fail(req, RC_EINVAL, "since", "since must be an ISO-8601 time");
    if (!ts_ok(until))
        return srv_fail(req, RC_EINVAL, "until", "until must be an ISO-8601 time");
    if (action && strlen(action) > 64)
        return srv_fail(req, RC_EINVAL, "action", "action must be at most 64 bytes");
    if (actor && strlen(actor) > 128)
        return srv_fail(req, RC_EINVAL, "actor", "actor must be at most 128 bytes");
    if (target && strlen(target) > 128)
        return srv_fail(req, RC_EINVAL, "target", "target must be at most 128 bytes");
    if (srv_db(req) == NULL)
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    rc = audit_list(req->db, action, actor, target, since, until, cursor[0] ? cursor : NULL, limit,
                    &rows, req->req_id);
    if (rc != RC_OK)
        return rc;
    last = json_array_size(rows) == (size_t)limit ? json_array_get(rows, (size_t)limit - 1) : NULL;
    return srv_reply(req, 200,
                     json_pack("{s:o,s:O}", "events", rows, "next_cursor",
                               last ? json_object_get(last, "id") : json_null()));
}

enum rc api_audit_verify(struct srv_req *req)
{
    struct audit_verify_result r;
    enum rc rc;

    if (srv_db(req) == NULL)
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    if ((rc = audit_verify_db(req->db, req->app->audit_key, &r, req->req_id)) != RC_OK)
        return rc;
    return srv_reply(req, 200,
                     json_pack("{s:b,s:I,s:I,s:I,s:I,s:I,s:s}", "valid",
                               r.bad_id == 0 && r.bad_checkpoint_id == 0, "checked",
                               (json_int_t)r.checked, "first_bad_id", (json_int_t)r.bad_id,
                               "from_seq", (json_int_t)r.from_seq, "checkpoints_checked",
                               (json_int_t)r.checkpoints, "first_bad_checkpoint_id",
                               (json_int_t)r.bad_checkpoint_id, "reason", r.reason));
}

enum rc api_audit_public_key(struct srv_req *req)
{
    const struct audit_key *key = req->app->audit_key;
    char *pem;
    json_t *body, *keys = NULL;
    enum rc rc;

    if (srv_db(req) == NULL)
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    /* The key ring: every key ever used, so older checkpoints verify. */
    if ((rc = audit_keys_list(req->db, &keys, req->req_id)) != RC_OK)
        return rc;
    if ((pem = audit_key_public_pem(key)) == NULL) {
        json_decref(keys);
        return RC_ENOMEM;
    }
    body = json_pack("{s:s,s:s,s:s,s:s,s:o}", "algorithm", "ed25519", "key_id", audit_key_id(key),
                     "public_key", audit_key_public_b64(key), "pem", pem, "keys", keys);
    free(pem);
    if (body == NULL)
        return RC_ENOMEM;
    return srv_reply(req, 200, body);
}

enum rc api_audit_checkpoints(struct srv_req *req)
{
    char cursor[24];
    int limit;
    json_t *rows = NULL, *last;
    enum rc rc;

    if ((rc = api_page(req, 100, 500, &limit, cursor, sizeof(cursor))) != RC_OK)
        return rc;
    if (srv_db(req) == NULL)
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    rc = audit_checkpoint_list(req->db, cursor[0] ? cursor : NULL, limit, &rows, req->req_id);
    if (rc != RC_OK)
        return rc;
    last = json_array_size(rows) == (size_t)limit ? json_array_get(rows, (size_t)limit - 1) : NULL;
    return srv_reply(req, 200,
                     json_pack("{s:o,s:O}", "checkpoints", rows, "next_cursor",
                               last ? json_object_get(last, "id") : json_null()));
}

enum rc api_audit_retention(struct srv_req *req)
{
    static const char *const allowed[] = {NULL};
    struct audit_retention_result r;
    char actor[96], tbuf[24], cbuf[24], ebuf[24];
    enum rc rc;

    if (req->body != NULL && (rc = api_body_object(req, allowed)) != RC_OK)
        return rc;
    if (req->app->cfg->audit_retention_days == 0)
        return srv_fail(req, RC_ECONFLICT, "",
                        "audit retention is off: this server keeps audit events forever "
                        "(audit_retention_days is 0 in its configuration)");
    if (srv_db(req) == NULL)
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    srv_actor(req, actor, sizeof(actor));
    rc = audit_retention_run(req->db, req->app->audit_key, req->app->cfg->audit_retention_days,
                             actor, req->client_addr, &r, req->req_id);
    if (rc != RC_OK)
        return rc;
    if (r.removed > 0)
        LOG_INFO("audit", "retention removed events",
                 "req_id=%s count=%lld through=%lld checkpoint_id=%lld", req->req_id,
                 (long long)r.removed, (long long)r.through, (long long)r.checkpoint_id);
    return srv_reply(
        req, 200,
        json_pack("{s:I,s:o,s:o,s:o,s:i}", "removed", (json_int_t)r.removed, "removed_through",
                  r.through ? json_string(db_i64(r.through, tbuf, sizeof(tbuf))) : json_null(),
                  "checkpoint_id",
                  r.checkpoint_id ? json_string(db_i64(r.checkpoint_id, cbuf, sizeof(cbuf)))
                                  : json_null(),
                  "event_id",
                  r.event_id ? json_string(db_i64(r.event_id, ebuf, sizeof(ebuf))) : json_null(),
                  "retention_days", r.retention_days));
}

/* ------------------------------------------------------------------ */
/* Export                                                               */

/* A seal event's batch, whose records go out right after the event's line. */
struct seal_out {
    int64_t event_id, batch_id;
    struct merkle_tree *tree; /* owned; over the batch's record hashes in id order */
    size_t count, next;       /* records in the batch; index of the next to write */
    int64_t after_id;         /* id of the last record written */
};

struct export
{
    struct srv_app *app;         /* borrowed */
    PGconn *conn;                /* owned (checked out) until the last FETCH */
    const struct audit_key *key; /* borrowed from app */
    char req_id[24];
    int csv;         /* 1 = CSV, 0 = JSON Lines */
    char *from, *to; /* owned; as asked, NULL when open */
    int from_is_ts;  /* the anchor comes from the first event */
    int64_t anchor;  /* the event just before the range; -1 until known */
    int64_t base_seq;
    char base_hash[CRYPTO_SHA256_HEX_LEN + 1];
    EVP_MD_CTX *sha; /* owned; over every byte before the manifest */
    char *buf;       /* owned; bytes ready to send */
    size_t len, off, cap;
    int64_t count, first_id, last_id;
    char first_hash[CRYPTO_SHA256_HEX_LEN + 1], last_hash[CRYPTO_SHA256_HEX_LEN + 1];
    char prev_hash[CRYPTO_SHA256_HEX_LEN + 1]; /* "" when it cannot be vouched for */
    int done;                                  /* the manifest is in buf */
    PGresult *held;        /* owned: a FETCH of events whose rows from held_row on wait
                              while a batch's records go out; NULL when all are written */
    int held_row;          /* */
    int sealing;           /* seal's records are being written */
    struct seal_out seal;  /* */
    int64_t serve_records; /* record lines written */
};

static void export_free(void *cls)
{
    struct export *x = cls;

    if (x == NULL)
        return;
    if (x->conn != NULL)
        db_release(x->app->db, x->conn); /* rolls the snapshot back */
    EVP_MD_CTX_free(x->sha);
    PQclear(x->held);
    merkle_tree_free(x->seal.tree);
    free(x->buf);
    free(x->from);
    free(x->to);
    free(x);
    atomic_fetch_sub(&g_exports, 1);
}

static int buf_put(struct export *x, const char *s, size_t n)
{
    if (x->len + n > x->cap) {
        size_t cap = x->cap ? x->cap : 65536;
        char *nb;
        while (cap < x->len + n)
            cap *= 2;
        if ((nb = realloc(x->buf, cap)) == NULL)
            return -1;
        x->buf = nb;
        x->cap = cap;
    }
    memcpy(x->buf + x->len, s, n);
    x->len += n;
    return 0;
}

static int buf_puts(struct export *x, const char *s)
{
    return buf_put(x, s, strlen(s));
}

/* s as a JSON string (quotes, escapes; non-ASCII as \u). */
static int buf_json_string(struct export *x, const char *s)
{
    json_t *j = json_string(s);
    char *t = j ? jx_dumps(j, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;
    int r = t != NULL ? buf_puts(x, t) : buf_puts(x, "\"\"");

    free(t);
    json_decref(j);
    return r;
}

/* One RFC 4180 field: quoted when it holds a comma, quote, CR or LF. Lines
 * end in LF alone, as in the JSON Lines form (the verifier refuses CR LF). */
static int buf_csv_field(struct export *x, const char *s)
{
    if (strpbrk(s, ",\"\r\n") == NULL)
        return buf_puts(x, s);
    if (buf_put(x, "\"", 1) != 0)
        return -1;
    for (const char *p = s; *p; p++) {
        if (*p == '"' && buf_put(x, "\"", 1) != 0)
            return -1;
        if (buf_put(x, p, 1) != 0)
            return -1;
    }
    return buf_put(x, "\"", 1);
}

/* The manifest's prev_hash: the hash of event anchor (-1: of the newest
 * event before a time range that turned out empty). */
static enum rc export_anchor(struct export *x, int64_t anchor)
{
    x->anchor = anchor;
    return audit_export_anchor(x->conn, x->base_seq, x->base_hash, anchor,
                               anchor < 0 && x->from_is_ts ? x->from : NULL, x->prev_hash,
                               x->req_id);
}

/* s as a JSON string the way jansson writes it with JSON_ENSURE_ASCII, for
 * ASCII text; -1 on non-ASCII (the caller falls back to jansson) or no
 * memory. */
static int buf_ascii_json_string(struct export *x, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    const char *run = s;

    if (buf_put(x, "\"", 1) != 0)
        return -1;
    for (const char *p = s;; p++) {
        unsigned char c = (unsigned char)*p;
        char esc[7] = {'\\', 0, 0, 0, 0, 0, 0};
        size_t n = 2;
        if (c != '\0' && c != '"' && c != '\\' && c >= 0x20 && c < 0x80)
            continue;
        if (c >= 0x80 || buf_put(x, run, (size_t)(p - run)) != 0)
            return -1;
        if (c == '\0')
            break;
        switch (c) {
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            n = 6;
        }
        if (buf_put(x, esc, n) != 0)
            return -1;
        run = p + 1;
    }
    return buf_put(x, "\"", 1);
}

/*
 * Row i's export line written straight from its columns, without building
 * JSON objects: the stored details are the canonical text they were hashed
 * as. Kept only when the result reproduces the stored hash, which proves it
 * byte for byte; otherwise (non-ASCII text, a row changed behind the
 * server's back) the buffer is rolled back and the caller takes jansson's
 * path, which the verifier then judges. Returns 1 when the line was written.
 */
static int export_row_fast(struct export *x, const PGresult *res, int i, const char *hash)
{
    /* AUDIT_EVENT_COLUMNS in the order of the canonical form's sorted keys */
    static const int order[] = {4, 2, 7, 0, 6, 8, 3, 5, 1};
    static const char *const keys[] = {"action",    "actor",  "details", "id", "outcome",
                                       "prev_hash", "source", "target",  "ts"};
    size_t start = x->len, event;
    char digest[CRYPTO_SHA256_HEX_LEN + 1];
    int ok = buf_puts(x, "{\"hash\":\"") == 0 && buf_puts(x, hash) == 0 &&
             buf_puts(x, "\",\"event\":") == 0;

    event = x->len;
    for (size_t k = 0; ok && k < sizeof(order) / sizeof(order[0]); k++) {
        const char *v = PQgetvalue(res, i, order[k]);
        ok = buf_puts(x, k == 0 ? "{\"" : ",\"") == 0 && buf_puts(x, keys[k]) == 0 &&
             buf_puts(x, "\":") == 0;
        if (ok && order[k] == 7)
            ok = buf_puts(x, v) == 0;
        else if (ok)
            ok = buf_ascii_json_string(x, v) == 0;
    }
    ok = ok && buf_puts(x, "}") == 0;
    if (ok) {
        crypto_sha256_hex(x->buf + event, x->len - event, digest);
        ok = strcmp(digest, hash) == 0 && buf_puts(x, "}\n") == 0;
    }
    if (!ok)
        x->len = start;
    return ok;
}

/* Row i of a FETCH as one export line in buf. */
static enum rc export_row(struct export *x, const PGresult *res, int i)
{
    int64_t id = 0;
    json_t *details;
    char *canon = NULL, *dtext = NULL, idbuf[24];
    const char *hash = PQgetvalue(res, i, 9);
    struct audit_fields f;
    int bad;

    if (db_parse_i64(PQgetvalue(res, i, 0), &id) != RC_OK)
        return RC_EINTERNAL;
    if (!x->csv && export_row_fast(x, res, i, hash))
        goto counted;
    /* Details that are not JSON go out as a string: the event's hash then
     * fails where the verifier looks, instead of the server hiding it. */
    details = jx_loads(PQgetvalue(res, i, 7), JSON_DECODE_ANY);
    if (details == NULL)
        details = json_string(PQgetvalue(res, i, 7));
    f = audit_fields_of_row(res, i, id, details);
    if (x->csv) {
        dtext = details ? jx_dumps(details, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII |
                                                JSON_ENCODE_ANY)
                        : NULL;
        bad = dtext == NULL;
        db_i64(id, idbuf, sizeof(idbuf));
        for (int c = 0; !bad && c < 10; c++) {
            const char *v = c == 0 ? idbuf : c == 7 ? dtext : PQgetvalue(res, i, c);
            bad = buf_csv_field(x, v) != 0 || buf_puts(x, c == 9 ? "\n" : ",") != 0;
        }
    } else {
        canon = details ? audit_canonical(&f) : NULL;
        bad = canon == NULL || buf_puts(x, "{\"hash\":") != 0 || buf_json_string(x, hash) != 0 ||
              buf_puts(x, ",\"event\":") != 0 || buf_puts(x, canon) != 0 || buf_puts(x, "}\n") != 0;
    }
    free(canon);
    free(dtext);
    json_decref(details);
    if (bad)
        return RC_ENOMEM;
counted:
    if (x->count == 0) {
        x->first_id = id;
        snprintf(x->first_hash, sizeof(x->first_hash), "%s", hash);
    }
    x->count++;
    x->last_id = id;
    snprintf(x->last_hash, sizeof(x->last_hash), "%s", hash);
    return RC_OK;
}

static json_t *opt_str(const char *s)
{
    return s && s[0] ? json_string(s) : json_null();
}

/* After the last event: read the checkpoints, end the snapshot, give the
 * connection back and put the signed manifest line in buf. */
static enum rc export_manifest(struct export *x)
{
    unsigned char md[32];
    unsigned mdlen = 0;
    char sha_hex[CRYPTO_SHA256_HEX_LEN + 1], ts[40], fbuf[24], lbuf[24];
    json_t *cps = NULL, *m = NULL;
    char *text = NULL;
    struct timeval tv;
    enum rc rc = RC_OK;

    if (x->count == 0 && x->anchor < 0)
        rc = export_anchor(x, -1);
    if (rc == RC_OK && x->count > 0)
        rc = audit_export_checkpoints(x->conn, x->anchor >= 0 ? x->anchor : x->first_id - 1,
                                      x->last_id, &cps, x->req_id);
    else
        cps = json_array();
    if (rc == RC_OK && cps == NULL)
        rc = RC_ENOMEM;
    if (rc == RC_OK)
        rc = audit_export_close(x->conn, x->req_id);
    db_release(x->app->db, x->conn);
    x->conn = NULL;
    if (rc != RC_OK)
        goto out;
    if (EVP_DigestFinal_ex(x->sha, md, &mdlen) != 1 || mdlen != sizeof(md)) {
        rc = RC_EINTERNAL;
        goto out;
    }
    crypto_hex(md, sizeof(md), sha_hex);
    gettimeofday(&tv, NULL);
    audit_format_ts((int64_t)tv.tv_sec * 1000000 + tv.tv_usec, ts, sizeof(ts));
    m = json_pack("{s:s,s:s,s:o,s:o,s:I,s:o,s:o,s:o,s:o,s:o,s:s,s:O,s:s,s:s}", "type",
                  "trainyard.audit.export", "format", x->csv ? "csv" : "jsonl", "from",
                  opt_str(x->from), "to", opt_str(x->to), "count", (json_int_t)x->count, "first_id",
                  x->count ? json_string(db_i64(x->first_id, fbuf, sizeof(fbuf))) : json_null(),
                  "last_id",
                  x->count ? json_string(db_i64(x->last_id, lbuf, sizeof(lbuf))) : json_null(),
                  "first_hash", x->count ? json_string(x->first_hash) : json_null(), "last_hash",
                  x->count ? json_string(x->last_hash) : json_null(), "prev_hash",
                  opt_str(x->prev_hash), "events_sha256", sha_hex, "checkpoints", cps,
                  "generated_at", ts, "key_id", audit_key_id(x->key));
    if (m == NULL) {
        rc = RC_ENOMEM;
        goto out;
    }
    if (json_object_set_new(m, "serve_records", json_integer((json_int_t)x->serve_records)) != 0) {
        rc = RC_ENOMEM;
        goto out;
    }
    if ((rc = audit_sign_object(x->key, m)) != RC_OK)
        goto out;
    text = jx_dumps(m, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
    if (text == NULL) {
        rc = RC_ENOMEM;
        goto out;
    }
    if (x->csv)
        rc = buf_puts(x, "#manifest,") != 0 || buf_csv_field(x, text) != 0 || buf_puts(x, "\n") != 0
                 ? RC_ENOMEM
                 : RC_OK;
    else
        rc = buf_puts(x, "{\"manifest\":") != 0 || buf_puts(x, text) != 0 || buf_puts(x, "}\n") != 0
                 ? RC_ENOMEM
                 : RC_OK;
    x->done = 1;
out:
    free(text);
    json_decref(m);
    json_decref(cps);
    return rc;
}

/* Column c of row i as a JSON string (NULL: SQL NULL as null); NULL on
 * text that is not UTF-8 or no memory. */
static json_t *col_str(const PGresult *res, int i, int c, int null_ok)
{
    if (null_ok && PQgetisnull(res, i, c))
        return json_null();
    return json_string(PQgetvalue(res, i, c));
}

/* Column c of row i as a JSON integer; NULL when it is not one. */
static json_t *col_int(const PGresult *res, int i, int c)
{
    int64_t v;

    if (db_parse_i64(PQgetvalue(res, i, c), &v) != RC_OK)
        return NULL;
    return json_integer((json_int_t)v);
}

/*
 * Record row i (DB_SERVE_RECORD_COLUMNS) of the batch in x->seal as one
 * line: its fields, its texts, and its inclusion proof at index x->seal.next
 * (docs/audit-export.md, "Gateway request records").
 */
static enum rc export_serve_record(struct export *x, const PGresult *res, int i)
{
    static const int strs[] = {1, 2, 7, 8, 10, 11, 12, 17, 18};
    static const int ids[] = {3, 4, 5, 6};
    static const int nums[] = {9, 13, 14, 15, 16};
    uint8_t path[MERKLE_MAX_PATH][MERKLE_HASH_LEN];
    size_t plen = 0, texts;
    char hex[CRYPTO_SHA256_HEX_LEN + 1], ebuf[24], bbuf[24], *text = NULL;
    json_t *o = json_object(), *proof = json_array();
    int bad = o == NULL || proof == NULL;
    enum rc rc;

    if ((rc = merkle_tree_proof(x->seal.tree, x->seal.next, path, &plen)) != RC_OK)
        bad = 1;
    for (size_t k = 0; !bad && k < plen; k++) {
        crypto_hex(path[k], MERKLE_HASH_LEN, hex);
        bad = json_array_append_new(proof, json_string(hex)) != 0;
    }
    if (!bad)
        bad = json_object_set_new(o, "event",
                                  json_string(db_i64(x->seal.event_id, ebuf, sizeof(ebuf)))) ||
              json_object_set_new(o, "batch",
                                  json_string(db_i64(x->seal.batch_id, bbuf, sizeof(bbuf)))) ||
              json_object_set_new(o, "index", json_integer((json_int_t)x->seal.next)) ||
              json_object_set_new(o, "count", json_integer((json_int_t)x->seal.count)) ||
              json_object_set(o, "proof", proof) ||
              json_object_set_new(o, "id", col_str(res, i, 0, 0));
    for (size_t k = 0; !bad && k < sizeof(strs) / sizeof(strs[0]); k++)
        bad = json_object_set_new(o, PQfname(res, strs[k]), col_str(res, i, strs[k], 0)) != 0;
    for (size_t k = 0; !bad && k < sizeof(ids) / sizeof(ids[0]); k++)
        bad = json_object_set_new(o, PQfname(res, ids[k]), col_str(res, i, ids[k], 1)) != 0;
    for (size_t k = 0; !bad && k < sizeof(nums) / sizeof(nums[0]); k++)
        bad = json_object_set_new(o, PQfname(res, nums[k]), col_int(res, i, nums[k])) != 0;
    texts = (size_t)PQgetlength(res, i, 19) + (size_t)PQgetlength(res, i, 20);
    if (!bad && texts > EXPORT_TEXTS_MAX)
        bad = json_object_set_new(o, "prompt_text", json_null()) ||
              json_object_set_new(o, "answer_text", json_null()) ||
              json_object_set_new(o, "texts_omitted", json_true());
    else if (!bad)
        bad = json_object_set_new(o, "prompt_text", col_str(res, i, 19, 1)) ||
              json_object_set_new(o, "answer_text", col_str(res, i, 20, 1));
    if (!bad)
        bad = (text = jx_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII)) == NULL;
    if (!bad && x->csv)
        bad = buf_puts(x, "#serve_record,") != 0 || buf_csv_field(x, text) != 0 ||
              buf_puts(x, "\n") != 0;
    else if (!bad)
        bad = buf_puts(x, "{\"serve_record\":") != 0 || buf_puts(x, text) != 0 ||
              buf_puts(x, "}\n") != 0;
    free(text);
    json_decref(proof);
    json_decref(o);
    if (bad)
        return rc != RC_OK ? rc : RC_ENOMEM;
    x->seal.next++;
    x->serve_records++;
    return RC_OK;
}

static void seal_end(struct export *x)
{
    merkle_tree_free(x->seal.tree);
    memset(&x->seal, 0, sizeof(x->seal));
    x->sealing = 0;
}

/* After the line of seal event event_id: its batch's tree, so that its
 * records (written by export_seal_page) carry their proofs. A seal event
 * whose batch has no records left writes none, and the verifier says so. */
static enum rc export_seal_start(struct export *x, int64_t event_id)
{
    uint8_t(*values)[MERKLE_HASH_LEN] = NULL;
    int64_t batch = 0;
    size_t n = 0;
    enum rc rc = db_serve_batch_of_event(x->conn, event_id, &batch, x->req_id);

    if (rc == RC_ENOTFOUND)
        return RC_OK;
    if (rc == RC_OK)
        rc = db_serve_batch_hashes(x->conn, batch, &values, &n, x->req_id);
    if (rc == RC_OK && n > 0) {
        x->seal = (struct seal_out){.event_id = event_id, .batch_id = batch, .count = n};
        rc = merkle_tree_new((const uint8_t(*)[MERKLE_HASH_LEN])values, n, &x->seal.tree);
        x->sealing = rc == RC_OK;
    }
    free(values);
    return rc;
}

/* The next page of the batch's records. */
static enum rc export_seal_page(struct export *x)
{
    PGresult *res = NULL;
    enum rc rc = db_serve_batch_records(x->conn, x->seal.batch_id, x->seal.after_id,
                                        EXPORT_SEAL_PAGE_ROWS, &res, x->req_id);
    int rows = rc == RC_OK ? PQntuples(res) : 0;

    for (int i = 0; rc == RC_OK && i < rows && x->seal.next < x->seal.count; i++) {
        if (x->len >= EXPORT_SEAL_PAGE_BYTES)
            break; /* the rest on the next refill */
        if ((rc = export_serve_record(x, res, i)) == RC_OK &&
            db_parse_i64(PQgetvalue(res, i, 0), &x->seal.after_id) != RC_OK)
            rc = RC_EINTERNAL;
    }
    if (rc == RC_OK && (rows == 0 || x->seal.next >= x->seal.count))
        seal_end(x);
    PQclear(res);
    return rc;
}

/* The events of x->held from held_row on, up to and including the next seal
 * event, whose records then go out first. */
static enum rc export_events(struct export *x)
{
    int rows = PQntuples(x->held);
    enum rc rc = RC_OK;

    while (rc == RC_OK && x->held_row < rows) {
        int i = x->held_row++;
        rc = export_row(x, x->held, i);
        if (rc == RC_OK && strcmp(PQgetvalue(x->held, i, 4), SEAL_ACTION) == 0) {
            rc = export_seal_start(x, x->last_id);
            if (x->sealing)
                break;
        }
    }
    if (x->held_row >= rows) {
        PQclear(x->held);
        x->held = NULL;
    }
    return rc;
}

/* Refill buf: a page of a sealed batch's records, the next events, or the
 * manifest after the last. */
static enum rc export_fill(struct export *x)
{
    enum rc rc = RC_OK;
    int fetched = 0;

    if (x->sealing) {
        rc = export_seal_page(x);
    } else {
        if (x->held == NULL) {
            if ((rc = audit_export_fetch(x->conn, &x->held, x->req_id)) != RC_OK)
                return rc;
            x->held_row = 0;
            fetched = PQntuples(x->held);
            if (fetched > 0 && x->anchor < 0)
                rc = export_anchor(x, strtoll(PQgetvalue(x->held, 0, 0), NULL, 10) - 1);
            if (fetched == 0) {
                PQclear(x->held);
                x->held = NULL;
                return export_manifest(x);
            }
        }
        if (rc == RC_OK)
            rc = export_events(x);
    }
    if (rc == RC_OK && x->len > 0 && EVP_DigestUpdate(x->sha, x->buf, x->len) != 1)
        rc = RC_EINTERNAL;
    return rc;
}

static long export_read(void *cls, uint64_t pos, char *out, size_t max)
{
    struct export *x = cls;
    size_t n;

    (void)pos;
    while (x->off == x->len) {
        enum rc rc;
        if (x->done)
            return -1;
        x->off = x->len = 0;
        if ((rc = export_fill(x)) != RC_OK) {
            LOG_ERROR("audit", "export failed mid-stream", "req_id=%s rc=%s sent_events=%lld",
                      x->req_id, rc_str(rc), (long long)x->count);
            if (x->conn != NULL) {
                db_release(x->app->db, x->conn);
                x->conn = NULL;
            }
            x->len = x->off = 0;
            x->done = 1;
            return -2;
        }
    }
    n = x->len - x->off;
    if (n > max)
        n = max;
    memcpy(out, x->buf + x->off, n);
    x->off += n;
    return (long)n;
}

/* Check one bound and sort it into r; *copy receives a normalised copy. */
static enum rc export_bound(struct srv_req *req, const char *name, const char *v, int is_from,
                            struct audit_export_range *r, char **copy)
{
    char *s;

    *copy = NULL;
    if (v == NULL || *v == '\0')
        return RC_OK;
    if (strlen(v) > 40 || (s = strdup(v)) == NULL) {
        srv_fail(req, RC_EINVAL, name, "%s must be an event id or an RFC 3339 time", name);
        err_detail(&req->err, "got \"%.40s\"", v);
        return RC_EINVAL;
    }
    if (audit_id_ok(s)) {
        *(is_from ? &r->from_id : &r->to_id) = s;
    } else if (audit_time_ok(s)) {
        *(is_from ? &r->from_ts : &r->to_ts) = s;
    } else {
        free(s);
        srv_fail(req, RC_EINVAL, name, "%s must be an event id or an RFC 3339 time", name);
        err_detail(&req->err, "got \"%.40s\"", v);
        return RC_EINVAL;
    }
    *copy = s;
    return RC_OK;
}

/* format, from and to of the query: 400 naming the field when malformed. */
static enum rc export_args(struct srv_req *req, int *csv, struct audit_export_range *range,
                           char **from, char **to)
{
    const char *format = srv_query(req, "format");
    enum rc rc;

    if (format == NULL || *format == '\0' || strcmp(format, "jsonl") == 0) {
        *csv = 0;
    } else if (strcmp(format, "csv") == 0) {
        *csv = 1;
    } else {
        srv_fail(req, RC_EINVAL, "format", "format must be jsonl or csv");
        err_detail(&req->err, "got \"%.32s\"", format);
        return RC_EINVAL;
    }
    if ((rc = export_bound(req, "from", srv_query(req, "from"), 1, range, from)) != RC_OK ||
        (rc = export_bound(req, "to", srv_query(req, "to"), 0, range, to)) != RC_OK)
        return rc;
    if (range->from_id && range->to_id &&
        strtoll(range->from_id, NULL, 10) > strtoll(range->to_id, NULL, 10))
        return srv_fail(req, RC_EINVAL, "from", "from must not be after to");
    return RC_OK;
}

/*
 * Set up the stream on req's connection, which x takes over: the snapshot
 * and cursor, the anchor when it is known now, the CSV header, the file name.
 */
static enum rc export_start(struct srv_req *req, struct export *x,
                            const struct audit_export_range *range)
{
    char ts[40];
    struct timeval tv;
    enum rc rc;

    if ((x->sha = EVP_MD_CTX_new()) == NULL || EVP_DigestInit_ex(x->sha, EVP_sha256(), NULL) != 1)
        return RC_ENOMEM;
    if ((rc = audit_export_open(req->db, range, &x->base_seq, x->base_hash, req->req_id)) != RC_OK)
        return rc;
    /* The stream owns the connection (and its open snapshot) from here. */
    x->conn = req->db;
    req->db = NULL;
    if (range->from_ts == NULL) {
        int64_t lo = range->from_id ? strtoll(range->from_id, NULL, 10) : 0;
        if ((rc = export_anchor(x, lo > x->base_seq + 1 ? lo - 1 : x->base_seq)) != RC_OK)
            return rc;
    }
    if (x->csv &&
        (buf_puts(x, "id,ts,actor,source,action,target,outcome,details,prev_hash,hash\n") != 0 ||
         EVP_DigestUpdate(x->sha, x->buf, x->len) != 1))
        return RC_ENOMEM;
    gettimeofday(&tv, NULL);
    audit_format_ts((int64_t)tv.tv_sec * 1000000 + tv.tv_usec, ts, sizeof(ts));
    /* "2026-11-29T21:00:00.123456Z" -> audit-20261129T210000Z.jsonl */
    snprintf(req->resp_filename, sizeof(req->resp_filename), "audit-%.4s%.2s%.2sT%.2s%.2s%.2sZ.%s",
             ts, ts + 5, ts + 8, ts + 11, ts + 14, ts + 17, x->csv ? "csv" : "jsonl");
    return RC_OK;
}

enum rc api_audit_export(struct srv_req *req)
{
    struct audit_export_range range = {NULL, NULL, NULL, NULL};
    struct export *x = NULL;
    json_t *details = NULL;
    char *from = NULL, *to = NULL;
    int csv = 0;
    enum rc rc;

    if ((rc = export_args(req, &csv, &range, &from, &to)) != RC_OK)
        goto out;
    if (atomic_fetch_add(&g_exports, 1) >= EXPORT_MAX_RUNNING) {
        atomic_fetch_sub(&g_exports, 1);
        rc = srv_fail(req, RC_ERATE, "", "%d exports are running already; try again later",
                      EXPORT_MAX_RUNNING);
        goto out;
    }
    /* From here the slot is x's: export_free() gives it back. */
    if ((x = calloc(1, sizeof(*x))) == NULL) {
        atomic_fetch_sub(&g_exports, 1);
        rc = RC_ENOMEM;
        goto out;
    }
    x->app = req->app;
    x->key = req->app->audit_key;
    x->csv = csv;
    x->anchor = -1;
    x->from_is_ts = range.from_ts != NULL;
    snprintf(x->req_id, sizeof(x->req_id), "%s", req->req_id);
    x->from = from; /* range points into these: they live as long as x */
    x->to = to;
    from = to = NULL;
    if (srv_db(req) == NULL) {
        rc = srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
        goto out;
    }
    details = json_pack("{s:s,s:o,s:o}", "format", csv ? "csv" : "jsonl", "from", opt_str(x->from),
                        "to", opt_str(x->to));
    if (details == NULL) {
        rc = RC_ENOMEM;
        goto out;
    }
    /* A stream: counted against the caller's caps (srv_hold) before it is
     * recorded, so a refused export leaves no record of one. */
    if ((rc = srv_hold(req)) != RC_OK)
        goto out;
    /* Recorded before the snapshot, in its own transaction (docs/audit-export.md). */
    rc = audit_append_alone(req, "audit.export", AUDIT_TARGET_NONE, "success", details);
    if (rc != RC_OK || (rc = export_start(req, x, &range)) != RC_OK)
        goto out;
    rc = srv_reply_stream(req, csv ? "text/csv" : "application/x-ndjson", export_read, x,
                          export_free);
    x = NULL;
out:
    export_free(x);
    json_decref(details);
    free(from);
    free(to);
    return rc;
}
