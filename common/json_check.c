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

enum rc jcheck_bad(struct err *e, const char *field, const json_t *v, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    err_set(e, RC_EINVAL, field, "%s", msg);
    jcheck_describe(v, e);
    return RC_EINVAL;
}

int jcheck_has_ctrl(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;

    for (size_t i = 0; i < len; i++) {
        if (u[i] < 0x20 || u[i] == 0x7f)
            return 1;
        if (u[i] == 0xc2 && i + 1 < len && u[i + 1] >= 0x80 && u[i + 1] <= 0x9f)
            return 1;
    }
    return 0;
}
