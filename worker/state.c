/*
 * state.c - the state file (see state.h). JSON shape:
 *   {"version":1,"attempts":[{"attempt_id":"31","job_id":"7","node_rank":0,
 *    "grace_s":30,"report_ranks":[0,1],
 *    "procs":[{"rank":0,"pid":4242,"pgid":4242,"starttime":123456}]}]}
 */
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#define STATE_MAX_BYTES (4 * 1024 * 1024)

enum rc wrk_state_new(struct wrk_state **out)
{
    *out = calloc(1, sizeof(**out));
    return *out == NULL ? RC_ENOMEM : RC_OK;
}

enum rc wrk_state_add(struct wrk_state *s, const struct wrk_state_attempt *a)
{
    struct wrk_state_attempt *na = realloc(s->attempts, (s->n + 1) * sizeof(*na));
    if (na == NULL)
        return RC_ENOMEM;
    s->attempts = na;
    s->attempts[s->n++] = *a;
    return RC_OK;
}

void wrk_state_free(struct wrk_state *s)
{
    if (s == NULL)
        return;
    free(s->attempts);
    free(s);
}

static json_t *attempt_json(const struct wrk_state_attempt *a)
{
    json_t *procs = json_array(), *rr = json_array();
    for (size_t i = 0; procs != NULL && i < a->nprocs; i++)
        json_array_append_new(procs, json_pack("{s:i, s:I, s:I, s:I}", "rank", a->procs[i].rank,
                                               "pid", (json_int_t)a->procs[i].pid, "pgid",
                                               (json_int_t)a->procs[i].pgid, "starttime",
                                               (json_int_t)a->procs[i].starttime));
    for (size_t i = 0; rr != NULL && i < a->nreport; i++)
        json_array_append_new(rr, json_integer(a->report_ranks[i]));
    return json_pack("{s:s, s:s, s:i, s:i, s:o*, s:o*}", "attempt_id", a->attempt_id, "job_id",
                     a->job_id, "node_rank", a->node_rank, "grace_s", a->grace_s, "report_ranks",
                     rr, "procs", procs);
}

enum rc wrk_state_save(const char *path, const struct wrk_state *s)
{
    enum rc rc = RC_EUNAVAIL;
    json_t *root = NULL, *arr = json_array();
    char *text = NULL;
    char tmp[4200];
    int fd = -1;
    size_t len, off = 0;

    if (arr == NULL)
        return RC_ENOMEM;
    for (size_t i = 0; i < s->n; i++) {
        json_t *o = attempt_json(&s->attempts[i]);
        if (o == NULL || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            return RC_ENOMEM;
        }
    }
    root = json_pack("{s:i, s:o}", "version", 1, "attempts", arr);
    if (root == NULL)
        return RC_ENOMEM;
    text = json_dumps(root, JSON_COMPACT);
    if (text == NULL) {
        rc = RC_ENOMEM;
        goto out;
    }
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        goto out;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        goto out;
    len = strlen(text);
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            goto out;
        off += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        fd = -1;
        goto out;
    }
    fd = -1;
    if (rename(tmp, path) != 0)
        goto out;
    rc = RC_OK;
out:
    if (fd >= 0) {
        close(fd);
        unlink(tmp);
    }
    free(text);
    json_decref(root);
    return rc;
}

int wrk_file_write_atomic_at(const char *path, const char *tmp, const char *text, size_t len,
                             mode_t mode)
{
    size_t off = 0;
    int fd, r;

    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return errno;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            r = w < 0 ? errno : EIO;
            close(fd);
            unlink(tmp);
            return r;
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        r = errno;
        unlink(tmp);
        return r;
    }
    return 0;
}

enum rc wrk_file_write_atomic(const char *path, const char *text, mode_t mode)
{
    char tmp[PATH_MAX + 8];

    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return RC_EINVAL;
    return wrk_file_write_atomic_at(path, tmp, text, strlen(text), mode) == 0 ? RC_OK : RC_EUNAVAIL;
}

static int json_int_in(const json_t *o, const char *k, json_int_t lo, json_int_t hi, json_int_t *v)
{
    const json_t *x = json_object_get(o, k);
    if (!json_is_integer(x) || json_integer_value(x) < lo || json_integer_value(x) > hi)
        return 0;
    *v = json_integer_value(x);
    return 1;
}

