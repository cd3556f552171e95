/*
 * ident.c - the job account the ranks run as (see ident.h).
 *
 * The switch in the child uses raw system calls: glibc's setresuid() and
 * friends broadcast to every thread of a threaded process (the setxid
 * signal), which has no place in the child of a fork, and capset has no
 * libc wrapper at all.
 */
#include "ident.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "unixname.h"

int wrk_ident_name_valid(const char *s)
{
    return unixname_valid(s);
}

int wrk_ident_listed(const char *name, const char (*names)[WRK_IDENT_NAME_MAX + 1], size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

enum rc wrk_ident_parse_list(const char *csv, char (*names)[WRK_IDENT_NAME_MAX + 1], size_t max,
                             size_t *n, struct err *e)
{
    const char *p = csv != NULL ? csv : "";

    *n = 0;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        char name[WRK_IDENT_NAME_MAX + 2];

        if (len == 0 || len > WRK_IDENT_NAME_MAX)
            return err_set(e, RC_EINVAL, NULL, "--job-users: empty or too long account name");
        memcpy(name, p, len);
        name[len] = '\0';
        if (!wrk_ident_name_valid(name) || strcmp(name, WRK_IDENT_SELF) == 0)
            return err_set(e, RC_EINVAL, NULL, "--job-users: \"%s\" is not an account name", name);
        if (!wrk_ident_listed(name, (const char(*)[WRK_IDENT_NAME_MAX + 1]) names, *n)) {
            if (*n >= max)
                return err_set(e, RC_EINVAL, NULL, "--job-users: at most %zu accounts", max);
            memcpy(names[(*n)++], name, len + 1);
        }
        if (end == NULL)
            return RC_OK;
        p = end + 1;
    }
}

int wrk_ident_status_can_switch(const char *status)
{
    const char *l = status != NULL ? strstr(status, "\nCapEff:") : NULL;
    unsigned long long caps;
    char *end;

    if (l == NULL)
        return 0;
    errno = 0;
    caps = strtoull(l + strlen("\nCapEff:"), &end, 16);
    if (errno != 0 || end == l + strlen("\nCapEff:"))
        return 0;
    return (caps & (1ULL << CAP_SETUID)) != 0 && (caps & (1ULL << CAP_SETGID)) != 0;
}

int wrk_ident_can_switch(void)
{
    char buf[4096];
    size_t n;
    FILE *f;

    if (geteuid() == 0)
        return 1;
    f = fopen("/proc/self/status", "re");
    if (f == NULL)
        return 0;
    buf[0] = '\n'; /* so the first line matches "\nName:" style lookups too */
    n = fread(buf + 1, 1, sizeof(buf) - 2, f);
    fclose(f);
    buf[n + 1] = '\0';
    return wrk_ident_status_can_switch(buf);
}

enum rc wrk_ident_resolve(const char *name, struct wrk_ident *out, struct err *e)
{
    struct passwd pw, *res = NULL;
    struct stat st;
    char buf[4096];
    int ng = WRK_IDENT_MAX_GROUPS, r;

    memset(out, 0, sizeof(*out));
    if (!wrk_ident_name_valid(name))
        return err_set(e, RC_EINVAL, NULL, "\"%s\" is not an account name", name);
    r = getpwnam_r(name, &pw, buf, sizeof(buf), &res);
    if (r != 0)
        return err_set(e, RC_EUNAVAIL, NULL, "cannot look up the account %s: %s", name,
                       strerror(r));
    if (res == NULL)
        return err_set(e, RC_ENOTFOUND, NULL,
                       "the job account %s does not exist: create it with \"useradd --system "
                       "--no-create-home --shell /usr/sbin/nologin %s\"",
                       name, name);
    if (pw.pw_uid == 0 || pw.pw_uid == geteuid())
        return err_set(e, RC_EPOLICY, NULL,
                       "the job account %s is %s: ranks must not run as root or as the worker",
                       name, pw.pw_uid == 0 ? "root (uid 0)" : "the worker's own user");
    out->switch_ids = 1;
    out->uid = pw.pw_uid;
    out->gid = pw.pw_gid;
    snprintf(out->name, sizeof(out->name), "%s", name);
    if (pw.pw_dir != NULL && stat(pw.pw_dir, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(out->home, sizeof(out->home), "%s", pw.pw_dir);
    if (getgrouplist(name, pw.pw_gid, out->groups, &ng) < 0) {
        /* more groups than a rank gets: keep the primary one only */
        LOG_WARN("agent", "job account in too many groups, keeping its primary group", "account=%s",
                 name);
        out->groups[0] = pw.pw_gid;
        ng = 1;
    }
    out->ngroups = ng;
    return RC_OK;
}

int wrk_ident_switch(const struct wrk_ident *id)
{
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];

    if (id == NULL || !id->switch_ids)
        return 0;
    if (syscall(SYS_setgroups, (size_t)id->ngroups, id->groups) != 0 ||
        syscall(SYS_setresgid, id->gid, id->gid, id->gid) != 0 ||
        syscall(SYS_setresuid, id->uid, id->uid, id->uid) != 0)
        return -1;
    /* A worker running as a non-root user with CAP_SETUID keeps its
     * capabilities across that setresuid; none may reach the rank. */
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
        return -1;
    memset(data, 0, sizeof(data));
    if (syscall(SYS_capset, &hdr, data) != 0)
        return -1;
    if (syscall(SYS_getuid) != (long)id->uid || syscall(SYS_geteuid) != (long)id->uid) {
        errno = EPERM;
        return -1;
    }
    return 0;
}

int wrk_ident_call(const struct wrk_ident *id, int (*fn)(void *), void *arg)
{
    sigset_t all, old;
    pid_t pid;
    int st, r;

    if (id == NULL || !id->switch_ids)
        return fn(arg);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid = fork();
    if (pid == 0) {
        r = wrk_ident_switch(id) != 0 ? errno : fn(arg);
        _exit(r > 0 && r < 256 ? r : (r == 0 ? 0 : EIO));
    }
    r = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0)
        return r;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return EIO;
    if (!WIFEXITED(st))
        return EIO;
    return WEXITSTATUS(st);
}
