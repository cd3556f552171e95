/*
 * export_reader.c - streaming reader of audit exports (see export_reader.h).
 *
 * Structure: open() detects the format from the first bytes and reads the
 * last line (the manifest) with pread(); next() then reads the bytes before
 * the manifest line front to back through one buffer of EXPORT_MAX_LINE +
 * READ_CHUNK bytes, hashing them for events_sha256 as they arrive, and cuts
 * it into records: a JSONL line at its LF, a CSV record at the first LF
 * outside double quotes.
 *
 * JSONL events are not re-serialised: the hashed bytes are the line's bytes
 * between the fixed prefix {"hash":"<64 hex>","event": and the final '}', and
 * a small validating scanner (no allocation) reads "id" and "prev_hash" from
 * them. CSV fields are unquoted into a scratch buffer and the canonical
 * text is written from them directly (fast_canonical()); audit_canonical(),
 * the doc's rebuild, is the fallback whenever that text's hash does not match.
 *
 * Invariants: start <= end <= cap; [start, end) holds bytes not yet cut into
 * records; scan counts bytes after start already searched for the record
 * end; read_off <= stream_end <= size.
 */
#include "export_reader.h"

#include <errno.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit_canon.h"

#define READ_CHUNK (256 * 1024)
#define SPOOL_CHUNK (64 * 1024)
#define JSON_MAX_DEPTH 64
#define CSV_FIELDS 10
#define JSONL_PREFIX "{\"hash\":\""
#define JSONL_PREFIX_LEN 9
#define JSONL_MID "\",\"event\":"
#define JSONL_MID_LEN 10
#define JSONL_EVENT_OFF (JSONL_PREFIX_LEN + CRYPTO_SHA256_HEX_LEN + JSONL_MID_LEN)
#define JSONL_MANIFEST "{\"manifest\":"
#define JSONL_MANIFEST_LEN 12
#define CSV_MANIFEST "#manifest,"
#define CSV_MANIFEST_LEN 10
#define JSONL_SERVE "{\"serve_record\":"
#define JSONL_SERVE_LEN 16
#define CSV_SERVE "#serve_record"
#define CSV_SERVE_LEN 13

struct export_reader {
    int fd;                                  /* input for pread(); -1 for memory */
    int own_fd;                              /* 1 when fd is our spool file (closed on free) */
    const unsigned char *mem;                /* memory input (borrowed) or NULL */
    uint64_t size;                           /* bytes of input */
    uint64_t stream_end;                     /* offset of the manifest line, or size */
    uint64_t read_off;                       /* next input offset to buffer */
    enum export_format format;               /* detected at open */
    char *buf;                               /* owned; cap bytes */
    size_t cap, start, end;                  /* buffered bytes are [start, end) */
    size_t scan;                             /* bytes after start searched for the record end */
    int in_quotes;                           /* CSV: inside quotes at start + scan */
    int64_t nl_inside;                       /* CSV: LFs inside quotes in the current record */
    int64_t line;                            /* lines consumed */
    int header_done;                         /* CSV: header line consumed */
    int ended;                               /* next() returned RC_ENOTFOUND */
    EVP_MD_CTX *all;                         /* owned; SHA-256 of [0, stream_end) */
    char all_hex[CRYPTO_SHA256_HEX_LEN + 1]; /* its hex once read_off == stream_end */
    json_t *manifest;                        /* owned; NULL unless state OK */
    enum export_manifest_state mstate;
    char mwhy[256];            /* why the manifest is absent or malformed */
    char *scratch;             /* owned; CSV fields unquoted, EXPORT_MAX_LINE + 16 */
    char *canon;               /* owned; CSV: the last record's canonical text (fast) */
    size_t canon_cap;          /* bytes at canon */
    char *slow;                /* owned; CSV: the last audit_canonical() text */
    const char *f[CSV_FIELDS]; /* CSV: the last record's fields, in scratch */
    size_t fl[CSV_FIELDS];     /* their lengths */
    int64_t f_id;              /* its id */
    int fast;                  /* its canonical came from the fast path */
    size_t rebuilt;            /* records rebuilt with audit_canonical() */
};

const char *export_format_str(enum export_format f)
{
    return f == EXPORT_CSV ? "csv" : "jsonl";
}

/* ---- small parsers ---------------------------------------------------- */

int export_is_hex64(const char *s, size_t n)
{
    if (n != CRYPTO_SHA256_HEX_LEN)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return 0;
    }
    return 1;
}

int export_parse_id(const char *s, size_t n, int allow_zero, int64_t *out)
{
    int64_t v = 0;

    if (allow_zero && n == 1 && s[0] == '0') {
        *out = 0;
        return 0;
    }
    if (n == 0 || n > 19 || s[0] == '0')
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        if (v > (INT64_MAX - (s[i] - '0')) / 10)
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v == INT64_MAX) /* so that id + 1 never overflows */
        return -1;
    *out = v;
    return 0;
}

