/*
 * log.h - logfmt lines on stderr.
 *
 * One line per event:
 *   ts=2025-05-01T12:00:00.123Z level=info comp=sched msg="job placed" job_id=42
 * The macros test the level before formatting, so disabled debug lines cost a
 * branch. Debug is enabled per component with log_set_debug("sched,db").
 * Never log tokens, passwords, Authorization headers, conninfo or job env.
 *
 * Thread-safety: log_write() is thread-safe (one write(2) per line). The
 * configuration setters are meant for start-up, before threads exist.
 */
#ifndef TY_COMMON_LOG_H
#define TY_COMMON_LOG_H

#include "err.h"

enum log_level { LOG_LVL_ERROR = 0, LOG_LVL_WARN = 1, LOG_LVL_INFO = 2, LOG_LVL_DEBUG = 3 };

/* Set the global level (default info). Call before threads start. */
void log_set_level(enum log_level level);

/* Parse "error|warn|info|debug"; returns RC_EINVAL for anything else. */
enum rc log_parse_level(const char *s, enum log_level *out) TY_WUR;

/* Enable debug for a comma-separated list of components ("sched,db", "all"). */
void log_set_debug(const char *components);

/* Whether a line of this level and component would be written. */
int log_enabled(enum log_level level, const char *comp);

/*
 * Write one line. fmt produces the part after msg: the caller passes the
 * message and optional extra key=value pairs as in
 *   LOG_INFO("http", "listening", "addr=%s", addr)
 */
void log_write(enum log_level level, const char *comp, const char *msg, const char *kv_fmt, ...)
    TY_PRINTF(4, 5);

#define TY_LOG_(lvl, comp, msg, ...)                                                               \
    do {                                                                                           \
        if (log_enabled((lvl), (comp)))                                                            \
            log_write((lvl), (comp), (msg), __VA_ARGS__);                                          \
    } while (0)

/* LOG_INFO("comp", "message", "key=%s n=%d", v, n); pass "" for no extra keys. */
#define LOG_ERROR(comp, msg, ...) TY_LOG_(LOG_LVL_ERROR, comp, msg, __VA_ARGS__)
#define LOG_WARN(comp, msg, ...) TY_LOG_(LOG_LVL_WARN, comp, msg, __VA_ARGS__)
#define LOG_INFO(comp, msg, ...) TY_LOG_(LOG_LVL_INFO, comp, msg, __VA_ARGS__)
#define LOG_DEBUG(comp, msg, ...) TY_LOG_(LOG_LVL_DEBUG, comp, msg, __VA_ARGS__)

#endif
