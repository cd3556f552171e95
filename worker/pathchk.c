/*
 * pathchk.c - realpath containment (see pathchk.h).
 */
#include "pathchk.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int wrk_path_inside(const char *real, const char *root)
{
    size_t n = strlen(root);
    if (strcmp(root, "/") == 0)
        return real[0] == '/';
    while (n > 1 && root[n - 1] == '/')
        n--;
    return strncmp(real, root, n) == 0 && (real[n] == '\0' || real[n] == '/');
}

static int lexically_ok(const char *p)
{
    const char *c = p;
    if (p[0] != '/' || strlen(p) >= PATH_MAX)
        return 0;
    for (const char *q = p; *q; q++)
        if ((unsigned char)*q < 0x20 || *q == 0x7f)
            return 0;
    while (*c) {
        const char *end;
        while (*c == '/')
            c++;
        end = strchr(c, '/');
        if (end == NULL)
            end = c + strlen(c);
        if (end - c == 2 && c[0] == '.' && c[1] == '.')
            return 0;
        c = end;
    }
    return 1;
}

/*
 * Resolve path, which may not exist yet: realpath of the longest existing
 * ancestor plus the rest. A missing component must not be a dangling symlink.
 */
static int resolve(const char *path, char *out, size_t out_size)
{
    char buf[PATH_MAX], real[PATH_MAX];
    size_t n;

    snprintf(buf, sizeof(buf), "%s", path);
    n = strlen(buf);
    while (n > 1 && buf[n - 1] == '/')
        buf[--n] = '\0';
    for (;;) {
        char *slash;
        if (realpath(buf, real) != NULL) {
            const char *rest = path + strlen(buf);
            int w;
            while (*rest == '/')
                rest++;
            w = snprintf(out, out_size, "%s%s%s", real,
                         (rest[0] && strcmp(real, "/") != 0) ? "/" : "", rest);
            if (w < 0 || (size_t)w >= out_size)
                return 0;
            n = strlen(out);
            while (n > 1 && out[n - 1] == '/')
                out[--n] = '\0';
            return 1;
        }
        if (errno != ENOENT)
            return 0;
        {
            struct stat st;
            if (lstat(buf, &st) == 0)
                return 0; /* exists but does not resolve: dangling symlink */
        }
        slash = strrchr(buf, '/');
        if (slash == NULL)
            return 0;
        if (slash == buf)
            slash[1] = '\0';
        else
            *slash = '\0';
    }
}

static int inside_any(const char *real, const char *const *roots, size_t nroots)
{
    for (size_t i = 0; i < nroots; i++) {
        char rr[PATH_MAX];
        if (roots[i] != NULL && realpath(roots[i], rr) != NULL && wrk_path_inside(real, rr))
            return 1;
    }
    return 0;
}

static enum rc refuse(struct err *e, const char *path, const char *why)
{
    enum rc rc = err_set(e, RC_EPOLICY, NULL, "path %s", why);
    err_code(e, "policy_violation");
    err_detail(e, "%.200s", path);
    return rc;
}

static int mkdir_p(const char *path)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);

    if (n >= sizeof(buf))
        return -1;
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0750) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0750) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

enum rc wrk_path_check(const char *path, const char *const *roots, size_t nroots, int create,
                       char *out, size_t out_size, struct err *e)
{
    char real[PATH_MAX];

    if (out_size < PATH_MAX)
        return err_set(e, RC_EINVAL, NULL, "path buffer too small");
    if (path == NULL || !lexically_ok(path))
        return refuse(e, path ? path : "", "must be absolute without '..' or control characters");
    if (!resolve(path, real, sizeof(real)) || !inside_any(real, roots, nroots))
        return refuse(e, path, "is outside the allowed storage roots");
    if (create) {
        if (mkdir_p(real) != 0)
            return err_set(e, RC_EUNAVAIL, NULL, "cannot create directory");
        /* a symlink swapped in meanwhile is caught here */
        if (realpath(real, out) == NULL || !inside_any(out, roots, nroots))
            return refuse(e, path, "is outside the allowed storage roots");
        return RC_OK;
    }
    if (strlen(real) >= out_size)
        return refuse(e, path, "is too long");
    memcpy(out, real, strlen(real) + 1);
    return RC_OK;
}