/* Valid UTF-8 as jansson checks it: no overlong forms, surrogates or > U+10FFFF. */
static int utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        unsigned c = s[i];
        size_t len;
        uint32_t v;
        uint64_t word;

        if (n - i >= 8) { /* eight ASCII bytes at a time */
            memcpy(&word, s + i, 8);
            if ((word & 0x8080808080808080ULL) == 0) {
                i += 8;
                continue;
            }
        }
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) {
            len = 2;
            v = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            len = 3;
            v = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            len = 4;
            v = c & 0x07;
        } else {
            return 0;
        }
        if (n - i < len)
            return 0;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            v = (v << 6) | (s[i + k] & 0x3f);
        }
        if ((len == 3 && v < 0x800) || (len == 4 && v < 0x10000) || v > 0x10ffff ||
            (v >= 0xd800 && v <= 0xdfff))
            return 0;
        i += len;
    }
    return 1;
}

/* ---- JSON scanner: validates an event object, reads id and prev_hash --- */

struct scan {
    const unsigned char *p, *end;
};

static void sc_ws(struct scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static int sc_hex4(const unsigned char *p)
{
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
            return 0;
    }
    return 1;
}

/* A string at s->p; *raw, *len: the bytes between the quotes; *esc: escapes seen. */
static int sc_string(struct scan *s, const unsigned char **raw, size_t *len, int *esc)
{
    const unsigned char *q;

    if (s->p >= s->end || *s->p != '"')
        return -1;
    q = ++s->p;
    *esc = 0;
    while (s->p < s->end) {
        unsigned char c = *s->p;
        if (c == '"') {
            *raw = q;
            *len = (size_t)(s->p - q);
            s->p++;
            return 0;
        }
        if (c < 0x20)
            return -1;
        if (c != '\\') {
            s->p++;
            continue;
        }
        *esc = 1;
        if (s->end - s->p < 2)
            return -1;
        switch (s->p[1]) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
            s->p += 2;
            break;
        case 'u':
            if (s->end - s->p < 6 || !sc_hex4(s->p + 2))
                return -1;
            s->p += 6;
            break;
        default:
            return -1;
        }
    }
    return -1;
}

static int sc_digits(struct scan *s)
{
    const unsigned char *q = s->p;

    while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
        s->p++;
    return s->p > q ? 0 : -1;
}

static int sc_number(struct scan *s)
{
    if (s->p < s->end && *s->p == '-')
        s->p++;
    if (s->p < s->end && *s->p == '0')
        s->p++;
    else if (sc_digits(s) != 0)
        return -1;
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if (sc_digits(s) != 0)
            return -1;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
            s->p++;
        if (sc_digits(s) != 0)
            return -1;
    }
    return 0;
}

static int sc_literal(struct scan *s, const char *lit)
{
    size_t n = strlen(lit);

    if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
        return -1;
    s->p += n;
    return 0;
}

static int sc_value(struct scan *s, int depth);

/* The members or elements after '{' / '[' up to the closing bracket. */
static int sc_container(struct scan *s, int depth, unsigned char close)
{
    const unsigned char *raw;
    size_t len;
    int esc;

    if (depth >= JSON_MAX_DEPTH)
        return -1;
    s->p++;
    sc_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return 0;
    }
    for (;;) {
        sc_ws(s);
        if (close == '}') {
            if (sc_string(s, &raw, &len, &esc) != 0)
                return -1;
            sc_ws(s);
            if (s->p >= s->end || *s->p != ':')
                return -1;
            s->p++;
            sc_ws(s);
        }
        if (sc_value(s, depth + 1) != 0)
            return -1;
        sc_ws(s);
        if (s->p >= s->end)
            return -1;
        if (*s->p == ',') {
            s->p++;
            continue;
        }
        if (*s->p != close)
            return -1;
        s->p++;
        return 0;
    }
}

static int sc_value(struct scan *s, int depth)
{
    const unsigned char *raw;
    size_t len;
    int esc;

    if (s->p >= s->end)
        return -1;
    switch (*s->p) {
    case '"':
        return sc_string(s, &raw, &len, &esc);
    case '{':
        return sc_container(s, depth, '}');
    case '[':
        return sc_container(s, depth, ']');
    case 't':
        return sc_literal(s, "true");
    case 'f':
        return sc_literal(s, "false");
    case 'n':
        return sc_literal(s, "null");
    default:
        return sc_number(s);
    }
}

/*
 * The event object p[0..n): valid JSON, an object with string members "id"
 * (a positive decimal) and "prev_hash" (kept when 64 lower-case hex).
 */
static enum rc scan_event(const char *p, size_t n, struct export_record *rec, struct err *e)
{
    struct scan s = {(const unsigned char *)p, (const unsigned char *)p + n};
    const unsigned char *raw, *val;
    size_t len, vlen;
    int esc, vesc, seen_id = 0, seen_prev = 0;

