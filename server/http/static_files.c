/*
 * static_files.c - see static_files.h.
 */
#include "static_files.h"

#include <stdio.h>
#include <string.h>

const char *static_content_type(const char *path)
{
    static const struct {
        const char *ext, *type;
    } types[] = {{".html", "text/html; charset=utf-8"},
                 {".js", "text/javascript; charset=utf-8"},
                 {".mjs", "text/javascript; charset=utf-8"},
                 {".css", "text/css; charset=utf-8"},
                 {".json", "application/json"},
                 {".map", "application/json"},
                 {".svg", "image/svg+xml"},
                 {".png", "image/png"},
                 {".ico", "image/x-icon"},
                 {".woff2", "font/woff2"},
                 {".txt", "text/plain; charset=utf-8"}};
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash != NULL ? slash : path, '.');

    for (size_t i = 0; dot != NULL && i < sizeof(types) / sizeof(types[0]); i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}

void static_etag(uint64_t size, int64_t mtime_s, long mtime_ns, char *out, size_t out_size)
{
    uint64_t ns = (uint64_t)mtime_s * 1000000000u + (uint64_t)mtime_ns;

    snprintf(out, out_size, "\"%llx-%llx\"", (unsigned long long)size, (unsigned long long)ns);
}

void static_http_date(time_t t, char *out, size_t out_size)
{
    struct tm tm;

    if (gmtime_r(&t, &tm) == NULL || strftime(out, out_size, "%a, %d %b %Y %H:%M:%S GMT", &tm) == 0)
        snprintf(out, out_size, "Thu, 01 Jan 1970 00:00:00 GMT");
}

/* Whether one entity tag of an If-None-Match list, [p, p + n), matches etag
 * by the weak comparison. */
static int tag_matches(const char *p, size_t n, const char *etag)
{
    size_t en = strlen(etag);

    if (n >= 2 && p[0] == 'W' && p[1] == '/') {
        p += 2;
        n -= 2;
    }
    if (en >= 2 && etag[0] == 'W' && etag[1] == '/') {
        etag += 2;
        en -= 2;
    }
    return n == en && memcmp(p, etag, n) == 0;
}

static int none_match(const char *list, const char *etag)
{
    const char *p = list;

    while (*p != '\0') {
        const char *start, *end;
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (*p == '\0')
            break;
        start = p;
        while (*p != '\0' && *p != ',')
            p++;
        end = p;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if ((end - start == 1 && *start == '*') || tag_matches(start, (size_t)(end - start), etag))
            return 1;
    }
    return 0;
}

int static_not_modified(const char *if_none_match, const char *if_modified_since, const char *etag,
                        time_t mtime_s)
{
    struct tm tm;
    const char *end;

    if (if_none_match != NULL)
        return none_match(if_none_match, etag);
    if (if_modified_since == NULL)
        return 0;
    memset(&tm, 0, sizeof(tm));
    end = strptime(if_modified_since, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (end == NULL || *end != '\0')
        return 0;
    return mtime_s <= timegm(&tm);
}

const char *static_vendor_file(const char *path)
{
    /* The stable URLs the app loads (web/README.md "Third-party code");
     * the files move between releases of a package, these do not. */
    static const struct {
        const char *url, *file;
    } files[] = {
        {"/vendor/echarts/echarts.min.js", "vendor/node_modules/echarts/dist/echarts.min.js"},
        {"/vendor/echarts/echarts.esm.min.mjs",
         "vendor/node_modules/echarts/dist/echarts.esm.min.mjs"},
        {"/vendor/echarts/i18n/langZH.js", "vendor/node_modules/echarts/i18n/langZH.js"},
        {"/vendor/echarts/i18n/langZH.mjs", "vendor/node_modules/echarts/lib/i18n/langZH.js"},
    };

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        if (strcmp(path, files[i].url) == 0)
            return files[i].file;
    return NULL;
}
