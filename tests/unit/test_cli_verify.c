/*
 * test_cli_verify.c - unit tests of "trainyard audit verify" (cli/verify.c,
 * cli/export_reader.c, cli/export_writer.c, cli/cmd_audit.c): exports of 50
 * synthetic events written by the reference writer with a key made in a
 * mkdtemp directory, in both formats, then tampered with line by line, and
 * the verdict checked: kind, event id and line number.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "audit_canon.h"
#include "audit_sign.h"
#include "cli.h"
#include "crypto.h"
#include "export_reader.h"
#include "export_writer.h"
#include "verify.h"

#define N_EVENTS 50
#define TS_BASE_US 1767225600000000LL

static char g_dir[] = "/tmp/ty-test-cli-XXXXXX";
static struct audit_key *g_key;       /* signs */
static struct audit_key *g_pub;       /* the same key, public half only */
static struct audit_key *g_other;     /* another key */
static struct audit_key *g_cp_signer; /* when set: signs the checkpoints (a rotated-out key) */

/* ---- fixtures ------------------------------------------------------------ */

static int group_setup(void **state)
{
    char path[256];
    int created;

    (void)state;
    if (mkdtemp(g_dir) == NULL)
        return -1;
    snprintf(path, sizeof(path), "%s/a.pem", g_dir);
    if (audit_key_load_or_create(path, &g_key, &created, NULL) != RC_OK)
        return -1;
    snprintf(path, sizeof(path), "%s/b.pem", g_dir);
    if (audit_key_load_or_create(path, &g_other, &created, NULL) != RC_OK)
        return -1;
    const char *b64 = audit_key_public_b64(g_key);
    return audit_key_from_public(b64, strlen(b64), &g_pub, NULL) == RC_OK ? 0 : -1;
}

static int group_teardown(void **state)
{
    char path[256];

    (void)state;
    audit_key_free(g_key);
    audit_key_free(g_pub);
    audit_key_free(g_other);
    const char *names[] = {"a.pem",    "b.pem",     "pub.pem", "pub.b64",
                           "pub.json", "ring.json", "x.jsonl"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", g_dir, names[i]);
        unlink(path);
    }
    rmdir(g_dir);
    return 0;
}

/* ---- building exports ---------------------------------------------------- */

struct ev_bufs {
    char ts[40], source[40], target[40];
};

/* Synthetic event id (details: a new reference, json_decref it). */
static json_t *event_fields(int64_t id, struct audit_fields *f, struct ev_bufs *b)
{
    static const char *const actors[] = {"user:alice", "user:bob", "node:gpu-07",
                                         "user:zo\xc3\xab"};
    static const char *const actions[] = {"job.submit", "job.cancel", "auth.login"};
    json_t *d = json_pack("{s:I,s:s}", "job_id", (json_int_t)id, "note",
                          id % 5 ? "ok" : "retry, \"later\"");

    audit_format_ts(TS_BASE_US + id * 1000000, b->ts, sizeof(b->ts));
    snprintf(b->source, sizeof(b->source), "10.0.0.%d", (int)(id % 200));
    snprintf(b->target, sizeof(b->target), "job:%lld", (long long)id);
    *f = (struct audit_fields){
        id, b->ts, actors[id % 4], b->source, actions[id % 3], b->target, "success", d, NULL};
    return d;
}

struct spec {
    enum export_format format;
    int64_t first_id;      /* 1, or > 1 for an export after retention */
    int64_t count;         /* events */
    int cp_every;          /* periodic checkpoint every N ids; 0: none */
    int64_t bad_cp_seq;    /* > 0: a checkpoint for this event carrying the previous hash */
    const char *target_nl; /* when set: event 3's target (tests CSV quoting) */
};

struct buf {
    char *data;
    size_t len;
};

/* Write an export per s into b (free b->data). */
static void make_export(const struct spec *s, struct buf *b)
{
    FILE *out = open_memstream(&b->data, &b->len);
    struct export_writer *w = NULL;
    char prev[CRYPTO_SHA256_HEX_LEN + 1], hash[CRYPTO_SHA256_HEX_LEN + 1];
    char last[CRYPTO_SHA256_HEX_LEN + 1];
    json_t *cp;

    assert_non_null(out);
    memcpy(prev, AUDIT_GENESIS_HASH, sizeof(prev));
    if (s->first_id > 1)
        crypto_sha256_hex("removed", 7, prev);
    assert_int_equal(export_writer_new(out, s->format, g_key, prev, NULL, NULL, &w), RC_OK);
    if (s->first_id > 1) {
        assert_int_equal(export_checkpoint_new(g_cp_signer ? g_cp_signer : g_key, s->first_id - 1,
                                               prev, "retention", NULL, &cp),
                         RC_OK);
        assert_int_equal(export_writer_checkpoint(w, cp), RC_OK);
        json_decref(cp);
    }
    memcpy(last, prev, sizeof(last));
    for (int64_t id = s->first_id; id < s->first_id + s->count; id++) {
        struct audit_fields f;
        struct ev_bufs eb;
        json_t *d = event_fields(id, &f, &eb);
        if (s->target_nl != NULL && id == 3)
            f.target = s->target_nl;
        assert_int_equal(export_writer_event(w, &f, hash), RC_OK);
        json_decref(d);
        if ((s->cp_every > 0 && id % s->cp_every == 0) || id == s->bad_cp_seq) {
            assert_int_equal(export_checkpoint_new(g_cp_signer ? g_cp_signer : g_key, id,
                                                   id == s->bad_cp_seq ? last : hash, "periodic",
                                                   NULL, &cp),
                             RC_OK);
            assert_int_equal(export_writer_checkpoint(w, cp), RC_OK);
            json_decref(cp);
        }
        memcpy(last, hash, sizeof(last));
    }
    assert_int_equal(export_writer_finish(w, NULL), RC_OK);
    export_writer_free(w);
    assert_int_equal(fclose(out), 0);
}

static struct buf std_export(enum export_format format)
{
    struct spec s = {format, 1, N_EVENTS, 10, 0, NULL};
    struct buf b;

    make_export(&s, &b);
    return b;
}

/* ---- lines --------------------------------------------------------------- */

struct lines {
    char **v; /* each line without its LF, malloc'ed */
    size_t n;
};

