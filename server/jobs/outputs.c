/*
 * outputs.c - see outputs.h. The listing walks with openat(2)/fstatat(2)
 * relative to directory descriptors opened with O_NOFOLLOW, so a directory
 * swapped for a link during the walk is not entered.
 */
#include "outputs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "pathpol.h"

const char *outputs_base(const json_t *site_roots, const char *storage_root)
{
    size_t n = strlen(storage_root), k;
    json_t *v;

    while (n > 1 && storage_root[n - 1] == '/')
        n--;
    json_array_foreach(site_roots, k, v)
    {
        const char *root = json_string_value(v);
        size_t rl = root ? strlen(root) : 0;
        if (rl > 0 && rl <= n && strncmp(storage_root, root, rl) == 0 &&
            (rl == n || storage_root[rl] == '/' || strcmp(root, "/") == 0))
            return storage_root;
    }
    v = json_array_get(site_roots, 0);
    return json_is_string(v) ? json_string_value(v) : storage_root;
}

enum rc outputs_dir(const char *output_dir, const char *base, const char *job_id, char *out,
                    size_t out_size)
{
    int n;

    if (output_dir != NULL && output_dir[0] != '\0')
        n = snprintf(out, out_size, "%s", output_dir);
    else
        n = snprintf(out, out_size, "%s/jobs/%s", base, job_id);
    return (n < 0 || (size_t)n >= out_size) ? RC_ETOOBIG : RC_OK;
}

enum rc outputs_job_dir(const json_t *paths, const json_t *spec, const json_t *site_roots,
                        const char *storage_root, const char *job_id, char *out, size_t out_size)
{
    const char *od = json_string_value(json_object_get(paths, "output_dir"));

    if (od == NULL && json_object_get(paths, "datasets") == NULL) /* from before sites */
        od = json_string_value(json_object_get(spec, "output_dir"));
    return outputs_dir(od, outputs_base(site_roots, storage_root), job_id, out, out_size);
}

/* Refusal with the API's policy code; detail quotes what the caller sent. */
static enum rc refuse(struct err *e, const char *field, const char *msg, const char *value)
{
    err_set(e, RC_EPOLICY, field, "%s", msg);
    err_code(e, "policy_violation");
    if (value != NULL)
        err_detail(e, "got \"%.200s\"", value);
    return RC_EPOLICY;
}

enum rc outputs_resolve_dir(const char *dir, const char *const *roots, size_t nroots, char *real,
                            size_t real_size, struct err *e)
{
    char norm[PATHPOL_BUF_SIZE];
    struct stat st;
    enum rc rc;

    /* Lexically first: a directory outside the roots is refused whether or
     * not it exists. */
    rc = pathpol_check(dir, roots, nroots, norm, sizeof(norm), NULL);
    if (rc != RC_OK)
        return refuse(e, "", "the job's output directory is outside the site's storage roots",
                      NULL);
    if (lstat(norm, &st) != 0 && errno == ENOENT)
        return RC_ENOTFOUND;
    rc = pathpol_realpath_check(norm, roots, nroots, real, real_size, NULL);
    if (rc != RC_OK)
        return refuse(e, "", "the job's output directory resolves outside the site's storage roots",
                      NULL);
    if (stat(real, &st) != 0)
        return errno == ENOENT ? RC_ENOTFOUND : RC_EUNAVAIL;
    if (!S_ISDIR(st.st_mode))
        return refuse(e, "", "the job's output location is not a directory", NULL);
    return RC_OK;
}

