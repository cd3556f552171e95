/*
 * sse.h - a Server-Sent Events reader (the WHATWG "event stream" format)
 * for `trainyard logs -f`: bytes in, whole events out. Lines end in LF, CR
 * LF or CR; "event", "data" (joined by LF when repeated) and "id" fields;
 * comments (":" lines, the server's pings) and other fields are skipped.
 *
 * What the network sends is bounded: a line or an event's data over
 * CLI_SSE_MAX bytes is an error, and nothing else grows.
 *
 * Thread-safety: one reader per thread; no globals.
 */
#ifndef TY_CLI_SSE_H
#define TY_CLI_SSE_H

#include <stddef.h>

#include "err.h"

#define CLI_SSE_MAX (1024 * 1024)

/* One event: event is "message" when the stream named none; id is the
 * last id seen ("" when none). All borrowed for the call. Return 0 to go
 * on, -1 to stop (cli_sse_feed then returns RC_ECONFLICT). */
typedef int (*cli_sse_fn)(const char *event, const char *id, const char *data, void *ud);

struct cli_sse {
    char *line; /* owned: the line being read */
    size_t len, cap;
    char *data; /* owned: the event's data so far */
    size_t dlen, dcap;
    int has_data;
    char event[64]; /* "" until an event field */
    char id[64];    /* the last event id, kept across events as the spec says */
    int last_cr;    /* the previous byte was CR: a LF right after it ends nothing */
};

/* Caller storage; cli_sse_cleanup() frees what it holds. */
void cli_sse_init(struct cli_sse *s);
void cli_sse_cleanup(struct cli_sse *s);

/* Feeds n bytes; calls fn for each event they complete. RC_OK, RC_ECONFLICT
 * when fn stopped, RC_ETOOBIG over CLI_SSE_MAX, RC_ENOMEM. */
enum rc cli_sse_feed(struct cli_sse *s, const char *buf, size_t n, cli_sse_fn fn, void *ud) TY_WUR;

#endif
