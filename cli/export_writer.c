/*
 * export_writer.c - the reference writer of audit exports (see
 * export_writer.h and docs/audit-export.md).
 *
 * Every byte goes through put(), which writes it to the FILE and adds it to
 * the events_sha256 digest until the manifest line starts. The manifest is
 * built as a jansson object, signed with audit_sign_object() and written in
 * its canonical text (any JSON text would do: the verifier re-canonicalises
 * a parsed manifest before checking the signature).
 */
#include "export_writer.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "crypto.h"

#define DUMP_FLAGS (JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII)

struct export_writer {
    FILE *out;                                 /* borrowed */
    enum export_format format;                 /* jsonl or csv */
    const struct audit_key *key;               /* borrowed; signs the manifest */
    EVP_MD_CTX *all;                           /* owned; SHA-256 of the bytes before the manifest */
    char *from, *to;                           /* owned; NULL = null */
    char prev_hash[CRYPTO_SHA256_HEX_LEN + 1]; /* manifest prev_hash */
    char last_hash[CRYPTO_SHA256_HEX_LEN + 1]; /* hash of the last event written */
    char first_hash[CRYPTO_SHA256_HEX_LEN + 1]; /* hash of the first event written */
    int64_t count, first_id, last_id;           /* events written, their ids */
    json_t *checkpoints;                        /* owned; array */
    int failed;                                 /* a write failed */
    int finished;                               /* the manifest was written */
};

static void put(struct export_writer *w, const char *s, size_t n)
{
    if (n == 0)
        return;
    if (fwrite(s, 1, n, w->out) != n)
        w->failed = 1;
    if (!w->finished && EVP_DigestUpdate(w->all, s, n) != 1)
        w->failed = 1;
}

static void puts_(struct export_writer *w, const char *s)
{
    put(w, s, strlen(s));
}

/* One CSV field, quoted (with "" for ") when it holds , " CR or LF. */
static void put_field(struct export_writer *w, const char *s, int last)
{
    if (s == NULL)
        s = "";
    if (strpbrk(s, ",\"\r\n") == NULL) {
        puts_(w, s);
    } else {
        put(w, "\"", 1);
        for (const char *q; (q = strchr(s, '"')) != NULL; s = q + 1) {
            put(w, s, (size_t)(q - s));
            put(w, "\"\"", 2);
        }
        puts_(w, s);
        put(w, "\"", 1);
    }
    put(w, last ? "\n" : ",", 1);
}

static int64_t now_us(void)
{
    struct timeval tv;

    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

static int is_hex64(const char *s)
{
    if (s == NULL || strlen(s) != CRYPTO_SHA256_HEX_LEN)
        return 0;
    return strspn(s, "0123456789abcdef") == CRYPTO_SHA256_HEX_LEN;
}

enum rc export_writer_new(FILE *out, enum export_format format, const struct audit_key *key,
                          const char *prev_hash, const char *from, const char *to,
                          struct export_writer **wp)
{
    struct export_writer *w;

    *wp = NULL;
    if (!audit_key_can_sign(key) || !is_hex64(prev_hash) ||
        (format != EXPORT_JSONL && format != EXPORT_CSV))
        return RC_EINVAL;
    if ((w = calloc(1, sizeof(*w))) == NULL)
        return RC_ENOMEM;
    w->out = out;
    w->format = format;
    w->key = key;
    memcpy(w->prev_hash, prev_hash, sizeof(w->prev_hash));
    memcpy(w->last_hash, prev_hash, sizeof(w->last_hash));
    if ((w->all = EVP_MD_CTX_new()) == NULL || EVP_DigestInit_ex(w->all, EVP_sha256(), NULL) != 1 ||
        (w->checkpoints = json_array()) == NULL || (from != NULL && !(w->from = strdup(from))) ||
        (to != NULL && !(w->to = strdup(to)))) {
        export_writer_free(w);
        return RC_ENOMEM;
    }
    if (format == EXPORT_CSV)
        puts_(w, EXPORT_CSV_HEADER "\n");
    if (w->failed) {
        export_writer_free(w);
        return RC_EUNAVAIL;
    }
    *wp = w;
    return RC_OK;
}

static void put_csv_event(struct export_writer *w, const struct audit_fields *f, const char *hash)
{
    char idbuf[24];
    char *details = f->details ? json_dumps(f->details, DUMP_FLAGS) : NULL;

    snprintf(idbuf, sizeof(idbuf), "%lld", (long long)f->id);
    put_field(w, idbuf, 0);
    put_field(w, f->ts, 0);
    put_field(w, f->actor, 0);
    put_field(w, f->source, 0);
    put_field(w, f->action, 0);
    put_field(w, f->target, 0);
    put_field(w, f->outcome, 0);
    put_field(w, details ? details : "{}", 0);
    put_field(w, f->prev_hash, 0);
    put_field(w, hash, 1);
    free(details);
}

enum rc export_writer_event(struct export_writer *w, const struct audit_fields *f,
                            char hash_out[CRYPTO_SHA256_HEX_LEN + 1])
{
    struct audit_fields g = *f;
    char hash[CRYPTO_SHA256_HEX_LEN + 1];
    char *canon;

    if (w->finished)
        return RC_EINVAL;
    if (g.prev_hash == NULL)
        g.prev_hash = w->last_hash;
    if ((canon = audit_canonical(&g)) == NULL)
        return RC_ENOMEM;
    crypto_sha256_hex(canon, strlen(canon), hash);
    if (w->format == EXPORT_JSONL) {
        puts_(w, "{\"hash\":\"");
        puts_(w, hash);
        puts_(w, "\",\"event\":");
        puts_(w, canon);
        puts_(w, "}\n");
    } else {
        put_csv_event(w, &g, hash);
    }
    free(canon);
    if (w->count++ == 0) {
        w->first_id = g.id;
        memcpy(w->first_hash, hash, sizeof(hash));
    }
    w->last_id = g.id;
    memcpy(w->last_hash, hash, sizeof(hash));
    if (hash_out != NULL)
        memcpy(hash_out, hash, sizeof(hash));
    return w->failed ? RC_EUNAVAIL : RC_OK;
}

enum rc export_writer_checkpoint(struct export_writer *w, json_t *cp)
{
    return json_array_append(w->checkpoints, cp) == 0 ? RC_OK : RC_ENOMEM;
}

static json_t *str_or_null(const char *s)
{
    return s != NULL ? json_string(s) : json_null();
}

static json_t *id_or_null(int64_t count, int64_t id)
{
    char buf[24];

    if (count == 0)
        return json_null();
    snprintf(buf, sizeof(buf), "%lld", (long long)id);
    return json_string(buf);
}

static json_t *build_manifest(struct export_writer *w, const char *generated_at)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    char all[CRYPTO_SHA256_HEX_LEN + 1], ts[40];
    json_t *m = json_object();

    if (m == NULL)
        return NULL;
    if (EVP_DigestFinal_ex(w->all, md, &mdlen) != 1 || mdlen != 32) {
        json_decref(m);
        return NULL;
    }
    crypto_hex(md, mdlen, all);
    if (generated_at == NULL) {
        audit_format_ts(now_us(), ts, sizeof(ts));
        generated_at = ts;
    }
    if (json_object_set_new(m, "type", json_string("trainyard.audit.export")) != 0 ||
        json_object_set_new(m, "format", json_string(export_format_str(w->format))) != 0 ||
        json_object_set_new(m, "from", str_or_null(w->from)) != 0 ||
        json_object_set_new(m, "to", str_or_null(w->to)) != 0 ||
        json_object_set_new(m, "count", json_integer(w->count)) != 0 ||
        json_object_set_new(m, "first_id", id_or_null(w->count, w->first_id)) != 0 ||
        json_object_set_new(m, "last_id", id_or_null(w->count, w->last_id)) != 0 ||
        json_object_set_new(m, "first_hash", str_or_null(w->count ? w->first_hash : NULL)) != 0 ||
        json_object_set_new(m, "last_hash", str_or_null(w->count ? w->last_hash : NULL)) != 0 ||
        json_object_set_new(m, "prev_hash", json_string(w->prev_hash)) != 0 ||
        json_object_set_new(m, "events_sha256", json_string(all)) != 0 ||
        json_object_set(m, "checkpoints", w->checkpoints) != 0 ||
        json_object_set_new(m, "generated_at", json_string(generated_at)) != 0 ||
        json_object_set_new(m, "key_id", json_string(audit_key_id(w->key))) != 0) {
        json_decref(m);
        return NULL;
    }
    return m;
}