    sc_ws(&s);
    if (s.p >= s.end || *s.p != '{')
        return err_set(e, RC_EINVAL, "", "the event is not a JSON object");
    s.p++;
    sc_ws(&s);
    if (s.p < s.end && *s.p == '}') {
        s.p++;
    } else {
        for (;;) {
            sc_ws(&s);
            if (sc_string(&s, &raw, &len, &esc) != 0)
                goto bad;
            sc_ws(&s);
            if (s.p >= s.end || *s.p != ':')
                goto bad;
            s.p++;
            sc_ws(&s);
            if (!esc && len == 2 && memcmp(raw, "id", 2) == 0) {
                if (seen_id++ || s.p >= s.end || *s.p != '"')
                    return err_set(e, RC_EINVAL, "", "the event's id is repeated or not a string");
                if (sc_string(&s, &val, &vlen, &vesc) != 0)
                    goto bad;
                if (vesc || export_parse_id((const char *)val, vlen, 0, &rec->id) != 0)
                    return err_set(e, RC_EINVAL, "", "the event's id is not a positive number");
            } else if (!esc && len == 9 && memcmp(raw, "prev_hash", 9) == 0) {
                if (seen_prev++ || s.p >= s.end || *s.p != '"')
                    return err_set(e, RC_EINVAL, "",
                                   "the event's prev_hash is repeated or not a string");
                if (sc_string(&s, &val, &vlen, &vesc) != 0)
                    goto bad;
                if (!vesc && export_is_hex64((const char *)val, vlen)) {
                    memcpy(rec->prev_hash, val, vlen);
                    rec->prev_hash[vlen] = '\0';
                }
            } else if (sc_value(&s, 1) != 0) {
                goto bad;
            }
            sc_ws(&s);
            if (s.p >= s.end)
                goto bad;
            if (*s.p == ',') {
                s.p++;
                continue;
            }
            if (*s.p != '}')
                goto bad;
            s.p++;
            break;
        }
    }
    sc_ws(&s);
    if (s.p != s.end)
        goto bad;
    if (!seen_id || !seen_prev)
        return err_set(e, RC_EINVAL, "", "the event has no %s", seen_id ? "prev_hash" : "id");
    return RC_OK;
bad:
    return err_set(e, RC_EINVAL, "", "the event is not valid JSON");
}

/* ---- CSV ---------------------------------------------------------------- */

/*
 * Split the record p[0..n) (no final LF) into fields, unquoted into out
 * (n + maxf bytes), each NUL-terminated. More than maxf fields is an error.
 */
static int csv_split(const char *p, size_t n, char *out, const char **f, size_t *fl, size_t maxf,
                     size_t *nf, const char **why)
{
    size_t i = 0, k = 0, o = 0;

    for (;;) {
        size_t s = o;

        if (k == maxf) {
            *why = "the record has too many fields";
            return -1;
        }
        f[k] = out + o;
        if (i < n && p[i] == '"') {
            for (i++;; i++) {
                if (i >= n) {
                    *why = "a quoted field is not closed";
                    return -1;
                }
                if (p[i] == '"') {
                    if (i + 1 < n && p[i + 1] == '"') {
                        out[o++] = '"';
                        i++;
                        continue;
                    }
                    i++;
                    break;
                }
                out[o++] = p[i];
            }
            if (i < n && p[i] != ',') {
                *why = "a closing quote is not followed by a comma";
                return -1;
            }
        } else {
            for (; i < n && p[i] != ','; i++) {
                if (p[i] == '"' || p[i] == '\r') {
                    *why = p[i] == '"' ? "a quote inside an unquoted field"
                                       : "a CR inside an unquoted field";
                    return -1;
                }
                out[o++] = p[i];
            }
        }
        fl[k] = o - s;
        out[o++] = '\0';
        k++;
        if (i >= n)
            break;
        i++; /* the comma */
    }
    *nf = k;
    return 0;
}

static const char *const csv_names[CSV_FIELDS] = {
    "id", "ts", "actor", "source", "action", "target", "outcome", "details", "prev_hash", "hash"};

/* \uXXXX with upper-case hex digits, as jansson writes it. */
static char *put_u(char *o, uint32_t v)
{
    static const char hex[] = "0123456789ABCDEF";

    o[0] = '\\';
    o[1] = 'u';
    o[2] = hex[(v >> 12) & 15];
    o[3] = hex[(v >> 8) & 15];
    o[4] = hex[(v >> 4) & 15];
    o[5] = hex[v & 15];
    return o + 6;
}

/*
 * Append s[0..n) (valid UTF-8) as a JSON string, escaped as jansson's
 * JSON_ENSURE_ASCII dump does it: \" \\ \b \f \n \r \t, other controls and
 * non-ASCII as \uXXXX (surrogate pairs above U+FFFF), '/' and DEL as they
 * are. Writes at most 6n + 2 bytes.
 */
