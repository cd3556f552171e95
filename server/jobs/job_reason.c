/*
 * job_reason.c - see job_reason.h.
 */
#include "job_reason.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "jx.h"
#include "utf8cut.h"

static void set(struct job_reason *r, const char *code, json_t *params, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

static void set(struct job_reason *r, const char *code, json_t *params, const char *fmt, va_list ap)
{
    if (NEVER(!reason_code_known(code)))
        code = RSN_NODE_FAILED;
    r->code = code;
    r->params = params != NULL ? params : json_object();
    vsnprintf(r->text, sizeof(r->text), fmt, ap);
    /* A long argument (a worker's reason) is cut to fit: never inside a
     * character, or PostgreSQL would refuse the text and the report. */
    utf8_cut_tail(r->text);
}

void job_reason_init(struct job_reason *r, const char *code, json_t *params, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    set(r, code, params, fmt, ap);
    va_end(ap);
}

void job_reason_wrap(struct job_reason *r, const char *code, json_t *params,
                     const struct job_reason *cause, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    set(r, code, params, fmt, ap);
    va_end(ap);
    if (r->params == NULL || cause == NULL)
        return;
    json_object_set_new(r->params, "cause",
                        cause->params != NULL
                            ? json_pack("{s:s,s:O}", "code", cause->code, "params", cause->params)
                            : json_pack("{s:s,s:{}}", "code", cause->code, "params"));
}

void job_reason_cleanup(struct job_reason *r)
{
    if (r == NULL)
        return;
    json_decref(r->params);
    r->params = NULL;
}

char *job_reason_params_text(const struct job_reason *r)
{
    if (r->params == NULL)
        return strdup("{}");
    return jx_dumps(r->params, JSON_COMPACT | JSON_SORT_KEYS);
}