/* Whether path has a ".." component. */
static int has_dotdot(const char *path)
{
    for (const char *p = path; (p = strstr(p, "..")) != NULL; p += 2)
        if ((p == path || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
            return 1;
    return 0;
}

enum rc outputs_checkpoint_check(const char *path, const char *ckpt_dir, const char *const *roots,
                                 size_t nroots, char *norm, size_t norm_size, struct err *e)
{
    char dir[PATHPOL_BUF_SIZE], clean[PATHPOL_BUF_SIZE], q[128];
    const char *d = dir;
    enum rc rc;

    if (norm_size > 0)
        norm[0] = '\0';
    pathpol_quote(path, strlen(path), q, sizeof(q));
    rc = pathpol_normalize(path, strlen(path), clean, sizeof(clean), e);
    if (rc != RC_OK)
        return rc;
    if (has_dotdot(path))
        return refuse(e, "", "a checkpoint path must not contain \"..\"", q);
    if (pathpol_check(ckpt_dir, roots, nroots, dir, sizeof(dir), NULL) != RC_OK)
        return refuse(e, "", "the job's checkpoint directory is outside the site's storage roots",
                      q);
    rc = pathpol_check(clean, &d, 1, norm, norm_size, NULL);
    if (rc == RC_EPOLICY)
        return refuse(e, "", "the checkpoint path is outside the job's checkpoint directory", q);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Listing                                                              */

struct walk {
    const char *real_dir;   /* borrowed */
    struct outputs_file *v; /* owned array */
    size_t n, cap, max;
    int truncated;
    int failed; /* ENOMEM */
};

/* Whether rel could be named in an export request (pathpol's character rules). */
static int exportable_name(const char *rel)
{
    char abs[PATHPOL_BUF_SIZE], norm[PATHPOL_BUF_SIZE];
    int n = snprintf(abs, sizeof(abs), "/%s", rel);

    if (n < 0 || (size_t)n >= sizeof(abs))
        return 0;
    return pathpol_normalize(abs, (size_t)n, norm, sizeof(norm), NULL) == RC_OK &&
           strcmp(abs, norm) == 0;
}

static void walk_add(struct walk *w, const char *rel, const struct stat *st)
{
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        struct outputs_file *nv = realloc(w->v, cap * sizeof(*nv));
        if (nv == NULL) {
            w->failed = 1;
            return;
        }
        w->v = nv;
        w->cap = cap;
    }
    w->v[w->n].path = strdup(rel);
    if (w->v[w->n].path == NULL) {
        w->failed = 1;
        return;
    }
    w->v[w->n].size = (int64_t)st->st_size;
    w->v[w->n].mtime_s = (int64_t)st->st_mtime;
    w->n++;
}

/* A link is listed when it resolves to a regular file inside the directory. */
static void walk_link(struct walk *w, const char *rel)
{
    char full[PATHPOL_BUF_SIZE], res[PATHPOL_BUF_SIZE];
    const char *root = w->real_dir;
    struct stat st;
    int n = snprintf(full, sizeof(full), "%s/%s", w->real_dir, rel);

    if (n < 0 || (size_t)n >= sizeof(full))
        return;
    if (pathpol_realpath_check(full, &root, 1, res, sizeof(res), NULL) != RC_OK)
        return;
    if (stat(res, &st) == 0 && S_ISREG(st.st_mode))
        walk_add(w, rel, &st);
}

/* Walk the directory open on dfd (taken: closed here). prefix is "" at the top. */
static void walk_dir(struct walk *w, int dfd, const char *prefix, int depth)
{
    DIR *d = fdopendir(dfd);
    struct dirent *de;

    if (d == NULL) {
        close(dfd);
        return;
    }
    while (!w->failed && !w->truncated && (de = readdir(d)) != NULL) {
        char rel[PATHPOL_BUF_SIZE];
        struct stat st;
        int n;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        n = snprintf(rel, sizeof(rel), "%s%s%s", prefix, prefix[0] ? "/" : "", de->d_name);
        if (n < 0 || (size_t)n >= sizeof(rel) || !exportable_name(rel))
            continue;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (w->n >= w->max) {
            w->truncated = 1;
            break;
        }
        if (S_ISREG(st.st_mode)) {
            walk_add(w, rel, &st);
        } else if (S_ISLNK(st.st_mode)) {
            walk_link(w, rel);
        } else if (S_ISDIR(st.st_mode) && depth + 1 < OUTPUTS_MAX_DEPTH) {
            int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                walk_dir(w, sub, rel, depth + 1);
        }
    }
    closedir(d);
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const struct outputs_file *)a)->path, ((const struct outputs_file *)b)->path);
}

enum rc outputs_walk(const char *real_dir, size_t max_files, struct outputs_file **files, size_t *n,
                     int *truncated)
{
    struct walk w = {real_dir, NULL, 0, 0, max_files, 0, 0};
    int dfd;

    *files = NULL;
    *n = 0;
    *truncated = 0;
    dfd = open(real_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        LOG_WARN("outputs", "cannot open an output directory", "errno=%d", errno);
        return RC_EUNAVAIL;
    }
    walk_dir(&w, dfd, "", 0);
    if (w.failed) {
        outputs_files_free(w.v, w.n);
        return RC_ENOMEM;
    }
    if (w.n > 0)
        qsort(w.v, w.n, sizeof(w.v[0]), entry_cmp);
    *files = w.v;
    *n = w.n;
    *truncated = w.truncated;
    return RC_OK;
}

