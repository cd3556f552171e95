/*
 * jx.h - jansson parsing that cannot hand back a damaged document when
 * memory runs out.
 *
 * jansson 2.14 ignores some failed appends to its buffers: the lexer's
 * (load.c lex_save(); akheron/jansson#362) and the encoder's for object keys
 * (dump.c do_dump() drops dump_string()'s result). Under memory pressure
 * json_loadb() may then return a document whose strings lost a byte, and
 * json_dumps() a text with a key cut out, instead of failing: the server
 * would store or send what it was never given. jx_init() routes jansson's
 * allocations through a counter of failures kept per thread; jx_loadb() and
 * jx_dumps() refuse any call during which one failed.
 *
 * Thread-safety: jx_init() once, on the main thread, before threads start
 * and before any jansson value exists (values must be freed by the
 * allocator that made them). jx_loadb() is thread-safe.
 */
#ifndef TY_COMMON_JX_H
#define TY_COMMON_JX_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"

/* Give jansson the counting allocator (malloc/free underneath). */
void jx_init(void);

/*
 * json_loadb() that tells a bad text from a failed allocation. On RC_OK *out
 * is a new reference. RC_EINVAL: the text is not JSON (jerr says where, jerr
 * may be NULL); RC_ENOMEM: an allocation failed during the parse (with
 * jx_init() done, also one jansson itself did not notice). *out is NULL on
 * error. buf is borrowed.
 */
enum rc jx_loadb(const char *buf, size_t len, size_t flags, json_t **out /* out */,
                 json_error_t *jerr) TY_WUR;

/*
 * json_loads() of a text that came from a trusted writer (a column the
 * server stored, a constant), where not JSON and out of memory are one
 * failure to the caller: a new reference, or NULL for either. text is
 * borrowed.
 */
json_t *jx_loads(const char *text, size_t flags);

/*
 * json_dumps() that returns NULL when an allocation failed on the way (with
 * jx_init() done, also one jansson itself did not notice). The result is
 * malloc'ed (free() it); j is borrowed.
 */
char *jx_dumps(const json_t *j, size_t flags);

#endif
