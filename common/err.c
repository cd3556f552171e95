/*
 * err.c - texts for enum rc and the struct err helpers.
 */
#include "err.h"

#include <stdio.h>
#include <string.h>

const char *rc_str(enum rc rc)
{
    switch (rc) {
    case RC_OK:
        return "ok";
    case RC_EINVAL:
        return "invalid argument";
    case RC_ENOMEM:
        return "out of memory";
    case RC_ENOTFOUND:
        return "not found";
    case RC_ECONFLICT:
        return "conflict";
    case RC_EUNAVAIL:
        return "unavailable";
    case RC_EINTERNAL:
        return "internal error";
    case RC_EAUTH:
        return "unauthenticated";
    case RC_EPERM:
        return "permission denied";
    case RC_ETOOBIG:
        return "too large";
    case RC_ERATE:
        return "rate limited";
    case RC_ERETRY:
        return "retry";
    case RC_EPOLICY:
        return "policy violation";
    case RC_EMETHOD:
        return "method not allowed";
    case RC_EMEDIATYPE:
        return "unsupported media type";
    case RC_EGONE:
        return "gone";
    }
    return "unknown error";
}

const char *rc_api_code(enum rc rc)
{
    switch (rc) {
    case RC_OK:
        return "ok";
    case RC_EINVAL:
        return "invalid_argument";
    case RC_ENOMEM:
        return "internal";
    case RC_ENOTFOUND:
        return "not_found";
    case RC_ECONFLICT:
        return "conflict";
    case RC_EUNAVAIL:
        return "unavailable";
    case RC_EINTERNAL:
        return "internal";
    case RC_EAUTH:
        return "unauthenticated";
    case RC_EPERM:
        return "permission_denied";
    case RC_ETOOBIG:
        return "too_large";
    case RC_ERATE:
        return "rate_limited";
    case RC_ERETRY:
        return "unavailable";
    case RC_EPOLICY:
        return "policy_violation";
    case RC_EMETHOD:
        return "method_not_allowed";
    case RC_EMEDIATYPE:
        return "unsupported_media_type";
    case RC_EGONE:
        return "gone";
    }
    return "internal";
}

void err_init(struct err *e)
{
    if (e == NULL)
        return;
    memset(e, 0, sizeof(*e));
}

enum rc err_set(struct err *e, enum rc rc, const char *field, const char *fmt, ...)
{
    va_list ap;

    if (e == NULL)
        return rc;
    e->rc = rc;
    e->code[0] = '\0';
    e->detail[0] = '\0';
    snprintf(e->field, sizeof(e->field), "%s", field ? field : "");
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof(e->message), fmt, ap);
    va_end(ap);
    return rc;
}

void err_detail(struct err *e, const char *fmt, ...)
{
    va_list ap;

    if (e == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(e->detail, sizeof(e->detail), fmt, ap);
    va_end(ap);
}

void err_code(struct err *e, const char *code)
{
    if (e == NULL)
        return;
    snprintf(e->code, sizeof(e->code), "%s", code ? code : "");
}