void outputs_files_free(struct outputs_file *files, size_t n)
{
    for (size_t k = 0; files != NULL && k < n; k++)
        free(files[k].path);
    free(files);
}

static json_t *entry_json(const struct outputs_file *en)
{
    char ts[32];
    struct tm tm;
    time_t t = (time_t)en->mtime_s;

    if (gmtime_r(&t, &tm) == NULL || strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        ts[0] = '\0';
    return json_pack("{s:s,s:I,s:s}", "path", en->path, "size", (json_int_t)en->size, "mtime", ts);
}

enum rc outputs_list(const char *real_dir, const char *after, size_t limit, json_t **out, int *more,
                     int *truncated)
{
    struct outputs_file *v = NULL;
    json_t *arr = NULL;
    size_t i = 0, n = 0;
    enum rc rc;

    *out = NULL;
    *more = 0;
    *truncated = 0;
    if ((rc = outputs_walk(real_dir, OUTPUTS_MAX_ENTRIES, &v, &n, truncated)) != RC_OK)
        return rc;
    rc = RC_ENOMEM;
    if ((arr = json_array()) == NULL)
        goto out;
    while (after != NULL && i < n && strcmp(v[i].path, after) <= 0)
        i++;
    for (; i < n && json_array_size(arr) < limit; i++)
        if (json_array_append_new(arr, entry_json(&v[i])) != 0)
            goto out;
    *more = i < n;
    *out = arr;
    arr = NULL;
    rc = RC_OK;
out:
    outputs_files_free(v, n);
    json_decref(arr);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Opening one file                                                     */

/* Whether the file open on fd really lies inside real_dir (after open). */
static int fd_inside(int fd, const char *real_dir)
{
    char link[64], target[PATHPOL_BUF_SIZE];
    size_t dl = strlen(real_dir);
    ssize_t n;

    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, target, sizeof(target) - 1);
    if (n <= 0 || (size_t)n >= sizeof(target) - 1)
        return 0;
    target[n] = '\0';
    if (strcmp(real_dir, "/") == 0)
        return 1;
    return strncmp(target, real_dir, dl) == 0 && target[dl] == '/';
}

enum rc outputs_open(const char *real_dir, const char *rel, int *fd_out, uint64_t *size,
                     struct err *e)
{
    char full[PATHPOL_BUF_SIZE], res[PATHPOL_BUF_SIZE];
    const char *root = real_dir;
    struct stat st;
    enum rc rc;
    int fd = -1, n;

    *fd_out = -1;
    *size = 0;
    if (rel == NULL || rel[0] == '\0' || rel[0] == '/')
        return err_set(e, RC_EINVAL, "path", "path must be relative to the job's output directory");
    n = snprintf(full, sizeof(full), "%s/%s", real_dir, rel);
    if (n < 0 || (size_t)n >= sizeof(full))
        return err_set(e, RC_EINVAL, "path", "path is too long");
    rc = pathpol_realpath_check(full, &root, 1, res, sizeof(res), e);
    if (rc != RC_OK) {
        /* Keep pathpol's reason but quote only what the caller sent, not
         * the resolved server path. */
        err_detail(e, "got \"%.200s\"", rel);
        if (e != NULL)
            snprintf(e->field, sizeof(e->field), "path");
        if (rc != RC_EPOLICY)
            return err_set(e, RC_EINVAL, "path", "path is too long");
        return RC_EPOLICY;
    }
    /* O_NONBLOCK: opening a FIFO must not hang the request. */
    fd = open(res, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return err_set(e, RC_ENOTFOUND, "path", "no such file in the job's outputs");
        if (errno == ELOOP)
            return refuse(e, "path", "path is a symbolic link", rel);
        return err_set(e, RC_EUNAVAIL, "path", "the file cannot be read");
    }
    if (fstat(fd, &st) != 0) {
        rc = err_set(e, RC_EUNAVAIL, "path", "the file cannot be read");
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = refuse(e, "path", "path is not a regular file", rel);
        goto fail;
    }
    if (!fd_inside(fd, real_dir)) {
        rc = refuse(e, "path", "path escapes the job's output directory", rel);
        goto fail;
    }
    /* Back to blocking reads for the response. */
    if (fcntl(fd, F_SETFL, O_RDONLY) != 0) {
        rc = err_set(e, RC_EUNAVAIL, "path", "the file cannot be read");
        goto fail;
    }
    *fd_out = fd;
    *size = (uint64_t)st.st_size;
    return RC_OK;
fail:
    close(fd);
    return rc;
}
