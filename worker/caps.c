/*
 * caps.c - the Python capability probe (see caps.h).
 *
 * The child leads its own process group, so a probe stuck in an import
 * (a hung NFS site-packages, a CUDA driver call) is killed with whatever it
 * started. Its exit is observed with waitid(WNOWAIT) first: while it is an
 * unreaped zombie its pid, and so its group id, cannot be reused, and only
 * then does the final SIGKILL to the group go out.
 */
#include "caps.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define OUT_MAX 65536 /* stdout kept; the probe prints one short line */

/*
 * Python 3 only, no f-strings past 3.6, nothing that touches a GPU:
 * torch.version.cuda is how torch was built, not whether a GPU answers.
 * find_spec("deepspeed") says installed without importing it (importing
 * DeepSpeed compiles ops and takes seconds). Every step is guarded so that
 * one broken package still gives the rest.
 */
static const char PROBE_PY[] =
    "import json, sys\n"
    "r = {'python': '%d.%d.%d' % tuple(sys.version_info[:3]), 'torch': None,\n"
    "     'torch_cuda': None, 'nccl': False, 'fsdp': False, 'deepspeed': False}\n"
    "try:\n"
    "    import importlib.util\n"
    "    r['deepspeed'] = importlib.util.find_spec('deepspeed') is not None\n"
    "except Exception:\n"
    "    pass\n"
    "try:\n"
    "    import torch\n"
    "    r['torch'] = str(torch.__version__)\n"
    "    c = getattr(torch.version, 'cuda', None)\n"
    "    r['torch_cuda'] = str(c) if c else None\n"
    "    import torch.distributed as dist\n"
    "    r['nccl'] = bool(dist.is_available() and dist.is_nccl_available())\n"
    "    try:\n"
    "        import torch.distributed.fsdp\n"
    "        r['fsdp'] = True\n"
    "    except Exception:\n"
    "        pass\n"
    "except Exception:\n"
    "    pass\n"
    "sys.stdout.write('" WRK_CAPS_MARKER "' + json.dumps(r) + '\\n')\n";

const char *wrk_caps_script(void)
{
    return PROBE_PY;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A printable string of 1..max bytes, or (null_ok) null. */
static int ok_str(const json_t *v, size_t max, int null_ok)
{
    const char *s;
    size_t n;

    if (json_is_null(v))
        return null_ok;
    if (!json_is_string(v))
        return 0;
    s = json_string_value(v);
    n = json_string_length(v);
    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isprint((unsigned char)s[i]))
            return 0;
    return 1;
}

static json_t *unknown(const char *probe)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "probe", probe, "python", "unknown",
                     "torch", "unknown", "torch_cuda", "unknown", "nccl", "unknown", "fsdp",
                     "unknown", "deepspeed", "unknown");
}

json_t *wrk_caps_parse(const char *text, const char *probe)
{
    static const char *const bools[] = {"nccl", "fsdp", "deepspeed"};
    const char *line = NULL, *p = text;
    size_t mlen = strlen(WRK_CAPS_MARKER);
    json_t *j = NULL, *o;

    if (strcmp(probe, "ok") != 0)
        return unknown(probe);
    if (text == NULL)
        return unknown("failed");
    /* The last marked line: anything a package printed before it is noise. */
    while (p != NULL && *p != '\0') {
        if (strncmp(p, WRK_CAPS_MARKER, mlen) == 0)
            line = p + mlen;
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    if (line != NULL)
        j = json_loadb(line, strcspn(line, "\n"), JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(j) || !ok_str(json_object_get(j, "python"), 32, 0) ||
        !ok_str(json_object_get(j, "torch"), 64, 1) ||
        !ok_str(json_object_get(j, "torch_cuda"), 32, 1))
        goto failed;
    for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++)
        if (!json_is_boolean(json_object_get(j, bools[i])))
            goto failed;
    o = json_pack("{s:s, s:O, s:O, s:O, s:O, s:O, s:O}", "probe", "ok", "python",
                  json_object_get(j, "python"), "torch", json_object_get(j, "torch"), "torch_cuda",
                  json_object_get(j, "torch_cuda"), "nccl", json_object_get(j, "nccl"), "fsdp",
                  json_object_get(j, "fsdp"), "deepspeed", json_object_get(j, "deepspeed"));
    json_decref(j);
    return o;
failed:
    json_decref(j);
    return unknown("failed");
}

/* "K=V" into env[*n] (bounded by the caller's array); a NULL value is skipped. */
static void env_add(char **env, size_t *n, const char *k, const char *v)
{
    size_t len;

    if (v == NULL)
        return;
    len = strlen(k) + strlen(v) + 2;
    if ((env[*n] = malloc(len)) != NULL) {
        snprintf(env[*n], len, "%s=%s", k, v);
        (*n)++;
    }
}

