/*
 * pathchk.c - realpath containment (see pathchk.h), on top of
 * common/pathpol.h's pathpol_realpath_check().
 */
#include "pathchk.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pathpol.h"
#include "utf8cut.h"

int wrk_path_inside(const char *real, const char *root)
{
    size_t n = strlen(root);
    if (strcmp(root, "/") == 0)
        return real[0] == '/';
    while (n > 1 && root[n - 1] == '/')
        n--;
    return strncmp(real, root, n) == 0 && (real[n] == '\0' || real[n] == '/');
}

/*
 * mkdir -p, the last directory 0750. With shared (the ranks have their own
 * accounts, ident.h), a directory made on the way may later lead to several
 * accounts' run dirs: it gets 0711 (pass through, no listing) whatever the
 * umask. 0 or an errno value.
 */
static int mkdir_p(const char *path, int shared)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);

    if (n >= sizeof(buf))
        return ENAMETOOLONG;
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0750) == 0) {
            if (shared && chmod(buf, 0711) != 0)
                return errno;
        } else if (errno != EEXIST) {
            return errno;
        }
        *p = '/';
    }
    if (mkdir(buf, 0750) != 0 && errno != EEXIST)
        return errno;
    return 0;
}

struct mkdir_as {
    const char *path;
    int shared;
};

/* mkdir_p() through wrk_ident_call(): async-signal-safe. */
static int mkdir_as_fn(void *arg)
{
    const struct mkdir_as *m = arg;
    return mkdir_p(m->path, m->shared);
}

/* Whether real is one of the roots (resolved here), which no job may own. */
static int is_a_root(const char *real, const char *const *roots, size_t n)
{
    char r[PATH_MAX];

    for (size_t i = 0; i < n; i++)
        if (roots[i] != NULL && realpath(roots[i], r) != NULL && strcmp(r, real) == 0)
            return 1;
    return 0;
}

/*
 * Hand the run dir real to id's account: the worker made it (or an earlier
 * worker that ran ranks as itself did), so it is the worker's; a directory
 * of anyone else, or an allowed root itself, is left alone. 0 or an errno
 * value.
 */
static int give_dir(const char *real, const struct wrk_ident *id, const char *const *roots,
                    size_t nroots, const char *const *site_roots, size_t nsite)
{
    struct stat st;

    if (lstat(real, &st) != 0)
        return errno;
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || is_a_root(real, roots, nroots) ||
        (site_roots != NULL && is_a_root(real, site_roots, nsite)))
        return 0;
    if (lchown(real, id->uid, id->gid) != 0)
        return errno;
    return 0;
}

static enum rc too_long(struct err *e)
{
    err_set(e, RC_EPOLICY, NULL, "path is too long");
    err_code(e, "policy_violation");
    return RC_EPOLICY;
}

/* Both checks once: the worker's roots give out, the site's must agree. */
static enum rc check_both(const char *path, const char *const *roots, size_t nroots,
                          const char *const *site_roots, size_t nsite, char *out, size_t out_size,
                          struct err *e)
{
    char site_real[PATHPOL_BUF_SIZE], detail[sizeof(e->detail)];
    enum rc rc = pathpol_realpath_check(path, roots, nroots, out, out_size, e);

    if (rc != RC_OK || site_roots == NULL)
        return rc;
    rc = pathpol_realpath_check(path, site_roots, nsite, site_real, sizeof(site_real), e);
    if (rc == RC_EPOLICY && e != NULL &&
        strcmp(e->message, "path escapes the allowed storage roots") == 0) {
        /* Say which of the two lists refused it. */
        utf8_copy(detail, sizeof(detail), e->detail);
        err_set(e, RC_EPOLICY, NULL, "path is outside the storage roots of the job's site");
        err_code(e, "policy_violation");
        err_detail(e, "%s", detail);
    }
    if (rc != RC_OK)
        out[0] = '\0';
    return rc;
}

enum rc wrk_path_check_as(const char *path, const char *const *roots, size_t nroots,
                          const char *const *site_roots, size_t nsite, int create,
                          const struct wrk_ident *id, char *out, size_t out_size, struct err *e)
{
    char real[PATHPOL_BUF_SIZE];
    enum rc rc;

    if (out_size < PATH_MAX)
        return err_set(e, RC_EINVAL, NULL, "path buffer too small");
    out[0] = '\0';
    rc = check_both(path, roots, nroots, site_roots, nsite, real, sizeof(real), e);
    if (rc == RC_ETOOBIG)
        rc = too_long(e);
    if (rc != RC_OK)
        return rc;
    if (create) {
        int shared = id != NULL && id->switch_ids, r = mkdir_p(real, shared);
        if (r == EACCES && shared) {
            /* inside a run dir the job's account already owns (checkpoints
             * below its output_dir): that account makes it */
            struct mkdir_as m = {real, shared};
            r = wrk_ident_call(id, mkdir_as_fn, &m);
        }
        if (r != 0)
            return err_set(e, RC_EUNAVAIL, NULL, "cannot create directory: %s", strerror(r));
        /* a symlink swapped in meanwhile is caught here */
        rc = check_both(real, roots, nroots, site_roots, nsite, out, out_size, e);
        if (rc == RC_ETOOBIG)
            return too_long(e);
        if (rc == RC_OK && shared && (r = give_dir(out, id, roots, nroots, site_roots, nsite)) != 0)
            return err_set(e, RC_EUNAVAIL, NULL, "cannot give the directory to %s: %s", id->name,
                           strerror(r));
        return rc;
    }
    snprintf(out, out_size, "%s", real);
    return RC_OK;
}

enum rc wrk_path_check_site(const char *path, const char *const *roots, size_t nroots,
                            const char *const *site_roots, size_t nsite, int create, char *out,
                            size_t out_size, struct err *e)
{
    return wrk_path_check_as(path, roots, nroots, site_roots, nsite, create, NULL, out, out_size,
                             e);
}

enum rc wrk_path_check(const char *path, const char *const *roots, size_t nroots, int create,
                       char *out, size_t out_size, struct err *e)
{
    return wrk_path_check_site(path, roots, nroots, NULL, 0, create, out, out_size, e);
}
