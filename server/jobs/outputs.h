/*
 * outputs.h - where a job's outputs live on the shared storage, and safe
 * reads of them: listing the files and opening one for a download.
 *
 * The output directory of a job is its spec's output_dir when set, else
 * <base>/jobs/<job id> (outputs_job_dir(); db_agent.c builds the
 * assignment's checkpoint_dir = <output directory>/checkpoints from the same
 * functions). The server reads it directly, so the storage roots must be
 * mounted on the server as on the nodes (docs/exports.md).
 *
 * Nothing here follows a symbolic link out of the directory: the directory
 * itself is resolved with pathpol_realpath_check() against the site's
 * storage roots, the walk never enters a linked directory, a linked file is
 * listed only when it resolves to a regular file inside the directory, and
 * an opened file is checked again through /proc/self/fd after open(2), which
 * closes the race between the check and the open.
 *
 * No SQL and no HTTP here. Thread-safety: reentrant; no globals.
 */
#ifndef TY_SERVER_OUTPUTS_H
#define TY_SERVER_OUTPUTS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Directory levels below the output directory a listing descends. */
#define OUTPUTS_MAX_DEPTH 16
/* Files a listing collects at most; past this it says "truncated". */
#define OUTPUTS_MAX_ENTRIES 10000

/*
 * Where a job's default work and output dirs go: the server's storage_root
 * when it lies inside one of the site's roots (so set-ups from before sites
 * keep their layout), else the site's first root; storage_root for a site
 * without roots (the worker then refuses the paths). site_roots is a JSON
 * array of strings (borrowed); the result is borrowed from either argument.
 */
const char *outputs_base(const json_t *site_roots, const char *storage_root);

/*
 * The job's output directory into out: output_dir (borrowed; NULL or "" when
 * unset) or "<base>/jobs/<job_id>". RC_OK, or RC_ETOOBIG when out_size cannot
 * hold it.
 */
enum rc outputs_dir(const char *output_dir, const char *base, const char *job_id, char *out,
                    size_t out_size) TY_WUR;

/*
 * The whole rule from a job's row, as the assignment builds it: the
 * output_dir the submit check normalized (jobs.paths), for a job from before
 * sites ('{}' paths) the spec's own output_dir, else
 * "<outputs_base(site_roots, storage_root)>/jobs/<job_id>". paths, spec and
 * site_roots are borrowed JSON (NULL is taken as empty). As outputs_dir().
 */
enum rc outputs_job_dir(const json_t *paths, const json_t *spec, const json_t *site_roots,
                        const char *storage_root, const char *job_id, char *out,
                        size_t out_size) TY_WUR;

/*
 * Whether a checkpoint path a node reported may be recorded (and later be
 * handed to the next attempt as resume_from): path must be a plain absolute
 * path without a ".." component (the worker's run-time check refuses those,
 * so no attempt could resume from it) that lies, after lexical normalization,
 * in ckpt_dir (the job's checkpoint directory, <output directory>/checkpoints)
 * or below it, and ckpt_dir must itself lie inside one of roots (the site's
 * storage roots). Lexical only: the server cannot resolve links on the node;
 * the worker's realpath check covers those. On RC_OK norm (norm_size >=
 * PATHPOL_BUF_SIZE suffices) holds the normalized path. RC_EPOLICY (e filled,
 * code "policy_violation", detail the quoted path) or RC_ETOOBIG. Pointers
 * borrowed; e may be NULL.
 */
enum rc outputs_checkpoint_check(const char *path, const char *ckpt_dir, const char *const *roots,
                                 size_t nroots, char *norm, size_t norm_size, struct err *e) TY_WUR;

/*
 * Resolve the output directory dir against the storage roots: it must lie
 * inside one of them lexically and, after realpath(3), really. On RC_OK real
 * (real_size >= PATHPOL_BUF_SIZE suffices) holds the resolved directory.
 * RC_ENOTFOUND when it does not exist yet (the job wrote nothing), RC_EPOLICY
 * (e filled, code "policy_violation") when it is outside the roots or not a
 * directory. Pointers borrowed; e may be NULL.
 */
enum rc outputs_resolve_dir(const char *dir, const char *const *roots, size_t nroots, char *real,
                            size_t real_size, struct err *e) TY_WUR;

/* One file a walk found: a regular file, or a link to one inside the directory. */
struct outputs_file {
    char *path;      /* owned; relative to the walked directory */
    int64_t size;    /* bytes, as lstat/stat saw them during the walk */
    int64_t mtime_s; /* seconds since the epoch */
};

/*
 * The regular files below real_dir (from outputs_resolve_dir), sorted by
 * path (byte order), by the rules above: no linked directory entered, a
 * linked file kept only when it resolves to a regular file inside real_dir,
 * at most OUTPUTS_MAX_DEPTH levels, names that could not be exported left
 * out. At most max_files are collected; *truncated is 1 when more were
 * found. On RC_OK *files (free with outputs_files_free()) holds *n entries.
 * RC_ENOMEM, RC_EUNAVAIL (the directory cannot be opened).
 */
enum rc outputs_walk(const char *real_dir, size_t max_files, struct outputs_file **files, size_t *n,
                     int *truncated) TY_WUR;

/* Free what outputs_walk() returned; NULL is a no-op. */
void outputs_files_free(struct outputs_file *files, size_t n);

/*
 * The regular files below real_dir (from outputs_resolve_dir), sorted by
 * path, as a new JSON array of {"path": relative, "size": bytes, "mtime":
 * ISO-8601 UTC}: only those whose path sorts after `after` (NULL = from the
 * start), at most limit of them. *more is 1 when files follow the page,
 * *truncated 1 when the walk stopped at OUTPUTS_MAX_ENTRIES. Names that could
 * not be exported (control characters, invalid UTF-8) are left out.
 * RC_OK, RC_ENOMEM, RC_EUNAVAIL (the directory cannot be read).
 */
enum rc outputs_list(const char *real_dir, const char *after, size_t limit, json_t **out, int *more,
                     int *truncated) TY_WUR;

/*
 * Open the file rel (relative to real_dir, no "..") for reading. It must
 * resolve to a regular file inside real_dir. On RC_OK *fd (owned by the
 * caller; close it) and *size are set. RC_EINVAL (malformed path), RC_EPOLICY
 * (outside, a link out, not a regular file), RC_ENOTFOUND (no such file) or
 * RC_EUNAVAIL, each with e filled (field "path"). Pointers borrowed.
 */
enum rc outputs_open(const char *real_dir, const char *rel, int *fd, uint64_t *size,
                     struct err *e) TY_WUR;

#endif
