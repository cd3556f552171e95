/*
 * cause.h - deterministic failures: an attempt that cannot run on this node
 * however often it is retried. The worker reports such an attempt's end
 * with one of the causes below next to the exit codes (docs/agent-protocol.md,
 * "Attempt reports", "failure"), and the server fails the job at once instead
 * of spending its restarts on the same failure.
 *
 * A cause is claimed only where the failure is certain; anything in doubt is
 * an ordinary failure, which the server restarts as usual:
 *   - exec_failed: exec(2) of argv[0] failed with an errno that a retry
 *     cannot change (wrk_cause_exec_errno()), and the working directory is
 *     still there (so the error was not the spawn's chdir);
 *   - path_refused: the data-residency check refused a path of the
 *     assignment (pathchk.h, RC_EPOLICY);
 *   - script_not_found: the command is an interpreter and its script, named
 *     as the first argument, does not exist (wrk_cause_script_arg() and
 *     wrk_cause_script_missing()), checked before anything is spawned.
 *
 * The cause is judged on the node that reports it: a program or script
 * missing on one node fails the job, as it would on any node set up alike.
 *
 * Thread-safety: reentrant; no globals.
 */
#ifndef TY_WORKER_CAUSE_H
#define TY_WORKER_CAUSE_H

#include <stddef.h>

#define WRK_CAUSE_EXEC_FAILED "exec_failed"
#define WRK_CAUSE_PATH_REFUSED "path_refused"
#define WRK_CAUSE_SCRIPT_NOT_FOUND "script_not_found"

/* Longest cause name, without the NUL. */
#define WRK_CAUSE_MAX 31

/*
 * Whether exec(2) failing with err repeats on every try: ENOENT, ENOTDIR,
 * EACCES, ENOEXEC, ELOOP, ENAMETOOLONG, EISDIR, E2BIG. Resource errors
 * (ENOMEM, EAGAIN, ETXTBSY, EMFILE, ...) are not, nor is EPERM (posix_spawn
 * also reports its own set-up steps, setpgid for one, with it).
 */
int wrk_cause_exec_errno(int err);

/*
 * The script argument of argv (NULL-terminated, borrowed) whose absence makes
 * the run fail for certain, or NULL when there is none to check. Only the
 * plain forms count, so a real run is never called missing:
 *   - argv[0]'s base name is python, python3, python3.11 ... and argv[1]
 *     ends in ".py" (an option first, "-m", "-c", "-", means NULL);
 *   - argv[0]'s base name is sh, bash or dash and argv[1] ends in ".sh" and
 *     contains a '/' (bash looks a bare name up in PATH).
 * The result points into argv.
 */
const char *wrk_cause_script_arg(char *const *argv);

/*
 * Whether script (borrowed; relative paths start at cwd) certainly does not
 * exist: stat(2) fails with ENOENT or ENOTDIR. Any other answer, an error
 * like EACCES included, is "not missing" (the interpreter will say).
 */
int wrk_cause_script_missing(const char *cwd, const char *script);

#endif
