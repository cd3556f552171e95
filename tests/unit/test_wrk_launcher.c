/*
 * test_wrk_launcher.c - the launcher with real processes: /bin/sh ranks,
 * their output lines, exit reports, the failure cascade, cancel and time
 * limits killing whole process groups (no orphan left), and re-adoption.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "launcher.h"

#define MAXL 64

struct rec {
    pthread_mutex_t mu;
    int nlines;
    char text[MAXL][256];
    int rank[MAXL];
    int is_err[MAXL];
    uint64_t seq[MAXL];
    int started;
    pid_t pids[WRK_MAX_RANKS];
    int nexit;
    struct wrk_exit_report exit;
};

static struct rec R;

static void on_line(void *ctx, const char *id, int rank, const char *stream, uint64_t seq,
                    int64_t ts_ms, const char *text, size_t len)
{
    (void)ctx;
    (void)id;
    (void)ts_ms;
    pthread_mutex_lock(&R.mu);
    if (R.nlines < MAXL) {
        snprintf(R.text[R.nlines], sizeof(R.text[0]), "%.*s", (int)len, text);
        R.rank[R.nlines] = rank;
        R.is_err[R.nlines] = strcmp(stream, "stderr") == 0;
        R.seq[R.nlines] = seq;
        R.nlines++;
    }
    pthread_mutex_unlock(&R.mu);
}

static void on_started(void *ctx, const char *id, int node_rank, const pid_t *pids, size_t n)
{
    (void)ctx;
    (void)id;
    (void)node_rank;
    pthread_mutex_lock(&R.mu);
    R.started++;
    memcpy(R.pids, pids, n * sizeof(pid_t));
    pthread_mutex_unlock(&R.mu);
}

static void on_exit_cb(void *ctx, const struct wrk_exit_report *r)
{
    (void)ctx;
    pthread_mutex_lock(&R.mu);
    R.nexit++;
    R.exit = *r;
    pthread_mutex_unlock(&R.mu);
}

static int setup(void **state)
{
    struct wrk_launcher_cb cb = {on_line, on_started, on_exit_cb, NULL};
    struct wrk_launcher *l = NULL;
    memset(&R, 0, sizeof(R));
    pthread_mutex_init(&R.mu, NULL);
    if (wrk_launcher_new(&cb, &l) != RC_OK)
        return -1;
    *state = l;
    return 0;
}

static int teardown(void **state)
{
    wrk_launcher_free(*state);
    pthread_mutex_destroy(&R.mu);
    return 0;
}

static char **strv(const char *a, const char *b, const char *c)
{
    char **v = calloc(4, sizeof(char *));
    v[0] = strdup(a);
    v[1] = b ? strdup(b) : NULL;
    v[2] = (b && c) ? strdup(c) : NULL;
    return v;
}

/* A plan of n "/bin/sh -c script[i]" ranks. */
static struct wrk_plan *sh_plan(size_t n, const char *const *scripts)
{
    struct wrk_plan *p = calloc(1, sizeof(*p));
    p->procs = calloc(n, sizeof(*p->procs));
    p->report_ranks = calloc(n, sizeof(int));
    p->gpus = calloc(1, sizeof(int));
    p->nprocs = p->nreport = n;
    p->ngpus = 1;
    p->gpus[0] = 0;
    for (size_t i = 0; i < n; i++) {
        p->procs[i].rank = (int)i;
        p->procs[i].argv = strv("/bin/sh", "-c", scripts[i]);
        p->procs[i].envp = strv("PATH=/usr/bin:/bin", NULL, NULL);
        p->report_ranks[i] = (int)i;
    }
    return p;
}

static void start(struct wrk_launcher *l, const char *id, size_t n, const char *const *scripts,
                  int64_t limit_s, int grace_s)
{
    struct wrk_plan *p = sh_plan(n, scripts);
    struct wrk_launch_req req = {id, "7", 0, "/tmp", p, limit_s, grace_s, NULL, NULL};
    struct err e;
    err_init(&e);
    assert_int_equal(wrk_launcher_start(l, &req, &e), RC_OK);
    wrk_plan_free(p);
}

/* How long a wait for a state may take before the test calls it a hang:
 * generous, since the states come at once or after a rank's own sleep, and
 * a loaded machine only makes them slower. */
#define HANG_MS 60000

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int wait_exit(int n, int ms)
{
    for (int t = 0; t < ms; t += 10) {
        int done;
        pthread_mutex_lock(&R.mu);
        done = R.nexit >= n;
        pthread_mutex_unlock(&R.mu);
        if (done)
            return 1;
        sleep_ms(10);
    }
    return 0;
}

