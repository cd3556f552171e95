/*
 * shipper.h - ships rank output and attempt reports to the server in order.
 *
 * Producers (the launcher's I/O thread, the main thread) push items into one
 * bounded queue and never block on the network: when the queue is full the
 * oldest plain log line is dropped and counted; TRAINYARD_METRIC lines go
 * only when no plain line is left, and lines carrying a checkpoint and the
 * started/exit reports are never dropped. One shipper thread takes
 * batches per attempt (at most WRK_BATCH_MAX_BYTES, at most about a second
 * old), turns TRAINYARD_METRIC / TRAINYARD_CHECKPOINT lines into metrics and
 * checkpoints (lines.h) and POSTs them; an attempt's exit report leaves only
 * after every line queued before it. Failed posts (no answer, 5xx, 408,
 * 429) are retried with backoff; the seq numbers make retries idempotent.
 * A body the server refuses for good (any other 4xx: it can never be
 * stored, and the one shipper thread must not stall on it) is set aside:
 * logged and counted (wrk_shipper_refused()); an output batch's lines are
 * counted as dropped, like lines the full queue dropped, so the attempt's
 * next batch reports them to the server (dropped_logs) and the next
 * queued item goes on.
 *
 * Thread-safety: every function is thread-safe; post() runs on the shipper
 * thread only.
 */
#ifndef TY_WORKER_SHIPPER_H
#define TY_WORKER_SHIPPER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "err.h"
#include "launcher.h"

#define WRK_BATCH_MAX_BYTES (256 * 1024)
#define WRK_BATCH_MAX_AGE_MS 1000

/*
 * Send body (borrowed) to path. Return RC_OK with *status set when the server
 * answered, anything else when it did not.
 */
typedef enum rc (*wrk_post_fn)(void *ctx, const char *path, const json_t *body, long *status);

struct wrk_shipper_opts {
    wrk_post_fn post;
    void *post_ctx;
    size_t max_queue_bytes; /* text bytes queued before dropping; 0 = 16 MiB */
    size_t max_queue_items; /* lines queued before dropping; 0 = 65536 */
    int linger_ms;          /* how long lines wait to fill a batch; 0 = 200 */
};

struct wrk_shipper;

/* Start the shipper thread. opts is copied. RC_OK, RC_ENOMEM or RC_EINTERNAL. */
enum rc wrk_shipper_new(const struct wrk_shipper_opts *opts, struct wrk_shipper **out) TY_WUR;

/*
 * Wait until everything queued is sent or timeout_ms passed, then stop the
 * thread and free s. Returns nothing; what is left is logged and dropped.
 */
void wrk_shipper_free(struct wrk_shipper *s, int timeout_ms);

/* Queue one output line (copied). Never blocks on the network. */
void wrk_shipper_line(struct wrk_shipper *s, const char *attempt_id, int rank, const char *stream,
                      uint64_t seq, int64_t ts_ms, const char *text, size_t len);

/* Queue the started report. */
void wrk_shipper_started(struct wrk_shipper *s, const char *attempt_id, int node_rank,
                         const pid_t *pids, size_t npids);

/* Queue the exit report (copied). */
void wrk_shipper_exit(struct wrk_shipper *s, const struct wrk_exit_report *r);

/* Lines dropped so far because the queue was full or the server refused
 * their batch for good. */
uint64_t wrk_shipper_dropped(struct wrk_shipper *s);

/* Bodies (output batches, started and exit reports) the server refused for
 * good (a 4xx other than 408 and 429) and that were set aside. */
uint64_t wrk_shipper_refused(struct wrk_shipper *s);

/* Items still queued or in flight. */
size_t wrk_shipper_pending(struct wrk_shipper *s);

/*
 * Copy text[0..len) into a new NUL-terminated string that is valid UTF-8
 * without NUL bytes (invalid sequences and NUL become U+FFFD). Caller frees.
 * NULL on ENOMEM.
 */
char *wrk_utf8_clean(const char *text, size_t len);

#endif
