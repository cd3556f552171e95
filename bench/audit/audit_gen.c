/*
 * audit_gen.c - writes a signed audit export of synthetic events with the
 * reference writer (cli/export_writer.h), for bench/audit/run.sh and for the
 * fuzz seeds of tests/fuzz/fuzz_cli_export.c; or the same events as rows to
 * load into a server's database, for bench/audit/export.sh.
 *
 *   audit_gen --key PEM --out FILE [--format jsonl|csv|pgcopy] [--events N]
 *             [--first-id N] [--checkpoint-every N] [--public-key-out FILE]
 *             [--prev-hash HEX] [--ts-base-us US] [--checkpoints-out FILE]
 *
 * The key file is created (mode 0600) when it does not exist. Events are a
 * deterministic function of their id: a mix of actors (one non-ASCII),
 * actions, outcomes and a details object with a few members, so that the
 * CSV needs quoting and the JSON escapes. --first-id N > 1 stands for an
 * export after retention removed events 1..N-1: prev_hash is then the hash
 * of a retention checkpoint at N-1, which the manifest carries. A periodic
 * checkpoint is added every --checkpoint-every events (default 100000).
 * Event id i has the time --ts-base-us + i * 1.5 s (default base
 * 2026-01-01T00:00:00Z).
 *
 * --format pgcopy writes PostgreSQL COPY text (tab-separated, backslash
 * escapes) for `COPY audit_events (id, ts, ts_text, actor, source, action,
 * target, outcome, details, prev_hash, hash) FROM STDIN`: the chain a server
 * would have written, details as the canonical text it hashes. The chain
 * continues from --prev-hash (the hash of event --first-id - 1; default the
 * genesis hash, and required when --first-id > 1). With --checkpoints-out,
 * the periodic checkpoints, signed with --key (give the server's key), go
 * there as COPY text for `COPY audit_checkpoints (seq, hash, created_at,
 * kind, key_id, signature, signed) FROM STDIN`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_canon.h"
#include "audit_sign.h"
#include "crypto.h"
#include "export_writer.h"

#define BASE_US 1767225600000000LL /* 2026-01-01T00:00:00Z */

struct gen_opts {
    const char *key_path, *out_path, *pub_out, *prev_hash, *cp_out;
    enum export_format format;
    int pgcopy; /* --format pgcopy: rows for COPY, not an export */
    long long events, first_id, cp_every, ts_base_us;
};

static void usage(void)
{
    fprintf(stderr,
            "usage: audit_gen --key PEM --out FILE [--format jsonl|csv|pgcopy] [--events N]\n"
            "                 [--first-id N] [--checkpoint-every N] "
            "[--public-key-out FILE]\n"
            "                 [--prev-hash HEX] [--ts-base-us US] [--checkpoints-out FILE]\n");
}

static int parse_ll(const char *s, long long lo, long long *out)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo)
        return -1;
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, struct gen_opts *o)
{
    *o = (struct gen_opts){NULL, NULL, NULL, NULL, NULL, EXPORT_JSONL, 0, 1000, 1, 100000, BASE_US};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL)
            return -1;
        i++;
        if (strcmp(a, "--key") == 0)
            o->key_path = v;
        else if (strcmp(a, "--out") == 0)
            o->out_path = v;
        else if (strcmp(a, "--public-key-out") == 0)
            o->pub_out = v;
        else if (strcmp(a, "--format") == 0 && strcmp(v, "jsonl") == 0)
            o->format = EXPORT_JSONL;
        else if (strcmp(a, "--format") == 0 && strcmp(v, "csv") == 0)
            o->format = EXPORT_CSV;
        else if (strcmp(a, "--format") == 0 && strcmp(v, "pgcopy") == 0)
            o->pgcopy = 1;
        else if (strcmp(a, "--prev-hash") == 0 && strlen(v) == CRYPTO_SHA256_HEX_LEN &&
                 strspn(v, "0123456789abcdef") == CRYPTO_SHA256_HEX_LEN)
            o->prev_hash = v;
        else if (strcmp(a, "--checkpoints-out") == 0)
            o->cp_out = v;
        else if (strcmp(a, "--ts-base-us") == 0 && parse_ll(v, 0, &o->ts_base_us) == 0)
            continue;
        else if (strcmp(a, "--events") == 0 && parse_ll(v, 0, &o->events) == 0)
            continue;
        else if (strcmp(a, "--first-id") == 0 && parse_ll(v, 1, &o->first_id) == 0)
            continue;
        else if (strcmp(a, "--checkpoint-every") == 0 && parse_ll(v, 1, &o->cp_every) == 0)
            continue;
        else
            return -1;
    }
    if ((o->prev_hash != NULL || o->cp_out != NULL) && !o->pgcopy)
        return -1; /* an export's start is --first-id's retention checkpoint */
    if (o->pgcopy && o->first_id > 1 && o->prev_hash == NULL)
        return -1;
    return o->key_path != NULL && o->out_path != NULL ? 0 : -1;
}

