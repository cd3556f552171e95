/*
 * launcher.c - spawn, watch, reap and kill rank processes (see launcher.h).
 *
 * Threading model: one I/O thread per launcher. The attempt list and the
 * status fields of each process (done, exit_code, signal, termination state)
 * are guarded by l->mu; pipe descriptors and line buffers belong to the I/O
 * thread alone. Only the I/O thread removes and frees attempts, so the
 * pointers it collected for poll() stay valid without the lock. The lock is
 * never held across a fork, a callback or a read.
 *
 * Process groups: every rank leads its own group, so kill(-pgid) reaches the
 * rank and whatever it forked (data loader workers, shells). An unreaped
 * child (a zombie at worst) keeps its pid and group id reserved, so signals
 * sent before waitpid() reports it cannot hit a recycled pid. When a whole
 * attempt has ended, a last SIGKILL goes to each group to take down
 * leftovers, so no orphan keeps running unseen.
 */
#include "launcher.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#if __has_include(<linux/close_range.h>)
#include <linux/close_range.h>
#endif
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "netns.h"
#include "pathpol.h"
#include "utf8cut.h"

#define POLL_MS 100
/* After the last rank ended, wait at most this long for its pipes to close. */
#define DRAIN_MS 2000

struct linebuf {
    char buf[WRK_LINE_MAX];
    size_t len;
};

struct lproc {
    int rank;
    pid_t pid;
    pid_t pgid;
    uint64_t starttime;
    int adopted;           /* started by an earlier worker: not our child */
    int fd[2];             /* stdout, stderr read ends; -1 when closed (I/O thread) */
    struct linebuf *lb[2]; /* I/O thread */
    uint64_t seq[2];       /* I/O thread */
    int tee;               /* torchrun: lines may carry a rank's header (plan's torchrun_tee) */
    int done;              /* under mu */
    int exit_code;         /* under mu */
    int signal;            /* under mu */
    uint64_t gpu_peak;     /* under mu: bytes, wrk_launcher_note_gpu_mem(); 0 = never seen */
};

struct lattempt {
    struct lattempt *next;
    char attempt_id[WRK_ID_MAX + 1];
    char job_id[WRK_ID_MAX + 1];
    int node_rank;
    int grace_s;
    size_t nprocs;
    struct lproc procs[WRK_MAX_RANKS];
    size_t nreport;
    int report_ranks[WRK_MAX_RANKS];
    uint64_t tee_seq[WRK_MAX_RANKS][2]; /* I/O thread: per report rank, of a torchrun process */
    size_t ngpus;
    int gpus[WRK_MAX_GPUS];
    int64_t deadline_ms; /* monotonic; 0 = no time limit */
    int terminating;     /* SIGTERM sent */
    int64_t kill_at_ms;  /* monotonic time of the SIGKILL */
    int killed;          /* SIGKILL sent */
    int64_t all_done_ms; /* when the last process ended; 0 before */
    char reason[256];
    char reason_code[RSN_CODE_MAX + 1]; /* with reason: common/reason_codes.h */
    char reason_params[96];             /* with reason: a JSON object of integers */
    int adopted;
};