/* Spawn the probe; its stdout's read end in *fd. 0 or -1. */
static int spawn_probe(const char *python, char **envp, pid_t *pid, int *fd)
{
    char *argv[] = {(char *)python, "-c", (char *)PROBE_PY, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, def;
    int pfd[2] = {-1, -1}, r = -1, fa_ok = 0, at_ok = 0;

    if (pipe2(pfd, O_CLOEXEC) != 0)
        return -1;
    if (posix_spawn_file_actions_init(&fa) != 0)
        goto out;
    fa_ok = 1;
    if (posix_spawnattr_init(&at) != 0)
        goto out;
    at_ok = 1;
    sigemptyset(&none);
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE); /* the worker ignores it; python must not */
    sigaddset(&def, SIGTERM);
    sigaddset(&def, SIGINT);
    if (posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) != 0 ||
        posix_spawn_file_actions_adddup2(&fa, pfd[1], 1) != 0 ||
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0) != 0 ||
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                          POSIX_SPAWN_SETSIGDEF) != 0 ||
        posix_spawnattr_setpgroup(&at, 0) != 0 || posix_spawnattr_setsigmask(&at, &none) != 0 ||
        posix_spawnattr_setsigdefault(&at, &def) != 0)
        goto out;
    if ((r = posix_spawnp(pid, python, &fa, &at, argv, envp)) != 0) {
        LOG_WARN("caps", "cannot start the python probe", "python=%s error=\"%s\"", python,
                 strerror(r));
        r = -1;
        goto out;
    }
    *fd = pfd[0];
    pfd[0] = -1;
    r = 0;
out:
    if (fa_ok)
        posix_spawn_file_actions_destroy(&fa);
    if (at_ok)
        posix_spawnattr_destroy(&at);
    if (pfd[0] >= 0)
        close(pfd[0]);
    close(pfd[1]);
    return r;
}

/*
 * Read fd until EOF or the deadline; then wait for pid's exit until the
 * deadline. Returns 1 when it exited with status 0, 0 when it failed, -1 on
 * timeout. The group is killed and the child reaped in every case.
 */
static int collect(pid_t pid, int fd, int64_t deadline, char *out, size_t *len)
{
    siginfo_t si;
    int ret = -1;

    for (;;) {
        int64_t left = deadline - mono_ms();
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t n;
        char buf[4096];
        if (left <= 0)
            goto kill;
        if (poll(&p, 1, (int)left) < 0) {
            if (errno == EINTR)
                continue;
            goto kill;
        }
        if (p.revents == 0)
            continue;
        n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (*len < OUT_MAX - 1) {
            size_t k = (size_t)n < OUT_MAX - 1 - *len ? (size_t)n : OUT_MAX - 1 - *len;
            memcpy(out + *len, buf, k);
            *len += k;
        }
    }
    /* stdout closed: the probe is ending (or closed it on purpose and hangs). */
    for (;;) {
        memset(&si, 0, sizeof(si));
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) {
            ret = si.si_code == CLD_EXITED && si.si_status == 0;
            break;
        }
        if (mono_ms() >= deadline)
            break;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
kill:
    kill(-pid, SIGKILL); /* the group: leftovers, or the whole probe on timeout */
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    return ret;
}

static const char *bool_str(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_boolean(v) ? (json_is_true(v) ? "true" : "false") : "unknown";
}

enum rc wrk_caps_probe(const char *python, int timeout_ms, json_t **out)
{
    char *env[8] = {NULL};
    size_t nenv = 0;
    char *text = NULL;
    size_t len = 0;
    pid_t pid = -1;
    int fd = -1, r;
    const char *how = "failed";
    int64_t t0 = mono_ms();

    *out = NULL;
    env_add(env, &nenv, "PATH", getenv("PATH"));
    env_add(env, &nenv, "HOME", getenv("HOME"));
    env_add(env, &nenv, "LANG", getenv("LANG"));
    env_add(env, &nenv, "PYTHONPATH", getenv("PYTHONPATH"));
    env_add(env, &nenv, "HF_HUB_OFFLINE", "1");
    env_add(env, &nenv, "TRANSFORMERS_OFFLINE", "1");
    text = calloc(1, OUT_MAX);
    if (text == NULL)
        goto done;
    if (python == NULL || python[0] == '\0')
        how = "skipped"; /* --python "": the operator turned the probe off */
    else if (spawn_probe(python, env, &pid, &fd) == 0) {
        r = collect(pid, fd, t0 + timeout_ms, text, &len);
        close(fd);
        how = r == 1 ? "ok" : r == 0 ? "failed" : "timeout";
    }
    text[len] = '\0';
    *out = wrk_caps_parse(strcmp(how, "ok") == 0 ? text : NULL, how);
    if (*out != NULL) {
        const char *t = json_string_value(json_object_get(*out, "torch"));
        LOG_INFO("caps", "python probe", "python=%s probe=%s torch=%s fsdp=%s deepspeed=%s ms=%lld",
                 python ? python : "", how, t ? t : "none", bool_str(*out, "fsdp"),
                 bool_str(*out, "deepspeed"), (long long)(mono_ms() - t0));
    }
done:
    for (size_t i = 0; i < nenv; i++)
        free(env[i]);
    free(text);
    return *out != NULL ? RC_OK : RC_ENOMEM;
}
