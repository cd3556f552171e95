/*
 * verify.c - the export verifier (see verify.h and docs/audit-export.md,
 * "What trainyard audit verify checks").
 *
 * State kept while streaming: the stored hashes of the two lines before the
 * current one (prev, prev2), the first and last event seen, and for each
 * manifest checkpoint the stored hash of its event once that line passes.
 * That is all the end checks need, so memory does not grow with the export.
 *
 * The manifest is read before the first line (export_reader reads the tail
 * first), so the first line links to the manifest's prev_hash as the doc
 * says. It is trusted only when well formed, signed by the given key id and
 * its signature verifies: nothing a forged manifest claims steers the
 * diagnosis. When it is absent or not trusted, the first line's own
 * prev_hash stands in, the lines are still checked, and the manifest's fault
 * is reported after them.
 *
 * CSV: when a row's hash does not match, export_reader_recanonicalize() (the
 * doc's audit_canonical() rebuild) decides before the row is called modified.
 *
 * Internal functions return RC_OK to go on, STOP once a verdict is in *res,
 * or another rc for an I/O or memory error.
 */
#include "verify.h"

#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_canon.h"
#include "merkle.h"
#include "serve_proof.h"
#include "serve_record.h"
#include "utf8cut.h"

#define STOP RC_ECONFLICT /* internal: a failure verdict was recorded; stop */
#define HEX_LEN CRYPTO_SHA256_HEX_LEN

/* One manifest checkpoint. */
struct cp {
    const json_t *obj;        /* borrowed from the manifest */
    size_t index;             /* 1-based position in "checkpoints" */
    int64_t seq;              /* the event it vouches for */
    const char *hash;         /* its hash (borrowed) */
    char stored[HEX_LEN + 1]; /* stored hash of event seq, once read ("" before) */
    int64_t line;             /* that event's line */
};

enum m_trust {
    M_NONE = 0,      /* absent or malformed (the reader says why) */
    M_BAD_FORM,      /* a member is missing, mistyped or inconsistent (m_why) */
    M_OTHER_KEY,     /* signed with another key id */
    M_BAD_SIGNATURE, /* the signature does not verify */
    M_TRUSTED,
};

struct vstate {
    struct export_reader *r;             /* borrowed */
    const struct audit_key *key;         /* borrowed; the manifest's signer once found */
    const struct audit_key *const *keys; /* borrowed; the ring (NULL: key alone) */
    size_t nkeys;
    struct verify_result *res; /* borrowed; the verdict */
    EVP_MD *sha;               /* owned; fetched once */
    EVP_MD_CTX *md;            /* owned; per-record hash */

    /* manifest: used only when m_ok (well formed, our key, signature valid) */
    const json_t *m;                  /* borrowed from the reader; NULL when absent or malformed */
    enum m_trust m_trust;             /* how far it got */
    int m_ok;                         /* m_trust == M_TRUSTED */
    char m_why[256];                  /* why its form is bad */
    int64_t m_count, m_first, m_last; /* first/last 0 for an empty range */
    const char *m_prev, *m_first_hash, *m_last_hash, *m_events_sha256, *m_key_id;
    struct cp *cps;      /* owned; sorted by seq */
    size_t ncps, cursor; /* count; first cp whose seq >= the next id */

    /* the stream */
    int64_t n;                                  /* event lines accepted */
    char prev[HEX_LEN + 1], prev2[HEX_LEN + 1]; /* stored hashes of lines i-1, i-2 */
    int64_t prev_id, prev_line;                 /* line i-1 */
    int64_t first_id, first_line;               /* first event line */
    char first_hash[HEX_LEN + 1];
    int64_t last_line;   /* line of the last event */
    int64_t beyond_line; /* line of event m_last + 1, if any */

    /* gateway request records: the batch whose records come now */
    struct {
        int active;             /* its seal event was read; records are due */
        int64_t event_id, line; /* the seal event and its line */
        int64_t batch, first_id, last_id, count;
        int64_t next, prev_id; /* the next leaf index due; the last record's id */
        uint8_t root[MERKLE_HASH_LEN];
    } seal;
    int64_t m_serve; /* the manifest's serve_records; -1 when it has none */
};

const char *verify_kind_str(enum verify_kind kind)
{
    switch (kind) {
    case VERIFY_OK:
        return "ok";
    case VERIFY_MODIFIED:
        return "modified";
    case VERIFY_MISSING:
        return "missing";
    case VERIFY_INSERTED:
        return "inserted";
    case VERIFY_REORDERED:
        return "reordered";
    case VERIFY_SIGNATURE:
        return "signature";
    case VERIFY_MANIFEST:
        return "manifest";
    case VERIFY_FORMAT:
        return "format";
    }
    return "unknown";
}

static enum rc fail(struct vstate *st, enum verify_kind kind, int64_t line, int64_t event_id,
                    const char *fmt, ...) TY_PRINTF(5, 6);