struct wrk_launcher {
    pthread_mutex_t mu;
    struct lattempt *head; /* under mu */
    uint64_t gen;          /* under mu */
    int wake[2];           /* self-pipe: new attempt */
    pthread_t thr;
    atomic_int stop;
    struct wrk_launcher_cb cb;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void signal_proc(const struct lproc *p, int sig)
{
    if (p->pgid <= 1)
        return;
    if (p->adopted && !wrk_proc_alive(p->pid, p->starttime))
        return; /* the pid may have been recycled */
    if (kill(-p->pgid, sig) != 0 && errno != ESRCH)
        LOG_WARN("launch", "kill failed", "pgid=%d sig=%d errno=%d", (int)p->pgid, sig, errno);
}

/* Under mu: SIGTERM the live processes and arm the SIGKILL. */
static void terminate_locked(struct lattempt *a, const char *code, const char *params,
                             const char *reason, int grace_s)
{
    if (a->terminating)
        return;
    a->terminating = 1;
    a->kill_at_ms = mono_ms() + (int64_t)(grace_s >= 0 ? grace_s : a->grace_s) * 1000;
    if (a->reason[0] == '\0') {
        utf8_copy(a->reason, sizeof(a->reason), reason);
        snprintf(a->reason_code, sizeof(a->reason_code), "%s", code);
        snprintf(a->reason_params, sizeof(a->reason_params), "%s", params);
    }
    for (size_t i = 0; i < a->nprocs; i++)
        if (!a->procs[i].done)
            signal_proc(&a->procs[i], SIGTERM);
    LOG_INFO("launch", "attempt terminating", "attempt_id=%s reason=\"%s\" grace_s=%d",
             a->attempt_id, a->reason, a->grace_s);
}

static void wake(struct wrk_launcher *l)
{
    char c = 1;
    ssize_t w = write(l->wake[1], &c, 1);
    (void)w; /* a full pipe already wakes the thread */
}

static struct lattempt *find_locked(struct wrk_launcher *l, const char *id)
{
    for (struct lattempt *a = l->head; a != NULL; a = a->next)
        if (strcmp(a->attempt_id, id) == 0)
            return a;
    return NULL;
}

static void attempt_free(struct lattempt *a)
{
    if (a == NULL)
        return;
    for (size_t i = 0; i < a->nprocs; i++) {
        for (int s = 0; s < 2; s++) {
            if (a->procs[i].fd[s] >= 0)
                close(a->procs[i].fd[s]);
            free(a->procs[i].lb[s]);
        }
    }
    free(a);
}

static struct lattempt *attempt_alloc(void)
{
    struct lattempt *a = calloc(1, sizeof(*a));
    if (a == NULL)
        return NULL;
    for (size_t i = 0; i < WRK_MAX_RANKS; i++)
        a->procs[i].fd[0] = a->procs[i].fd[1] = -1;
    return a;
}

/* ---- output ---- */

/*
 * The length of torchrun's header "[trainyard<N>]:" at the start of text,
 * with *idx = N, when N names a rank of a (report_ranks are in local rank
 * order then); else 0: torchrun's own line, or a piece of a cut line.
 */
static size_t tee_header(const struct lattempt *a, const char *text, size_t len, size_t *idx)
{
    static const char pre[] = "[" WRK_TORCHRUN_ROLE;
    size_t i = sizeof(pre) - 1, n = 0;

    if (len < i || memcmp(text, pre, i) != 0 || i >= len || !isdigit((unsigned char)text[i]))
        return 0;
    for (; i < len && isdigit((unsigned char)text[i]) && n < WRK_MAX_RANKS; i++)
        n = n * 10 + (size_t)(text[i] - '0');
    if (i + 1 >= len || text[i] != ']' || text[i + 1] != ':' || n >= a->nreport)
        return 0;
    *idx = n;
    return i + 2;
}

static void emit(struct wrk_launcher *l, struct lattempt *a, struct lproc *p, int s,
                 const char *text, size_t len)
{
    int rank = p->rank;
    uint64_t *seq = &p->seq[s];

    /* torchrun: a rank's line goes out as that rank's, without the header;
     * torchrun's own lines as local rank 0's (report_ranks[0], p->rank). One
     * seq per (rank, stream), as the protocol wants, whichever line it was. */
    if (p->tee && a->nreport > 0) {
        size_t idx = 0, skip = tee_header(a, text, len, &idx);
        text += skip;
        len -= skip;
        rank = a->report_ranks[idx];
        seq = &a->tee_seq[idx][s];
    }
    if (l->cb.on_line != NULL)
        l->cb.on_line(l->cb.ctx, a->attempt_id, rank, s == 0 ? "stdout" : "stderr", (*seq)++,
                      wall_ms(), text, len);
}

/* Split lb into lines; with final, also hand over an unterminated tail. */
static void split_lines(struct wrk_launcher *l, struct lattempt *a, struct lproc *p, int s,
                        int final)
{
    struct linebuf *lb = p->lb[s];
    size_t start = 0;

    for (size_t i = 0; i < lb->len; i++) {
        if (lb->buf[i] == '\n') {
            emit(l, a, p, s, lb->buf + start, i + 1 - start);
            start = i + 1;
        }
    }
    if (start == 0 && lb->len == sizeof(lb->buf)) {
        emit(l, a, p, s, lb->buf, lb->len); /* an over-long line: pass it on in pieces */
        start = lb->len;
    }
    if (final && start < lb->len) {
        emit(l, a, p, s, lb->buf + start, lb->len - start);
        start = lb->len;
    }
    memmove(lb->buf, lb->buf + start, lb->len - start);
    lb->len -= start;
}

/* Read what fd has (bounded per call for fairness); close it on EOF or error. */
static void read_fd(struct wrk_launcher *l, struct lattempt *a, struct lproc *p, int s)
{
    struct linebuf *lb = p->lb[s];
    for (int round = 0; round < 16 && p->fd[s] >= 0; round++) {
        ssize_t n = read(p->fd[s], lb->buf + lb->len, sizeof(lb->buf) - lb->len);
        if (n > 0) {
            lb->len += (size_t)n;
            split_lines(l, a, p, s, 0);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        split_lines(l, a, p, s, 1); /* EOF or error */
        close(p->fd[s]);
        p->fd[s] = -1;
        return;
    }
}

/* ---- reaping and deadlines (under mu) ---- */

static void fail_reason(struct lattempt *a, const struct lproc *p)
{
    char r[128], params[96];
    if (p->signal != 0) {
        snprintf(r, sizeof(r), "rank %d killed by signal %d", p->rank, p->signal);
        snprintf(params, sizeof(params), "{\"rank\":%d,\"signal\":%d}", p->rank, p->signal);
    } else {
        snprintf(r, sizeof(r), "rank %d exited with %d", p->rank, p->exit_code);
        snprintf(params, sizeof(params), "{\"rank\":%d,\"exit_code\":%d}", p->rank, p->exit_code);
    }
    terminate_locked(a, p->signal != 0 ? RSN_RANK_SIGNALLED : RSN_RANK_EXITED, params, r, -1);
}

static void check_attempt_locked(struct lattempt *a, int64_t now)
{
    int all_done = 1;

    for (size_t i = 0; i < a->nprocs; i++) {
        struct lproc *p = &a->procs[i];
        if (p->done)
            continue;
        if (p->adopted) {
            if (!wrk_proc_alive(p->pid, p->starttime)) {
                p->done = 1;
                p->exit_code = -1;
                p->signal = 0;
                if (a->reason[0] == '\0')
                    snprintf(a->reason, sizeof(a->reason), "reattached; exit status unknown");
            }
        } else {
            int st = 0;
            pid_t r = waitpid(p->pid, &st, WNOHANG);
            if (r == p->pid) {
                p->done = 1;
                if (WIFSIGNALED(st)) {
                    p->exit_code = -1;
                    p->signal = WTERMSIG(st);
                } else {
                    p->exit_code = WEXITSTATUS(st);
                }
                LOG_INFO("launch", "rank ended",
                         "attempt_id=%s rank=%d pid=%d exit_code=%d signal=%d", a->attempt_id,
                         p->rank, (int)p->pid, p->exit_code, p->signal);
                if (p->exit_code != 0 || p->signal != 0)
                    fail_reason(a, p);
            } else if (r < 0 && errno == ECHILD) {
                p->done = 1; /* cannot happen for our own child; do not spin */
                p->exit_code = -1;
            }
        }
        if (!p->done)
            all_done = 0;
    }
    if (!all_done && a->deadline_ms > 0 && now >= a->deadline_ms && !a->terminating)
        terminate_locked(a, RSN_TIME_LIMIT_EXCEEDED, "{}", "time limit exceeded", -1);
    if (!all_done && a->terminating && !a->killed && now >= a->kill_at_ms) {
        a->killed = 1;
        LOG_WARN("launch", "grace period over, killing", "attempt_id=%s", a->attempt_id);
        for (size_t i = 0; i < a->nprocs; i++)
            if (!a->procs[i].done)
                signal_proc(&a->procs[i], SIGKILL);
    }
    if (all_done && a->all_done_ms == 0) {
        a->all_done_ms = now;
        /* leftovers (grandchildren) die with their group */
        for (size_t i = 0; i < a->nprocs; i++)
            if (!a->procs[i].adopted && a->procs[i].pgid > 1)
                kill(-a->procs[i].pgid, SIGKILL);
    }
}

static int pipes_closed(const struct lattempt *a)
{
    for (size_t i = 0; i < a->nprocs; i++)
        if (a->procs[i].fd[0] >= 0 || a->procs[i].fd[1] >= 0)
            return 0;
    return 1;
}

static void build_report(const struct lattempt *a, struct wrk_exit_report *r)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->attempt_id, sizeof(r->attempt_id), "%s", a->attempt_id);
    r->node_rank = a->node_rank;
    if (a->nreport == a->nprocs || a->nreport == 0) {
        r->nranks = a->nprocs;
        for (size_t i = 0; i < a->nprocs; i++) {
            r->ranks[i].rank = a->procs[i].rank;
            r->ranks[i].exit_code = a->procs[i].exit_code;
            r->ranks[i].signal = a->procs[i].signal;
            r->ranks[i].gpu_mem_peak_bytes = a->procs[i].gpu_peak;
        }
    } else {
        /* one launcher process (torchrun) stands for all the node's ranks */
        r->nranks = a->nreport;
        for (size_t i = 0; i < a->nreport; i++) {
            r->ranks[i].rank = a->report_ranks[i];
            r->ranks[i].exit_code = a->procs[0].exit_code;
            r->ranks[i].signal = a->procs[0].signal;
        }
    }
    utf8_copy(r->reason, sizeof(r->reason), a->reason);
    snprintf(r->reason_code, sizeof(r->reason_code), "%s", a->reason_code);
    snprintf(r->reason_params, sizeof(r->reason_params), "%s", a->reason_params);
}

