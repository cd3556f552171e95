/*
 * utf8cut.h - cutting text to a byte limit without splitting a UTF-8
 * character.
 *
 * A fixed buffer filled with snprintf() keeps as many bytes as fit, which
 * may end in the first bytes of a multibyte character. Text cut that way is
 * not UTF-8: jansson refuses to encode it and PostgreSQL to store it
 * ("invalid byte sequence"), so a report carrying it can never be
 * delivered. These helpers cut before such a character instead. They only
 * look at the end of the text: bytes that were invalid before the cut stay
 * (the worker cleans what it ships with wrk_utf8_clean()).
 *
 * Thread-safety: pure functions, any thread.
 */
#ifndef TY_COMMON_UTF8CUT_H
#define TY_COMMON_UTF8CUT_H

#include <stddef.h>

/*
 * The length, at most len, of the longest prefix of s[0..len) that does not
 * end inside a character: a trailing lead byte whose continuation bytes are
 * missing (s ended, or the cut fell, before them) is left out, with those of
 * its continuation bytes that are there. s is borrowed; need not end in NUL.
 */
size_t utf8_cut_len(const char *s, size_t len);

/*
 * Copy src (NUL-terminated, borrowed) into dst[0..size), cut on a character
 * boundary to fit, and NUL-terminate it. size 0 writes nothing. Returns the
 * bytes written, without the NUL.
 */
size_t utf8_copy(char *dst, size_t size, const char *src);

/* Drop an incomplete character at the end of s (NUL-terminated), in place:
 * what snprintf() left when the limit cut a formatted string. */
void utf8_cut_tail(char *s);

#endif
