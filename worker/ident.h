/*
 * ident.h - the Unix identity the ranks run as, never the worker's own.
 *
 * The worker holds the node credential (WORK_DIR/node.json) that the agent
 * API trusts for every attempt on the node; a rank running as the worker
 * could read it, poll other jobs' assignments (and their env) and post exit
 * reports for them. So a rank runs as a job account: by default the
 * dedicated unprivileged account "trainyard-job" (--job-user), or an account
 * the assignment names ("unix_account", a site's mapping of a trainyard user
 * or team) when this node's --job-users allows it. Neither uid 0 nor the
 * worker's own uid is ever accepted.
 *
 * The switch happens in a forked child before exec (setgroups, setresgid,
 * setresuid, then every capability dropped, ambient ones included, so a
 * worker that holds CAP_SETUID/CAP_SETGID passes none on); posix_spawn
 * cannot change ids. wrk_ident_switch() is async-signal-safe for that
 * reason. "--job-user self" keeps the ranks under the worker's identity for
 * a developer's unprivileged run; the worker logs it loudly.
 *
 * Thread-safety: the pure functions are reentrant; wrk_ident_resolve() uses
 * getpwnam_r/getgrouplist (reentrant; NSS may open files).
 */
#ifndef TY_WORKER_IDENT_H
#define TY_WORKER_IDENT_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"

#define WRK_IDENT_DEFAULT "trainyard-job"
#define WRK_IDENT_SELF "self"
#define WRK_IDENT_NAME_MAX 32   /* longest account name, as useradd's default */
#define WRK_IDENT_MAX_GROUPS 64 /* supplementary groups carried into a rank */
#define WRK_IDENT_MAX_USERS 32  /* entries of --job-users */

struct wrk_ident {
    int switch_ids;                     /* 0: ranks keep the worker's identity (--job-user self) */
    uid_t uid;                          /* the account's uid (never 0, never the worker's) */
    gid_t gid;                          /* its primary group */
    gid_t groups[WRK_IDENT_MAX_GROUPS]; /* supplementary groups (getgrouplist) */
    int ngroups;
    char name[WRK_IDENT_NAME_MAX + 1];
    char home[PATH_MAX]; /* the account's home when it is a directory, else "" */
};

/*
 * Whether s is an account name this worker accepts: common/unixname.h's
 * rule, the server's too. Pure.
 */
int wrk_ident_name_valid(const char *s);

/*
 * Parse a --job-users list, "alice,bob,ml-team", into names[0..*n) (each
 * WRK_IDENT_NAME_MAX + 1 bytes). Every name must pass
 * wrk_ident_name_valid(); "self" and empty entries are refused; duplicates
 * are dropped. RC_OK, or RC_EINVAL with e saying which entry is wrong. Pure.
 */
enum rc wrk_ident_parse_list(const char *csv, char (*names)[WRK_IDENT_NAME_MAX + 1], size_t max,
                             size_t *n, struct err *e) TY_WUR;

/* Whether name is one of names[0..n). Pure. */
int wrk_ident_listed(const char *name, const char (*names)[WRK_IDENT_NAME_MAX + 1], size_t n);

/*
 * Whether a /proc/PID/status text grants both CAP_SETUID and CAP_SETGID in
 * its CapEff line. Pure.
 */
int wrk_ident_status_can_switch(const char *status);

/* Whether this process can change its ids (root, or CAP_SETUID + CAP_SETGID). */
int wrk_ident_can_switch(void);

/*
 * Look up account name and fill out (switch_ids = 1). RC_ENOTFOUND when
 * there is no such account (e says how to create it), RC_EPOLICY when it is
 * uid 0 or the worker's own uid, RC_EINVAL for a bad name, RC_EUNAVAIL when
 * the lookup failed.
 */
enum rc wrk_ident_resolve(const char *name, struct wrk_ident *out, struct err *e) TY_WUR;

/*
 * In a forked child only: take id's identity for good and drop every
 * capability. Async-signal-safe (raw system calls only). 0, or -1 with
 * errno set; a no-op returning 0 when id is NULL or !id->switch_ids.
 */
int wrk_ident_switch(const struct wrk_ident *id);

/*
 * Run fn(arg) as id: in a forked child that switched first (fn must be
 * async-signal-safe: it runs in the child of a threaded process), or
 * directly when id is NULL or does not switch. fn returns 0 or an errno
 * value. Returns fn's value, or an errno value when the fork or the
 * switch failed.
 */
int wrk_ident_call(const struct wrk_ident *id, int (*fn)(void *), void *arg);

#endif