static char *put_jstr(char *o, const unsigned char *s, size_t n)
{
    size_t i = 0;

    *o++ = '"';
    while (i < n) {
        size_t run = i;
        uint32_t v;

        while (run < n && s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' && s[run] != '\\')
            run++;
        memcpy(o, s + i, run - i);
        o += run - i;
        if ((i = run) >= n)
            break;
        v = s[i];
        if (v < 0x80) {
            const char *short_esc = v == '"'    ? "\\\""
                                    : v == '\\' ? "\\\\"
                                    : v == '\b' ? "\\b"
                                    : v == '\f' ? "\\f"
                                    : v == '\n' ? "\\n"
                                    : v == '\r' ? "\\r"
                                    : v == '\t' ? "\\t"
                                                : NULL;
            i++;
            if (short_esc != NULL) {
                memcpy(o, short_esc, 2);
                o += 2;
                continue;
            }
        } else if (v < 0xe0) {
            v = ((v & 0x1f) << 6) | (s[i + 1] & 0x3f);
            i += 2;
        } else if (v < 0xf0) {
            v = ((v & 0x0f) << 12) | ((uint32_t)(s[i + 1] & 0x3f) << 6) | (s[i + 2] & 0x3f);
            i += 3;
        } else {
            v = ((v & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3f) << 12) |
                ((uint32_t)(s[i + 2] & 0x3f) << 6) | (s[i + 3] & 0x3f);
            i += 4;
        }
        if (v >= 0x10000) {
            o = put_u(o, 0xd800 | ((v - 0x10000) >> 10));
            v = 0xdc00 | ((v - 0x10000) & 0x3ff);
        }
        o = put_u(o, v);
    }
    *o++ = '"';
    return o;
}

static char *put_lit(char *o, const char *lit)
{
    size_t n = strlen(lit);

    memcpy(o, lit, n);
    return o + n;
}

/*
 * The fast path: the canonical text written directly, with the details
 * text as it stands in the file. When the file holds what the server wrote,
 * this is byte for byte what audit_canonical() makes (details is already
 * canonical, strings are escaped the same way), without three jansson round
 * trips per row. When the hash does not match, the verifier asks for
 * export_reader_recanonicalize(), the doc's audit_canonical() rebuild, so
 * the verdict is the same as with the slow path alone: a match here means
 * these very bytes were hashed, and they decode to the same fields.
 */
static enum rc fast_canonical(struct export_reader *r, struct err *e)
{
    const unsigned char *const *f = (const unsigned char *const *)r->f;
    const size_t *fl = r->fl;
    size_t need = 128;
    char *o;

    for (int i = 0; i < CSV_FIELDS; i++)
        need += 6 * fl[i] + 2;
    if (need > r->canon_cap) {
        char *c = realloc(r->canon, need);
        if (c == NULL)
            return err_set(e, RC_ENOMEM, "", "out of memory");
        r->canon = c;
        r->canon_cap = need;
    }
    o = put_lit(r->canon, "{\"action\":");
    o = put_jstr(o, f[4], fl[4]);
    o = put_lit(o, ",\"actor\":");
    o = put_jstr(o, f[2], fl[2]);
    o = put_lit(o, ",\"details\":");
    memcpy(o, f[7], fl[7]);
    o += fl[7];
    o = put_lit(o, ",\"id\":");
    o = put_jstr(o, f[0], fl[0]); /* digits without leading zeros: as "%lld" prints */
    o = put_lit(o, ",\"outcome\":");
    o = put_jstr(o, f[6], fl[6]);
    o = put_lit(o, ",\"prev_hash\":");
    o = put_jstr(o, f[8], fl[8]);
    o = put_lit(o, ",\"source\":");
    o = put_jstr(o, f[3], fl[3]);
    o = put_lit(o, ",\"target\":");
    o = put_jstr(o, f[5], fl[5]);
    o = put_lit(o, ",\"ts\":");
    o = put_jstr(o, f[1], fl[1]);
    *o++ = '}';
    *o = '\0';
    return RC_OK;
}

/* The doc's rebuild: the fields through audit_canonical() into r->slow. */
static enum rc slow_canonical(struct export_reader *r, struct err *e)
{
    const char *const *f = r->f;
    /* Any JSON value: a details that is not an object cannot match its hash,
     * so it is reported as modified, as the same row in JSON Lines would be. */
    json_t *details = json_loadb(f[7], r->fl[7], JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
    struct audit_fields af;

    if (details == NULL)
        return err_set(e, RC_EINVAL, "", "details is not valid JSON");
    af = (struct audit_fields){r->f_id, f[1], f[2], f[3], f[4], f[5], f[6], details, f[8]};
    free(r->slow);
    r->slow = audit_canonical(&af);
    json_decref(details);
    r->rebuilt++;
    return r->slow != NULL ? RC_OK : err_set(e, RC_ENOMEM, "", "out of memory");
}

static enum rc parse_csv(struct export_reader *r, const char *p, size_t n,
                         struct export_record *rec, struct err *e)
{
    const char **f = r->f;
    size_t *fl = r->fl, nf = 0;
    const char *why = NULL;
    enum rc rc;

    r->fast = 0;
    if (csv_split(p, n, r->scratch, f, fl, CSV_FIELDS, &nf, &why) != 0) {
        if (n >= CSV_MANIFEST_LEN && memcmp(p, CSV_MANIFEST, CSV_MANIFEST_LEN) == 0)
            goto manifest;
        return err_set(e, RC_EINVAL, "", "%s", why);
    }
    if (nf == 2 && fl[0] == 9 && memcmp(f[0], "#manifest", 9) == 0)
        goto manifest;
    if (nf == 2 && fl[0] == CSV_SERVE_LEN && memcmp(f[0], CSV_SERVE, CSV_SERVE_LEN) == 0) {
        rec->serve = 1;
        rec->serve_json = f[1];
        rec->serve_json_len = fl[1];
        return RC_OK;
    }
    if (nf != CSV_FIELDS)
        return err_set(e, RC_EINVAL, "", "the record has %zu fields, not %d", nf, CSV_FIELDS);
    for (int i = 0; i < CSV_FIELDS; i++) {
        if (memchr(f[i], '\0', fl[i]) != NULL)
            return err_set(e, RC_EINVAL, "", "%s holds a NUL byte", csv_names[i]);
        if (!utf8_valid((const unsigned char *)f[i], fl[i]))
            return err_set(e, RC_EINVAL, "", "%s is not valid UTF-8", csv_names[i]);
    }
    if (export_parse_id(f[0], fl[0], 0, &rec->id) != 0)
        return err_set(e, RC_EINVAL, "", "the id is not a positive decimal number");
    if (!export_is_hex64(f[9], fl[9]))
        return err_set(e, RC_EINVAL, "", "the stored hash is not 64 lower-case hex digits");
    memcpy(rec->hash, f[9], CRYPTO_SHA256_HEX_LEN + 1);
    if (export_is_hex64(f[8], fl[8]))
        memcpy(rec->prev_hash, f[8], CRYPTO_SHA256_HEX_LEN + 1);
    r->f_id = rec->id;
    if (fl[7] >= 2 && f[7][0] == '{' && f[7][fl[7] - 1] == '}') {
        if ((rc = fast_canonical(r, e)) != RC_OK)
            return rc;
        r->fast = 1;
        rec->canonical = r->canon;
    } else {
        if ((rc = slow_canonical(r, e)) != RC_OK)
            return rc;
        rec->canonical = r->slow;
    }
    rec->canonical_len = strlen(rec->canonical);
    return RC_OK;
manifest:
    return err_set(e, RC_EINVAL, "", "a manifest line before the end of the export");
}

enum rc export_reader_recanonicalize(struct export_reader *r, struct export_record *rec,
                                     struct err *e)
{
    enum rc rc;

    if (r->format != EXPORT_CSV || !r->fast)
        return RC_ENOTFOUND;
    r->fast = 0;
    if ((rc = slow_canonical(r, e)) != RC_OK)
        return rc;
    rec->canonical = r->slow;
    rec->canonical_len = strlen(r->slow);
    return RC_OK;
}

size_t export_reader_rebuilt(const struct export_reader *r)
{
    return r->rebuilt;
}

/* ---- JSONL -------------------------------------------------------------- */

static enum rc parse_jsonl(const char *p, size_t n, struct export_record *rec, struct err *e)
{
    if (n >= JSONL_MANIFEST_LEN && memcmp(p, JSONL_MANIFEST, JSONL_MANIFEST_LEN) == 0)
        return err_set(e, RC_EINVAL, "", "a manifest line before the end of the export");
    if (n >= JSONL_SERVE_LEN && memcmp(p, JSONL_SERVE, JSONL_SERVE_LEN) == 0) {
        if (p[n - 1] != '}')
            return err_set(e, RC_EINVAL, "",
                           "not a request record line ({\"serve_record\":{...}})");
        rec->serve = 1;
        rec->serve_json = p + JSONL_SERVE_LEN;
        rec->serve_json_len = n - JSONL_SERVE_LEN - 1;
        return RC_OK;
    }
    if (n < JSONL_PREFIX_LEN || memcmp(p, JSONL_PREFIX, JSONL_PREFIX_LEN) != 0)
        return err_set(e, RC_EINVAL, "", "not an event line ({\"hash\":\"...\",\"event\":{...}})");
    if (n < JSONL_EVENT_OFF + 1 || !export_is_hex64(p + JSONL_PREFIX_LEN, CRYPTO_SHA256_HEX_LEN) ||
        p[JSONL_PREFIX_LEN + CRYPTO_SHA256_HEX_LEN] != '"')
        return err_set(e, RC_EINVAL, "", "the stored hash is not 64 lower-case hex digits");
    if (memcmp(p + JSONL_PREFIX_LEN + CRYPTO_SHA256_HEX_LEN, JSONL_MID, JSONL_MID_LEN) != 0 ||
        p[n - 1] != '}')
        return err_set(e, RC_EINVAL, "", "not an event line ({\"hash\":\"...\",\"event\":{...}})");
    memcpy(rec->hash, p + JSONL_PREFIX_LEN, CRYPTO_SHA256_HEX_LEN);
    rec->hash[CRYPTO_SHA256_HEX_LEN] = '\0';
    rec->canonical = p + JSONL_EVENT_OFF;
    rec->canonical_len = n - JSONL_EVENT_OFF - 1;
    return scan_event(rec->canonical, rec->canonical_len, rec, e);
}

/* ---- input -------------------------------------------------------------- */

static enum rc read_at(struct export_reader *r, uint64_t off, void *buf, size_t n, struct err *e)
{
    size_t done = 0;

    if (r->mem != NULL) {
        memcpy(buf, r->mem + off, n);
        return RC_OK;
    }
    while (done < n) {
        ssize_t k = pread(r->fd, (char *)buf + done, n - done, (off_t)(off + done));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return err_set(e, RC_EUNAVAIL, "", "cannot read the export: %s", strerror(errno));
        if (k == 0)
            return err_set(e, RC_EUNAVAIL, "", "the export became shorter while it was read");
        done += (size_t)k;
    }
    return RC_OK;
}

static void finish_hash(struct export_reader *r)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;

    if (EVP_DigestFinal_ex(r->all, md, &len) == 1 && len == 32)
        crypto_hex(md, len, r->all_hex);
}

/* Buffer more of [read_off, stream_end). RC_ENOTFOUND when all is buffered. */
static enum rc fill(struct export_reader *r, struct err *e)
{
    size_t want;
    enum rc rc;

    if (r->read_off >= r->stream_end)
        return RC_ENOTFOUND;
    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
    }
    want = r->cap - r->end;
    if (NEVER(want == 0))
        return err_set(e, RC_EINTERNAL, "", "internal error");
    if (want > r->stream_end - r->read_off)
        want = (size_t)(r->stream_end - r->read_off);
    if ((rc = read_at(r, r->read_off, r->buf + r->end, want, e)) != RC_OK)
        return rc;
    if (EVP_DigestUpdate(r->all, r->buf + r->end, want) != 1)
        return err_set(e, RC_EINTERNAL, "", "internal error");
    r->end += want;
    r->read_off += want;
    if (r->read_off == r->stream_end)
        finish_hash(r);
    return RC_OK;
}