static int wait_lines(int n, int ms)
{
    for (int t = 0; t < ms; t += 10) {
        int done;
        pthread_mutex_lock(&R.mu);
        done = R.nlines >= n;
        pthread_mutex_unlock(&R.mu);
        if (done)
            return 1;
        sleep_ms(10);
    }
    return 0;
}

/* 1 once the process (pid, its start time) is gone, 0 after ms. */
static int wait_dead(pid_t pid, uint64_t starttime, int ms)
{
    for (int t = 0; t < ms; t += 10) {
        if (!wrk_proc_alive(pid, starttime))
            return 1;
        sleep_ms(10);
    }
    return 0;
}

static int find_line(const char *text, int rank, int is_err)
{
    for (int i = 0; i < R.nlines; i++)
        if (strcmp(R.text[i], text) == 0 && R.rank[i] == rank && R.is_err[i] == is_err)
            return i;
    return -1;
}

static void test_output_and_exit(void **state)
{
    struct wrk_launcher *l = *state;
    char dir[] = "/tmp/ty-launch-XXXXXX", go[64], rank1[160];
    const char *s[] = {
        "echo hello; echo 'TRAINYARD_METRIC {\"step\":1,\"loss\":0.5}'; echo oops >&2",
        rank1,
    };
    json_t *running;
    int fd;

    /* Rank 1 runs until the test has looked at it: it waits for a file the
     * test makes, not for a time the test hopes is long enough. */
    assert_non_null(mkdtemp(dir));
    snprintf(go, sizeof(go), "%s/go", dir);
    snprintf(rank1, sizeof(rank1), "printf partial; while [ ! -e %s ]; do sleep 0.01; done", go);
    start(l, "a1", 2, s, 0, 5);
    assert_int_equal(R.started, 1);
    running = wrk_launcher_running_json(l);
    assert_int_equal(json_array_size(running), 1);
    json_decref(running);
    assert_true(wrk_launcher_gpu_busy(l, 0));
    assert_true((fd = open(go, O_WRONLY | O_CREAT, 0600)) >= 0);
    close(fd);
    assert_true(wait_exit(1, HANG_MS));
    unlink(go);
    rmdir(dir);
    assert_int_equal(find_line("hello\n", 0, 0), 0);
    assert_true(find_line("TRAINYARD_METRIC {\"step\":1,\"loss\":0.5}\n", 0, 0) >= 0);
    assert_true(find_line("oops\n", 0, 1) >= 0);
    assert_true(find_line("partial", 1, 0) >= 0); /* no newline at EOF */
    assert_int_equal(R.seq[find_line("TRAINYARD_METRIC {\"step\":1,\"loss\":0.5}\n", 0, 0)], 1);
    assert_string_equal(R.exit.attempt_id, "a1");
    assert_int_equal(R.exit.nranks, 2);
    assert_int_equal(R.exit.ranks[0].exit_code, 0);
    assert_int_equal(R.exit.ranks[1].exit_code, 0);
    assert_string_equal(R.exit.reason, "");
    assert_int_equal(wrk_launcher_count(l), 0);
    assert_false(wrk_launcher_gpu_busy(l, 0));
}

/* The seq of the line text of rank on stdout or stderr; fails when there is none. */
static uint64_t seq_of(const char *text, int rank, int is_err)
{
    int i = find_line(text, rank, is_err);
    assert_true(i >= 0);
    return R.seq[i];
}

/* One torchrun process for ranks 4..6 of a node: its copies of the ranks'
 * lines ("[trainyard<local rank>]:") go out as theirs, header stripped, each
 * (rank, stream) with its own seq; anything else is local rank 0's. */