/* Fill a from o; 0 if o is unusable. */
static int attempt_from_json(const json_t *o, struct wrk_state_attempt *a)
{
    const char *id = json_string_value(json_object_get(o, "attempt_id"));
    const char *job = json_string_value(json_object_get(o, "job_id"));
    const json_t *procs = json_object_get(o, "procs"), *rr = json_object_get(o, "report_ranks");
    json_int_t v;

    memset(a, 0, sizeof(*a));
    if (!wrk_id_valid(id) || !wrk_id_valid(job))
        return 0;
    snprintf(a->attempt_id, sizeof(a->attempt_id), "%s", id);
    snprintf(a->job_id, sizeof(a->job_id), "%s", job);
    if (!json_int_in(o, "node_rank", 0, INT32_MAX, &v))
        return 0;
    a->node_rank = (int)v;
    a->grace_s = json_int_in(o, "grace_s", 0, 3600, &v) ? (int)v : 30;
    if (!json_is_array(procs) || json_array_size(procs) > WRK_MAX_RANKS ||
        json_array_size(rr) > WRK_MAX_RANKS)
        return 0;
    for (size_t i = 0; i < json_array_size(procs); i++) {
        const json_t *p = json_array_get(procs, i);
        struct wrk_state_proc *sp = &a->procs[a->nprocs];
        json_int_t rank, pid, pgid, st;
        if (!json_int_in(p, "rank", 0, INT32_MAX, &rank) ||
            !json_int_in(p, "pid", 2, INT32_MAX, &pid) ||
            !json_int_in(p, "pgid", 2, INT32_MAX, &pgid) ||
            !json_int_in(p, "starttime", 0, INT64_MAX, &st))
            continue;
        sp->rank = (int)rank;
        sp->pid = (pid_t)pid;
        sp->pgid = (pid_t)pgid;
        sp->starttime = (uint64_t)st;
        a->nprocs++;
    }
    for (size_t i = 0; i < json_array_size(rr); i++)
        if (json_is_integer(json_array_get(rr, i)))
            a->report_ranks[a->nreport++] = (int)json_integer_value(json_array_get(rr, i));
    return a->nprocs > 0;
}

enum rc wrk_state_load(const char *path, struct wrk_state **out)
{
    enum rc rc;
    struct wrk_state *s = NULL;
    json_t *root = NULL;
    const json_t *arr;
    json_error_t jerr;
    FILE *f;

    *out = NULL;
    if ((rc = wrk_state_new(&s)) != RC_OK)
        return rc;
    f = fopen(path, "re");
    if (f == NULL) {
        if (errno != ENOENT) {
            wrk_state_free(s);
            return RC_EUNAVAIL;
        }
        *out = s;
        return RC_OK;
    }
    root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
    fclose(f);
    arr = json_object_get(root, "attempts");
    if (!json_is_object(root) || !json_is_array(arr)) {
        rc = RC_EINVAL;
        goto out;
    }
    for (size_t i = 0; i < json_array_size(arr) && i < 1024; i++) {
        struct wrk_state_attempt a;
        if (!attempt_from_json(json_array_get(arr, i), &a))
            continue;
        if ((rc = wrk_state_add(s, &a)) != RC_OK)
            goto out;
    }
    *out = s;
    s = NULL;
    rc = RC_OK;
out:
    json_decref(root);
    wrk_state_free(s);
    return rc;
}

/* Parse /proc/<pid>/stat: state (field 3), process group (field 5) and starttime (field 22). */
static enum rc proc_stat(pid_t pid, char *state, pid_t *pgid, uint64_t *starttime)
{
    char path[64], buf[1024];
    FILE *f;
    size_t n;
    char *p;
    unsigned long long st;
    int pg;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "re");
    if (f == NULL)
        return RC_ENOTFOUND;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* comm may hold spaces and parentheses: the last ')' ends it. */
    p = strrchr(buf, ')');
    if (p == NULL)
        return RC_ENOTFOUND;
    p++;
    /* fields 3..22: state, ppid, pgrp, then 16 numbers, then starttime */
    if (sscanf(p, " %c %*d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
               state, &pg, &st) != 3)
        return RC_ENOTFOUND;
    *pgid = (pid_t)pg;
    *starttime = st;
    return RC_OK;
}

enum rc wrk_proc_starttime(pid_t pid, uint64_t *out)
{
    char st;
    pid_t pg;
    return proc_stat(pid, &st, &pg, out);
}

enum rc wrk_proc_pgid(pid_t pid, pid_t *out)
{
    char st;
    uint64_t t;
    return pid > 0 ? proc_stat(pid, &st, out, &t) : RC_ENOTFOUND;
}

int wrk_proc_alive(pid_t pid, uint64_t starttime)
{
    char st = 0;
    uint64_t t = 0;
    pid_t pg;
    if (pid <= 1 || proc_stat(pid, &st, &pg, &t) != RC_OK)
        return 0;
    return t == starttime && st != 'Z' && st != 'X';
}