/* Search [start + scan, end) for the record's LF; 1 and *pos when found. */
static int find_end(struct export_reader *r, size_t *pos)
{
    size_t i = r->start + r->scan;

    if (r->format == EXPORT_JSONL) {
        const char *lf = memchr(r->buf + i, '\n', r->end - i);
        if (lf != NULL) {
            *pos = (size_t)(lf - r->buf);
            return 1;
        }
    } else {
        /* Each LF, then the parity of the quotes before it: a tight counting
         * loop the compiler vectorises, instead of a branch per byte. */
        for (;;) {
            const char *lf = memchr(r->buf + i, '\n', r->end - i);
            size_t stop = lf != NULL ? (size_t)(lf - r->buf) : r->end;
            unsigned quotes = 0;
            for (size_t k = i; k < stop; k++)
                quotes += r->buf[k] == '"';
            r->in_quotes ^= (int)(quotes & 1);
            if (lf == NULL)
                break;
            if (!r->in_quotes) {
                *pos = stop;
                return 1;
            }
            r->nl_inside++;
            i = stop + 1;
        }
    }
    r->scan = r->end - r->start;
    return 0;
}

/* Take [start, pos) as a record; pos is its LF or end. */
static void take(struct export_reader *r, size_t pos, const char **p, size_t *n, int64_t *line)
{
    *p = r->buf + r->start;
    *n = pos - r->start;
    *line = r->line + 1;
    r->line += 1 + r->nl_inside;
    r->start = pos < r->end ? pos + 1 : pos;
    r->scan = 0;
    r->in_quotes = 0;
    r->nl_inside = 0;
}