/* ---- the I/O thread ---- */

struct pref {
    struct lattempt *a;
    struct lproc *p;
    int s;
};

static void *io_main(void *arg)
{
    struct wrk_launcher *l = arg;
    size_t cap = 1 + 2 * WRK_MAX_RANKS;
    struct pollfd *pfd = NULL;
    struct pref *ref = NULL;

    for (;;) {
        size_t n = 1;
        struct lattempt *finished = NULL;
        int64_t now;

        pthread_mutex_lock(&l->mu);
        for (struct lattempt *a = l->head; a != NULL; a = a->next)
            n += 2 * a->nprocs;
        if (n > cap || pfd == NULL) {
            cap = n > cap ? n * 2 : cap;
            free(pfd);
            free(ref);
            pfd = calloc(cap, sizeof(*pfd));
            ref = calloc(cap, sizeof(*ref));
            if (pfd == NULL || ref == NULL) {
                pthread_mutex_unlock(&l->mu);
                LOG_ERROR("launch", "out of memory in io thread", "");
                free(pfd);
                free(ref);
                pfd = NULL;
                ref = NULL;
                cap = 1 + 2 * WRK_MAX_RANKS;
                usleep(100000);
                if (atomic_load(&l->stop))
                    break;
                continue;
            }
        }
        n = 1;
        pfd[0].fd = l->wake[0];
        pfd[0].events = POLLIN;
        for (struct lattempt *a = l->head; a != NULL; a = a->next) {
            for (size_t i = 0; i < a->nprocs; i++) {
                for (int s = 0; s < 2; s++) {
                    if (a->procs[i].fd[s] < 0)
                        continue;
                    pfd[n].fd = a->procs[i].fd[s];
                    pfd[n].events = POLLIN;
                    pfd[n].revents = 0;
                    ref[n].a = a;
                    ref[n].p = &a->procs[i];
                    ref[n].s = s;
                    n++;
                }
            }
        }
        pthread_mutex_unlock(&l->mu);
        if (atomic_load(&l->stop))
            break;

        if (poll(pfd, (nfds_t)n, POLL_MS) > 0) {
            if (pfd[0].revents & POLLIN) {
                char buf[64];
                while (read(l->wake[0], buf, sizeof(buf)) > 0) {
                }
            }
            for (size_t i = 1; i < n; i++)
                if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
                    read_fd(l, ref[i].a, ref[i].p, ref[i].s);
        }

        now = mono_ms();
        pthread_mutex_lock(&l->mu);
        for (struct lattempt **pp = &l->head; *pp != NULL;) {
            struct lattempt *a = *pp;
            check_attempt_locked(a, now);
            if (a->all_done_ms > 0 && (pipes_closed(a) || now - a->all_done_ms >= DRAIN_MS)) {
                *pp = a->next;
                a->next = finished;
                finished = a;
                l->gen++;
                continue;
            }
            pp = &a->next;
        }
        pthread_mutex_unlock(&l->mu);

        while (finished != NULL) {
            struct lattempt *a = finished;
            struct wrk_exit_report r;
            finished = a->next;
            for (size_t i = 0; i < a->nprocs; i++)
                for (int s = 0; s < 2; s++)
                    if (a->procs[i].fd[s] >= 0) {
                        read_fd(l, a, &a->procs[i], s);
                        if (a->procs[i].lb[s] != NULL)
                            split_lines(l, a, &a->procs[i], s, 1);
                    }
            build_report(a, &r);
            LOG_INFO("launch", "attempt ended", "attempt_id=%s reason=\"%s\"", a->attempt_id,
                     r.reason);
            if (l->cb.on_exit != NULL)
                l->cb.on_exit(l->cb.ctx, &r);
            attempt_free(a);
        }
    }
    free(pfd);
    free(ref);
    return NULL;
}