static enum rc fail(struct vstate *st, enum verify_kind kind, int64_t line, int64_t event_id,
                    const char *fmt, ...)
{
    va_list ap;

    st->res->ok = 0;
    st->res->kind = kind;
    st->res->line = line;
    st->res->event_id = event_id;
    va_start(ap, fmt);
    vsnprintf(st->res->message, sizeof(st->res->message), fmt, ap);
    va_end(ap);
    return STOP;
}

/* "event 5" or "events 5..9" with the verb agreeing. */
static enum rc fail_missing(struct vstate *st, int64_t line, int64_t from, int64_t to,
                            const char *where)
{
    if (from == to)
        return fail(st, VERIFY_MISSING, line, from, "it is not in the export (it belongs %s)",
                    where);
    return fail(st, VERIFY_MISSING, line, from,
                "events %lld..%lld are not in the export (they belong %s)", (long long)from,
                (long long)to, where);
}

/* ---- the manifest's form ------------------------------------------------ */

static const char *str_of(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static int str_or_null(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_string(v) || json_is_null(v);
}

static int hex_member(const json_t *o, const char *k, const char **out)
{
    const char *s = str_of(o, k);

    if (s == NULL || !export_is_hex64(s, strlen(s)))
        return 0;
    *out = s;
    return 1;
}

static int cp_cmp(const void *a, const void *b)
{
    const struct cp *x = a, *y = b;

    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The form of checkpoint number idx; fills c. 0, or -1 with m_why. */
static int check_checkpoint(struct vstate *st, const json_t *o, size_t idx, struct cp *c)
{
    const char *seq = str_of(o, "seq"), *kind = str_of(o, "kind"), *type = str_of(o, "type");

    c->obj = o;
    c->index = idx;
    if (!json_is_object(o) || type == NULL || strcmp(type, "trainyard.audit.checkpoint") != 0 ||
        seq == NULL || export_parse_id(seq, strlen(seq), 1, &c->seq) != 0 ||
        !hex_member(o, "hash", &c->hash) || kind == NULL ||
        (strcmp(kind, "periodic") != 0 && strcmp(kind, "retention") != 0) ||
        str_of(o, "created_at") == NULL || str_of(o, "key_id") == NULL ||
        str_of(o, "signature") == NULL) {
        snprintf(st->m_why, sizeof(st->m_why),
                 "checkpoint %zu is not a checkpoint object (type, seq, hash, created_at, kind, "
                 "key_id, signature)",
                 idx);
        return -1;
    }
    return 0;
}

/* The manifest's members and their consistency; -1 with m_why when bad. */
static int check_manifest(struct vstate *st)
{
    const json_t *m = st->m, *count = json_object_get(m, "count"), *cps;
    const char *type = str_of(m, "type"), *format = str_of(m, "format");
    const char *first = str_of(m, "first_id"), *last = str_of(m, "last_id");
    const char *want = export_format_str(export_reader_format(st->r));
    size_t i;

#define BAD(...)                                                                                   \
    do {                                                                                           \
        snprintf(st->m_why, sizeof(st->m_why), __VA_ARGS__);                                       \
        return -1;                                                                                 \
    } while (0)
    if (type == NULL || strcmp(type, "trainyard.audit.export") != 0)
        BAD("the manifest's type is not trainyard.audit.export");
    if (format == NULL || strcmp(format, want) != 0)
        BAD("the manifest's format is not %s", want);
    if (!str_or_null(m, "from") || !str_or_null(m, "to"))
        BAD("the manifest's from and to are not strings or null");
    if (!json_is_integer(count) || json_integer_value(count) < 0)
        BAD("the manifest's count is not a number of events");
    st->m_count = (int64_t)json_integer_value(count);
    if (st->m_count == 0) {
        if (!json_is_null(json_object_get(m, "first_id")) ||
            !json_is_null(json_object_get(m, "last_id")) ||
            !json_is_null(json_object_get(m, "first_hash")) ||
            !json_is_null(json_object_get(m, "last_hash")))
            BAD("the manifest's count is 0 but first_id, last_id, first_hash or last_hash is not "
                "null");
    } else {
        if (first == NULL || export_parse_id(first, strlen(first), 0, &st->m_first) != 0 ||
            last == NULL || export_parse_id(last, strlen(last), 0, &st->m_last) != 0)
            BAD("the manifest's first_id and last_id are not event ids");
        if (st->m_last < st->m_first || st->m_last - st->m_first + 1 != st->m_count)
            BAD("the manifest's count %lld does not match first_id %lld and last_id %lld",
                (long long)st->m_count, (long long)st->m_first, (long long)st->m_last);
        if (!hex_member(m, "first_hash", &st->m_first_hash) ||
            !hex_member(m, "last_hash", &st->m_last_hash))
            BAD("the manifest's first_hash and last_hash are not 64 lower-case hex digits");
    }
    if (!hex_member(m, "prev_hash", &st->m_prev))
        BAD("the manifest's prev_hash is not 64 lower-case hex digits");
    if (st->m_count > 0 && st->m_first == 1 && strcmp(st->m_prev, AUDIT_GENESIS_HASH) != 0)
        BAD("the export starts at event 1 but the manifest's prev_hash is not the genesis hash");
    if (!hex_member(m, "events_sha256", &st->m_events_sha256))
        BAD("the manifest's events_sha256 is not 64 lower-case hex digits");
    if (str_of(m, "generated_at") == NULL || (st->m_key_id = str_of(m, "key_id")) == NULL ||
        str_of(m, "signature") == NULL)
        BAD("the manifest lacks generated_at, key_id or signature");
    if (!json_is_array(cps = json_object_get(m, "checkpoints")))
        BAD("the manifest's checkpoints is not an array");
    st->m_serve = -1;
    if (json_object_get(m, "serve_records") != NULL) {
        const json_t *sr = json_object_get(m, "serve_records");
        if (!json_is_integer(sr) || json_integer_value(sr) < 0)
            BAD("the manifest's serve_records is not a number of records");
        st->m_serve = (int64_t)json_integer_value(sr);
    }
#undef BAD
    st->ncps = json_array_size(cps);
    if (st->ncps > 0 && (st->cps = calloc(st->ncps, sizeof(*st->cps))) == NULL) {
        snprintf(st->m_why, sizeof(st->m_why), "out of memory");
        st->ncps = 0;
        return -1;
    }
    for (i = 0; i < st->ncps; i++)
        if (check_checkpoint(st, json_array_get(cps, i), i + 1, &st->cps[i]) != 0)
            return -1;
    if (st->ncps > 0)
        qsort(st->cps, st->ncps, sizeof(*st->cps), cp_cmp);
    return 0;
}

/* ---- the lines ------------------------------------------------------------ */

/* 1 when sha256(rec's canonical bytes) is its stored hash; -1 on an error. */
static int hash_matches(struct vstate *st, const struct export_record *rec)
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    char hex[HEX_LEN + 1];
    unsigned len = 0;

    if (EVP_DigestInit_ex2(st->md, st->sha, NULL) != 1 ||
        EVP_DigestUpdate(st->md, rec->canonical, rec->canonical_len) != 1 ||
        EVP_DigestFinal_ex(st->md, digest, &len) != 1 || len != 32)
        return -1;
    crypto_hex(digest, len, hex);
    return memcmp(hex, rec->hash, HEX_LEN) == 0;
}

/* Read up to VERIFY_LOOKAHEAD more records: 1 when one's stored hash is want. */
static int lookahead(struct vstate *st, const char *want, enum rc *rc)
{
    struct export_record rec;

    for (int k = 0; k < VERIFY_LOOKAHEAD; k++) {
        *rc = export_reader_next(st->r, &rec, NULL);
        if (*rc == RC_OK && strcmp(rec.hash, want) == 0)
            return 1;
        if (*rc == RC_ENOTFOUND)
            break;
        if (*rc != RC_OK && *rc != RC_EINVAL && *rc != RC_ETOOBIG)
            return 0; /* an I/O or memory error: *rc says which */
    }
    *rc = RC_OK;
    return 0;
}

/* Step 2 of the doc: rec's prev_hash is not the stored hash before it. */
static enum rc diagnose_link(struct vstate *st, const struct export_record *rec, int hash_ok)
{
    char want[HEX_LEN + 1];
    int64_t id = rec->id, line = rec->line, before = -1;
    enum rc rc = RC_OK;

    if (st->n >= 1 && rec->prev_hash[0] != '\0' && strcmp(rec->prev_hash, st->prev2) == 0)
        return fail(st, VERIFY_INSERTED, st->prev_line, st->prev_id,
                    "the next line (%lld) links to the line before this one", (long long)line);
    memcpy(want, rec->prev_hash, sizeof(want)); /* rec is overwritten by the look-ahead */
    if (want[0] != '\0' && lookahead(st, want, &rc))
        return fail(st, VERIFY_REORDERED, line, id, "it links to a line that comes later");
    if (rc != RC_OK)
        return rc;
    if (st->n == 0 && st->m_ok && (st->m_count == 0 || id < st->m_first))
        return fail(st, VERIFY_INSERTED, line, id, "the manifest says the export %s",
                    st->m_count == 0 ? "is empty" : "starts later");
    if (st->n >= 1)
        before = st->prev_id;
    else if (st->m_ok)
        before = st->m_first - 1;
    if (before >= 0 && id > before + 1)
        return fail_missing(st, line, before + 1, id - 1, "before this line");
    if (!hash_ok)
        return fail(st, VERIFY_MODIFIED, line, id,
                    "its prev_hash does not link to the line before and its hash does not match "
                    "its contents");
    if (st->n == 0)
        return fail(st, VERIFY_MODIFIED, line, id, "its prev_hash is not the manifest's prev_hash");
    return fail(st, VERIFY_MODIFIED, st->prev_line, st->prev_id,
                "its hash is not the one the next line (%lld) links to", (long long)line);
}

static void note_checkpoints(struct vstate *st, const struct export_record *rec)
{
    while (st->cursor < st->ncps && st->cps[st->cursor].seq < rec->id)
        st->cursor++;
    for (size_t j = st->cursor; j < st->ncps && st->cps[j].seq == rec->id; j++) {
        memcpy(st->cps[j].stored, rec->hash, HEX_LEN + 1);
        st->cps[j].line = rec->line;
    }
}

static enum rc check_record(struct vstate *st, struct export_record *rec)
{
    const char *expect = st->n > 0 ? st->prev : st->m_ok ? st->m_prev : rec->prev_hash;
    int hash_ok = hash_matches(st, rec);
    struct err e;
    enum rc rc;

    if (hash_ok == 0) { /* CSV: the doc's audit_canonical() rebuild decides */
        err_init(&e);
        rc = export_reader_recanonicalize(st->r, rec, &e);
        if (rc == RC_EINVAL)
            return fail(st, VERIFY_FORMAT, rec->line, 0, "%s", e.message);
        if (rc == RC_OK)
            hash_ok = hash_matches(st, rec);
        else if (rc != RC_ENOTFOUND)
            return rc;
    }
    if (hash_ok < 0)
        return RC_EINTERNAL;
    if (strcmp(rec->prev_hash, expect) != 0)
        return diagnose_link(st, rec, hash_ok);
    if (!hash_ok)
        return fail(st, VERIFY_MODIFIED, rec->line, rec->id,
                    "its hash does not match its contents");
    if (st->n > 0 && rec->id != st->prev_id + 1) {
        if (rec->id <= st->prev_id)
            return fail(st, VERIFY_REORDERED, rec->line, rec->id,
                        "its id is not one more than the previous event's (%lld)",
                        (long long)st->prev_id);
        return fail_missing(st, rec->line, st->prev_id + 1, rec->id - 1, "before this line");
    }
    if (st->n == 0) {
        st->first_id = rec->id;
        st->first_line = rec->line;
        memcpy(st->first_hash, rec->hash, sizeof(st->first_hash));
        memcpy(st->prev2, expect, sizeof(st->prev2));
    } else {
        memcpy(st->prev2, st->prev, sizeof(st->prev2));
    }
    memcpy(st->prev, rec->hash, sizeof(st->prev));
    st->prev_id = rec->id;
    st->prev_line = rec->line;
    st->last_line = rec->line;
    st->n++;
    if (st->m_ok) {
        note_checkpoints(st, rec);
        if (rec->id == st->m_last + 1 && st->beyond_line == 0)
            st->beyond_line = rec->line;
    }
    return RC_OK;
}

/* ---- gateway request records ------------------------------------------ */

#define SEAL_PREFIX "{\"action\":\"serve.requests.seal\","

/* Records of the current batch from index seal.next on are not in the
 * export: they belong before line (or at the end). */
static enum rc fail_records_missing(struct vstate *st, int64_t line, const char *where)
{
    int64_t from = st->seal.next, to = st->seal.count - 1;

    st->res->request_id[0] = '\0';
    if (from == to)
        return fail(st, VERIFY_MISSING, line, st->seal.event_id,
                    "request record %lld of batch %lld (of %lld) is not in the export (it belongs "
                    "%s)",
                    (long long)from, (long long)st->seal.batch, (long long)st->seal.count, where);
    return fail(st, VERIFY_MISSING, line, st->seal.event_id,
                "request records %lld..%lld of batch %lld (of %lld) are not in the export (they "
                "belong %s)",
                (long long)from, (long long)to, (long long)st->seal.batch,
                (long long)st->seal.count, where);
}

static int details_id(const json_t *d, const char *k, int64_t *out)
{
    const char *s = json_string_value(json_object_get(d, k));
    return s != NULL && export_parse_id(s, strlen(s), 0, out) == 0;
}

/* rec, an event of the verified chain: when it seals a batch, that batch's
 * records are due next (its root, count and id range from its details). */
static enum rc note_seal(struct vstate *st, const struct export_record *rec)
{
    json_t *ev, *d;
    const json_t *count;
    int ok;

    if (rec->canonical_len < strlen(SEAL_PREFIX) ||
        memcmp(rec->canonical, SEAL_PREFIX, strlen(SEAL_PREFIX)) != 0)
        return RC_OK;
    /* NULL when jansson refuses what the reader's scanner let by (or on no
     * memory): the details cannot be read either way. */
    ev = json_loadb(rec->canonical, rec->canonical_len, 0, NULL);
    d = json_object_get(ev, "details");
    count = json_object_get(d, "count");
    ok = details_id(d, "batch", &st->seal.batch) && details_id(d, "first_id", &st->seal.first_id) &&
         details_id(d, "last_id", &st->seal.last_id) && json_is_integer(count) &&
         json_integer_value(count) >= 1 && json_integer_value(count) <= SERVE_PROOF_MAX_COUNT &&
         merkle_from_hex(json_string_value(json_object_get(d, "root")), st->seal.root) == 0;
    if (ok) {
        st->seal.count = (int64_t)json_integer_value(count);
        st->seal.event_id = rec->id;
        st->seal.line = rec->line;
        st->seal.next = 0;
        st->seal.prev_id = 0;
        st->seal.active = 1;
    }
    json_decref(ev);
    if (!ok)
        return fail(st, VERIFY_FORMAT, rec->line, rec->id,
                    "the seal event's details are not batch, first_id, last_id, count and root");
    return RC_OK;
}

/* Where a record's fields, id or proof fail; NULL when the record is its
 * batch's next and proves its inclusion. kind receives the verdict. */
static const char *record_fault(struct vstate *st, const struct serve_proof *p,
                                enum verify_kind *kind, char *why, size_t why_size)
{
    char hex[CRYPTO_SHA256_HEX_LEN + 1];
    uint8_t value[MERKLE_HASH_LEN];
    enum rc rc;

    *kind = VERIFY_MODIFIED;
    if (p->count != st->seal.count) {
        snprintf(why, why_size, "its count %lld is not the seal event's (%lld)",
                 (long long)p->count, (long long)st->seal.count);
        return why;
    }
    if ((p->index == 0 && p->id != st->seal.first_id) ||
        (p->index > 0 && p->id <= st->seal.prev_id) ||
        (p->index == p->count - 1 && p->id != st->seal.last_id) || p->id < st->seal.first_id ||
        p->id > st->seal.last_id) {
        *kind = VERIFY_REORDERED;
        snprintf(why, why_size,
                 "its id %lld is not in the batch's id order (first_id %lld, last_id %lld)",
                 (long long)p->id, (long long)st->seal.first_id, (long long)st->seal.last_id);
        return why;
    }
    rc = serve_record_sha256(&p->rec, hex);
    if (rc != RC_OK)
        return rc == RC_EINVAL ? "a field holds a line break, which no record holds"
                               : "its fields are longer than a record's";
    if (strcmp(hex, p->record_sha256) != 0)
        return "its fields do not hash to its record_sha256";
    if (merkle_from_hex(hex, value) != 0 ||
        !merkle_verify(value, (uint64_t)p->index, (uint64_t)p->count,
                       (const uint8_t(*)[MERKLE_HASH_LEN])p->path, p->path_len, st->seal.root)) {
        snprintf(why, why_size,
                 "its inclusion proof does not lead to the root sealed by event %lld",
                 (long long)st->seal.event_id);
        return why;
    }
    return NULL;
}

static enum rc check_serve(struct vstate *st, const struct export_record *rec)
{
    struct serve_proof p;
    struct err e;
    enum verify_kind kind;
    char why[200];
    const char *fault;
    enum rc rc;

    err_init(&e);
    rc = serve_proof_parse(rec->serve_json, rec->serve_json_len, &p, &e);
    if (rc == RC_EINVAL)
        rc = fail(st, VERIFY_FORMAT, rec->line, st->seal.active ? st->seal.event_id : 0,
                  "request record: %s", e.message);
    if (rc != RC_OK)
        goto out;
    (void)utf8_copy(st->res->request_id, sizeof(st->res->request_id), p.rec.request_id);
    if (!st->seal.active) {
        rc = fail(st, VERIFY_INSERTED, rec->line, p.event,
                  "it follows no seal event whose records are due (it names batch %lld)",
                  (long long)p.batch);
    } else if (p.event != st->seal.event_id || p.batch != st->seal.batch) {
        rc = fail(st, VERIFY_INSERTED, rec->line, st->seal.event_id,
                  "it names batch %lld (event %lld), but batch %lld's records are due here",
                  (long long)p.batch, (long long)p.event, (long long)st->seal.batch);
    } else if (p.index > st->seal.next) {
        int64_t to = p.index - 1;
        st->res->request_id[0] = '\0';
        rc = fail(st, VERIFY_MISSING, rec->line, st->seal.event_id,
                  "request records %lld..%lld of batch %lld are not in the export (they belong "
                  "before this line)",
                  (long long)st->seal.next, (long long)to, (long long)st->seal.batch);
    } else if (p.index < st->seal.next) {
        rc = fail(st, VERIFY_REORDERED, rec->line, st->seal.event_id,
                  "its index %lld in batch %lld comes after index %lld", (long long)p.index,
                  (long long)st->seal.batch, (long long)st->seal.next - 1);
    } else if ((fault = record_fault(st, &p, &kind, why, sizeof(why))) != NULL) {
        rc = fail(st, kind, rec->line, st->seal.event_id, "%s", fault);
    } else {
        st->res->request_id[0] = '\0';
        st->seal.next++;
        st->seal.prev_id = p.id;
        st->res->serve_records++;
        if (st->seal.next == st->seal.count) {
            st->seal.active = 0;
            st->res->serve_batches++;
        }
    }
out:
    serve_proof_cleanup(&p);
    return rc;
}

static enum rc stream(struct vstate *st)
{
    struct export_record rec;
    struct err e;
    enum rc rc;

    for (;;) {
        err_init(&e);
        rc = export_reader_next(st->r, &rec, &e);
        if (rc == RC_ENOTFOUND)
            return RC_OK;
        if ((rc == RC_EINVAL || rc == RC_ETOOBIG) && export_reader_eof(st->r) &&
            export_reader_manifest(st->r, NULL, NULL) == EXPORT_MANIFEST_ABSENT)
            return fail(st, VERIFY_MANIFEST, rec.line, 0,
                        "the last line is malformed (%s) and no signed manifest follows: the "
                        "export is truncated",
                        e.message);
        if (rc == RC_EINVAL || rc == RC_ETOOBIG)
            return fail(st, VERIFY_FORMAT, rec.line, 0, "%s", e.message);
        if (rc != RC_OK) {
            snprintf(st->res->message, sizeof(st->res->message), "%s", e.message);
            return rc;
        }
        if (rec.serve)
            rc = check_serve(st, &rec);
        else if (st->seal.active)
            rc = fail_records_missing(st, rec.line, "before this line");
        else if ((rc = check_record(st, &rec)) == RC_OK)
            rc = note_seal(st, &rec);
        if (rc != RC_OK)
            return rc;
    }
}

/* ---- after the last line ---------------------------------------------- */

/* Lines against the manifest's count, ids and hashes at both ends. */
static enum rc check_ends(struct vstate *st, int64_t mline)
{
    if (st->n == 0)
        return st->m_count == 0
                   ? RC_OK
                   : fail_missing(st, mline, st->m_first, st->m_last, "in this export");
    if (st->m_count == 0)
        return fail(st, VERIFY_INSERTED, st->first_line, st->first_id,
                    "the manifest says the export is empty");
    if (st->first_id > st->m_first)
        return fail_missing(st, st->first_line, st->m_first, st->first_id - 1, "before this line");
    if (st->first_id < st->m_first)
        return fail(st, VERIFY_INSERTED, st->first_line, st->first_id,
                    "the manifest says the export starts at event %lld", (long long)st->m_first);
    if (st->prev_id < st->m_last)
        return fail_missing(st, mline, st->prev_id + 1, st->m_last, "at the end");
    if (st->prev_id > st->m_last)
        return fail(st, VERIFY_INSERTED, st->beyond_line, st->m_last + 1,
                    "the manifest says the export ends at event %lld", (long long)st->m_last);
    if (NEVER(st->n != st->m_count))
        return fail(st, VERIFY_MANIFEST, mline, 0, "the manifest's count is not the lines'");
    if (strcmp(st->first_hash, st->m_first_hash) != 0)
        return fail(st, VERIFY_MODIFIED, st->first_line, st->first_id,
                    "its hash is not the manifest's first_hash");
    if (strcmp(st->prev, st->m_last_hash) != 0)
        return fail(st, VERIFY_MODIFIED, st->last_line, st->prev_id,
                    "its hash is not the manifest's last_hash");
    return RC_OK;
}

/* The ring key with id kid; NULL when there is none. */
static const struct audit_key *ring_key(const struct vstate *st, const char *kid)
{
    for (size_t i = 0; i < st->nkeys; i++)
        if (strcmp(audit_key_id(st->keys[i]), kid) == 0)
            return st->keys[i];
    return NULL;
}

static enum rc check_checkpoints(struct vstate *st, int64_t mline)
{
    for (size_t k = 1; k <= st->ncps; k++) {
        const struct cp *c = NULL;
        for (size_t j = 0; j < st->ncps; j++) /* report in manifest order */
            if (st->cps[j].index == k)
                c = &st->cps[j];
        const char *ckid;
        const struct audit_key *key = st->key;
        if (NEVER(c == NULL))
            continue;
        ckid = str_of(c->obj, "key_id");
        if (st->keys != NULL && (key = ring_key(st, ckid)) == NULL)
            return fail(st, VERIFY_SIGNATURE, mline, 0,
                        "checkpoint %zu (event %lld) is signed by key %.32s, which is not in the "
                        "given key ring",
                        k, (long long)c->seq, ckid);
        if (st->keys == NULL && strcmp(ckid, audit_key_id(key)) != 0 &&
            !audit_verify_object(key, c->obj))
            return fail(st, VERIFY_SIGNATURE, mline, 0,
                        "checkpoint %zu (event %lld) is signed by key %.32s, not by the given key "
                        "%s (give the key ring of GET /api/v1/audit/public-key after a key "
                        "rotation)",
                        k, (long long)c->seq, ckid, audit_key_id(key));
        if (!audit_verify_object(key, c->obj))
            return fail(st, VERIFY_SIGNATURE, mline, 0,
                        "checkpoint %zu (event %lld) has no valid signature by key %s", k,
                        (long long)c->seq, audit_key_id(key));
        if (st->m_count == 0 || c->seq < st->m_first - 1 || c->seq > st->m_last)
            return fail(st, VERIFY_MANIFEST, mline, 0,
                        "checkpoint %zu is for event %lld, outside the export's range", k,
                        (long long)c->seq);
        if (c->seq == st->m_first - 1) {
            if (strcmp(c->hash, st->m_prev) != 0)
                return fail(st, VERIFY_MANIFEST, mline, 0,
                            "checkpoint %zu (event %lld) does not match the manifest's prev_hash",
                            k, (long long)c->seq);
        } else if (strcmp(c->hash, c->stored) != 0) {
            return fail(st, VERIFY_MODIFIED, c->line, c->seq,
                        "its hash is not the one signed in checkpoint %zu", k);
        }
    }
    return RC_OK;
}

static enum rc finish(struct vstate *st)
{
    const char *why = "";
    enum export_manifest_state ms = export_reader_manifest(st->r, NULL, &why);
    int64_t lines = export_reader_lines(st->r), mline = lines + 1;
    char all[HEX_LEN + 1];
    enum rc rc;

    if (ms == EXPORT_MANIFEST_ABSENT)
        return fail(st, VERIFY_MANIFEST, lines, 0,
                    "no signed manifest at the end (%s): the export is truncated or incomplete",
                    why);
    if (ms == EXPORT_MANIFEST_MALFORMED)
        return fail(st, VERIFY_MANIFEST, mline, 0, "%s", why);
    if (st->m_trust == M_BAD_FORM)
        return fail(st, VERIFY_MANIFEST, mline, 0, "%s", st->m_why);
    if (st->m_trust == M_OTHER_KEY && st->keys != NULL)
        return fail(st, VERIFY_SIGNATURE, mline, 0,
                    "the export is signed by key %.32s, which is not in the given key ring",
                    st->m_key_id);
    if (st->m_trust == M_OTHER_KEY)
        return fail(st, VERIFY_SIGNATURE, mline, 0,
                    "the export is signed by key %.32s, not by the given key %s", st->m_key_id,
                    audit_key_id(st->key));
    if (st->m_trust == M_BAD_SIGNATURE)
        return fail(st, VERIFY_SIGNATURE, mline, 0,
                    "the manifest's signature is not valid for key %s", audit_key_id(st->key));
    if (st->seal.active)
        return fail_records_missing(st, mline, "at the end");
    if ((rc = check_ends(st, mline)) != RC_OK || (rc = check_checkpoints(st, mline)) != RC_OK)
        return rc;
    if (st->res->serve_records != (st->m_serve < 0 ? 0 : st->m_serve))
        return fail(st, VERIFY_MANIFEST, mline, 0,
                    "the manifest says %lld request records, the export holds %lld",
                    (long long)(st->m_serve < 0 ? 0 : st->m_serve),
                    (long long)st->res->serve_records);
    if (!export_reader_events_sha256(st->r, all) || strcmp(all, st->m_events_sha256) != 0)
        return fail(st, VERIFY_MODIFIED, mline, 0,
                    "the bytes before the manifest are not the signed ones (events_sha256 "
                    "differs)");
    return RC_OK;
}

static enum rc verify_with(struct export_reader *r, const struct audit_key *key,
                           const struct audit_key *const *keys, size_t nkeys,
                           struct verify_result *out)
{
    struct vstate st;
    enum rc rc;

    memset(out, 0, sizeof(*out));
    memset(&st, 0, sizeof(st));
    st.r = r;
    st.key = key;
    st.keys = keys;
    st.nkeys = nkeys;
    st.res = out;
    out->format = export_reader_format(r);
    snprintf(out->key_id, sizeof(out->key_id), "%s", audit_key_id(key));
    st.sha = EVP_MD_fetch(NULL, "SHA256", NULL);
    st.md = EVP_MD_CTX_new();
    if (st.sha == NULL || st.md == NULL) {
        rc = RC_ENOMEM;
        goto out;
    }
    /* Nothing the manifest says is used before its signature is verified. */
    if (export_reader_manifest(r, &st.m, NULL) == EXPORT_MANIFEST_OK) {
        const struct audit_key *signer;
        if (check_manifest(&st) == 0 && keys != NULL &&
            (signer = ring_key(&st, st.m_key_id)) != NULL) {
            st.key = key = signer;
            snprintf(out->key_id, sizeof(out->key_id), "%s", audit_key_id(key));
        }
        if (st.m_why[0] != '\0')
            st.m_trust = M_BAD_FORM;
        else if (strcmp(st.m_key_id, audit_key_id(key)) != 0)
            st.m_trust = M_OTHER_KEY;
        else if (!audit_verify_object(key, st.m))
            st.m_trust = M_BAD_SIGNATURE;
        else
            st.m_trust = M_TRUSTED;
        st.m_ok = st.m_trust == M_TRUSTED;
    }
    out->checkpoints = st.ncps;
    rc = stream(&st);
    if (rc == RC_OK)
        rc = finish(&st);
out:
    out->events = st.n;
    out->first_id = st.first_id;
    out->last_id = st.n > 0 ? st.prev_id : 0;
    if (rc == RC_OK) {
        out->ok = 1;
        out->kind = VERIFY_OK;
    } else if (rc == STOP) {
        rc = RC_OK;
    } else if (out->message[0] == '\0') {
        snprintf(out->message, sizeof(out->message), "%s",
                 rc == RC_ENOMEM ? "out of memory" : "internal error");
    }
    free(st.cps);
    EVP_MD_CTX_free(st.md);
    EVP_MD_free(st.sha);
    return rc;
}

enum rc verify_export(struct export_reader *r, const struct audit_key *key,
                      struct verify_result *out)
{
    return verify_with(r, key, NULL, 0, out);
}

enum rc verify_export_ring(struct export_reader *r, const struct audit_key *const *keys,
                           size_t nkeys, struct verify_result *out)
{
    if (nkeys == 0) {
        memset(out, 0, sizeof(*out));
        snprintf(out->message, sizeof(out->message), "the key ring is empty");
        return RC_EINVAL;
    }
    return verify_with(r, keys[nkeys - 1], keys, nkeys, out);
}

void verify_ring_free(struct audit_key **keys, size_t nkeys)
{
    for (size_t i = 0; keys != NULL && i < nkeys; i++)
        audit_key_free(keys[i]);
    free(keys);
}

enum rc verify_ring_from_public(const char *text, size_t len, struct audit_key ***keys,
                                size_t *nkeys, struct err *e)
{
    json_t *doc = json_loadb(text, len, 0, NULL), *arr = json_object_get(doc, "keys");
    struct audit_key **ring = NULL;
    size_t n = 0, want;
    enum rc rc = RC_OK;

    *keys = NULL;
    *nkeys = 0;
    if (!json_is_object(doc) || arr == NULL) {
        json_decref(doc);
        return RC_ENOTFOUND;
    }
    want = json_array_size(arr);
    if (!json_is_array(arr) || want == 0 || want > VERIFY_RING_MAX) {
        json_decref(doc);
        return err_set(e, RC_EINVAL, "keys", "\"keys\" is not an array of 1 to %d keys",
                       VERIFY_RING_MAX);
    }
    if ((ring = calloc(want, sizeof(*ring))) == NULL) {
        json_decref(doc);
        return err_set(e, RC_ENOMEM, "", "out of memory");
    }
    for (n = 0; n < want && rc == RC_OK; n++) {
        const json_t *k = json_array_get(arr, n);
        const char *kid = json_string_value(json_object_get(k, "key_id"));
        const char *pub = json_string_value(json_object_get(k, "public_key"));
        if (kid == NULL || pub == NULL)
            rc = err_set(e, RC_EINVAL, "keys", "key %zu of \"keys\" lacks key_id or public_key",
                         n + 1);
        else if (audit_key_from_public(pub, strlen(pub), &ring[n], NULL) != RC_OK)
            rc = err_set(e, RC_EINVAL, "keys",
                         "key %zu of \"keys\" (%.32s) is not an Ed25519 "
                         "public key",
                         n + 1, kid);
        else if (strcmp(audit_key_id(ring[n]), kid) != 0)
            rc = err_set(e, RC_EINVAL, "keys",
                         "key %zu of \"keys\": key_id %.32s is not its key's id (%s)", n + 1, kid,
                         audit_key_id(ring[n]));
    }
    if (rc == RC_OK && json_is_string(json_object_get(doc, "public_key"))) {
        /* The document's current key must be one of its ring. */
        const char *cur = json_string_value(json_object_get(doc, "public_key"));
        size_t i = 0;
        while (i < want && strcmp(audit_key_public_b64(ring[i]), cur) != 0)
            i++;
        if (i == want)
            rc = err_set(e, RC_EINVAL, "public_key", "its public_key is not one of its \"keys\"");
    }
    json_decref(doc);
    if (rc != RC_OK) {
        verify_ring_free(ring, want);
        return rc;
    }
    *keys = ring;
    *nkeys = want;
    return RC_OK;
}
