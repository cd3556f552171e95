/*
 * state.h - the worker's state file WORK_DIR/state.json: which attempts it
 * started and their processes, so a restarted worker can find (and report or
 * kill) ranks it left behind. Written atomically (temporary file, fsync,
 * rename), mode 0600.
 *
 * A process is identified by pid plus its start time (field 22 of
 * /proc/<pid>/stat, clock ticks since boot) so that a recycled pid is never
 * mistaken for a rank.
 *
 * Thread-safety: reentrant; a struct wrk_state belongs to one thread.
 */
#ifndef TY_WORKER_STATE_H
#define TY_WORKER_STATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "assign.h"
#include "err.h"

struct wrk_state_proc {
    int rank; /* rank whose output this process writes */
    pid_t pid;
    pid_t pgid;         /* its own process group */
    uint64_t starttime; /* /proc/<pid>/stat field 22, clock ticks */
};

struct wrk_state_attempt {
    char attempt_id[WRK_ID_MAX + 1];
    char job_id[WRK_ID_MAX + 1];
    int node_rank;
    int grace_s;
    size_t nprocs;
    struct wrk_state_proc procs[WRK_MAX_RANKS];
    size_t nreport;
    int report_ranks[WRK_MAX_RANKS]; /* ranks named in the exit report */
};

struct wrk_state {
    size_t n;
    struct wrk_state_attempt *attempts; /* owned, n entries */
};

/* A new empty state (RC_ENOMEM on failure). Free with wrk_state_free(). */
enum rc wrk_state_new(struct wrk_state **out) TY_WUR;

/* Append a copy of a (borrowed). RC_OK or RC_ENOMEM. */
enum rc wrk_state_add(struct wrk_state *s, const struct wrk_state_attempt *a) TY_WUR;

void wrk_state_free(struct wrk_state *s);

/* Write s to path atomically (path.tmp + fsync + rename), mode 0600. RC_OK or RC_EUNAVAIL. */
enum rc wrk_state_save(const char *path, const struct wrk_state *s) TY_WUR;

/*
 * Read path. A missing file gives an empty state (RC_OK); a malformed one
 * RC_EINVAL; entries with bad fields are skipped. Free with wrk_state_free().
 */
enum rc wrk_state_load(const char *path, struct wrk_state **out) TY_WUR;

/*
 * Replace path with text (both borrowed) atomically: a new path.tmp (O_EXCL,
 * no symlink followed) with mode, fsync, rename; node.json and ds_config.json
 * go this way so that a crash leaves the old file or the new one, never half
 * of one. RC_OK, RC_EINVAL (path too long) or RC_EUNAVAIL (path.tmp removed).
 */
enum rc wrk_file_write_atomic(const char *path, const char *text, mode_t mode) TY_WUR;

/*
 * The same with the temporary name tmp given and text[0..len): no
 * allocation and no formatting, so a forked child may call it (the ranks'
 * account writes ds_config.json into its own run dir). 0 or an errno value.
 */
int wrk_file_write_atomic_at(const char *path, const char *tmp, const char *text, size_t len,
                             mode_t mode);

/* Start time of pid from /proc; RC_OK, RC_ENOTFOUND (no such process). */
enum rc wrk_proc_starttime(pid_t pid, uint64_t *out) TY_WUR;

/* Process group of pid from /proc; RC_OK, RC_ENOTFOUND (no such process). */
enum rc wrk_proc_pgid(pid_t pid, pid_t *out) TY_WUR;

/* 1 if pid runs (not a zombie) and started at starttime, else 0. */
int wrk_proc_alive(pid_t pid, uint64_t starttime);

#endif