enum rc wrk_launcher_new(const struct wrk_launcher_cb *cb, struct wrk_launcher **out)
{
    struct wrk_launcher *l = calloc(1, sizeof(*l));

    *out = NULL;
    if (l == NULL)
        return RC_ENOMEM;
    l->cb = *cb;
    atomic_init(&l->stop, 0);
    if (pipe2(l->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        free(l);
        return RC_EINTERNAL;
    }
    pthread_mutex_init(&l->mu, NULL);
    if (pthread_create(&l->thr, NULL, io_main, l) != 0) {
        close(l->wake[0]);
        close(l->wake[1]);
        pthread_mutex_destroy(&l->mu);
        free(l);
        return RC_EINTERNAL;
    }
    *out = l;
    return RC_OK;
}

void wrk_launcher_free(struct wrk_launcher *l)
{
    if (l == NULL)
        return;
    atomic_store(&l->stop, 1);
    wake(l);
    pthread_join(l->thr, NULL);
    while (l->head != NULL) {
        struct lattempt *a = l->head;
        l->head = a->next;
        for (size_t i = 0; i < a->nprocs; i++) {
            if (a->procs[i].done)
                continue;
            signal_proc(&a->procs[i], SIGKILL);
            if (!a->procs[i].adopted)
                waitpid(a->procs[i].pid, NULL, 0);
        }
        attempt_free(a);
    }
    close(l->wake[0]);
    close(l->wake[1]);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

/* Where the child of spawn_one() failed (reported on its error pipe). */
enum spawn_stage { STAGE_SETUP = 1, STAGE_IDENT, STAGE_CHDIR, STAGE_EXEC };

struct spawn_fail {
    int stage; /* enum spawn_stage */
    int err;   /* errno */
};

/*
 * The programs to try for argv0, as execvp would: argv0 itself when it has a
 * '/', else each PATH entry of the worker joined with it. Built in the parent
 * because the child may only make async-signal-safe calls (no malloc, no
 * getenv). Returns a NULL-terminated array in one allocation, or NULL.
 */
static char **exec_candidates(const char *argv0)
{
    const char *path = getenv("PATH");
    size_t n = 1, bytes, alen = strlen(argv0);
    char **v, *w;

    if (path == NULL || path[0] == '\0')
        path = "/usr/local/bin:/usr/bin:/bin";
    if (strchr(argv0, '/') != NULL)
        path = "";
    else
        for (const char *p = path; *p; p++)
            n += *p == ':';
    bytes = (n + 1) * sizeof(char *) + strlen(path) + n * (alen + 3);
    v = malloc(bytes);
    if (v == NULL)
        return NULL;
    w = (char *)(v + n + 1);
    if (path[0] == '\0') {
        v[0] = w;
        memcpy(w, argv0, alen + 1);
        v[1] = NULL;
        return v;
    }
    n = 0;
    for (const char *p = path;;) {
        const char *e = strchr(p, ':');
        size_t dl = e != NULL ? (size_t)(e - p) : strlen(p);
        v[n++] = w;
        if (dl == 0) /* an empty entry is the working directory */
            *w++ = '.';
        memcpy(w, p, dl);
        w += dl;
        *w++ = '/';
        memcpy(w, argv0, alen + 1);
        w += alen + 1;
        if (e == NULL)
            break;
        p = e + 1;
    }
    v[n] = NULL;
    return v;
}

/* Tell the parent where the child failed, then leave. Async-signal-safe. */
static void child_fail(int fd, int stage, int err)
{
    struct spawn_fail f = {stage, err};
    ssize_t r;

    do {
        r = write(fd, &f, sizeof(f));
    } while (r < 0 && errno == EINTR);
    _exit(127);
}

/*
 * The child between fork and exec: only async-signal-safe calls. Own
 * process group, stdin /dev/null, stdout/stderr on the pipes, no other
 * descriptor across exec (the worker's sockets stay the worker's), default
 * dispositions for the signals the worker handles or ignores, the job's
 * identity, then cwd (looked up as the job's account) and exec.
 */
static void child_exec(const struct wrk_proc_spec *ps, const char *cwd, const struct wrk_ident *id,
                       char *const *cand, int out_fd, int err_fd, int fail_fd)
{
    static const int sigs[] = {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD};
    struct sigaction sa;
    sigset_t none;
    int nul, saved = 0;

    setpgid(0, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &sa, NULL);
    nul = open("/dev/null", O_RDONLY);
    if (nul < 0 || dup2(nul, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
        child_fail(fail_fd, STAGE_SETUP, errno);
#if defined(SYS_close_range) && defined(CLOSE_RANGE_CLOEXEC)
    /* Best effort (Linux 5.11+): the worker's own descriptors are
     * close-on-exec already; this catches one a library left open. */
    (void)syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
#endif
    if (wrk_ident_switch(id) != 0)
        child_fail(fail_fd, STAGE_IDENT, errno);
    if (chdir(cwd) != 0)
        child_fail(fail_fd, STAGE_CHDIR, errno);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (size_t i = 0; cand[i] != NULL; i++) {
        execve(cand[i], ps->argv, ps->envp);
        if (errno == EACCES)
            saved = EACCES; /* as execvp: a later hit wins, else this error */
        else if (errno != ENOENT && errno != ENOTDIR)
            break;
    }
    child_fail(fail_fd, STAGE_EXEC,
               saved != 0 && (errno == ENOENT || errno == ENOTDIR) ? saved : errno);
}

/*
 * Fork the child and wait for its exec: the error pipe is close-on-exec, so
 * it reads EOF once exec succeeded, or the stage and errno of the failure.
 * 0 with *pid, or -1 with *fail filled (the child is reaped).
 */
static int fork_exec(const struct wrk_proc_spec *ps, const char *cwd, const struct wrk_ident *id,
                     char *const *cand, const int *outp, const int *errp, pid_t *pid,
                     struct spawn_fail *fail)
{
    int fp[2];
    sigset_t all, old;
    ssize_t r;

    if (pipe2(fp, O_CLOEXEC) != 0) {
        *fail = (struct spawn_fail){STAGE_SETUP, errno};
        return -1;
    }
    /* No handler may run in the child before it restored the defaults. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    *pid = fork();
    if (*pid == 0) {
        close(fp[0]);
        child_exec(ps, cwd, id, cand, outp[1], errp[1], fp[1]);
    }
    fail->err = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(fp[1]);
    if (*pid < 0) {
        close(fp[0]);
        fail->stage = STAGE_SETUP;
        return -1;
    }
    setpgid(*pid, *pid); /* either side may win; both set the same group */
    do {
        r = read(fp[0], fail, sizeof(*fail));
    } while (r < 0 && errno == EINTR);
    close(fp[0]);
    if (r == 0)
        return 0;
    if (r != (ssize_t)sizeof(*fail))
        *fail = (struct spawn_fail){STAGE_SETUP, EIO};
    while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR) {
    }
    *pid = -1;
    return -1;
}

/* Spawn one process; fills p (pid, pgid, fds). */
static enum rc spawn_one(const struct wrk_proc_spec *ps, const char *cwd,
                         const struct wrk_ident *id, struct lproc *p, struct err *e)
{
    enum rc rc = RC_EUNAVAIL;
    int outp[2] = {-1, -1}, errp[2] = {-1, -1};
    char **cand = NULL;
    struct spawn_fail f;
    char q[128];

    if (pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
        err_set(e, RC_EUNAVAIL, NULL, "cannot create pipes");
        goto out;
    }
    cand = exec_candidates(ps->argv[0]);
    if (cand == NULL) {
        rc = RC_ENOMEM;
        goto out;
    }
    if (fork_exec(ps, cwd, id, cand, outp, errp, &p->pid, &f) != 0) {
        pathpol_quote(ps->argv[0], strlen(ps->argv[0]), q, sizeof(q));
        if (f.stage == STAGE_EXEC && wrk_cause_exec_errno(f.err)) {
            /* exec itself failed: the same command fails on every attempt */
            err_set(e, RC_EUNAVAIL, NULL, "cannot start \"%s\": %s", q, strerror(f.err));
            err_code(e, WRK_CAUSE_EXEC_FAILED);
            err_detail(e, "%s: %s", q, strerror(f.err));
        } else if (f.stage == STAGE_IDENT) {
            err_set(e, RC_EUNAVAIL, NULL, "cannot switch to the job account %s: %s",
                    id != NULL ? id->name : "?", strerror(f.err));
        } else if (f.stage == STAGE_CHDIR) {
            err_set(e, RC_EUNAVAIL, NULL, "cannot enter the working directory as %s: %s",
                    id != NULL && id->switch_ids ? id->name : "the worker", strerror(f.err));
        } else {
            err_set(e, RC_EUNAVAIL, NULL, "cannot start the command: %s", strerror(f.err));
        }
        goto out;
    }
    p->pgid = p->pid;
    p->rank = ps->rank;
    p->tee = ps->torchrun_tee;
    if (wrk_proc_starttime(p->pid, &p->starttime) != RC_OK)
        p->starttime = 0;
    p->fd[0] = outp[0];
    p->fd[1] = errp[0];
    outp[0] = errp[0] = -1;
    fcntl(p->fd[0], F_SETFL, O_NONBLOCK);
    fcntl(p->fd[1], F_SETFL, O_NONBLOCK);
    rc = RC_OK;
out:
    free(cand);
    for (int i = 0; i < 2; i++) {
        if (outp[i] >= 0)
            close(outp[i]);
        if (errp[i] >= 0)
            close(errp[i]);
    }
    if (rc != RC_OK && e != NULL && e->rc == RC_OK)
        err_set(e, rc, NULL, "cannot start the command");
    return rc;
}

struct spawn_ctx {
    struct lattempt *a;
    const struct wrk_launch_req *req;
    pid_t *pids;
    struct err *e;
};

/* Spawn every process of the plan into c->a; on failure a->nprocs counts
 * the started ones. Runs inside the attempt's network namespace when there
 * is one (wrk_netns_call). */
static enum rc spawn_all(void *arg)
{
    struct spawn_ctx *c = arg;
    struct lattempt *a = c->a;
    const struct wrk_plan *plan = c->req->plan;
    enum rc rc = RC_OK;

    for (size_t i = 0; i < plan->nprocs; i++) {
        struct lproc *p = &a->procs[i];
        p->lb[0] = calloc(1, sizeof(struct linebuf));
        p->lb[1] = calloc(1, sizeof(struct linebuf));
        if (p->lb[0] == NULL || p->lb[1] == NULL) {
            a->nprocs = i + 1;
            return RC_ENOMEM;
        }
        a->nprocs = i + 1;
        rc = spawn_one(&plan->procs[i], c->req->cwd, c->req->ident, p, c->e);
        if (rc != RC_OK) {
            a->nprocs = i; /* p holds nothing running */
            for (int s = 0; s < 2; s++) {
                free(p->lb[s]);
                p->lb[s] = NULL;
            }
            return rc;
        }
        c->pids[i] = p->pid;
        LOG_INFO("launch", "rank started", "attempt_id=%s rank=%d pid=%d", a->attempt_id, p->rank,
                 (int)p->pid);
    }
    return RC_OK;
}

enum rc wrk_launcher_start(struct wrk_launcher *l, const struct wrk_launch_req *req, struct err *e)
{
    enum rc rc = RC_ENOMEM;
    struct lattempt *a = NULL;
    pid_t pids[WRK_MAX_RANKS];
    const struct wrk_plan *plan = req->plan;
    struct spawn_ctx sc;

    if (!wrk_id_valid(req->attempt_id) || plan->nprocs == 0 || plan->nprocs > WRK_MAX_RANKS)
        return err_set(e, RC_EINVAL, NULL, "invalid launch request");
    if (wrk_launcher_has(l, req->attempt_id))
        return err_set(e, RC_ECONFLICT, NULL, "attempt %s is already running", req->attempt_id);
    a = attempt_alloc();
    if (a == NULL)
        return RC_ENOMEM;
    snprintf(a->attempt_id, sizeof(a->attempt_id), "%s", req->attempt_id);
    snprintf(a->job_id, sizeof(a->job_id), "%s", req->job_id ? req->job_id : "");
    a->node_rank = req->node_rank;
    a->grace_s = req->grace_s;
    for (size_t i = 0; i < plan->nreport && i < WRK_MAX_RANKS; i++)
        a->report_ranks[a->nreport++] = plan->report_ranks[i];
    for (size_t i = 0; i < plan->ngpus && i < WRK_MAX_GPUS; i++)
        a->gpus[a->ngpus++] = plan->gpus[i];
    if (req->time_limit_s > 0)
        a->deadline_ms = mono_ms() + req->time_limit_s * 1000;
    sc = (struct spawn_ctx){a, req, pids, e};
    rc = req->netns_path != NULL ? wrk_netns_call(req->netns_path, spawn_all, &sc, e)
                                 : spawn_all(&sc);
    if (rc != RC_OK)
        goto fail;
    /* on_started before the I/O thread can see any line of this attempt */
    if (l->cb.on_started != NULL)
        l->cb.on_started(l->cb.ctx, a->attempt_id, a->node_rank, pids, a->nprocs);
    pthread_mutex_lock(&l->mu);
    a->next = l->head;
    l->head = a;
    l->gen++;
    pthread_mutex_unlock(&l->mu);
    wake(l);
    return RC_OK;
fail:
    for (size_t i = 0; i < a->nprocs; i++) {
        if (a->procs[i].pid > 0) {
            kill(-a->procs[i].pgid, SIGKILL);
            waitpid(a->procs[i].pid, NULL, 0);
        }
    }
    attempt_free(a);
    return rc;
}

enum rc wrk_launcher_adopt(struct wrk_launcher *l, const struct wrk_state_attempt *sa)
{
    struct lattempt *a;

    if (wrk_launcher_has(l, sa->attempt_id))
        return RC_ECONFLICT;
    a = attempt_alloc();
    if (a == NULL)
        return RC_ENOMEM;
    snprintf(a->attempt_id, sizeof(a->attempt_id), "%s", sa->attempt_id);
    snprintf(a->job_id, sizeof(a->job_id), "%s", sa->job_id);
    a->node_rank = sa->node_rank;
    a->grace_s = sa->grace_s;
    a->adopted = 1;
    for (size_t i = 0; i < sa->nreport && i < WRK_MAX_RANKS; i++)
        a->report_ranks[a->nreport++] = sa->report_ranks[i];
    for (size_t i = 0; i < sa->nprocs && i < WRK_MAX_RANKS; i++) {
        struct lproc *p = &a->procs[a->nprocs++];
        p->rank = sa->procs[i].rank;
        p->pid = sa->procs[i].pid;
        p->pgid = sa->procs[i].pgid;
        p->starttime = sa->procs[i].starttime;
        p->adopted = 1;
    }
    snprintf(a->reason, sizeof(a->reason), "reattached; exit status unknown");
    snprintf(a->reason_code, sizeof(a->reason_code), "%s", RSN_EXIT_STATUS_UNKNOWN);
    snprintf(a->reason_params, sizeof(a->reason_params), "{}");
    pthread_mutex_lock(&l->mu);
    a->next = l->head;
    l->head = a;
    l->gen++;
    pthread_mutex_unlock(&l->mu);
    wake(l);
    return RC_OK;
}

int wrk_launcher_cancel(struct wrk_launcher *l, const char *attempt_id, const char *reason)
{
    struct lattempt *a;
    int found = 0;

    pthread_mutex_lock(&l->mu);
    a = find_locked(l, attempt_id);
    if (a != NULL) {
        found = 1;
        if (a->adopted && strcmp(a->reason, "reattached; exit status unknown") == 0)
            a->reason[0] = '\0';
        terminate_locked(a, RSN_STOPPED_BY_SERVER, "{}", reason, -1);
    }
    pthread_mutex_unlock(&l->mu);
    return found;
}

void wrk_launcher_cancel_all(struct wrk_launcher *l, const char *reason, int grace_s)
{
    pthread_mutex_lock(&l->mu);
    for (struct lattempt *a = l->head; a != NULL; a = a->next) {
        if (a->adopted && strcmp(a->reason, "reattached; exit status unknown") == 0)
            a->reason[0] = '\0';
        terminate_locked(a, RSN_WORKER_SHUTDOWN, "{}", reason, grace_s);
    }
    pthread_mutex_unlock(&l->mu);
}

size_t wrk_launcher_count(struct wrk_launcher *l)
{
    size_t n = 0;
    pthread_mutex_lock(&l->mu);
    for (struct lattempt *a = l->head; a != NULL; a = a->next)
        n++;
    pthread_mutex_unlock(&l->mu);
    return n;
}

int wrk_launcher_has(struct wrk_launcher *l, const char *attempt_id)
{
    int r;
    pthread_mutex_lock(&l->mu);
    r = find_locked(l, attempt_id) != NULL;
    pthread_mutex_unlock(&l->mu);
    return r;
}

int wrk_launcher_gpu_busy(void *launcher, int gpu)
{
    struct wrk_launcher *l = launcher;
    int busy = 0;
    pthread_mutex_lock(&l->mu);
    for (struct lattempt *a = l->head; a != NULL && !busy; a = a->next)
        for (size_t i = 0; i < a->ngpus; i++)
            busy |= a->gpus[i] == gpu;
    pthread_mutex_unlock(&l->mu);
    return busy;
}

void wrk_launcher_note_gpu_mem(struct wrk_launcher *l, const struct wrk_group_mem *m, size_t n)
{
    pthread_mutex_lock(&l->mu);
    for (struct lattempt *a = l->head; a != NULL; a = a->next) {
        if (a->nreport != a->nprocs && a->nreport != 0)
            continue; /* torchrun: one process for all of the node's ranks */
        for (size_t i = 0; i < a->nprocs; i++) {
            struct lproc *p = &a->procs[i];
            uint64_t sum = 0;
            int seen = 0;
            if (p->done || p->pgid <= 1)
                continue;
            for (size_t k = 0; k < n; k++)
                if (m[k].pgid == p->pgid) {
                    sum += m[k].bytes;
                    seen = 1;
                }
            if (seen && sum > p->gpu_peak)
                p->gpu_peak = sum;
        }
    }
    pthread_mutex_unlock(&l->mu);
}

json_t *wrk_launcher_running_json(struct wrk_launcher *l)
{
    json_t *arr = json_array();
    int oom = arr == NULL;

    pthread_mutex_lock(&l->mu);
    for (struct lattempt *a = l->head; a != NULL && !oom; a = a->next) {
        json_t *pids = json_array();
        json_t *o;
        for (size_t i = 0; pids != NULL && i < a->nprocs; i++)
            if (json_array_append_new(pids, json_integer(a->procs[i].pid)) != 0)
                oom = 1;
        o = json_pack("{s:s, s:o*}", "attempt_id", a->attempt_id, "pids", pids);
        if (o == NULL || json_array_append_new(arr, o) != 0)
            oom = 1;
    }
    pthread_mutex_unlock(&l->mu);
    if (oom) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

enum rc wrk_launcher_snapshot(struct wrk_launcher *l, struct wrk_state *s)
{
    enum rc rc = RC_OK;
    struct wrk_state_attempt *sa = malloc(sizeof(*sa));

    if (sa == NULL)
        return RC_ENOMEM;
    pthread_mutex_lock(&l->mu);
    for (struct lattempt *a = l->head; a != NULL && rc == RC_OK; a = a->next) {
        memset(sa, 0, sizeof(*sa));
        snprintf(sa->attempt_id, sizeof(sa->attempt_id), "%s", a->attempt_id);
        snprintf(sa->job_id, sizeof(sa->job_id), "%s", a->job_id);
        sa->node_rank = a->node_rank;
        sa->grace_s = a->grace_s;
        for (size_t i = 0; i < a->nprocs; i++) {
            sa->procs[i].rank = a->procs[i].rank;
            sa->procs[i].pid = a->procs[i].pid;
            sa->procs[i].pgid = a->procs[i].pgid;
            sa->procs[i].starttime = a->procs[i].starttime;
        }
        sa->nprocs = a->nprocs;
        memcpy(sa->report_ranks, a->report_ranks, sizeof(sa->report_ranks));
        sa->nreport = a->nreport;
        rc = wrk_state_add(s, sa);
    }
    pthread_mutex_unlock(&l->mu);
    free(sa);
    return rc;
}

uint64_t wrk_launcher_generation(struct wrk_launcher *l)
{
    uint64_t g;
    pthread_mutex_lock(&l->mu);
    g = l->gen;
    pthread_mutex_unlock(&l->mu);
    return g;
}