static void split(const struct buf *b, struct lines *l)
{
    size_t start = 0;

    l->v = NULL;
    l->n = 0;
    for (size_t i = 0; i <= b->len; i++) {
        if (i < b->len && b->data[i] != '\n')
            continue;
        if (i == b->len && start == i)
            break;
        l->v = realloc(l->v, (l->n + 1) * sizeof(*l->v));
        assert_non_null(l->v);
        l->v[l->n] = strndup(b->data + start, i - start);
        assert_non_null(l->v[l->n]);
        l->n++;
        start = i + 1;
    }
}

/* Join l into b (replacing b's data), each line followed by eol. */
static void join(struct lines *l, struct buf *b, const char *eol)
{
    FILE *out;

    free(b->data);
    out = open_memstream(&b->data, &b->len);
    assert_non_null(out);
    for (size_t i = 0; i < l->n; i++)
        fprintf(out, "%s%s", l->v[i], eol);
    assert_int_equal(fclose(out), 0);
}

static void lines_free(struct lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

static void del_line(struct lines *l, size_t idx)
{
    free(l->v[idx]);
    memmove(l->v + idx, l->v + idx + 1, (l->n - idx - 1) * sizeof(*l->v));
    l->n--;
}

/* Insert a copy of s before index idx. */
static void ins_line(struct lines *l, size_t idx, const char *s)
{
    l->v = realloc(l->v, (l->n + 1) * sizeof(*l->v));
    assert_non_null(l->v);
    memmove(l->v + idx + 1, l->v + idx, (l->n - idx) * sizeof(*l->v));
    l->v[idx] = strdup(s);
    l->n++;
}

/* Replace the first `from` in line idx with `to`. */
static void edit_line(struct lines *l, size_t idx, const char *from, const char *to)
{
    char *p = strstr(l->v[idx], from), *n;
    size_t pre, fl = strlen(from), tl = strlen(to), len = strlen(l->v[idx]);

    if (p == NULL)
        fail_msg("\"%s\" not in line %zu: %s", from, idx + 1, l->v[idx]);
    pre = (size_t)(p - l->v[idx]);
    n = malloc(len - fl + tl + 1);
    assert_non_null(n);
    memcpy(n, l->v[idx], pre);
    memcpy(n + pre, to, tl);
    memcpy(n + pre + tl, p + fl, len - pre - fl + 1);
    free(l->v[idx]);
    l->v[idx] = n;
}

/* The JSONL line of an event whose hash is valid (a forger's line). */
static char *jsonl_line(const struct audit_fields *f, char hash[CRYPTO_SHA256_HEX_LEN + 1])
{
    char *canon = audit_canonical(f), *line;
    size_t n;

    assert_non_null(canon);
    crypto_sha256_hex(canon, strlen(canon), hash);
    n = strlen(canon) + 100;
    line = malloc(n);
    assert_non_null(line);
    snprintf(line, n, "{\"hash\":\"%s\",\"event\":%s}", hash, canon);
    free(canon);
    return line;
}

/* The stored hash of JSONL line s. */
static void jsonl_hash(const char *s, char out[CRYPTO_SHA256_HEX_LEN + 1])
{
    assert_int_equal(strncmp(s, "{\"hash\":\"", 9), 0);
    memcpy(out, s + 9, CRYPTO_SHA256_HEX_LEN);
    out[CRYPTO_SHA256_HEX_LEN] = '\0';
}

/* ---- verifying ----------------------------------------------------------- */

static struct verify_result verify_buf(const struct buf *b, const struct audit_key *key)
{
    struct export_reader *r = NULL;
    struct verify_result v;
    struct err e;

    err_init(&e);
    if (export_reader_open_mem(b->data, b->len, &r, &e) != RC_OK)
        fail_msg("open: %s", e.message);
    assert_int_equal(verify_export(r, key, &v), RC_OK);
    export_reader_free(r);
    return v;
}

static void expect_ok(const struct buf *b, int64_t events)
{
    struct verify_result v = verify_buf(b, g_pub);

    if (!v.ok)
        fail_msg("want ok, got line %lld event %lld %s: %s", (long long)v.line,
                 (long long)v.event_id, verify_kind_str(v.kind), v.message);
    assert_int_equal(v.events, events);
}

static void expect_fail(const struct buf *b, const struct audit_key *key, enum verify_kind kind,
                        int64_t line, int64_t event_id, const char *msg)
{
    struct verify_result v = verify_buf(b, key);

    if (v.ok || v.kind != kind || v.line != line || v.event_id != event_id ||
        (msg != NULL && strstr(v.message, msg) == NULL))
        fail_msg("want line %lld event %lld %s (%s), got %s line %lld event %lld %s: %s",
                 (long long)line, (long long)event_id, verify_kind_str(kind), msg ? msg : "",
                 v.ok ? "ok" : "fail", (long long)v.line, (long long)v.event_id,
                 verify_kind_str(v.kind), v.message);
}

/* Line number (1-based) of event id in a standard export of format f. */
static int64_t line_of(enum export_format f, int64_t id)
{
    return f == EXPORT_CSV ? id + 1 : id;
}

/* Index into struct lines of event id. */
static size_t idx_of(enum export_format f, int64_t id)
{
    return (size_t)(line_of(f, id) - 1);
}

static const enum export_format formats[] = {EXPORT_JSONL, EXPORT_CSV};

/* ---- tests --------------------------------------------------------------- */

static void test_untouched(void **state)
{
    (void)state;
    for (size_t i = 0; i < 2; i++) {
        struct buf b = std_export(formats[i]);
        struct verify_result v = verify_buf(&b, g_pub);
        assert_true(v.ok);
        assert_int_equal(v.events, N_EVENTS);
        assert_int_equal(v.first_id, 1);
        assert_int_equal(v.last_id, N_EVENTS);
        assert_int_equal(v.checkpoints, 5);
        assert_int_equal(v.format, formats[i]);
        assert_string_equal(v.key_id, audit_key_id(g_key));
        /* the signing key verifies as well as its public half */
        expect_ok(&b, N_EVENTS);
        free(b.data);
    }
}

static void test_modified_field(void **state)
{
    (void)state;
    for (size_t i = 0; i < 2; i++) {
        enum export_format f = formats[i];
        struct buf b = std_export(f);
        struct lines l;
        split(&b, &l);
        edit_line(&l, idx_of(f, 20), "job:20", "job:21");
        join(&l, &b, "\n");
        expect_fail(&b, g_pub, VERIFY_MODIFIED, line_of(f, 20), 20, "does not match its contents");
        lines_free(&l);
        free(b.data);
    }
}

/* A forger changes event 20 and fixes its stored hash: event 21 gives it away. */
static void test_modified_rehashed(void **state)
{
    struct buf b = std_export(EXPORT_JSONL);
    struct lines l;
    struct audit_fields f;
    struct ev_bufs eb;
    char hash[CRYPTO_SHA256_HEX_LEN + 1], prev[CRYPTO_SHA256_HEX_LEN + 1];
    json_t *d = event_fields(20, &f, &eb);
    char *line;

    (void)state;
    split(&b, &l);
    jsonl_hash(l.v[18], prev);
    f.prev_hash = prev;
    f.outcome = "denied";
    line = jsonl_line(&f, hash);
    free(l.v[19]);
    l.v[19] = line;
    join(&l, &b, "\n");
    expect_fail(&b, g_pub, VERIFY_MODIFIED, 20, 20, "the next line (21) links to");
    json_decref(d);
    lines_free(&l);
    free(b.data);
}

/* Event 20's prev_hash is changed (its hash left): event 20 is named. */
static void test_modified_prev_hash(void **state)
{
    struct buf b = std_export(EXPORT_JSONL);
    struct lines l;
    char prev[CRYPTO_SHA256_HEX_LEN + 1];

    (void)state;
    split(&b, &l);
    jsonl_hash(l.v[18], prev);
    edit_line(&l, 19, prev, "1111111111111111111111111111111111111111111111111111111111111111");
    join(&l, &b, "\n");
    expect_fail(&b, g_pub, VERIFY_MODIFIED, 20, 20, "prev_hash does not link");
    lines_free(&l);
    free(b.data);
}

static void test_missing(void **state)
{
    (void)state;
    for (size_t i = 0; i < 2; i++) {
        enum export_format f = formats[i];
        struct buf b = std_export(f);
        struct lines l;

        /* one line: named at the line after the gap */
        split(&b, &l);
        del_line(&l, idx_of(f, 20));
        join(&l, &b, "\n");
        expect_fail(&b, g_pub, VERIFY_MISSING, line_of(f, 20), 20, "belongs before this line");
        lines_free(&l);

        free(b.data);

        /* three lines */
        b = std_export(f);
        split(&b, &l);
        for (int k = 0; k < 3; k++)
            del_line(&l, idx_of(f, 29));
        join(&l, &b, "\n");
        expect_fail(&b, g_pub, VERIFY_MISSING, line_of(f, 29), 29, "events 29..31");
        lines_free(&l);
        free(b.data);

        /* the first line */
        b = std_export(f);
        split(&b, &l);
        del_line(&l, idx_of(f, 1));
        join(&l, &b, "\n");
        expect_fail(&b, g_pub, VERIFY_MISSING, line_of(f, 1), 1, "before this line");
        lines_free(&l);
        free(b.data);

        /* the last line, manifest kept */
        b = std_export(f);
        split(&b, &l);
        del_line(&l, idx_of(f, N_EVENTS));
        join(&l, &b, "\n");
        expect_fail(&b, g_pub, VERIFY_MISSING, line_of(f, N_EVENTS), N_EVENTS, "at the end");
        lines_free(&l);
        free(b.data);
    }
}

/* A forged line with a valid hash that links to its predecessor. */
static void test_inserted(void **state)
{
    struct buf b = std_export(EXPORT_JSONL);
    struct lines l;
    struct audit_fields f;
    struct ev_bufs eb;
    char hash[CRYPTO_SHA256_HEX_LEN + 1], prev[CRYPTO_SHA256_HEX_LEN + 1];
    json_t *d = event_fields(21, &f, &eb);
    char *line;

    (void)state;
    split(&b, &l);
    jsonl_hash(l.v[19], prev); /* event 20 */
    f.prev_hash = prev;
    f.action = "audit.purge";
    line = jsonl_line(&f, hash);
    ins_line(&l, 20, line);
    join(&l, &b, "\n");
    expect_fail(&b, g_pub, VERIFY_INSERTED, 21, 21, "links to the line before this one");
    lines_free(&l);

    /* a duplicated line is inserted too */
    free(b.data);
    b = std_export(EXPORT_CSV);
    split(&b, &l);
    ins_line(&l, idx_of(EXPORT_CSV, 10), l.v[idx_of(EXPORT_CSV, 10)]);
    join(&l, &b, "\n");
    expect_fail(&b, g_pub, VERIFY_INSERTED, line_of(EXPORT_CSV, 10), 10, NULL);
    lines_free(&l);
    free(b.data);
    free(line);
    json_decref(d);
}

static void test_reordered(void **state)
{
    (void)state;
    for (size_t i = 0; i < 2; i++) {
        enum export_format f = formats[i];
        struct buf b = std_export(f);
        struct lines l;
        char *t;

        split(&b, &l);
        t = l.v[idx_of(f, 20)];
        l.v[idx_of(f, 20)] = l.v[idx_of(f, 21)];
        l.v[idx_of(f, 21)] = t;
        join(&l, &b, "\n");
        expect_fail(&b, g_pub, VERIFY_REORDERED, line_of(f, 20), 21, "comes later");
        lines_free(&l);
        free(b.data);

        /* moved far back: line 40 put before line 10 */
        b = std_export(f);
        split(&b, &l);
        t = l.v[idx_of(f, 40)];
        memmove(l.v + idx_of(f, 11), l.v + idx_of(f, 10), 30 * sizeof(*l.v));
        l.v[idx_of(f, 10)] = t;
        join(&l, &b, "\n");
        expect_fail(&b, g_pub, VERIFY_REORDERED, line_of(f, 10), 40, NULL);
        lines_free(&l);
        free(b.data);
    }
}

static void test_retention(void **state)
{
    (void)state;
    for (size_t i = 0; i < 2; i++) {
        struct spec s = {formats[i], 101, N_EVENTS, 10, 0, NULL};
        struct buf b;
        struct lines l;

        make_export(&s, &b);
        struct verify_result v = verify_buf(&b, g_pub);
        assert_true(v.ok);
        assert_int_equal(v.first_id, 101);
        assert_int_equal(v.last_id, 150);
        assert_int_equal(v.checkpoints, 6); /* retention at 100 and 110..150 */

        /* the first line of the range removed as well */
        split(&b, &l);
        del_line(&l, idx_of(formats[i], 1));
        join(&l, &b, "\n");
        expect_fail(&b, g_pub, VERIFY_MISSING, line_of(formats[i], 1), 101, NULL);
        lines_free(&l);
        free(b.data);
    }
}

/* Rewrite a JSONL export's manifest through fn, then sign it again or not. */
static void edit_manifest(struct buf *b, void (*fn)(json_t *m), const struct audit_key *signer)
{
    struct lines l;
    json_t *doc, *m;
    char *text;

    split(b, &l);
    doc = json_loads(l.v[l.n - 1], 0, NULL);
    assert_non_null(doc);
    m = json_object_get(doc, "manifest");
    fn(m);
    if (signer != NULL)
        assert_int_equal(audit_sign_object(signer, m), RC_OK);
    text = json_dumps(doc, JSON_COMPACT);
    free(l.v[l.n - 1]);
    l.v[l.n - 1] = text;
    join(&l, b, "\n");
    lines_free(&l);
    json_decref(doc);
}

static void set_generated_at(json_t *m)
{
    json_object_set_new(m, "generated_at", json_string("2030-01-01T00:00:00.000000Z"));
}

static void flip_signature(json_t *m)
{
    char sig[AUDIT_SIGNATURE_B64_LEN + 1];

    snprintf(sig, sizeof(sig), "%s", json_string_value(json_object_get(m, "signature")));
    sig[10] = sig[10] == 'A' ? 'B' : 'A';
    json_object_set_new(m, "signature", json_string(sig));
}

static void drop_last(json_t *m)
{
    json_object_set_new(m, "count", json_integer(N_EVENTS - 1));
    json_object_set_new(m, "last_id", json_string("49"));
}

static void test_bad_signature(void **state)
{
    struct buf b = std_export(EXPORT_JSONL);

    (void)state;
    edit_manifest(&b, flip_signature, NULL);
    expect_fail(&b, g_pub, VERIFY_SIGNATURE, N_EVENTS + 1, 0, "signature is not valid");
    free(b.data);

    b = std_export(EXPORT_JSONL);
    edit_manifest(&b, set_generated_at, NULL);
    expect_fail(&b, g_pub, VERIFY_SIGNATURE, N_EVENTS + 1, 0, "signature is not valid");
    free(b.data);

    /* signed again by another key that claims to be ours */
    b = std_export(EXPORT_JSONL);
    edit_manifest(&b, set_generated_at, g_other);
    expect_fail(&b, g_pub, VERIFY_SIGNATURE, N_EVENTS + 1, 0, "signature is not valid");
    free(b.data);

    /* a forged manifest is not believed: its signature is checked before its claims */
    b = std_export(EXPORT_JSONL);
    edit_manifest(&b, drop_last, NULL);
    expect_fail(&b, g_pub, VERIFY_SIGNATURE, N_EVENTS + 1, 0, "signature is not valid");
    free(b.data);

    /* the same, signed: event 50 is not in the range it vouches for */
    b = std_export(EXPORT_JSONL);
    edit_manifest(&b, drop_last, g_key);
    expect_fail(&b, g_pub, VERIFY_INSERTED, N_EVENTS, N_EVENTS, "ends at event 49");
    free(b.data);
}

static void test_wrong_key(void **state)
{
    (void)state;
    for (size_t i = 0; i < 2; i++) {
        struct buf b = std_export(formats[i]);
        expect_fail(&b, g_other, VERIFY_SIGNATURE, line_of(formats[i], N_EVENTS + 1), 0,
                    "not by the given key");
        free(b.data);
    }
}

static void test_checkpoint_mismatch(void **state)
{
    (void)state;
    for (size_t i = 0; i < 2; i++) {
        struct spec s = {formats[i], 1, N_EVENTS, 0, 30, NULL};
        struct buf b;

        make_export(&s, &b);
        expect_fail(&b, g_pub, VERIFY_MODIFIED, line_of(formats[i], 30), 30,
                    "signed in checkpoint 1");
        free(b.data);
    }
}

static void break_checkpoint(json_t *m)
{
    json_t *cp = json_array_get(json_object_get(m, "checkpoints"), 1);
    json_object_set_new(cp, "created_at", json_string("2030-01-01T00:00:00.000000Z"));
}

static void test_checkpoint_signature(void **state)
{
    struct buf b = std_export(EXPORT_JSONL);

    (void)state;
    edit_manifest(&b, break_checkpoint, g_key);
    expect_fail(&b, g_pub, VERIFY_SIGNATURE, N_EVENTS + 1, 0, "checkpoint 2 (event 20)");
    free(b.data);
}

static void test_truncated(void **state)
{
    (void)state;
    for (size_t i = 0; i < 2; i++) {
        enum export_format f = formats[i];
        struct buf b = std_export(f);
        struct lines l;
        size_t full = b.len;

        /* no manifest line */
        split(&b, &l);
        del_line(&l, l.n - 1);
        join(&l, &b, "\n");
        expect_fail(&b, g_pub, VERIFY_MANIFEST, line_of(f, N_EVENTS), 0, "no signed manifest");
        lines_free(&l);
        free(b.data);

        /* cut inside the manifest line */
        b = std_export(f);
        b.len = full - 40;
        expect_fail(&b, g_pub, VERIFY_MANIFEST, line_of(f, N_EVENTS + 1), 0, NULL);
        free(b.data);

        /* cut inside the last event line */
        b = std_export(f);
        split(&b, &l);
        del_line(&l, l.n - 1);
        join(&l, &b, "\n");
        b.len -= 30;
        expect_fail(&b, g_pub, VERIFY_MANIFEST, line_of(f, N_EVENTS), 0, "truncated");
        lines_free(&l);
        free(b.data);
    }
}

static void test_empty_range(void **state)
{
    (void)state;
    for (size_t i = 0; i < 2; i++) {
        struct spec s = {formats[i], 1, 0, 10, 0, NULL};
        struct buf b;
        struct lines l;

        make_export(&s, &b);
        struct verify_result v = verify_buf(&b, g_pub);
        assert_true(v.ok);
        assert_int_equal(v.events, 0);
        assert_int_equal(v.checkpoints, 0);

        /* a line put into an empty export */
        struct buf full = std_export(formats[i]);
        struct lines fl;
        split(&full, &fl);
        split(&b, &l);
        ins_line(&l, l.n - 1, fl.v[idx_of(formats[i], 1)]);
        join(&l, &b, "\n");
        expect_fail(&b, g_pub, VERIFY_INSERTED, line_of(formats[i], 1), 1, "empty");
        lines_free(&fl);
        lines_free(&l);
        free(full.data);
        free(b.data);
    }
}

/* Decision (export_reader.h): CR LF line endings are refused, in both formats. */
static void test_crlf(void **state)
{
    (void)state;
    for (size_t i = 0; i < 2; i++) {
        struct buf b = std_export(formats[i]);
        struct lines l;

        split(&b, &l);
        join(&l, &b, "\r\n");
        expect_fail(&b, g_pub, VERIFY_FORMAT, 1, 0, "CR LF");
        lines_free(&l);
        free(b.data);
    }
}

/* CSV fields with a line break, comma and quotes: one record over two lines. */
static void test_csv_multiline(void **state)
{
    struct spec s = {EXPORT_CSV, 1, N_EVENTS, 10, 0, "job:3,\"x\"\nsecond line"};
    struct buf b;
    struct lines l;

    (void)state;
    make_export(&s, &b);
    expect_ok(&b, N_EVENTS);
    split(&b, &l);
    assert_int_equal(l.n, N_EVENTS + 3); /* header, 51 lines of events, manifest */
    /* event 20 is on line 22 now */
    edit_line(&l, 21, "job:20", "job:99");
    join(&l, &b, "\n");
    expect_fail(&b, g_pub, VERIFY_MODIFIED, 22, 20, NULL);
    lines_free(&l);
    free(b.data);

    /* the same bytes quoted differently: chain intact, events_sha256 not */
    b = std_export(EXPORT_CSV);
    split(&b, &l);
    edit_line(&l, 5, "2026-", "\"2026-");
    edit_line(&l, 5, "Z,", "Z\",");
    join(&l, &b, "\n");
    expect_fail(&b, g_pub, VERIFY_MODIFIED, N_EVENTS + 2, 0, "events_sha256");
    lines_free(&l);
    free(b.data);
}

/*
 * The CSV fast path writes the canonical text itself: for every kind of
 * character it must produce audit_canonical()'s bytes, so that no row of a
 * good export needs the jansson rebuild.
 */
static void test_csv_fast_path(void **state)
{
    char nasty[512];
    size_t n = 0;
    struct buf b;
    FILE *out;
    struct export_writer *w = NULL;
    struct export_reader *r = NULL;
    struct verify_result v;
    json_t *d;

    (void)state;
    for (int c = 1; c < 0x80; c++) /* every ASCII character but NUL */
        nasty[n++] = (char)c;
    /* 2-, 3- and 4-byte UTF-8: e-acute, U+2028, U+FFFF, an emoji, U+10FFFF */
    const char *wide = "\xc3\xa9\xe2\x80\xa8\xef\xbf\xbf\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf/\\\"";
    memcpy(nasty + n, wide, strlen(wide) + 1);
    d = json_pack("{s:s,s:[i,f,b,n,{s:s}],s:f,s:I}", "s", nasty, "a", 1, 0.5, 1, "k", "\xc3\xa9",
                  "pi", 3.14159, "big", (json_int_t)9007199254740993LL);
    assert_non_null(d);
    out = open_memstream(&b.data, &b.len);
    assert_int_equal(export_writer_new(out, EXPORT_CSV, g_key, AUDIT_GENESIS_HASH, "1", NULL, &w),
                     RC_OK);
    for (int64_t id = 1; id <= 3; id++) {
        struct audit_fields f = {id, nasty, nasty, nasty, nasty, nasty, nasty, d, NULL};
        assert_int_equal(export_writer_event(w, &f, NULL), RC_OK);
    }
    assert_int_equal(export_writer_finish(w, NULL), RC_OK);
    export_writer_free(w);
    assert_int_equal(fclose(out), 0);
    json_decref(d);

    assert_int_equal(export_reader_open_mem(b.data, b.len, &r, NULL), RC_OK);
    assert_int_equal(verify_export(r, g_pub, &v), RC_OK);
    assert_true(v.ok);
    assert_int_equal(v.events, 3);
    assert_int_equal(export_reader_rebuilt(r), 0);
    export_reader_free(r);
    free(b.data);

    /* a non-canonical details (spaces) still verifies: the rebuild decides */
    b = std_export(EXPORT_CSV);
    struct lines l;
    split(&b, &l);
    edit_line(&l, 4, "{\"\"job_id\"\":", "{ \"\"job_id\"\" : ");
    join(&l, &b, "\n");
    assert_int_equal(export_reader_open_mem(b.data, b.len, &r, NULL), RC_OK);
    assert_int_equal(verify_export(r, g_pub, &v), RC_OK);
    assert_false(v.ok); /* events_sha256 catches the changed bytes */
    assert_int_equal(v.kind, VERIFY_MODIFIED);
    assert_int_equal(v.event_id, 0);
    assert_int_equal(export_reader_rebuilt(r), 1);
    export_reader_free(r);
    lines_free(&l);
    free(b.data);

    /* details that is JSON but not an object: modified, as in JSON Lines */
    b = std_export(EXPORT_CSV);
    split(&b, &l);
    edit_line(&l, 4, "\"{\"\"job_id\"\":4,\"\"note\"\":\"\"ok\"\"}\"", "\"\"\"x\"\"\"");
    join(&l, &b, "\n");
    expect_fail(&b, g_pub, VERIFY_MODIFIED, 5, 4, "does not match its contents");
    lines_free(&l);
    free(b.data);

    /* details that is not JSON at all: the line does not parse */
    b = std_export(EXPORT_CSV);
    split(&b, &l);
    edit_line(&l, 4, "\"{\"\"job_id\"\":4,", "\"{job_id:4,");
    join(&l, &b, "\n");
    expect_fail(&b, g_pub, VERIFY_FORMAT, 5, 0, "details is not valid JSON");
    lines_free(&l);
    free(b.data);
}

static void test_format_errors(void **state)
{
    struct buf b = std_export(EXPORT_JSONL);
    struct lines l;
    struct export_reader *r = NULL;
    struct err e;
    char *big;

    (void)state;
    split(&b, &l);
    edit_line(&l, 9, "\"event\":{", "\"event\":[");
    join(&l, &b, "\n");
    expect_fail(&b, g_pub, VERIFY_FORMAT, 10, 0, "not a JSON object");
    lines_free(&l);
    free(b.data);

    b = std_export(EXPORT_JSONL);
    split(&b, &l);
    edit_line(&l, 9, "{\"hash\":\"", "{\"hash\":\"A");
    join(&l, &b, "\n");
    expect_fail(&b, g_pub, VERIFY_FORMAT, 10, 0, "64 lower-case hex");
    lines_free(&l);

    /* a line over the limit */
    split(&b, &l);
    big = malloc(EXPORT_MAX_LINE + 10);
    assert_non_null(big);
    memset(big, 'x', EXPORT_MAX_LINE + 9);
    big[EXPORT_MAX_LINE + 9] = '\0';
    free(l.v[9]);
    l.v[9] = big;
    join(&l, &b, "\n");
    expect_fail(&b, g_pub, VERIFY_FORMAT, 10, 0, "longer than");
    lines_free(&l);

    /* longer than the read buffer: the reader skips it and goes on */
    split(&b, &l);
    big = malloc(EXPORT_MAX_LINE * 3 / 2);
    assert_non_null(big);
    memset(big, '"', EXPORT_MAX_LINE * 3 / 2 - 1);
    big[EXPORT_MAX_LINE * 3 / 2 - 1] = '\0';
    free(l.v[9]);
    l.v[9] = big;
    join(&l, &b, "\n");
    for (int k = 0; k < 2; k++) {
        struct buf c = b;
        struct export_record rec;
        if (k == 1) { /* CSV: the skipped line's quotes do not hide the LFs after it */
            c.data = malloc(b.len + 100);
            assert_non_null(c.data);
            c.len = (size_t)snprintf(c.data, 100, "%s\n", EXPORT_CSV_HEADER);
            memcpy(c.data + c.len, b.data, b.len);
            c.len += b.len;
        }
        assert_int_equal(export_reader_open_mem(c.data, c.len, &r, NULL), RC_OK);
        for (int i = 1; i < 10; i++)
            assert_int_equal(export_reader_next(r, &rec, NULL), k == 0 ? RC_OK : RC_EINVAL);
        assert_int_equal(export_reader_next(r, &rec, NULL), RC_ETOOBIG);
        assert_int_equal(rec.line, 10 + k);
        assert_int_equal(export_reader_next(r, &rec, NULL), k == 0 ? RC_OK : RC_EINVAL);
        assert_int_equal(rec.line, 11 + k);
        if (k == 0)
            assert_int_equal(rec.id, 11);
        export_reader_free(r);
        r = NULL;
        if (k == 1)
            free(c.data);
    }
    lines_free(&l);

    /* a manifest in the middle (two exports concatenated) */
    split(&b, &l);
    ins_line(&l, 5, l.v[l.n - 1]);
    join(&l, &b, "\n");
    expect_fail(&b, g_pub, VERIFY_FORMAT, 6, 0, "manifest line before the end");
    lines_free(&l);
    free(b.data);

    /* not an export at all */
    err_init(&e);
    assert_int_equal(export_reader_open_mem("hello\n", 6, &r, &e), RC_EINVAL);
    assert_null(r);
    assert_non_null(strstr(e.message, "not an audit export"));
    assert_int_equal(export_reader_open_mem("", 0, &r, &e), RC_EINVAL);
}

/* A pipe is copied to a temporary file first. */
static void test_pipe(void **state)
{
    struct buf b = std_export(EXPORT_CSV);
    struct export_reader *r = NULL;
    struct verify_result v;
    int fds[2];

    (void)state;
    assert_true(b.len < 60000); /* fits in the pipe's buffer */
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], b.data, b.len), (ssize_t)b.len);
    close(fds[1]);
    assert_int_equal(export_reader_open_fd(fds[0], &r, NULL), RC_OK);
    assert_int_equal(verify_export(r, g_pub, &v), RC_OK);
    assert_true(v.ok);
    assert_int_equal(v.events, N_EVENTS);
    export_reader_free(r);
    close(fds[0]);
    free(b.data);
}