/* The synthetic event id; strings point into buf (120 bytes). Returns details. */
static json_t *make_event(long long id, long long base_us, struct audit_fields *f, char buf[120])
{
    static const char *const actors[] = {"user:alice",      "user:bob", "node:gpu-07",
                                         "user:zo\xc3\xab", "system",   "user:carol"};
    static const char *const actions[] = {"job.submit",    "job.cancel",       "auth.login",
                                          "node.register", "dataset.register", "audit.export"};
    static const char *const outcomes[] = {"success", "success", "success", "failure", "denied"};
    char *ts = buf, *source = buf + 40, *target = buf + 80;
    json_t *d = json_pack("{s:I,s:i,s:s,s:s}", "job_id", (json_int_t)id, "gpus", 1 << (id % 4),
                          "queue", id % 3 ? "default" : "research", "note",
                          id % 7 ? "ok" : "retry, after \"preempt\"");

    audit_format_ts(base_us + id * 1500000LL, ts, 40);
    snprintf(source, 40, "10.0.%lld.%lld", (id / 250) % 250, id % 250 + 1);
    snprintf(target, 40, "job:%lld", id);
    *f = (struct audit_fields){.id = id,
                               .ts = ts,
                               .actor = actors[id % 6],
                               .source = source,
                               .action = actions[id % 6],
                               .target = target,
                               .outcome = outcomes[id % 5],
                               .details = d,
                               .prev_hash = NULL};
    return d;
}