static void test_torchrun_tee(void **state)
{
    struct wrk_launcher *l = *state;
    static const char *const s[] = {
        "echo '[trainyard1]:one'; echo torchrun says; echo '[trainyard0]:zero';"
        " echo '[trainyard2]:TRAINYARD_METRIC {\"step\":1}'; echo '[trainyard1]:again';"
        " echo '[trainyard3]:no such rank'; echo '[trainyard1]x'; echo '[trainyard1]:err' >&2"};
    struct wrk_plan *p = sh_plan(1, s);
    struct wrk_launch_req req = {"t1", "7", 1, "/tmp", p, 0, 5, NULL, NULL};
    struct err e;

    free(p->report_ranks);
    p->report_ranks = calloc(3, sizeof(int));
    p->report_ranks[0] = 4;
    p->report_ranks[1] = 5;
    p->report_ranks[2] = 6;
    p->nreport = 3;
    p->procs[0].rank = 4;
    p->procs[0].torchrun_tee = 1;
    err_init(&e);
    assert_int_equal(wrk_launcher_start(l, &req, &e), RC_OK);
    wrk_plan_free(p);
    assert_true(wait_exit(1, HANG_MS));
    assert_int_equal(R.nlines, 8);
    assert_int_equal(seq_of("one\n", 5, 0), 0);
    assert_int_equal(seq_of("again\n", 5, 0), 1);
    assert_int_equal(seq_of("torchrun says\n", 4, 0), 0);
    assert_int_equal(seq_of("zero\n", 4, 0), 1);
    assert_int_equal(seq_of("TRAINYARD_METRIC {\"step\":1}\n", 6, 0), 0);
    assert_int_equal(seq_of("[trainyard3]:no such rank\n", 4, 0), 2);
    assert_int_equal(seq_of("[trainyard1]x\n", 4, 0), 3);
    assert_int_equal(seq_of("err\n", 5, 1), 0);
    assert_int_equal(R.exit.nranks, 3);
    assert_int_equal(R.exit.ranks[2].rank, 6);
    assert_int_equal(R.exit.ranks[2].exit_code, 0);
}

static void test_failure_stops_others(void **state)
{
    struct wrk_launcher *l = *state;
    static const char *const s[] = {"sleep 0.2; exit 3", "exec sleep 30"};

    start(l, "a2", 2, s, 0, 5);
    assert_true(wait_exit(1, HANG_MS));
    assert_int_equal(R.exit.ranks[0].exit_code, 3);
    assert_int_equal(R.exit.ranks[1].signal, SIGTERM);
    assert_string_equal(R.exit.reason, "rank 0 exited with 3");
}

static void test_cancel_kills_group(void **state)
{
    struct wrk_launcher *l = *state;
    /* a grandchild in the rank's group, and a rank that ignores SIGTERM */
    static const char *const s[] = {"sleep 30 & echo $!; wait",
                                    "trap '' TERM; echo ready; while :; do sleep 0.05; done"};
    pid_t grandchild, rank1;
    uint64_t st_gc = 0, st_r1 = 0;
    int i;

    start(l, "a3", 2, s, 0, 1);
    assert_true(wait_lines(2, HANG_MS));
    pthread_mutex_lock(&R.mu);
    i = R.rank[0] == 0 ? 0 : 1;
    grandchild = (pid_t)strtol(R.text[i], NULL, 10);
    rank1 = R.pids[1];
    pthread_mutex_unlock(&R.mu);
    assert_true(grandchild > 1);
    assert_int_equal(wrk_proc_starttime(grandchild, &st_gc), RC_OK);
    assert_int_equal(wrk_proc_starttime(rank1, &st_r1), RC_OK);
    assert_true(wrk_launcher_cancel(l, "a3", "cancelled"));
    assert_true(wrk_launcher_cancel(l, "a3", "again")); /* idempotent */
    assert_false(wrk_launcher_cancel(l, "nope", "x"));
    assert_true(wait_exit(1, HANG_MS));
    assert_string_equal(R.exit.reason, "cancelled");
    assert_int_equal(R.exit.ranks[0].signal, SIGTERM);
    assert_int_equal(R.exit.ranks[1].signal, SIGKILL); /* ignored TERM, killed after grace */
    /* The kill is sent; the processes go when the kernel is done with them. */
    assert_true(wait_dead(grandchild, st_gc, HANG_MS));
    assert_true(wait_dead(rank1, st_r1, HANG_MS));
}

/*
 * GPU memory peaks: samples name process groups (a child counts for the rank
 * that leads its group, found through /proc); the report carries each
 * rank's largest sum, and 0 (not measured) for a rank never seen.
 */