/* ---- the command --------------------------------------------------------- */

static void write_file(const char *name, const char *data, size_t len, char *path, size_t size)
{
    FILE *f;

    snprintf(path, size, "%s/%s", g_dir, name);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* Run trainyard audit verify with args; returns the exit code, out/err text. */
static int run_cli(char **args, int n, char **out, char **err)
{
    size_t ol, el;
    FILE *o = open_memstream(out, &ol), *e = open_memstream(err, &el);
    char *argv[12] = {"audit", "verify"};
    int code;

    assert_true(n <= 10);
    for (int i = 0; i < n; i++)
        argv[i + 2] = args[i];
    code = cli_cmd_audit(n + 2, argv, o, e);
    fclose(o);
    fclose(e);
    return code;
}

static void test_cli(void **state)
{
    struct buf b = std_export(EXPORT_JSONL);
    char xp[300], pem_p[300], b64_p[300], json_p[300], doc[512];
    char *out = NULL, *err = NULL, *pem = audit_key_public_pem(g_key);
    struct lines l;

    (void)state;
    assert_non_null(pem);
    write_file("x.jsonl", b.data, b.len, xp, sizeof(xp));
    write_file("pub.pem", pem, strlen(pem), pem_p, sizeof(pem_p));
    write_file("pub.b64", audit_key_public_b64(g_key), AUDIT_PUBLIC_B64_LEN, b64_p, sizeof(b64_p));
    snprintf(doc, sizeof(doc),
             "{\"algorithm\":\"ed25519\",\"key_id\":\"%s\",\"public_key\":\"%s\"}",
             audit_key_id(g_key), audit_key_public_b64(g_key));
    write_file("pub.json", doc, strlen(doc), json_p, sizeof(json_p));
    free(pem);

    /* the three key forms */
    const char *keys[] = {pem_p, b64_p, json_p};
    for (int i = 0; i < 3; i++) {
        char *args[] = {xp, "--public-key", (char *)keys[i]};
        assert_int_equal(run_cli(args, 3, &out, &err), CLI_EXIT_OK);
        char want[200];
        snprintf(want, sizeof(want),
                 "OK 50 events (1..50), chain continuous, 5 checkpoints, signature valid, key "
                 "%s\n",
                 audit_key_id(g_key));
        assert_string_equal(out, want);
        assert_string_equal(err, "");
        free(out);
        free(err);
    }

    /* --json, --public-key=FILE */
    char kp[320];
    snprintf(kp, sizeof(kp), "--public-key=%s", b64_p);
    char *args_json[] = {"--json", kp, xp};
    assert_int_equal(run_cli(args_json, 3, &out, &err), CLI_EXIT_OK);
    assert_non_null(strstr(out, "\"ok\":true"));
    assert_non_null(strstr(out, "\"events\":50"));
    free(out);
    free(err);

    /* a failure: exit 1 and the FAIL line */
    split(&b, &l);
    edit_line(&l, 48, "job:49", "job:48");
    join(&l, &b, "\n");
    write_file("x.jsonl", b.data, b.len, xp, sizeof(xp));
    char *args_fail[] = {xp, "--public-key", b64_p};
    assert_int_equal(run_cli(args_fail, 3, &out, &err), CLI_EXIT_FAIL);
    assert_string_equal(out, "FAIL line 49: event 49 modified: its hash does not match its "
                             "contents\n");
    free(out);
    free(err);
    char *args_fail_json[] = {xp, "--json", "--public-key", b64_p};
    assert_int_equal(run_cli(args_fail_json, 4, &out, &err), CLI_EXIT_FAIL);
    assert_non_null(strstr(out, "\"kind\":\"modified\""));
    assert_non_null(strstr(out, "\"event_id\":\"49\""));
    assert_non_null(strstr(out, "\"line\":49"));
    free(out);
    free(err);
    lines_free(&l);

    /* exit 2: usage, missing files, not an export, a private key as public key */
    char *u1[] = {xp};
    assert_int_equal(run_cli(u1, 1, &out, &err), CLI_EXIT_USAGE);
    assert_non_null(strstr(err, "--public-key FILE is required"));
    free(out);
    free(err);
    char *u2[] = {xp, "--public-key", b64_p, "--bogus"};
    assert_int_equal(run_cli(u2, 4, &out, &err), CLI_EXIT_USAGE);
    free(out);
    free(err);
    char *u3[] = {"/nonexistent/x", "--public-key", b64_p};
    assert_int_equal(run_cli(u3, 3, &out, &err), CLI_EXIT_USAGE);
    assert_non_null(strstr(err, "cannot open"));
    free(out);
    free(err);
    char *u4[] = {pem_p, "--public-key", b64_p};
    assert_int_equal(run_cli(u4, 3, &out, &err), CLI_EXIT_USAGE);
    assert_non_null(strstr(err, "not an audit export"));
    free(out);
    free(err);
    char a_pem[300];
    snprintf(a_pem, sizeof(a_pem), "%s/a.pem", g_dir);
    char *u5[] = {xp, "--public-key", a_pem};
    assert_int_equal(run_cli(u5, 3, &out, &err), CLI_EXIT_USAGE);
    free(out);
    free(err);
    char *h[] = {"--help"};
    assert_int_equal(run_cli(h, 1, &out, &err), CLI_EXIT_OK);
    assert_non_null(strstr(out, "usage: trainyard audit verify"));
    free(out);
    free(err);
    free(b.data);
}

/* ---- key rotation: a key ring ------------------------------------------- */

static struct verify_result verify_ring_buf(const struct buf *b,
                                            const struct audit_key *const *keys, size_t n)
{
    struct export_reader *r = NULL;
    struct verify_result v;
    struct err e;

    err_init(&e);
    if (export_reader_open_mem(b->data, b->len, &r, &e) != RC_OK)
        fail_msg("open: %s", e.message);
    assert_int_equal(verify_export_ring(r, keys, n, &v), RC_OK);
    export_reader_free(r);
    return v;
}

/* Checkpoints by the old key (g_other), the manifest by the new (g_key). */
static struct buf rotated_export(enum export_format f, int64_t first_id)
{
    struct spec s = {f, first_id, N_EVENTS, 10, 0, NULL};
    struct buf b;

    g_cp_signer = g_other;
    make_export(&s, &b);
    g_cp_signer = NULL;
    return b;
}

/* The JSON of GET /api/v1/audit/public-key after a rotation from g_other to g_key. */
static void ring_doc(char *doc, size_t size, const char *old_id)
{
    snprintf(doc, size,
             "{\"algorithm\":\"ed25519\",\"key_id\":\"%s\",\"public_key\":\"%s\",\"keys\":["
             "{\"key_id\":\"%s\",\"public_key\":\"%s\",\"created_at\":\"2026-01-01T00:00:00Z\","
             "\"retired_at\":\"2026-06-01T00:00:00Z\"},"
             "{\"key_id\":\"%s\",\"public_key\":\"%s\",\"created_at\":\"2026-06-01T00:00:00Z\","
             "\"retired_at\":null}]}",
             audit_key_id(g_key), audit_key_public_b64(g_key), old_id,
             audit_key_public_b64(g_other), audit_key_id(g_key), audit_key_public_b64(g_key));
}

static void test_ring(void **state)
{
    const char *ob64 = audit_key_public_b64(g_other);
    struct audit_key *old_pub = NULL, **ring = NULL;
    size_t n = 0;
    char doc[1024], want[200];
    struct verify_result v;

    (void)state;
    assert_int_equal(audit_key_from_public(ob64, strlen(ob64), &old_pub, NULL), RC_OK);
    const struct audit_key *both[] = {old_pub, g_pub}, *new_only[] = {g_pub},
                           *old_only[] = {old_pub};
    for (size_t i = 0; i < 2; i++) {
        enum export_format f = formats[i];
        int64_t mline = line_of(f, N_EVENTS + 1);
        for (int64_t first = 1; first <= 21; first += 20) { /* 21: after retention */
            struct buf b = rotated_export(f, first);

            /* the ring verifies: each checkpoint with the key it names */
            v = verify_ring_buf(&b, both, 2);
            if (!v.ok)
                fail_msg("ring: %s: %s", verify_kind_str(v.kind), v.message);
            assert_string_equal(v.key_id, audit_key_id(g_key));
            assert_int_equal(v.checkpoints, first == 1 ? 5 : 6);

            /* the new key alone: the first checkpoint (by the old key) fails */
            snprintf(want, sizeof(want), "checkpoint 1 (event %lld) is signed by key %s",
                     (long long)(first == 1 ? 10 : 20), audit_key_id(g_other));
            expect_fail(&b, g_pub, VERIFY_SIGNATURE, mline, 0, want);

            /* a ring without the old key: its key id is unknown */
            v = verify_ring_buf(&b, new_only, 1);
            assert_false(v.ok);
            assert_int_equal(v.kind, VERIFY_SIGNATURE);
            assert_non_null(strstr(v.message, want));
            assert_non_null(strstr(v.message, "not in the given key ring"));

            /* a ring without the new key: the manifest's signer is unknown */
            v = verify_ring_buf(&b, old_only, 1);
            assert_false(v.ok);
            assert_int_equal(v.kind, VERIFY_SIGNATURE);
            assert_non_null(strstr(v.message, "the export is signed by key"));
            assert_non_null(strstr(v.message, "not in the given key ring"));
            free(b.data);
        }
    }
    /* an export made before the rotation verifies with the ring too */
    struct buf b = std_export(EXPORT_JSONL);
    v = verify_ring_buf(&b, both, 2);
    assert_true(v.ok);
    free(b.data);

    /* the ring in text */
    ring_doc(doc, sizeof(doc), audit_key_id(g_other));
    assert_int_equal(verify_ring_from_public(doc, strlen(doc), &ring, &n, NULL), RC_OK);
    assert_int_equal(n, 2);
    assert_string_equal(audit_key_id(ring[0]), audit_key_id(g_other));
    assert_string_equal(audit_key_id(ring[1]), audit_key_id(g_key));
    assert_int_equal(audit_key_can_sign(ring[0]), 0);
    verify_ring_free(ring, n);
    ring_doc(doc, sizeof(doc), "0123456789abcdef"); /* a key id that is not its key's */
    assert_int_equal(verify_ring_from_public(doc, strlen(doc), &ring, &n, NULL), RC_EINVAL);
    assert_null(ring);
    ring_doc(doc, sizeof(doc), audit_key_id(g_other));
    char *cur = strstr(doc, audit_key_public_b64(g_key)); /* the document's own current key */
    assert_non_null(cur);
    cur[0] = cur[0] == 'A' ? 'B' : 'A';
    assert_int_equal(verify_ring_from_public(doc, strlen(doc), &ring, &n, NULL), RC_EINVAL);
    const char *single = "{\"key_id\":\"x\",\"public_key\":\"y\"}";
    assert_int_equal(verify_ring_from_public(single, strlen(single), &ring, &n, NULL),
                     RC_ENOTFOUND);
    const char *empty = "{\"keys\":[]}";
    assert_int_equal(verify_ring_from_public(empty, strlen(empty), &ring, &n, NULL), RC_EINVAL);
    assert_int_equal(verify_ring_from_public("-----BEGIN", 10, &ring, &n, NULL), RC_ENOTFOUND);
    audit_key_free(old_pub);
}

static void test_ring_cli(void **state)
{
    struct buf b = rotated_export(EXPORT_JSONL, 1);
    char xp[300], ring_p[300], pem_p[300], doc[1024], want[200];
    char *out = NULL, *err = NULL, *pem = audit_key_public_pem(g_key);

    (void)state;
    assert_non_null(pem);
    write_file("x.jsonl", b.data, b.len, xp, sizeof(xp));
    write_file("pub.pem", pem, strlen(pem), pem_p, sizeof(pem_p));
    free(pem);
    ring_doc(doc, sizeof(doc), audit_key_id(g_other));
    write_file("ring.json", doc, strlen(doc), ring_p, sizeof(ring_p));

    char *ok_args[] = {xp, "--public-key", ring_p};
    assert_int_equal(run_cli(ok_args, 3, &out, &err), CLI_EXIT_OK);
    snprintf(want, sizeof(want),
             "OK 50 events (1..50), chain continuous, 5 checkpoints, signature valid, key %s\n",
             audit_key_id(g_key));
    assert_string_equal(out, want);
    free(out);
    free(err);

    char *bad_args[] = {xp, "--public-key", pem_p, "--json"};
    assert_int_equal(run_cli(bad_args, 4, &out, &err), CLI_EXIT_FAIL);
    assert_non_null(strstr(out, "\"kind\":\"signature\""));
    assert_non_null(strstr(out, "checkpoint 1 (event 10) is signed by key"));
    free(out);
    free(err);

    /* a malformed ring is a usage error, not a fallback to one key */
    ring_doc(doc, sizeof(doc), "0123456789abcdef");
    write_file("ring.json", doc, strlen(doc), ring_p, sizeof(ring_p));
    assert_int_equal(run_cli(ok_args, 3, &out, &err), CLI_EXIT_USAGE);
    assert_non_null(strstr(err, "key ring"));
    free(out);
    free(err);
    free(b.data);
}

int main(void)
{
    setenv("LC_ALL", "C", 1); /* the diagnostics checked below are the English ones */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_untouched),
        cmocka_unit_test(test_modified_field),
        cmocka_unit_test(test_modified_rehashed),
        cmocka_unit_test(test_modified_prev_hash),
        cmocka_unit_test(test_missing),
        cmocka_unit_test(test_inserted),
        cmocka_unit_test(test_reordered),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_bad_signature),
        cmocka_unit_test(test_wrong_key),
        cmocka_unit_test(test_checkpoint_mismatch),
        cmocka_unit_test(test_checkpoint_signature),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_empty_range),
        cmocka_unit_test(test_crlf),
        cmocka_unit_test(test_csv_multiline),
        cmocka_unit_test(test_csv_fast_path),
        cmocka_unit_test(test_format_errors),
        cmocka_unit_test(test_pipe),
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_ring),
        cmocka_unit_test(test_ring_cli),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