/* Drop a too long record: everything up to and including the next LF. */
static enum rc skip_long(struct export_reader *r, int64_t *line, struct err *e)
{
    enum rc rc;

    *line = r->line + 1;
    r->line += r->nl_inside;
    r->scan = 0;
    r->in_quotes = 0;
    r->nl_inside = 0;
    r->start = r->end;
    for (;;) {
        const char *lf = memchr(r->buf + r->start, '\n', r->end - r->start);
        if (lf != NULL) {
            r->start = (size_t)(lf - r->buf) + 1;
            break;
        }
        r->start = r->end;
        rc = fill(r, e);
        if (rc == RC_ENOTFOUND)
            break;
        if (rc != RC_OK)
            return rc;
    }
    r->line++;
    return err_set(e, RC_ETOOBIG, "", "the line is longer than %d bytes", EXPORT_MAX_LINE);
}

/* The next raw record (CSV: may span lines), without its LF. */
static enum rc next_raw(struct export_reader *r, const char **p, size_t *n, int64_t *line,
                        struct err *e)
{
    size_t pos;
    enum rc rc;

    *line = r->line + 1;
    for (;;) {
        if (find_end(r, &pos))
            break;
        if (r->end - r->start > EXPORT_MAX_LINE)
            return skip_long(r, line, e);
        rc = fill(r, e);
        if (rc == RC_ENOTFOUND) {
            if (r->start == r->end)
                return RC_ENOTFOUND;
            pos = r->end; /* a last line without LF */
            break;
        }
        if (rc != RC_OK)
            return rc;
    }
    take(r, pos, p, n, line);
    if (*n > EXPORT_MAX_LINE) /* it fitted in the buffer, but the limit holds all the same */
        return err_set(e, RC_ETOOBIG, "", "the line is longer than %d bytes", EXPORT_MAX_LINE);
    return RC_OK;
}

enum rc export_reader_next(struct export_reader *r, struct export_record *rec, struct err *e)
{
    const char *p = NULL;
    size_t n = 0;
    int64_t line = 0;
    enum rc rc;

    rec->id = 0;
    rec->hash[0] = '\0';
    rec->prev_hash[0] = '\0';
    rec->canonical = NULL;
    rec->canonical_len = 0;
    rec->serve = 0;
    rec->serve_json = NULL;
    rec->serve_json_len = 0;
    for (;;) {
        rc = next_raw(r, &p, &n, &line, e);
        rec->line = line;
        if (rc == RC_ENOTFOUND)
            r->ended = 1;
        if (rc != RC_OK)
            return rc;
        if (n > 0 && p[n - 1] == '\r')
            return err_set(e, RC_EINVAL, "",
                           "the line ends with CR LF; exports use LF line endings");
        if (r->format == EXPORT_JSONL)
            return parse_jsonl(p, n, rec, e);
        if (r->header_done)
            return parse_csv(r, p, n, rec, e);
        r->header_done = 1;
        if (n != strlen(EXPORT_CSV_HEADER) || memcmp(p, EXPORT_CSV_HEADER, n) != 0)
            return err_set(e, RC_EINVAL, "", "the first line is not the CSV header");
    }
}

/* ---- open ----------------------------------------------------------------- */

static enum rc detect(struct export_reader *r, struct err *e)
{
    char head[128];
    size_t n = r->size < sizeof(head) ? (size_t)r->size : sizeof(head);
    size_t hl = strlen(EXPORT_CSV_HEADER);
    enum rc rc;