static void test_gpu_mem_peak(void **state)
{
    struct wrk_launcher *l = *state;
    static const char *const s[] = {"sleep 30 & echo $!; wait", "exec sleep 30"};
    pid_t child, rank0, pg = 0;

    start(l, "a5", 2, s, 0, 1);
    assert_true(wait_lines(1, HANG_MS));
    pthread_mutex_lock(&R.mu);
    child = (pid_t)strtol(R.text[0], NULL, 10);
    rank0 = R.pids[0];
    pthread_mutex_unlock(&R.mu);
    assert_int_equal(wrk_proc_pgid(child, &pg), RC_OK);
    assert_int_equal(pg, rank0); /* the rank leads the group of its children */
    {
        struct wrk_group_mem a[] = {{pg, 100}};
        struct wrk_group_mem b[] = {{pg, 100}, {pg, 200}, {424242, 999}}; /* rank + child */
        struct wrk_group_mem c[] = {{pg, 50}};
        wrk_launcher_note_gpu_mem(l, a, 1);
        wrk_launcher_note_gpu_mem(l, b, 3);
        wrk_launcher_note_gpu_mem(l, c, 1); /* lower: the peak stays */
    }
    assert_true(wrk_launcher_cancel(l, "a5", "cancelled"));
    assert_true(wait_exit(1, HANG_MS));
    assert_int_equal(R.exit.ranks[0].gpu_mem_peak_bytes, 300);
    assert_int_equal(R.exit.ranks[1].gpu_mem_peak_bytes, 0);
}

static void test_time_limit(void **state)
{
    struct wrk_launcher *l = *state;
    static const char *const s[] = {"exec sleep 30"};
    start(l, "a4", 1, s, 1, 5);
    assert_true(wait_exit(1, HANG_MS));
    assert_string_equal(R.exit.reason, "time limit exceeded");
    assert_int_equal(R.exit.ranks[0].signal, SIGTERM);
}

static pid_t spawn_sleep(void)
{
    posix_spawnattr_t at;
    pid_t pid;
    char *argv[] = {"sleep", "30", NULL};
    char *envp[] = {NULL};
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&at, 0);
    assert_int_equal(posix_spawn(&pid, "/bin/sleep", NULL, &at, argv, envp), 0);
    posix_spawnattr_destroy(&at);
    return pid;
}

static void test_adopt(void **state)
{
    struct wrk_launcher *l = *state;
    struct wrk_state_attempt sa;
    pid_t pid = spawn_sleep();

    memset(&sa, 0, sizeof(sa));
    snprintf(sa.attempt_id, sizeof(sa.attempt_id), "old");
    snprintf(sa.job_id, sizeof(sa.job_id), "7");
    sa.grace_s = 1;
    sa.nprocs = 1;
    sa.procs[0].pid = sa.procs[0].pgid = pid;
    assert_int_equal(wrk_proc_starttime(pid, &sa.procs[0].starttime), RC_OK);
    sa.nreport = 1;
    assert_int_equal(wrk_launcher_adopt(l, &sa), RC_OK);
    assert_int_equal(wrk_launcher_adopt(l, &sa), RC_ECONFLICT);
    sleep_ms(150);
    assert_int_equal(wrk_launcher_count(l), 1);
    /* it ends on its own: exit status unknown */
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    assert_true(wait_exit(1, HANG_MS));
    assert_string_equal(R.exit.reason, "reattached; exit status unknown");
    assert_int_equal(R.exit.ranks[0].exit_code, -1);
    assert_int_equal(R.exit.ranks[0].signal, 0);

    /* the server says kill: the launcher stops its group */
    pid = spawn_sleep();
    snprintf(sa.attempt_id, sizeof(sa.attempt_id), "old2");
    sa.procs[0].pid = sa.procs[0].pgid = pid;
    assert_int_equal(wrk_proc_starttime(pid, &sa.procs[0].starttime), RC_OK);
    assert_int_equal(wrk_launcher_adopt(l, &sa), RC_OK);
    assert_true(wrk_launcher_cancel(l, "old2", "stopped by the server"));
    {
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    }
    assert_true(wait_exit(2, HANG_MS));
    assert_string_equal(R.exit.reason, "stopped by the server");
}

static void test_spawn_failure(void **state)
{
    struct wrk_launcher *l = *state;
    struct wrk_plan *p = sh_plan(1, (const char *const[]){"true"});
    struct wrk_launch_req req = {"a5", "7", 0, "/nonexistent-dir", p, 0, 1, NULL, NULL};
    struct err e;
    err_init(&e);
    assert_int_equal(wrk_launcher_start(l, &req, &e), RC_EUNAVAIL);
    assert_true(e.message[0] != '\0');
    /* the chdir failed, not the exec: no deterministic cause is claimed */
    assert_string_equal(e.code, "");
    assert_int_equal(wrk_launcher_count(l), 0);
    assert_int_equal(R.started, 0);
    wrk_plan_free(p);
}

