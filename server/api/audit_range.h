/*
 * audit_range.h - checks of the from/to bounds of GET /api/v1/audit/export,
 * which come straight from the query string (fuzzed by
 * tests/fuzz/fuzz_audit_range.c).
 *
 * Thread-safety: reentrant.
 */
#ifndef TY_SERVER_AUDIT_RANGE_H
#define TY_SERVER_AUDIT_RANGE_H

/*
 * RFC 3339 with a zone: YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM), 20 to
 * 40 bytes, a real calendar date, 1 to 9 fraction digits. A '+' may come as
 * ' ' (a query string decodes '+' so); it is rewritten to '+' in place.
 * Returns 1 when s is such a time, else 0.
 */
int audit_time_ok(char *s);

/* An event id bound: 1 to 18 decimal digits. Returns 1 or 0. */
int audit_id_ok(const char *s);

#endif
