/*
 * templates_set.c - the loaded templates (see templates.h): reading a
 * directory's files with a size cap, each through tpl_parse(), sorted by
 * file name and then stably by "order", kept in one array of public forms;
 * and the read-only lookups. Lookups hand out deep copies, so no request
 * ever touches a reference count of the shared set.
 *
 * Thread-safety: a set is built on the main thread before threads start and
 * is immutable afterwards (templates.h).
 */
#include "templates.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json_check.h"
#include "log.h"
#include "templates_int.h"

struct tpl_set {
    json_t *list; /* array of public forms, owned; never NULL once loaded */
};

/* Read a whole regular file of at most TPL_MAX_FILE_BYTES into *buf (owned,
 * free()). RC_EINVAL with e's message for the reason it cannot be used. */
static enum rc read_file(const char *path, char **buf, size_t *len, struct err *e)
{
    struct stat st;
    char *b = NULL;
    size_t got = 0;
    int fd = -1;
    enum rc rc = RC_EINVAL;

    *buf = NULL;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || fstat(fd, &st) != 0) {
        err_set(e, RC_EINVAL, "", "cannot read the file: %s", strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        err_set(e, RC_EINVAL, "", "not a regular file");
        goto out;
    }
    if (st.st_size > TPL_MAX_FILE_BYTES) {
        err_set(e, RC_EINVAL, "", "the file is larger than %d bytes", TPL_MAX_FILE_BYTES);
        goto out;
    }
    /* One byte more than allowed, to see a file that grew since fstat. */
    if ((b = malloc(TPL_MAX_FILE_BYTES + 1)) == NULL) {
        rc = tpl_oom(e);
        goto out;
    }
    for (;;) {
        ssize_t n = read(fd, b + got, TPL_MAX_FILE_BYTES + 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err_set(e, RC_EINVAL, "", "cannot read the file: %s", strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        got += (size_t)n;
        if (got > TPL_MAX_FILE_BYTES) {
            err_set(e, RC_EINVAL, "", "the file is larger than %d bytes", TPL_MAX_FILE_BYTES);
            goto out;
        }
    }
    *buf = b;
    *len = got;
    b = NULL;
    rc = RC_OK;
out:
    free(b);
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Prefix e's message with the file's path, so the operator knows which. */
static enum rc in_file(struct err *e, const char *path, enum rc rc)
{
    char msg[sizeof(e->message)];

    if (e == NULL)
        return rc;
    snprintf(msg, sizeof(msg), "%s", e->message);
    snprintf(e->message, sizeof(e->message), "%s: %s", path, msg);
    return rc;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted "*.json" names of dir (each and the array owned, free()). */
static enum rc list_dir(const char *dir, char ***names, size_t *count, struct err *e)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char **v = NULL;
    size_t n = 0;
    enum rc rc = RC_EINVAL;

    *names = NULL;
    *count = 0;
    if (d == NULL) {
        err_set(e, RC_EINVAL, "templates_dir", "%s: cannot open the templates directory: %s", dir,
                strerror(errno));
        return RC_EINVAL;
    }
    if ((v = calloc(TPL_MAX_TEMPLATES, sizeof(*v))) == NULL) {
        rc = tpl_oom(e);
        goto out;
    }
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] == '.' || len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        if (n == TPL_MAX_TEMPLATES) {
            err_set(e, RC_EINVAL, "templates_dir", "%s: more than %d template files", dir,
                    TPL_MAX_TEMPLATES);
            goto out;
        }
        if ((v[n] = strdup(de->d_name)) == NULL) {
            rc = tpl_oom(e);
            goto out;
        }
        n++;
    }
    qsort(v, n, sizeof(*v), name_cmp);
    *names = v;
    *count = n;
    v = NULL;
    rc = RC_OK;
out:
    for (size_t i = 0; v != NULL && i < n; i++)
        free(v[i]);
    free(v);
    closedir(d);
    return rc;
}

/* Warn when the template's script is not a regular file on this host. */
static void check_script(const json_t *tpl, const char *path)
{
    const char *script = json_string_value(json_object_get(tpl, "script"));
    const char *file = json_string_value(
        json_array_get(json_object_get(tpl, "base_command"), 1)); /* after the interpreter */
    struct stat st;

    if (script == NULL || file == NULL)
        return;
    if (stat(file, &st) != 0 || !S_ISREG(st.st_mode))
        LOG_WARN("templates", "the template's script is not on this host; it must be on every node",
                 "file=\"%s\" script=\"%s\"", path, file);
}

/* Order set->list by "order", keeping file-name order among equals (a
 * stable selection: at most TPL_MAX_TEMPLATES entries). */
static enum rc sort_by_order(struct tpl_set *set, struct err *e)
{
    size_t n = json_array_size(set->list);
    json_t *sorted = json_array();
    char taken[TPL_MAX_TEMPLATES] = {0};

    if (sorted == NULL)
        return tpl_oom(e);
    for (size_t k = 0; k < n && k < TPL_MAX_TEMPLATES; k++) {
        size_t best = n;
        for (size_t i = 0; i < n && i < TPL_MAX_TEMPLATES; i++) {
            json_int_t o =
                json_integer_value(json_object_get(json_array_get(set->list, i), "order"));
            if (!taken[i] && (best == n || o < json_integer_value(json_object_get(
                                                   json_array_get(set->list, best), "order"))))
                best = i;
        }
        taken[best] = 1;
        if (json_array_append(sorted, json_array_get(set->list, best)) != 0) {
            json_decref(sorted);
            return tpl_oom(e);
        }
    }
    json_decref(set->list);
    set->list = sorted;
    return RC_OK;
}

enum rc tpl_set_load(const char *dir, const char *examples_dir, struct tpl_set **out, struct err *e)
{
    struct tpl_set *set = NULL;
    char **names = NULL, *text = NULL, path[4096];
    size_t count = 0, len = 0;
    json_t *tpl = NULL;
    enum rc rc = RC_ENOMEM;

    *out = NULL;
    if ((set = calloc(1, sizeof(*set))) == NULL || (set->list = json_array()) == NULL) {
        rc = tpl_oom(e);
        goto out;
    }
    if (dir != NULL && dir[0] != '\0' && (rc = list_dir(dir, &names, &count, e)) != RC_OK)
        goto out;
    for (size_t i = 0; i < count; i++) {
        size_t k;
        json_t *seen;

        if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, names[i]) >= sizeof(path)) {
            rc = err_set(e, RC_EINVAL, "templates_dir", "%s: the path is too long", names[i]);
            goto out;
        }
        if ((rc = read_file(path, &text, &len, e)) != RC_OK ||
            (rc = tpl_parse(text, len, examples_dir, &tpl, e)) != RC_OK) {
            rc = in_file(e, path, rc);
            goto out;
        }
        json_array_foreach(set->list, k, seen)
        {
            if (json_equal(json_object_get(seen, "id"), json_object_get(tpl, "id"))) {
                rc = in_file(e, path,
                             jcheck_bad(e, "id", json_object_get(tpl, "id"),
                                        "another template file has this id already"));
                goto out;
            }
        }
        check_script(tpl, path);
        if (json_array_append_new(set->list, tpl) != 0) {
            tpl = NULL;
            rc = tpl_oom(e);
            goto out;
        }
        tpl = NULL;
        free(text);
        text = NULL;
    }
    if ((rc = sort_by_order(set, e)) != RC_OK)
        goto out;
    *out = set;
    set = NULL;
    rc = RC_OK;
out:
    json_decref(tpl);
    free(text);
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
    tpl_set_free(set);
    return rc;
}

void tpl_set_free(struct tpl_set *set)
{
    if (set == NULL)
        return;
    json_decref(set->list);
    free(set);
}

size_t tpl_set_count(const struct tpl_set *set)
{
    return set != NULL ? json_array_size(set->list) : 0;
}

json_t *tpl_set_list(const struct tpl_set *set)
{
    return set != NULL ? json_deep_copy(set->list) : json_array();
}

enum rc tpl_set_get(const struct tpl_set *set, const char *id, json_t **out)
{
    size_t i;
    json_t *t;

    *out = NULL;
    if (set == NULL)
        return RC_ENOTFOUND;
    json_array_foreach(set->list, i, t)
    {
        if (strcmp(json_string_value(json_object_get(t, "id")), id) == 0) {
            *out = json_deep_copy(t);
            return *out != NULL ? RC_OK : RC_ENOMEM;
        }
    }
    return RC_ENOTFOUND;
}
