/*
 * json_check.h - the refusal helpers of every strict JSON validator: the job
 * spec (server/jobs/jobspec.c), template files and submits by template
 * (server/jobs/templates*.c, tpl_expand.c) and the advisor's request
 * (advisor/advisor_json.c). One shape of error (field, message, "got ..."
 * detail), one way to name an unknown key and to list the allowed values, so
 * every validator answers a bad value the same way.
 *
 * Two ways to show a bad string in the detail, kept apart because clients
 * and tests match the texts:
 *   - jcheck_bad(): a short plain string as it is, any other by its length
 *     (templates: the value may be a whole file's field);
 *   - jcheck_bad_cut(): its first 64 bytes, printable ASCII kept and every
 *     other byte '?', then "..." (job specs and the advisor).
 *
 * Needs jansson and err.c only (library ty_jcheck), so the pure advisor's
 * JSON layer can link it without the rest of common/.
 *
 * Thread-safety: pure and reentrant.
 */
#ifndef TY_COMMON_JSON_CHECK_H
#define TY_COMMON_JSON_CHECK_H

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
 * Set e's detail to "got ..." for v (borrowed): a string by
 * jcheck_printable() of it (cut after 64 bytes, marked "..."), a number or
 * boolean by its value, else its type. e may be NULL.
 */
void jcheck_describe_cut(const json_t *v, struct err *e);

/*
 * Fill e (may be NULL) with RC_EINVAL at field (borrowed), the printf-style
 * message (cut at 255 bytes) and, when v is not NULL, jcheck_describe(v).
 * Returns RC_EINVAL.
 */
enum rc jcheck_bad(struct err *e, const char *field, const json_t *v, const char *fmt, ...)
    TY_PRINTF(4, 5);

/* jcheck_bad() with jcheck_describe_cut(v) as the detail. Returns RC_EINVAL. */
enum rc jcheck_bad_cut(struct err *e, const char *field, const json_t *v, const char *fmt, ...)
    TY_PRINTF(4, 5);

/* Whether s[0..len) (valid UTF-8: jansson checks that when it parses) has
 * a C0, DEL or C1 control character. */
int jcheck_has_ctrl(const char *s, size_t len);

/*
 * Copy s[0..len) (borrowed, any bytes) into buf (size bytes, at least 1) for
 * a message: printable ASCII but '"' kept, every other byte '?'. At most 64
 * bytes of s are copied (fewer when buf is smaller than 69); with mark_cut,
 * "..." follows when s was cut at 64.
 */
void jcheck_printable(const char *s, size_t len, int mark_cut, char *buf, size_t size);

/*
 * Append the i-th name (borrowed) of a list to buf (size bytes, "" before the
 * first): ", " before every name but the first (i > 0). What does not fit is
 * cut, and once buf is full later names are dropped, so the message shows as
 * many whole names as it can.
 */
void jcheck_list_add(char *buf, size_t size, size_t i, const char *name);

/* buf = the n names joined by jcheck_list_add(), for "must be one of ...". */
void jcheck_list(char *buf, size_t size, const char *const *names, size_t n);

/* The index of string v (borrowed) among the n names, or -1 when v is not a
 * string or is none of them (a string with a NUL inside matches none). */
int jcheck_name_index(const json_t *v, const char *const *names, size_t n);

/*
 * v (borrowed) must be an integer in min..max: *out (out) is its value and
 * RC_OK, else RC_EINVAL and e filled at field with "<what> must be an integer
 * from <min> to <max>" and the value described as jcheck_bad() does, or as
 * jcheck_bad_cut() does when cut is not 0.
 */
enum rc jcheck_int(const json_t *v, const char *field, const char *what, json_int_t min,
                   json_int_t max, int cut, json_int_t *out, struct err *e);

/* Byte-order comparison of two keys given by pointer and length (a shorter
 * key sorts before a longer one it begins), as qsort()'s sign. */
int jcheck_key_cmp(const char *a, size_t alen, const char *b, size_t blen);

/*
 * The smallest key (jcheck_key_cmp order) of obj (borrowed object) that is
 * not one of the n names of known, or NULL when every key is known; its
 * length goes to *len (out). Smallest, so that a request with several
 * unknown keys is always refused at the same one. The key is borrowed from
 * obj.
 */
const char *jcheck_unknown_key(const json_t *obj, const char *const *known, size_t n, size_t *len);

#endif
