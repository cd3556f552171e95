/*
 * urlcheck.h - is a server URL safe to send credentials to in the clear?
 * The worker and the CLI warn at start when they would send a token over
 * plain HTTP to a machine other than this one.
 *
 * Thread-safety: pure; any thread (curl_global_init() must have run).
 */
#ifndef TY_COMMON_URLCHECK_H
#define TY_COMMON_URLCHECK_H

#include <stdbool.h>

/*
 * True when url is http:// and its host is not loopback (localhost, 127/8,
 * ::1). False for https://, for loopback, and for anything libcurl cannot
 * parse (the caller's own URL check reports that).
 */
bool url_is_plain_remote(const char *url);

#endif
