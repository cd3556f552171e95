/*
 * launcher.h - starts and watches the processes of the attempts on this node.
 *
 * Each process is forked and exec'd (posix_spawn cannot change ids) into its
 * own process group, as the request's job account (ident.h), cwd = the
 * attempt's work_dir, stdin /dev/null, stdout/stderr on non-blocking pipes,
 * no other descriptor of the worker. The child makes only async-signal-safe
 * calls and reports a failed setup or exec on a close-on-exec pipe. One I/O thread, started by
 * wrk_launcher_new(), owns every pipe: it poll()s them, splits lines and hands
 * them to cb->on_line (a torchrun process's lines under the rank that their
 * "[trainyard<local rank>]:" header names, header stripped: assign.c); it
 * also reaps children (waitpid WNOHANG every iteration, at most 100 ms
 * apart), watches re-adopted processes through /proc, enforces time limits
 * and the SIGTERM -> grace -> SIGKILL sequence, and finally calls
 * cb->on_exit once per attempt after its last line.
 * When one rank fails, the other ranks of the node get SIGTERM.
 *
 * Threads and locks: the launcher's mutex guards the attempt list and process
 * status; it is never held while spawning, calling a callback or reading a
 * pipe. Callbacks run on the I/O thread (on_started on the caller's thread)
 * and must not call back into the launcher. All functions are thread-safe.
 */
#ifndef TY_WORKER_LAUNCHER_H
#define TY_WORKER_LAUNCHER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "assign.h"
#include "cause.h"
#include "err.h"
#include "ident.h"
#include "reason_codes.h"
#include "state.h"

/* Longest line handed to on_line; longer lines arrive in pieces. */
#define WRK_LINE_MAX 16384

struct wrk_exit_rank {
    int rank;
    int exit_code;               /* -1 when killed by a signal or unknown */
    int signal;                  /* 0 unless killed by a signal */
    uint64_t gpu_mem_peak_bytes; /* most GPU memory the rank's process group held at one
                                    sample (wrk_launcher_note_gpu_mem); 0 = not measured */
};

struct wrk_exit_report {
    char attempt_id[WRK_ID_MAX + 1];
    int node_rank;
    size_t nranks;
    struct wrk_exit_rank ranks[WRK_MAX_RANKS];
    char reason[256]; /* "" when every rank exited 0 */
    /* A deterministic cause (cause.h) when the attempt could not run at all,
     * else "": the server then fails the job without a restart. */
    char failure[WRK_CAUSE_MAX + 1];
    char failure_detail[256]; /* what failed: the program, path or script (ASCII) */
    /* The reason as a code (common/reason_codes.h) and its parameters, a
     * JSON object text, for the server's job event; "" when every rank
     * exited 0 (docs/job-reasons.md). */
    char reason_code[RSN_CODE_MAX + 1];
    char reason_params[640];
};

struct wrk_launcher_cb {
    /* One line (ends in "\n" unless cut at WRK_LINE_MAX or at EOF); text is borrowed. */
    void (*on_line)(void *ctx, const char *attempt_id, int rank, const char *stream, uint64_t seq,
                    int64_t ts_ms, const char *text, size_t len);
    /* Every process of an attempt was spawned; pids borrowed. */
    void (*on_started)(void *ctx, const char *attempt_id, int node_rank, const pid_t *pids,
                       size_t npids);
    /* Every process of the attempt ended; r is borrowed. */
    void (*on_exit)(void *ctx, const struct wrk_exit_report *r);
    void *ctx;
};

struct wrk_launch_req {
    const char *attempt_id;
    const char *job_id;
    int node_rank;
    const char *cwd;               /* work_dir, must exist */
    const struct wrk_plan *plan;   /* borrowed; copied as needed */
    int64_t time_limit_s;          /* 0 = none */
    int grace_s;                   /* SIGTERM -> SIGKILL delay */
    const char *netns_path;        /* NULL, or the network namespace to start the processes in
                                      (netns.h: /run/netns/ty-<attempt>) */
    const struct wrk_ident *ident; /* the account the processes run as; NULL or !switch_ids:
                                      the worker's own (borrowed) */
};

struct wrk_launcher;

/* Start the I/O thread. cb is copied. RC_OK, RC_ENOMEM or RC_EINTERNAL. */
enum rc wrk_launcher_new(const struct wrk_launcher_cb *cb, struct wrk_launcher **out) TY_WUR;

/*
 * Stop the I/O thread and free l. Processes still running are killed
 * (SIGKILL to their groups) without a report: callers drain first.
 */
void wrk_launcher_free(struct wrk_launcher *l);

/*
 * Spawn every process of req. On success cb->on_started has run. If a spawn
 * fails, the processes already started are killed and reaped, nothing is
 * reported, and RC_EUNAVAIL is returned with e saying why; when exec itself
 * failed for good (cause.h) e's code is WRK_CAUSE_EXEC_FAILED and its detail
 * names the program. RC_ECONFLICT if the attempt is already running here.
 */
enum rc wrk_launcher_start(struct wrk_launcher *l, const struct wrk_launch_req *req,
                           struct err *e) TY_WUR;

/*
 * Watch processes a previous worker started (from the state file). Dead ones
 * count as ended; the exit report says "reattached; exit status unknown".
 * RC_OK, RC_ECONFLICT or RC_ENOMEM.
 */
enum rc wrk_launcher_adopt(struct wrk_launcher *l, const struct wrk_state_attempt *a) TY_WUR;

/*
 * Stop an attempt: SIGTERM to each live process group now, SIGKILL after its
 * grace period. reason (borrowed) goes into the exit report. Returns 1 if the
 * attempt was found, else 0. Idempotent.
 */
int wrk_launcher_cancel(struct wrk_launcher *l, const char *attempt_id, const char *reason);

/* Cancel every attempt; grace_s >= 0 replaces each attempt's own grace period. */
void wrk_launcher_cancel_all(struct wrk_launcher *l, const char *reason, int grace_s);

/* Attempts not yet reported as exited. */
size_t wrk_launcher_count(struct wrk_launcher *l);

/* Whether attempt_id is running here. */
int wrk_launcher_has(struct wrk_launcher *l, const char *attempt_id);

/* Whether a running attempt uses GPU index gpu. Usable as wrk_gpus_sample's busy(). */
int wrk_launcher_gpu_busy(void *launcher, int gpu);

struct wrk_group_mem {
    pid_t pgid;     /* a process group (each rank leads its own) */
    uint64_t bytes; /* GPU memory used by one of its processes, summed over GPUs */
};

/*
 * One sample of GPU memory per process (gpu.h wrk_gpus_proc_mem, each pid
 * mapped to its group; m borrowed, several entries may name one group): each
 * running rank of the native, deepspeed and horovod launchers raises its peak
 * to the sum over its group, so data loader workers and other children count
 * with their rank. A torchrun process stands for every rank of its node and
 * gets no per-rank peak. Ranks never seen keep 0 (not measured).
 */
void wrk_launcher_note_gpu_mem(struct wrk_launcher *l, const struct wrk_group_mem *m, size_t n);

/* [{"attempt_id":"31","pids":[...]}] of running attempts (new reference) or NULL on ENOMEM. */
json_t *wrk_launcher_running_json(struct wrk_launcher *l);

/* Append every running attempt to s. RC_OK or RC_ENOMEM. */
enum rc wrk_launcher_snapshot(struct wrk_launcher *l, struct wrk_state *s) TY_WUR;

/* A counter that changes whenever an attempt starts or ends (for the state file). */
uint64_t wrk_launcher_generation(struct wrk_launcher *l);

#endif