    if (n == 0)
        return err_set(e, RC_EINVAL, "", "not an audit export: the file is empty");
    if ((rc = read_at(r, 0, head, n, e)) != RC_OK)
        return rc;
    if ((n >= JSONL_PREFIX_LEN && memcmp(head, JSONL_PREFIX, JSONL_PREFIX_LEN) == 0) ||
        (n >= JSONL_MANIFEST_LEN && memcmp(head, JSONL_MANIFEST, JSONL_MANIFEST_LEN) == 0)) {
        r->format = EXPORT_JSONL;
        return RC_OK;
    }
    if (n >= hl && memcmp(head, EXPORT_CSV_HEADER, hl) == 0 &&
        (n == hl || head[hl] == '\n' || head[hl] == '\r')) {
        r->format = EXPORT_CSV;
        return RC_OK;
    }
    return err_set(e, RC_EINVAL, "",
                   "not an audit export: it starts with neither a JSON Lines event nor the CSV "
                   "header");
}

/* Parse the manifest line p[0..n) (a manifest line of r's format). */
static void parse_manifest(struct export_reader *r, const char *p, size_t n)
{
    json_t *doc = NULL, *m;
    json_error_t jerr;
    char *out = NULL;
    const char *f[2];
    size_t fl[2], nf = 0;
    const char *why = NULL;

    r->mstate = EXPORT_MANIFEST_MALFORMED;
    if (n > 0 && p[n - 1] == '\r') {
        snprintf(r->mwhy, sizeof(r->mwhy), "the manifest line ends with CR LF");
        return;
    }
    if (r->format == EXPORT_JSONL) {
        doc = json_loadb(p, n, JSON_REJECT_DUPLICATES, &jerr);
        m = json_object_get(doc, "manifest");
        if (json_is_object(m) && json_object_size(doc) == 1) {
            r->manifest = json_incref(m);
            r->mstate = EXPORT_MANIFEST_OK;
        } else {
            snprintf(r->mwhy, sizeof(r->mwhy), "the manifest line is not {\"manifest\":{...}}%s%s",
                     doc == NULL ? ": " : "", doc == NULL ? jerr.text : "");
        }
        json_decref(doc);
        return;
    }
    if ((out = malloc(n + 4)) == NULL) {
        snprintf(r->mwhy, sizeof(r->mwhy), "out of memory");
        return;
    }
    if (csv_split(p, n, out, f, fl, 2, &nf, &why) != 0 || nf != 2) {
        snprintf(r->mwhy, sizeof(r->mwhy), "the manifest line is not #manifest,\"{...}\"%s%s",
                 why ? ": " : "", why ? why : "");
    } else if ((m = json_loadb(f[1], fl[1], JSON_REJECT_DUPLICATES, &jerr)) == NULL ||
               !json_is_object(m)) {
        snprintf(r->mwhy, sizeof(r->mwhy), "the manifest is not a JSON object%s%s",
                 m == NULL ? ": " : "", m == NULL ? jerr.text : "");
        json_decref(m);
    } else {
        r->manifest = m;
        r->mstate = EXPORT_MANIFEST_OK;
    }
    free(out);
}

/* Find the last line; when it is a manifest line, end the stream before it. */
static enum rc read_tail(struct export_reader *r, struct err *e)
{
    size_t win = r->size < EXPORT_MAX_LINE + 2 ? (size_t)r->size : EXPORT_MAX_LINE + 2;
    uint64_t base = r->size - win;
    char *t = malloc(win + 1);
    const char *lf, *line;
    size_t end = win, ls, n;
    enum rc rc;

    if (t == NULL)
        return err_set(e, RC_ENOMEM, "", "out of memory");
    if ((rc = read_at(r, base, t, win, e)) != RC_OK) {
        free(t);
        return rc;
    }
    r->stream_end = r->size;
    r->mstate = EXPORT_MANIFEST_ABSENT;
    if (end > 0 && t[end - 1] == '\n')
        end--;
    lf = memrchr(t, '\n', end);
    if (lf == NULL && base > 0) {
        snprintf(r->mwhy, sizeof(r->mwhy), "the last line is longer than %d bytes",
                 EXPORT_MAX_LINE);
        free(t);
        return RC_OK;
    }
    ls = lf != NULL ? (size_t)(lf - t) + 1 : 0;
    line = t + ls;
    n = end - ls;
    if (r->format == EXPORT_JSONL
            ? n >= JSONL_MANIFEST_LEN && memcmp(line, JSONL_MANIFEST, JSONL_MANIFEST_LEN) == 0
            : n >= CSV_MANIFEST_LEN && memcmp(line, CSV_MANIFEST, CSV_MANIFEST_LEN) == 0) {
        r->stream_end = base + ls;
        parse_manifest(r, line, n);
    } else {
        snprintf(r->mwhy, sizeof(r->mwhy), "the last line is not a manifest");
    }
    free(t);
    return RC_OK;
}

static enum rc reader_init(struct export_reader *r, struct export_reader **out, struct err *e)
{
    enum rc rc;
    uint64_t cap;

