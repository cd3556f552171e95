/*
 * pathchk.h - the worker's run-time data-residency check: a path the server
 * names (work_dir, checkpoint_dir, resume_from, local datasets) must resolve,
 * with realpath(3), inside one of the --allowed-root directories AND, when
 * the server sent the job's site roots ("allowed_roots"), inside one of
 * those too. Directories to be used are then created (mkdir -p, mode 0750)
 * and checked again, so a symlink planted on the way cannot lead out.
 *
 * The rules are common/pathpol.h's pathpol_realpath_check(): no ".."
 * component at all, no control, invisible or look-alike characters, no
 * '%' or '\\', symlink loops and dangling links refused, the real path equal
 * to or below a real root on a component boundary ("/data2" is not inside
 * "/data"); roots that do not exist on this node never match.
 *
 * Thread-safety: reentrant.
 */
#ifndef TY_WORKER_PATHCHK_H
#define TY_WORKER_PATHCHK_H

#include <stddef.h>

#include "err.h"
#include "ident.h"

/*
 * Check path against roots and, unless site_roots is NULL, against
 * site_roots too (an empty site list allows nothing); all borrowed. If
 * create, mkdir -p the resolved path (0750) and check the result again. On
 * success out (out_size >= PATH_MAX) holds the real path. Returns RC_OK,
 * RC_EPOLICY (outside the roots or a bad path; e filled, code
 * "policy_violation", detail the escaped path), RC_EINVAL (out too small) or
 * RC_EUNAVAIL (mkdir failed).
 */
enum rc wrk_path_check_site(const char *path, const char *const *roots, size_t nroots,
                            const char *const *site_roots, size_t nsite, int create, char *out,
                            size_t out_size, struct err *e) TY_WUR;

/*
 * wrk_path_check_site() for a directory the ranks of id (ident.h) write:
 * when id switches, the directory (made now, or the worker's from before;
 * never an allowed root, never another user's) is given to id's account
 * (lchown: root or CAP_CHOWN), and directories made on the way get 0711.
 * One the worker may not make (inside a run dir the account owns already,
 * a worker without CAP_DAC_OVERRIDE) is made by the account itself.
 * id NULL or not switching: as wrk_path_check_site(). The failed call's
 * error is in e's message.
 */
enum rc wrk_path_check_as(const char *path, const char *const *roots, size_t nroots,
                          const char *const *site_roots, size_t nsite, int create,
                          const struct wrk_ident *id, char *out, size_t out_size,
                          struct err *e) TY_WUR;

/* wrk_path_check_site() without site roots. */
enum rc wrk_path_check(const char *path, const char *const *roots, size_t nroots, int create,
                       char *out, size_t out_size, struct err *e) TY_WUR;

/* Whether the real path real is root or below it (both already resolved). */
int wrk_path_inside(const char *real, const char *root);

#endif
