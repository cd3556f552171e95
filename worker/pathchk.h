/*
 * pathchk.h - the worker's run-time data-residency check: a directory the
 * server names (work_dir, checkpoint_dir) must resolve, with realpath(3),
 * inside one of the --allowed-root directories; it is then created (mkdir -p,
 * mode 0750) and checked again, so a symlink planted on the way cannot lead
 * out.
 *
 * Written here because common/pathpol.c (pathpol_realpath_check) was not in
 * the tree yet; the rules match its header: no ".." component at all, no
 * control characters, the real path equal to or below a real root on a
 * component boundary ("/data2" is not inside "/data").
 *
 * Thread-safety: reentrant.
 */
#ifndef TY_WORKER_PATHCHK_H
#define TY_WORKER_PATHCHK_H

#include <stddef.h>

#include "err.h"

/*
 * Check path against roots (borrowed); if create, mkdir -p it (0750) and
 * check the result again. On success out (out_size >= PATH_MAX is enough)
 * holds the real path. Returns RC_OK, RC_EPOLICY (outside the roots or a bad
 * path; e filled, code "policy_violation") or RC_EUNAVAIL (mkdir failed).
 */
enum rc wrk_path_check(const char *path, const char *const *roots, size_t nroots, int create,
                       char *out, size_t out_size, struct err *e) TY_WUR;

/* Whether the real path real is root or below it (both already resolved). */
int wrk_path_inside(const char *real, const char *root);

#endif
