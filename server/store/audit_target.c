/*
 * audit_target.c - audit event targets (audit_target.h). The two tables below
 * are the kinds; docs/audit-export.md lists the same forms, and
 * tests/unit/test_audit_target.c checks that audit_target_valid() agrees with
 * the document's patterns.
 */
#include "audit_target.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 64
#define ID_MAX_DIGITS 19 /* INT64_MAX */

static const char *const named_kinds[] = {
    [AUDIT_TARGET_USER] = "user",
    [AUDIT_TARGET_NODE] = "node",
    [AUDIT_TARGET_TEAM] = "team",
    [AUDIT_TARGET_SITE] = "site",
    [AUDIT_TARGET_DATASET] = "dataset",
    [AUDIT_TARGET_MODEL] = "model",
    [AUDIT_TARGET_DEPLOYMENT] = "deployment",
};

static const char *const numbered_kinds[] = {
    [AUDIT_TARGET_JOB] = "job",
    [AUDIT_TARGET_TOKEN] = "token",
    [AUDIT_TARGET_JOIN_TOKEN] = "join_token",
    [AUDIT_TARGET_WEBHOOK] = "webhook",
    [AUDIT_TARGET_EXPORT] = "export",
    [AUDIT_TARGET_SERVE_KEY] = "serve_key",
    [AUDIT_TARGET_SERVE_BATCH] = "serve:batch",
};

#define NKINDS(t) (sizeof(t) / sizeof((t)[0]))

static int is_name_char(char c, int first)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           (!first && (c == '.' || c == '_' || c == '-'));
}

/* [a-z0-9][a-z0-9._-]{0,63}, the first n bytes of s. */
static int is_name(const char *s, size_t n)
{
    if (n == 0 || n > NAME_MAX_LEN)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!is_name_char(s[i], i == 0))
            return 0;
    return 1;
}

/* A positive decimal without leading zeros that fits an int64_t, the first n bytes of s. */
static int is_id(const char *s, size_t n)
{
    char buf[ID_MAX_DIGITS + 1], *end;
    long long v;

    if (n == 0 || n > ID_MAX_DIGITS || s[0] == '0')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    v = strtoll(buf, &end, 10);
    return errno == 0 && *end == '\0' && v > 0;
}

/* Index of the n-byte kind in table, or -1. */
static int kind_index(const char *const *table, size_t nkinds, const char *s, size_t n)
{
    for (size_t i = 0; i < nkinds; i++)
        if (strlen(table[i]) == n && memcmp(table[i], s, n) == 0)
            return (int)i;
    return -1;
}

enum rc audit_target_name(enum audit_target_named kind, const char *name, char *out)
{
    out[0] = '\0';
    if ((size_t)kind >= NKINDS(named_kinds) || name == NULL || !is_name(name, strlen(name)))
        return RC_EINVAL;
    snprintf(out, AUDIT_TARGET_SIZE, "%s:%s", named_kinds[kind], name);
    return RC_OK;
}

enum rc audit_target_id(enum audit_target_numbered kind, int64_t id, char *out)
{
    out[0] = '\0';
    if ((size_t)kind >= NKINDS(numbered_kinds) || id < 1)
        return RC_EINVAL;
    snprintf(out, AUDIT_TARGET_SIZE, "%s:%lld", numbered_kinds[kind], (long long)id);
    return RC_OK;
}

enum rc audit_target_id_text(enum audit_target_numbered kind, const char *id, char *out)
{
    out[0] = '\0';
    if ((size_t)kind >= NKINDS(numbered_kinds) || id == NULL || !is_id(id, strlen(id)))
        return RC_EINVAL;
    snprintf(out, AUDIT_TARGET_SIZE, "%s:%s", numbered_kinds[kind], id);
    return RC_OK;
}

int audit_target_valid(const char *target)
{
    const char *colon, *key;
    size_t klen;

    if (target == NULL || strcmp(target, AUDIT_TARGET_NONE) == 0 ||
        strcmp(target, AUDIT_TARGET_POLICY) == 0 || strcmp(target, AUDIT_TARGET_AUDIT) == 0)
        return 1;
    /* The last colon: a kind may hold one ("serve:batch"), a key never does. */
    if ((colon = strrchr(target, ':')) == NULL)
        return 0;
    klen = (size_t)(colon - target);
    key = colon + 1;
    if (kind_index(named_kinds, NKINDS(named_kinds), target, klen) >= 0)
        return is_name(key, strlen(key));
    if (kind_index(numbered_kinds, NKINDS(numbered_kinds), target, klen) >= 0)
        return is_id(key, strlen(key));
    return 0;
}
