/*
 * json_check.c - see json_check.h.
 */
#include "json_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void jcheck_describe(const json_t *v, struct err *e)
{
    if (e == NULL || v == NULL)
        return;
    if (json_is_string(v) && json_string_length(v) <= 64 &&
        !jcheck_has_ctrl(json_string_value(v), json_string_length(v)) &&
        strpbrk(json_string_value(v), "\"\\") == NULL)
        err_detail(e, "got \"%s\"", json_string_value(v));
    else if (json_is_string(v))
        err_detail(e, "got a string of %zu bytes", json_string_length(v));
    else if (json_is_integer(v))
        err_detail(e, "got %" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        err_detail(e, "got %g", json_real_value(v));
    else if (json_is_boolean(v))
        err_detail(e, "got %s", json_is_true(v) ? "true" : "false");
    else if (json_is_null(v))
        err_detail(e, "got null");
    else if (json_is_object(v))
        err_detail(e, "got an object");
    else
        err_detail(e, "got an array");
}

void jcheck_describe_cut(const json_t *v, struct err *e)
{
    char q[80];

    if (e == NULL || v == NULL)
        return;
    if (json_is_string(v)) {
        jcheck_printable(json_string_value(v), json_string_length(v), 1, q, sizeof(q));
        err_detail(e, "got \"%s\"", q);
    } else {
        jcheck_describe(v, e); /* the two differ only in strings */
    }
}

static enum rc vbad(struct err *e, const char *field, const json_t *v, int cut, const char *fmt,
                    va_list ap) TY_PRINTF(5, 0);

static enum rc vbad(struct err *e, const char *field, const json_t *v, int cut, const char *fmt,
                    va_list ap)
{
    char msg[256];

    vsnprintf(msg, sizeof(msg), fmt, ap);
    err_set(e, RC_EINVAL, field, "%s", msg);
    if (cut)
        jcheck_describe_cut(v, e);
    else
        jcheck_describe(v, e);
    return RC_EINVAL;
}

enum rc jcheck_bad(struct err *e, const char *field, const json_t *v, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vbad(e, field, v, 0, fmt, ap);
    va_end(ap);
    return RC_EINVAL;
}

enum rc jcheck_bad_cut(struct err *e, const char *field, const json_t *v, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vbad(e, field, v, 1, fmt, ap);
    va_end(ap);
    return RC_EINVAL;
}

int jcheck_has_ctrl(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;

    for (size_t i = 0; i < len; i++) {
        if (u[i] < 0x20 || u[i] == 0x7f)
            return 1;
        /* C1 controls U+0080..U+009F are encoded as C2 80..C2 9F. */
        if (u[i] == 0xc2 && i + 1 < len && u[i + 1] >= 0x80 && u[i + 1] <= 0x9f)
            return 1;
    }
    return 0;
}

void jcheck_printable(const char *s, size_t len, int mark_cut, char *buf, size_t size)
{
    const size_t keep = 64;
    size_t o = 0;

    for (size_t i = 0; i < len && o + 4 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (o >= keep) {
            if (mark_cut) {
                memcpy(buf + o, "...", 3);
                o += 3;
            }
            break;
        }
        buf[o++] = (c >= 0x20 && c < 0x7f && c != '"') ? (char)c : '?';
    }
    buf[o] = '\0';
}

void jcheck_list_add(char *buf, size_t size, size_t i, const char *name)
{
    size_t used = strlen(buf);

    if (used + 1 >= size)
        return;
    snprintf(buf + used, size - used, "%s%s", i ? ", " : "", name);
}

void jcheck_list(char *buf, size_t size, const char *const *names, size_t n)
{
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        jcheck_list_add(buf, size, i, names[i]);
}

int jcheck_name_index(const json_t *v, const char *const *names, size_t n)
{
    if (!json_is_string(v))
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (json_string_length(v) == strlen(names[i]) &&
            strcmp(json_string_value(v), names[i]) == 0)
            return (int)i;
    }
    return -1;
}

/* A literal, so the compiler checks the arguments of both calls against it. */
#define INT_RANGE "%s must be an integer from %" JSON_INTEGER_FORMAT " to %" JSON_INTEGER_FORMAT

enum rc jcheck_int(const json_t *v, const char *field, const char *what, json_int_t min,
                   json_int_t max, int cut, json_int_t *out, struct err *e)
{
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
        if (cut)
            return jcheck_bad_cut(e, field, v, INT_RANGE, what, min, max);
        return jcheck_bad(e, field, v, INT_RANGE, what, min, max);
    }
    *out = json_integer_value(v);
    return RC_OK;
}

int jcheck_key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);

    if (c != 0)
        return c;
    return alen < blen ? -1 : alen > blen;
}

const char *jcheck_unknown_key(const json_t *obj, const char *const *known, size_t n, size_t *len)
{
    json_t *o = (json_t *)obj; /* jansson's iteration API is not const-correct */
    const char *key, *worst = NULL;
    size_t klen, worst_len = 0;
    json_t *v;

    json_object_keylen_foreach(o, key, klen, v)
    {
        int found = 0;

        for (size_t i = 0; i < n && !found; i++)
            found = klen == strlen(known[i]) && memcmp(key, known[i], klen) == 0;
        if (!found && (worst == NULL || jcheck_key_cmp(key, klen, worst, worst_len) < 0)) {
            worst = key;
            worst_len = klen;
        }
    }
    *len = worst_len;
    return worst;
}
