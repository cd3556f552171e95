/*
 * static_files.h - what the dashboard's static files are answered with:
 * their Content-Type, their validators (ETag and Last-Modified) and the
 * conditional-request check that turns a repeat fetch into a 304, plus the
 * fixed /vendor/ paths of the third-party front-end code (web/vendor/).
 *
 * Why validators and "Cache-Control: no-cache": the files change on upgrade
 * without a build step that renames them, so the browser must ask every
 * time; the 304 keeps the asking cheap (ECharts alone is 1.1 MB).
 *
 * Pure functions of their arguments: no I/O, no clock. Thread-safe.
 */
#ifndef TY_SERVER_STATIC_FILES_H
#define TY_SERVER_STATIC_FILES_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Room for an ETag ("\"<16 hex>-<16 hex>\"") and an IMF-fixdate, with the NUL. */
#define STATIC_ETAG_SIZE 48
#define STATIC_DATE_SIZE 32

/*
 * The Content-Type for a file name (borrowed) by its extension: .html, .js
 * and .mjs (text/javascript, which browsers require for module scripts),
 * .css, .json and .map, .svg, .png, .ico, .woff2, .txt; anything else is
 * application/octet-stream. Returns a static string.
 */
const char *static_content_type(const char *path);

/*
 * The ETag of a file of size bytes last modified at mtime_s + mtime_ns:
 * a quoted strong tag that changes with either (out at least
 * STATIC_ETAG_SIZE bytes).
 */
void static_etag(uint64_t size, int64_t mtime_s, long mtime_ns, char *out, size_t out_size);

/* t as an HTTP date ("Tue, 01 Dec 2026 10:00:00 GMT"), out at least STATIC_DATE_SIZE. */
void static_http_date(time_t t, char *out, size_t out_size);

/*
 * Whether a GET or HEAD with these request headers (borrowed; NULL when
 * absent) may be answered 304 Not Modified (RFC 9110, 13.1.2 and 13.2.2):
 * with If-None-Match, when "*" or one of its entity tags matches etag by the
 * weak comparison (a W/ prefix is ignored), and If-Modified-Since is then
 * not looked at; otherwise with an If-Modified-Since that parses as an HTTP
 * date, when mtime_s is not later than it. Anything unparsable means "send
 * the file".
 */
int static_not_modified(const char *if_none_match, const char *if_modified_since, const char *etag,
                        time_t mtime_s);

/*
 * The file under the web directory that a /vendor/ URL path (borrowed)
 * stands for, e.g. "/vendor/echarts/echarts.min.js" ->
 * "vendor/node_modules/echarts/dist/echarts.min.js" (a static string), or
 * NULL when path is not one of the fixed vendor paths (web/README.md lists
 * them). Only these are served from web/vendor/: its node_modules tree
 * itself is not.
 */
const char *static_vendor_file(const char *path);

#endif
