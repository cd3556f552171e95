/*
 * json_check.h - the refusal helpers shared by the validators of template
 * files (templates.c) and of submits by template (tpl_expand.c): one shape
 * of error (field, message, "got ..." detail) and one test for control
 * characters, so both answer a bad value the same way.
 *
 * Thread-safety: pure and reentrant.
 */
#ifndef TY_SERVER_JSON_CHECK_H
#define TY_SERVER_JSON_CHECK_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"

/*
 * Set e's detail to "got ..." for v (borrowed): a short string (at most 64
 * bytes, no control character, quote or backslash) as it is, a longer or
 * odder one by its length, a number or boolean by its value, else its type.
 * e may be NULL.
 */
void jcheck_describe(const json_t *v, struct err *e);

/*
 * Fill e (may be NULL) with RC_EINVAL at field (borrowed), the printf-style
 * message and, when v is not NULL, jcheck_describe(v). Returns RC_EINVAL.
 */
enum rc jcheck_bad(struct err *e, const char *field, const json_t *v, const char *fmt, ...)
    TY_PRINTF(4, 5);

/* Whether s[0..len) (valid UTF-8: jansson checks that when it parses) has
 * a C0, DEL or C1 control character. */
int jcheck_has_ctrl(const char *s, size_t len);

#endif
