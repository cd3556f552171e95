/*
 * fuzz_cli_export.c - libFuzzer target for "trainyard audit verify": bytes ->
 * export_reader_open_mem() -> verify_export() with a fixed public key, then
 * the reader alone over every record. Checks that nothing crashes or leaks,
 * that a refused input says why, that a verdict is well formed (a failure
 * names a line, a kind and a reason) and that each record the reader yields
 * is sane (64-hex stored hash, canonical bytes that parse as a JSON object
 * whose "id" is the record's id, line numbers that only grow), and that the
 * CSV fast canonical text is audit_canonical()'s whenever it is canonical.
 * Request record lines ({"serve_record":...}) reach the verifier's checks
 * of records; the seed with_records.jsonl has a seal event and its records
 * (signed by another key: the lines are checked all the same), and
 * with_records.csv the same in CSV. Both were exported by a real server.
 *
 * The seeds in corpus/fuzz_cli_export/ are signed by the test-only key
 * fuzz_cli_export.pem beside this file (it signs nothing else), so valid
 * seeds verify and mutations start deep in the checks. To make them again:
 *   install -m600 tests/fuzz/fuzz_cli_export.pem /tmp/k.pem
 *   audit_gen --key /tmp/k.pem --out valid.jsonl --events 3 --checkpoint-every 2
 *   audit_gen --key /tmp/k.pem --out valid_retention.csv --format csv --events 3 \
 *       --first-id 5 --checkpoint-every 6
 * (bench/audit/audit_gen), then edit copies by hand for the broken ones.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "audit_sign.h"
#include "export_reader.h"
#include "verify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The public half of fuzz_cli_export.pem. */
#define FUZZ_PUBLIC_KEY "E2GCNy9zwzs196PFGhpOMOTOnvChY4qDbxkkiJPQels="

static struct audit_key *fuzz_key(void)
{
    static struct audit_key *key; /* loaded once, kept for the process */

    if (key == NULL &&
        audit_key_from_public(FUZZ_PUBLIC_KEY, strlen(FUZZ_PUBLIC_KEY), &key, NULL) != RC_OK)
        abort();
    return key;
}

static void check_verdict(const struct verify_result *v)
{
    if (v->ok) {
        if (v->kind != VERIFY_OK || v->message[0] != '\0' || v->events < 0 ||
            (v->events > 0 && v->last_id - v->first_id + 1 != v->events))
            abort();
        return;
    }
    if (v->kind == VERIFY_OK || v->kind > VERIFY_FORMAT || v->message[0] == '\0' || v->line < 1 ||
        v->event_id < 0 || strlen(v->message) >= sizeof(v->message))
        abort();
}

/*
 * CSV: the reader's fast canonical text must be audit_canonical()'s whenever
 * it is canonical JSON at all (a fixed point of jansson's load and dump).
 */
static void check_fast_path(struct export_reader *r, struct export_record *rec)
{
    char *fast = strndup(rec->canonical, rec->canonical_len), *again = NULL;
    json_t *doc;

    if (fast == NULL)
        abort();
    if (export_reader_recanonicalize(r, rec, NULL) == RC_OK && strcmp(fast, rec->canonical) != 0 &&
        (doc = json_loads(fast, 0, NULL)) != NULL) {
        again = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
        if (again != NULL && strcmp(again, fast) == 0)
            abort();
        json_decref(doc);
    }
    free(again);
    free(fast);
}

static void check_record(const struct export_record *rec, int64_t *last_line)
{
    json_t *ev;
    const char *id;
    char want[24];

    if (rec->serve) {
        /* A request record line: its object is the verifier's to parse
         * (fuzz_cli_serve_proof.c); here only what the reader gives. */
        if (rec->line <= *last_line || rec->serve_json == NULL || rec->id != 0 ||
            rec->canonical != NULL)
            abort();
        *last_line = rec->line;
        return;
    }
    if (rec->line <= *last_line || !export_is_hex64(rec->hash, strlen(rec->hash)) ||
        (rec->prev_hash[0] != '\0' && !export_is_hex64(rec->prev_hash, strlen(rec->prev_hash))) ||
        rec->id < 1 || rec->canonical == NULL)
        abort();
    *last_line = rec->line;
    ev = json_loadb(rec->canonical, rec->canonical_len, JSON_REJECT_DUPLICATES, NULL);
    id = json_string_value(json_object_get(ev, "id"));
    snprintf(want, sizeof(want), "%lld", (long long)rec->id);
    /* The scanner and jansson agree (for a JSON object without duplicate ids). */
    if (ev != NULL && (id == NULL || strcmp(id, want) != 0))
        abort();
    json_decref(ev);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct export_reader *r = NULL;
    struct export_record rec;
    struct verify_result v;
    struct err e;
    int64_t last_line = 0;
    enum rc rc;

    err_init(&e);
    rc = export_reader_open_mem(data, size, &r, &e);
    if (rc != RC_OK) {
        if (rc != RC_EINVAL || e.message[0] == '\0' || r != NULL)
            abort();
        return 0;
    }
    if (verify_export(r, fuzz_key(), &v) != RC_OK)
        abort();
    check_verdict(&v);
    export_reader_free(r);

    if (export_reader_open_mem(data, size, &r, NULL) != RC_OK)
        abort();
    for (int n = 0; n < 100000; n++) {
        err_init(&e);
        rc = export_reader_next(r, &rec, &e);
        if (rc == RC_ENOTFOUND)
            break;
        if (rc == RC_OK) {
            check_record(&rec, &last_line);
            if (!rec.serve)
                check_fast_path(r, &rec);
        } else if ((rc != RC_EINVAL && rc != RC_ETOOBIG) || e.message[0] == '\0' ||
                   rec.line <= last_line)
            abort();
        else
            last_line = rec.line;
    }
    export_reader_free(r);
    return 0;
}
