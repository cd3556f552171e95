/*
 * lines.h - classify one line a rank wrote on stdout.
 *
 * Training scripts talk back without a library (docs/agent-protocol.md):
 *   TRAINYARD_METRIC {"step":120,"loss":0.41,"samples_per_sec":5300}
 *   TRAINYARD_CHECKPOINT {"step":120,"path":"/srv/ckpt/7/step-120.pt"}
 * Everything else, and any such line that does not parse, is plain log. The
 * input is outside data: any bytes, any length; nothing here trusts it.
 *
 * Thread-safety: reentrant; no globals.
 */
#ifndef TY_WORKER_LINES_H
#define TY_WORKER_LINES_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "err.h"

#define WRK_METRIC_PREFIX "TRAINYARD_METRIC "
#define WRK_CHECKPOINT_PREFIX "TRAINYARD_CHECKPOINT "
/* Longest JSON payload parsed; longer lines stay plain log. */
#define WRK_LINE_JSON_MAX 65536
/* At most this many metric values per line; the rest are ignored. */
#define WRK_LINE_MAX_VALUES 64
/* Longest metric name and checkpoint path accepted. */
#define WRK_LINE_NAME_MAX 128
#define WRK_LINE_PATH_MAX 4095
/* Steps are exact integers in [0, 2^53). */
#define WRK_LINE_STEP_MAX 9007199254740991LL

enum wrk_line_kind {
    WRK_LINE_LOG = 0,       /* plain text */
    WRK_LINE_METRIC = 1,    /* step + values */
    WRK_LINE_CHECKPOINT = 2 /* step + path */
};

struct wrk_line {
    enum wrk_line_kind kind;
    int64_t step;   /* METRIC and CHECKPOINT */
    json_t *values; /* METRIC: object name -> finite number, owned (new reference) */
    char *path;     /* CHECKPOINT: owned, NUL-terminated */
};

/*
 * Classify text[0..len) (a trailing "\n" or "\r\n" is ignored; text need not
 * be NUL-terminated and may hold NUL bytes). out is caller storage, always
 * initialized; release it with wrk_line_cleanup(). A metric needs an integer
 * "step" and at least one other finite numeric value (non-numeric members are
 * ignored); a checkpoint needs "step" and a non-empty "path" without NUL.
 * Returns RC_OK (out->kind says what was found) or RC_ENOMEM.
 */
enum rc wrk_line_parse(const char *text, size_t len, struct wrk_line *out) TY_WUR;

/* Release what out holds and reset it to a plain log line. NULL is a no-op. */
void wrk_line_cleanup(struct wrk_line *line);

#endif
