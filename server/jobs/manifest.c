/*
 * manifest.c - see manifest.h. The walk and every open are outputs.c's; this
 * file only hashes what they hand over and writes the canonical text.
 */
#include "manifest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outputs.h"
#include "pathpol.h"

static const struct manifest_limits default_limits = {MANIFEST_MAX_FILES, MANIFEST_MAX_BYTES};

void manifest_cleanup(struct manifest *m)
{
    json_decref(m->files);
    memset(m, 0, sizeof(*m));
}

static enum rc too_large(struct err *e, const char *what, unsigned long long limit)
{
    err_set(e, RC_ETOOBIG, "", "the model has more %s than a manifest may list (%llu)", what,
            limit);
    err_code(e, "too_large");
    return RC_ETOOBIG;
}

enum rc manifest_digest(const json_t *files, char out[CRYPTO_SHA256_HEX_LEN + 1])
{
    char *text = NULL, *nt;
    size_t len = 0, cap = 0, i;
    const json_t *f;
    enum rc rc = RC_OK;

    json_array_foreach(files, i, f)
    {
        const char *sha = json_string_value(json_object_get(f, "sha256"));
        const char *path = json_string_value(json_object_get(f, "path"));
        const json_t *size = json_object_get(f, "size");
        size_t need;
        int n;

        if (sha == NULL || path == NULL || !json_is_integer(size)) {
            rc = RC_EINVAL;
            goto out;
        }
        need = strlen(sha) + strlen(path) + 24;
        if (cap - len < need) {
            size_t ncap = (cap ? cap * 2 : 4096) + need;
            if ((nt = realloc(text, ncap)) == NULL) {
                rc = RC_ENOMEM;
                goto out;
            }
            text = nt;
            cap = ncap;
        }
        n = snprintf(text + len, cap - len, "%s %" JSON_INTEGER_FORMAT " %s\n", sha,
                     json_integer_value(size), path);
        if (n < 0 || (size_t)n >= cap - len) {
            rc = RC_EINTERNAL;
            goto out;
        }
        len += (size_t)n;
    }
    crypto_sha256_hex(text ? text : "", len, out);
out:
    free(text);
    return rc;
}

/* Hash rel of real_dir into one entry appended to m; budget_bytes is what the
 * limits still allow. */
static enum rc hash_one(const char *real_dir, const char *rel, uint64_t budget_bytes,
                        struct manifest *m, struct err *e)
{
    char hex[CRYPTO_SHA256_HEX_LEN + 1];
    unsigned long long nread = 0;
    uint64_t size = 0;
    int fd = -1;
    enum rc rc = outputs_open(real_dir, rel, &fd, &size, e);

    if (rc != RC_OK)
        return rc;
    if (size > budget_bytes) {
        close(fd);
        return RC_ETOOBIG;
    }
    rc = crypto_sha256_fd_hex(fd, budget_bytes, &nread, hex);
    close(fd);
    if (rc == RC_ETOOBIG)
        return RC_ETOOBIG;
    if (rc != RC_OK)
        return err_set(e, rc == RC_ENOMEM ? RC_ENOMEM : RC_EUNAVAIL, "", "a file cannot be read");
    if (nread != size)
        return err_set(e, RC_ECONFLICT, "", "a file changed while it was hashed; try again");
    if (json_array_append_new(m->files, json_pack("{s:s,s:I,s:s}", "path", rel, "size",
                                                  (json_int_t)nread, "sha256", hex)) != 0)
        return err_set(e, RC_ENOMEM, "", "out of memory");
    m->total_bytes += nread;
    m->count++;
    return RC_OK;
}

/* Fill out from the entries hashed so far; on failure release them. */
static enum rc finish(enum rc rc, const struct manifest_limits *lim, struct manifest *out,
                      struct err *e)
{
    if (rc == RC_ETOOBIG)
        too_large(e, "bytes", (unsigned long long)lim->max_bytes);
    if (rc == RC_OK && (rc = manifest_digest(out->files, out->sha256)) != RC_OK)
        err_set(e, rc, "", "out of memory");
    if (rc != RC_OK)
        manifest_cleanup(out);
    return rc;
}