static int write_public(const struct audit_key *key, const char *path)
{
    FILE *f = fopen(path, "w");
    int ok;

    if (f == NULL)
        return -1;
    ok = fprintf(f, "%s\n", audit_key_public_b64(key)) > 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* s as one field of COPY text: backslash, tab, LF and CR escaped. */
static void copy_field(FILE *out, const char *s, int last)
{
    for (; *s; s++) {
        switch (*s) {
        case '\\':
            fputs("\\\\", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        default:
            fputc(*s, out);
        }
    }
    fputc(last ? '\n' : '\t', out);
}

/* A periodic checkpoint of event id (hash, made at ts) as an audit_checkpoints row. */
static int copy_checkpoint(FILE *out, const struct audit_key *key, long long id, const char *hash,
                           const char *ts)
{
    json_t *cp = NULL;
    char seq[24], *text;

    if (export_checkpoint_new(key, id, hash, "periodic", ts, &cp) != RC_OK)
        return -1;
    text = json_dumps(cp, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
    if (text != NULL) {
        snprintf(seq, sizeof(seq), "%lld", id);
        copy_field(out, seq, 0);
        copy_field(out, hash, 0);
        copy_field(out, ts, 0);
        copy_field(out, "periodic", 0);
        copy_field(out, audit_key_id(key), 0);
        copy_field(out, json_string_value(json_object_get(cp, "signature")), 0);
        copy_field(out, text, 1);
    }
    free(text);
    json_decref(cp);
    return text != NULL ? 0 : -1;
}

/* --format pgcopy: the events (and checkpoints to cps, when not NULL) as COPY text. */
static int write_pgcopy(const struct gen_opts *o, const struct audit_key *key, FILE *out, FILE *cps)
{
    struct audit_fields f;
    char buf[120], idbuf[24], hash[CRYPTO_SHA256_HEX_LEN + 1], prev[CRYPTO_SHA256_HEX_LEN + 1];

    snprintf(prev, sizeof(prev), "%s", o->prev_hash ? o->prev_hash : AUDIT_GENESIS_HASH);
    for (long long id = o->first_id; id < o->first_id + o->events; id++) {
        json_t *d = make_event(id, o->ts_base_us, &f, buf);
        char *details = d ? json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII) : NULL;
        int bad;

        f.prev_hash = prev;
        bad = details == NULL || audit_hash(&f, hash) != RC_OK;
        if (!bad) {
            snprintf(idbuf, sizeof(idbuf), "%lld", id);
            copy_field(out, idbuf, 0);
            copy_field(out, f.ts, 0); /* ts: PostgreSQL parses the same text */
            copy_field(out, f.ts, 0);
            copy_field(out, f.actor, 0);
            copy_field(out, f.source, 0);
            copy_field(out, f.action, 0);
            copy_field(out, f.target, 0);
            copy_field(out, f.outcome, 0);
            copy_field(out, details, 0);
            copy_field(out, prev, 0);
            copy_field(out, hash, 1);
            memcpy(prev, hash, sizeof(prev));
            if (cps != NULL && id % o->cp_every == 0)
                bad = copy_checkpoint(cps, key, id, hash, f.ts) != 0;
        }
        free(details);
        json_decref(d);
        if (bad)
            return -1;
    }
    return ferror(out) || (cps != NULL && ferror(cps)) ? -1 : 0;
}

int main(int argc, char **argv)
{
    struct gen_opts o;
    struct audit_key *key = NULL;
    struct export_writer *w = NULL;
    struct audit_fields f;
    char buf[120], hash[CRYPTO_SHA256_HEX_LEN + 1], prev[CRYPTO_SHA256_HEX_LEN + 1];
    json_t *cp = NULL;
    struct err e;
    FILE *out = NULL;
    int created, code = 1;
    enum rc rc;

    err_init(&e);
    if (parse_args(argc, argv, &o) != 0) {
        usage();
        return 2;
    }
    if (audit_key_load_or_create(o.key_path, &key, &created, &e) != RC_OK) {
        fprintf(stderr, "audit_gen: %s\n", e.message);
        return 1;
    }
    if (o.pub_out != NULL && write_public(key, o.pub_out) != 0) {
        fprintf(stderr, "audit_gen: cannot write %s\n", o.pub_out);
        goto out;
    }
    if ((out = fopen(o.out_path, "w")) == NULL) {
        fprintf(stderr, "audit_gen: cannot open %s: %s\n", o.out_path, strerror(errno));
        goto out;
    }
    setvbuf(out, NULL, _IOFBF, 1 << 20);
    if (o.pgcopy) {
        FILE *cps = NULL;
        if (o.cp_out != NULL && (cps = fopen(o.cp_out, "w")) == NULL) {
            fprintf(stderr, "audit_gen: cannot open %s: %s\n", o.cp_out, strerror(errno));
            goto out;
        }
        code = write_pgcopy(&o, key, out, cps) == 0 ? 0 : 1;
        if (cps != NULL && fclose(cps) != 0)
            code = 1;
        if (code != 0)
            goto fail;
        goto out;
    }
    memcpy(prev, AUDIT_GENESIS_HASH, sizeof(prev));
    if (o.first_id > 1) /* the hash retention vouched for, standing for events before */
        crypto_sha256_hex("removed by retention", 20, prev);
    if (export_writer_new(out, o.format, key, prev, NULL, NULL, &w) != RC_OK)
        goto fail;
    if (o.first_id > 1) {
        if (export_checkpoint_new(key, o.first_id - 1, prev, "retention", NULL, &cp) != RC_OK ||
            export_writer_checkpoint(w, cp) != RC_OK)
            goto fail;
        json_decref(cp);
        cp = NULL;
    }
    for (long long id = o.first_id; id < o.first_id + o.events; id++) {
        json_t *d = make_event(id, o.ts_base_us, &f, buf);
        rc = d != NULL ? export_writer_event(w, &f, hash) : RC_ENOMEM;
        json_decref(d);
        if (rc != RC_OK)
            goto fail;
        if (id % o.cp_every == 0) {
            if (export_checkpoint_new(key, id, hash, "periodic", NULL, &cp) != RC_OK ||
                export_writer_checkpoint(w, cp) != RC_OK)
                goto fail;
            json_decref(cp);
            cp = NULL;
        }
    }
    if (export_writer_finish(w, NULL) != RC_OK)
        goto fail;
    code = 0;
    goto out;
fail:
    fprintf(stderr, "audit_gen: writing %s failed\n", o.out_path);
out:
    json_decref(cp);
    export_writer_free(w);
    if (out != NULL && fclose(out) != 0)
        code = 1;
    audit_key_free(key);
    return code;
}
