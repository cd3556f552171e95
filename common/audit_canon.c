/*
 * audit_canon.c - canonical audit event form (see audit_canon.h).
 */
#include "audit_canon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

char *audit_canonical(const struct audit_fields *f)
{
    char idbuf[32];
    json_t *o = json_object();
    char *s = NULL;

    if (o == NULL)
        return NULL;
    snprintf(idbuf, sizeof(idbuf), "%lld", (long long)f->id);
    if (json_object_set_new(o, "id", json_string(idbuf)) != 0 ||
        json_object_set_new(o, "ts", json_string(f->ts ? f->ts : "")) != 0 ||
        json_object_set_new(o, "actor", json_string(f->actor ? f->actor : "")) != 0 ||
        json_object_set_new(o, "source", json_string(f->source ? f->source : "")) != 0 ||
        json_object_set_new(o, "action", json_string(f->action ? f->action : "")) != 0 ||
        json_object_set_new(o, "target", json_string(f->target ? f->target : "")) != 0 ||
        json_object_set_new(o, "outcome", json_string(f->outcome ? f->outcome : "")) != 0 ||
        json_object_set_new(o, "prev_hash", json_string(f->prev_hash ? f->prev_hash : "")) != 0 ||
        json_object_set_new(o, "details",
                            f->details ? json_deep_copy(f->details) : json_object()) != 0)
        goto out;
    s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
out:
    json_decref(o);
    return s;
}

enum rc audit_hash(const struct audit_fields *f, char out[CRYPTO_SHA256_HEX_LEN + 1])
{
    char *s = audit_canonical(f);

    if (s == NULL)
        return RC_ENOMEM;
    crypto_sha256_hex(s, strlen(s), out);
    free(s);
    return RC_OK;
}

void audit_format_ts(int64_t unix_us, char *out, size_t out_size)
{
    time_t secs = (time_t)(unix_us / 1000000);
    long us = (long)(unix_us % 1000000);
    struct tm tm;

    if (us < 0) {
        us += 1000000;
        secs -= 1;
    }
    gmtime_r(&secs, &tm);
    snprintf(out, out_size, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, us);
}