/* exec of a program that is not there, or not executable, fails for good. */
static void test_exec_failure(void **state)
{
    struct wrk_launcher *l = *state;
    struct wrk_plan *p = sh_plan(2, (const char *const[]){"true", "true"});
    struct wrk_launch_req req = {"a6", "7", 0, "/tmp", p, 0, 1, NULL, NULL};
    struct err e;

    /* the second rank cannot start: the first is stopped again */
    free(p->procs[1].argv[0]);
    p->procs[1].argv[0] = strdup("/nonexistent/prog");
    err_init(&e);
    assert_int_equal(wrk_launcher_start(l, &req, &e), RC_EUNAVAIL);
    assert_string_equal(e.code, WRK_CAUSE_EXEC_FAILED);
    assert_string_equal(e.detail, "/nonexistent/prog: No such file or directory");
    assert_int_equal(wrk_launcher_count(l), 0);
    assert_int_equal(R.started, 0);

    /* a file without x bits (EACCES), one that is no program (ENOEXEC) */
    for (int i = 0; i < 2; i++) {
        char path[] = "/tmp/ty-launch-XXXXXX", want[64];
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "\x01\x02\x03\x04", 4), 4);
        close(fd);
        assert_int_equal(chmod(path, i == 0 ? 0644 : 0755), 0);
        free(p->procs[1].argv[0]);
        p->procs[1].argv[0] = strdup(path);
        err_init(&e);
        assert_int_equal(wrk_launcher_start(l, &req, &e), RC_EUNAVAIL);
        assert_string_equal(e.code, WRK_CAUSE_EXEC_FAILED);
        snprintf(want, sizeof(want), "%s: %s", path, strerror(i == 0 ? EACCES : ENOEXEC));
        assert_string_equal(e.detail, want);
        unlink(path);
    }
    assert_int_equal(R.started, 0);
    wrk_plan_free(p);
}

/*
 * As root, a rank runs as the job account: its uid and gid, no capability,
 * no descriptor of the worker but 0-2; a cwd that account cannot enter
 * fails as a chdir, not as an exec. Unprivileged: skipped (root-only
 * path; tests/integration/test_job_identity.py covers it end to end).
 */
static void test_job_identity(void **state)
{
    struct wrk_launcher *l = *state;
    static const char *const s[] = {"echo u=$(id -u) g=$(id -g); grep CapEff /proc/self/status | "
                                    "tr -d '\\t'; ls /proc/self/fd | wc -l"};
    struct wrk_plan *p = sh_plan(1, s);
    struct wrk_launch_req req = {"i1", "7", 0, "/", p, 0, 1, NULL, NULL};
    struct wrk_ident id;
    char want[64], dir[] = "/tmp/ty-launch-ident-XXXXXX";
    struct err e;
    int spare;

    if (geteuid() != 0) {
        printf("SKIP: test_job_identity needs root\n");
        wrk_plan_free(p);
        skip();
    }
    err_init(&e);
    assert_int_equal(wrk_ident_resolve("nobody", &id, &e), RC_OK);
    req.ident = &id;
    spare = open("/dev/null", O_RDONLY); /* not close-on-exec: must not reach the rank */
    assert_true(spare > 2);
    assert_int_equal(wrk_launcher_start(l, &req, &e), RC_OK);
    assert_true(wait_exit(1, 5000));
    close(spare);
    snprintf(want, sizeof(want), "u=%d g=%d\n", (int)id.uid, (int)id.gid);
    assert_int_equal(find_line(want, 0, 0), 0);
    assert_true(find_line("CapEff:0000000000000000\n", 0, 0) >= 0);
    /* 0, 1, 2 and the descriptor ls opens to read the directory */
    assert_true(find_line("4\n", 0, 0) >= 0);
    assert_int_equal(R.exit.ranks[0].exit_code, 0);

    assert_non_null(mkdtemp(dir)); /* 0700 root's: nobody cannot enter it */
    req.attempt_id = "i2";
    req.cwd = dir;
    err_init(&e);
    assert_int_equal(wrk_launcher_start(l, &req, &e), RC_EUNAVAIL);
    assert_string_equal(e.code, "");
    assert_non_null(strstr(e.message, "working directory as nobody"));
    rmdir(dir);
    wrk_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_output_and_exit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torchrun_tee, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failure_stops_others, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_kills_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpu_mem_peak, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_adopt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spawn_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_identity, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
