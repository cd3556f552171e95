/*
 * log.c - logfmt writer. Level and debug list are set once at start-up and
 * only read afterwards, so no lock is needed; each line is assembled in a
 * local buffer and written with a single write(2) so lines never interleave.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static enum log_level g_level = LOG_LVL_INFO;
static char g_debug[256];

void log_set_level(enum log_level level)
{
    g_level = level;
}

enum rc log_parse_level(const char *s, enum log_level *out)
{
    static const char *names[] = {"error", "warn", "info", "debug"};

    for (int i = 0; i < 4; i++) {
        if (s != NULL && strcmp(s, names[i]) == 0) {
            *out = (enum log_level)i;
            return RC_OK;
        }
    }
    return RC_EINVAL;
}

void log_set_debug(const char *components)
{
    snprintf(g_debug, sizeof(g_debug), "%s", components ? components : "");
}

static int debug_listed(const char *comp)
{
    size_t n = strlen(comp);
    const char *p = g_debug;

    if (strcmp(g_debug, "all") == 0)
        return 1;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, comp, n) == 0)
            return 1;
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

int log_enabled(enum log_level level, const char *comp)
{
    if (level <= g_level)
        return 1;
    return level == LOG_LVL_DEBUG && g_debug[0] != '\0' && debug_listed(comp);
}

void log_write(enum log_level level, const char *comp, const char *msg, const char *kv_fmt, ...)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    char line[2048];
    struct timeval tv;
    struct tm tm;
    size_t n = 0;
    int w;
    va_list ap;

    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    w = snprintf(line, sizeof(line),
                 "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s comp=%s msg=\"",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (long)(tv.tv_usec / 1000), names[level], comp);
    n = w > 0 ? (size_t)w : 0;
    /* Quote the message: escape '"' and '\\', drop control characters. */
    for (const char *p = msg; *p && n + 4 < sizeof(line); p++) {
        if (*p == '"' || *p == '\\')
            line[n++] = '\\';
        line[n++] = ((unsigned char)*p < 0x20) ? ' ' : *p;
    }
    if (n + 2 < sizeof(line))
        line[n++] = '"';
    if (kv_fmt != NULL && kv_fmt[0] != '\0' && n + 2 < sizeof(line)) {
        line[n++] = ' ';
        va_start(ap, kv_fmt);
        w = vsnprintf(line + n, sizeof(line) - n, kv_fmt, ap);
        va_end(ap);
        if (w > 0)
            n += (size_t)w < sizeof(line) - n ? (size_t)w : sizeof(line) - n - 1;
    }
    if (n >= sizeof(line) - 1)
        n = sizeof(line) - 2;
    line[n++] = '\n';
    if (write(STDERR_FILENO, line, n) < 0) {
        /* Nowhere left to report a failed log write. */
    }
}