static enum rc start(struct manifest *out, struct err *e)
{
    memset(out, 0, sizeof(*out));
    if ((out->files = json_array()) == NULL)
        return err_set(e, RC_ENOMEM, "", "out of memory");
    return RC_OK;
}

enum rc manifest_dir(const char *real_dir, const struct manifest_limits *lim, struct manifest *out,
                     struct err *e)
{
    struct outputs_file *v = NULL;
    size_t n = 0;
    uint64_t sum = 0;
    int truncated = 0;
    enum rc rc;

    if (lim == NULL)
        lim = &default_limits;
    if ((rc = start(out, e)) != RC_OK)
        return rc;
    rc = outputs_walk(real_dir, lim->max_files, &v, &n, &truncated);
    if (rc != RC_OK) {
        manifest_cleanup(out);
        return err_set(e, rc, "",
                       rc == RC_ENOMEM ? "out of memory" : "the directory cannot be read");
    }
    if (truncated) {
        outputs_files_free(v, n);
        manifest_cleanup(out);
        return too_large(e, "files", (unsigned long long)lim->max_files);
    }
    /* The sizes the walk saw, summed first: a model far over the limit is
     * refused before a byte is hashed. */
    for (size_t i = 0; i < n; i++)
        sum += (uint64_t)v[i].size;
    rc = sum > lim->max_bytes ? RC_ETOOBIG : RC_OK;
    for (size_t i = 0; rc == RC_OK && i < n; i++)
        rc = hash_one(real_dir, v[i].path, lim->max_bytes - out->total_bytes, out, e);
    outputs_files_free(v, n);
    return finish(rc, lim, out, e);
}

enum rc manifest_file(const char *real_dir, const char *rel, const struct manifest_limits *lim,
                      struct manifest *out, struct err *e)
{
    enum rc rc;

    if (lim == NULL)
        lim = &default_limits;
    if ((rc = start(out, e)) != RC_OK)
        return rc;
    rc = lim->max_files < 1 ? RC_ETOOBIG : hash_one(real_dir, rel, lim->max_bytes, out, e);
    return finish(rc, lim, out, e);
}

static enum rc outside(struct err *e, const char *msg)
{
    err_set(e, RC_EPOLICY, "", "%s", msg);
    err_code(e, "policy_violation");
    return RC_EPOLICY;
}

enum rc manifest_path(const char *path, const char *const *roots, size_t nroots,
                      const struct manifest_limits *lim, char *real, size_t real_size,
                      struct manifest *out, struct err *e)
{
    char norm[PATHPOL_BUF_SIZE], res[PATHPOL_BUF_SIZE];
    struct stat st;
    char *slash;

    memset(out, 0, sizeof(*out));
    if (real != NULL && real_size > 0)
        real[0] = '\0';
    if (pathpol_check(path, roots, nroots, norm, sizeof(norm), NULL) != RC_OK)
        return outside(e, "the path is outside the site's storage roots");
    if (lstat(norm, &st) != 0 && errno == ENOENT)
        return err_set(e, RC_ENOTFOUND, "", "the path does not exist");
    if (pathpol_realpath_check(norm, roots, nroots, res, sizeof(res), NULL) != RC_OK)
        return outside(e, "the path resolves outside the site's storage roots");
    if (stat(res, &st) != 0)
        return err_set(e, errno == ENOENT ? RC_ENOTFOUND : RC_EUNAVAIL, "",
                       "the path cannot be read");
    if (real != NULL)
        snprintf(real, real_size, "%s", res);
    if (S_ISDIR(st.st_mode))
        return manifest_dir(res, lim, out, e);
    if (!S_ISREG(st.st_mode))
        return outside(e, "the path is neither a directory nor a regular file");
    /* A resolved absolute path other than "/" has a last '/' with a name after it. */
    slash = strrchr(res, '/');
    if (slash == NULL || slash[1] == '\0')
        return outside(e, "the path is neither a directory nor a regular file");
    *slash = '\0';
    return manifest_file(res[0] ? res : "/", slash + 1, lim, out, e);
}