    if ((rc = detect(r, e)) != RC_OK || (rc = read_tail(r, e)) != RC_OK)
        goto fail;
    rc = RC_ENOMEM;
    cap = EXPORT_MAX_LINE + READ_CHUNK;
    if (cap > r->stream_end + 1)
        cap = r->stream_end + 1;
    r->cap = (size_t)cap;
    if ((r->buf = malloc(r->cap)) == NULL || (r->all = EVP_MD_CTX_new()) == NULL ||
        (r->format == EXPORT_CSV && (r->scratch = malloc(EXPORT_MAX_LINE + 16)) == NULL))
        goto nomem;
    if (EVP_DigestInit_ex(r->all, EVP_sha256(), NULL) != 1) {
        rc = err_set(e, RC_EINTERNAL, "", "internal error");
        goto fail;
    }
    if (r->stream_end == 0)
        finish_hash(r);
    *out = r;
    return RC_OK;
nomem:
    rc = err_set(e, RC_ENOMEM, "", "out of memory");
fail:
    export_reader_free(r);
    return rc;
}

static struct export_reader *reader_new(void)
{
    struct export_reader *r = calloc(1, sizeof(*r));

    if (r != NULL)
        r->fd = -1;
    return r;
}

enum rc export_reader_open_mem(const void *data, size_t len, struct export_reader **out,
                               struct err *e)
{
    struct export_reader *r = reader_new();

    *out = NULL;
    if (r == NULL)
        return err_set(e, RC_ENOMEM, "", "out of memory");
    r->mem = len > 0 ? data : (const unsigned char *)"";
    r->size = len;
    return reader_init(r, out, e);
}

/* Copy fd to an unlinked temporary file; *tmp_fd is then owned by the caller. */
static enum rc spool(int fd, int *tmp_fd, struct err *e)
{
    const char *dir = getenv("TMPDIR");
    char path[PATH_MAX];
    char *chunk = NULL;
    int t = -1;
    enum rc rc = RC_EUNAVAIL;

    if (dir == NULL || dir[0] == '\0')
        dir = "/tmp";
    if ((size_t)snprintf(path, sizeof(path), "%s/trainyard-export-XXXXXX", dir) >= sizeof(path))
        return err_set(e, RC_EUNAVAIL, "", "TMPDIR is too long");
    if ((t = mkstemp(path)) < 0)
        return err_set(e, RC_EUNAVAIL, "", "cannot create a temporary file for the input: %s",
                       strerror(errno));
    unlink(path);
    if ((chunk = malloc(SPOOL_CHUNK)) == NULL) {
        rc = err_set(e, RC_ENOMEM, "", "out of memory");
        goto out;
    }
    for (;;) {
        ssize_t k = read(fd, chunk, SPOOL_CHUNK), w = 0;
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            rc = err_set(e, RC_EUNAVAIL, "", "cannot read the export: %s", strerror(errno));
            goto out;
        }
        if (k == 0)
            break;
        while (w < k) {
            ssize_t d = write(t, chunk + w, (size_t)(k - w));
            if (d < 0 && errno == EINTR)
                continue;
            if (d < 0) {
                rc = err_set(e, RC_EUNAVAIL, "", "cannot write the temporary copy of the input: %s",
                             strerror(errno));
                goto out;
            }
            w += d;
        }
    }
    *tmp_fd = t;
    t = -1;
    rc = RC_OK;
out:
    free(chunk);
    if (t >= 0)
        close(t);
    return rc;
}

enum rc export_reader_open_fd(int fd, struct export_reader **out, struct err *e)
{
    struct export_reader *r;
    struct stat st;
    enum rc rc;

    *out = NULL;
    if ((r = reader_new()) == NULL)
        return err_set(e, RC_ENOMEM, "", "out of memory");
    if (fstat(fd, &st) != 0) {
        free(r);
        return err_set(e, RC_EUNAVAIL, "", "cannot read the export: %s", strerror(errno));
    }
    r->fd = fd;
    if (!S_ISREG(st.st_mode)) {
        if ((rc = spool(fd, &r->fd, e)) != RC_OK) {
            free(r);
            return rc;
        }
        r->own_fd = 1;
        if (fstat(r->fd, &st) != 0) {
            rc = err_set(e, RC_EUNAVAIL, "", "cannot read the export: %s", strerror(errno));
            export_reader_free(r);
            return rc;
        }
    }
    r->size = (uint64_t)st.st_size;
    return reader_init(r, out, e);
}

void export_reader_free(struct export_reader *r)
{
    if (r == NULL)
        return;
    if (r->own_fd)
        close(r->fd);
    EVP_MD_CTX_free(r->all);
    json_decref(r->manifest);
    free(r->buf);
    free(r->scratch);
    free(r->canon);
    free(r->slow);
    free(r);
}

enum export_format export_reader_format(const struct export_reader *r)
{
    return r->format;
}

enum export_manifest_state export_reader_manifest(const struct export_reader *r,
                                                  const json_t **manifest, const char **why)
{
    if (manifest != NULL)
        *manifest = r->mstate == EXPORT_MANIFEST_OK ? r->manifest : NULL;
    if (why != NULL)
        *why = r->mstate == EXPORT_MANIFEST_OK ? "" : r->mwhy;
    return r->mstate;
}

int export_reader_eof(const struct export_reader *r)
{
    return r->read_off == r->stream_end && r->start == r->end;
}

int64_t export_reader_lines(const struct export_reader *r)
{
    return r->line;
}

int export_reader_events_sha256(const struct export_reader *r, char out[CRYPTO_SHA256_HEX_LEN + 1])
{
    if (!r->ended || r->all_hex[0] == '\0')
        return 0;
    memcpy(out, r->all_hex, sizeof(r->all_hex));
    return 1;
}