enum rc export_writer_finish(struct export_writer *w, const char *generated_at)
{
    json_t *m;
    char *text = NULL;
    enum rc rc;

    if (w->finished)
        return RC_EINVAL;
    w->finished = 1; /* from here on, put() no longer feeds events_sha256 */
    if ((m = build_manifest(w, generated_at)) == NULL)
        return RC_ENOMEM;
    if ((rc = audit_sign_object(w->key, m)) != RC_OK)
        goto out;
    rc = RC_ENOMEM;
    if ((text = json_dumps(m, DUMP_FLAGS)) == NULL)
        goto out;
    if (w->format == EXPORT_JSONL) {
        puts_(w, "{\"manifest\":");
        puts_(w, text);
        puts_(w, "}\n");
    } else {
        puts_(w, "#manifest,");
        put_field(w, text, 1);
    }
    if (fflush(w->out) != 0)
        w->failed = 1;
    rc = w->failed ? RC_EUNAVAIL : RC_OK;
out:
    free(text);
    json_decref(m);
    return rc;
}

void export_writer_free(struct export_writer *w)
{
    if (w == NULL)
        return;
    EVP_MD_CTX_free(w->all);
    json_decref(w->checkpoints);
    free(w->from);
    free(w->to);
    free(w);
}

enum rc export_checkpoint_new(const struct audit_key *key, int64_t seq, const char *hash,
                              const char *kind, const char *created_at, json_t **out)
{
    char seqbuf[24], ts[40];
    json_t *cp;
    enum rc rc;

    *out = NULL;
    if (seq < 0 || !is_hex64(hash) || kind == NULL)
        return RC_EINVAL;
    if ((cp = json_object()) == NULL)
        return RC_ENOMEM;
    if (created_at == NULL) {
        audit_format_ts(now_us(), ts, sizeof(ts));
        created_at = ts;
    }
    snprintf(seqbuf, sizeof(seqbuf), "%lld", (long long)seq);
    if (json_object_set_new(cp, "type", json_string("trainyard.audit.checkpoint")) != 0 ||
        json_object_set_new(cp, "seq", json_string(seqbuf)) != 0 ||
        json_object_set_new(cp, "hash", json_string(hash)) != 0 ||
        json_object_set_new(cp, "created_at", json_string(created_at)) != 0 ||
        json_object_set_new(cp, "kind", json_string(kind)) != 0 ||
        json_object_set_new(cp, "key_id", json_string(audit_key_id(key))) != 0) {
        json_decref(cp);
        return RC_ENOMEM;
    }
    if ((rc = audit_sign_object(key, cp)) != RC_OK) {
        json_decref(cp);
        return rc;
    }
    *out = cp;
    return RC_OK;
}
