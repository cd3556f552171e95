/*
 * agent.c - the control loop of trainyard-worker (see agent.h).
 *
 * Threads:
 *   - control (the caller of wrk_agent_run): heartbeats, launches queued
 *     assignments, applies cancels, writes state.json, drives shutdown;
 *   - poller: GET /api/v1/agent/assignments?wait=30 in a loop, parses the
 *     answer and queues assignments and cancels for the control thread;
 *     after a poll that got no answer it asks with resend=1, since the
 *     server may have handed out work in a response that never arrived
 *     (it died after its commit), and drops attempts it has already had
 *     (a->seen, its own);
 *   - shipper (shipper.c) and launcher I/O (launcher.c).
 * Each thread has its own struct wrk_http. The queue between poller and
 * control is guarded by a->qmu, never held across HTTP or spawn. Lock order
 * does not arise: no function holds two of qmu / launcher / shipper locks.
 */
#include "agent.h"
#include "urlcheck.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "assign.h"
#include "caps.h"
#include "cause.h"
#include "crypto.h"
#include "http.h"
#include "launcher.h"
#include "log.h"
#include "ncclbw.h"
#include "netns.h"
#include "pathchk.h"
#include "pathpol.h"
#include "shipper.h"
#include "state.h"
#include "topo.h"

#ifndef TY_VERSION
#define TY_VERSION "0.1.0"
#endif

#define POLL_WAIT_S 30
/* Attempt ids the poller remembers having received, to drop those a resend
 * hands out again. A resend carries only attempts not yet reported started,
 * so the most recent ones are enough. */
#define SEEN_MAX 512
#define REQ_TIMEOUT_MS 15000L
#define GPU_MEM_SAMPLE_MS 500          /* per-rank GPU memory peak sampling, while ranks run */
#define NCCL_PROBE_MAX_BYTES (1 << 20) /* a probe file is a few KiB */

struct qitem {
    struct qitem *next;
    struct wrk_assignment *a; /* owned; NULL for a refusal or a cancel */
    char attempt_id[WRK_ID_MAX + 1];
    int is_cancel;
    char reason[256]; /* refusal */
    const char *code; /* refusal: its RSN_* code (static) */
    json_t *networks; /* owned; the assignment's "allowed_networks", or NULL */
};

struct agent {
    const struct wrk_config *cfg;
    struct wrk_http *http;      /* control thread */
    struct wrk_http *poll_http; /* poller thread */
    struct wrk_http *ship_http; /* shipper thread */
    struct wrk_gpus *gpus;
    struct wrk_launcher *launcher;
    struct wrk_shipper *shipper;
    json_t *labels;
    json_t *caps;       /* the capability probe's result (caps.h) */
    json_t *nccl_probe; /* --nccl-probe-file, checked, or NULL */
    char node_id[64];
    char *credential; /* owned; never logged */
    char hostname[256];
    char addr[64];
    char node_path[PATH_MAX];
    char state_path[PATH_MAX];
    const char *roots[WRK_MAX_ROOTS];
    size_t nroots;
    int hb_ms;
    int draining;
    uint64_t saved_gen;
    uint64_t swept_gen; /* launcher generation of the last isolate_sweep() */
    pthread_t poll_thr;
    int poll_started;
    atomic_int poll_stop;
    atomic_int poll_draining;
    char seen[SEEN_MAX][WRK_ID_MAX + 1]; /* poller thread only: a ring of received ids */
    size_t nseen;                        /* poller thread only: ids ever put in seen */
    pthread_mutex_t qmu;
    pthread_cond_t qcv;          /* signalled by enqueue(): work for the main loop */
    struct qitem *qhead, *qtail; /* under qmu */
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int stopping(const struct agent *a)
{
    return a->cfg->stop != NULL && atomic_load(a->cfg->stop);
}

/* ---- identity ---- */

static void guess_addr(char *out, size_t size)
{
    struct ifaddrs *ifa = NULL;
    snprintf(out, size, "127.0.0.1");
    if (getifaddrs(&ifa) != 0)
        return;
    for (struct ifaddrs *i = ifa; i != NULL; i = i->ifa_next) {
        if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET)
            continue;
        const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)i->ifa_addr;
        if ((ntohl(sin->sin_addr.s_addr) >> 24) == 127)
            continue;
        inet_ntop(AF_INET, &sin->sin_addr, out, (socklen_t)size);
        break;
    }
    freeifaddrs(ifa);
}

static enum rc write_file_atomic(const char *path, const char *text, mode_t mode)
{
    char tmp[PATH_MAX + 8];
    size_t len = strlen(text), off = 0;
    int fd;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return RC_EINVAL;
    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return RC_EUNAVAIL;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            unlink(tmp);
            return RC_EUNAVAIL;
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return RC_EUNAVAIL;
    }
    return RC_OK;
}

static int load_node(struct agent *a)
{
    json_error_t jerr;
    json_t *o = json_load_file(a->node_path, JSON_REJECT_DUPLICATES, &jerr);
    const char *id = json_string_value(json_object_get(o, "node_id"));
    const char *cred = json_string_value(json_object_get(o, "credential"));
    const char *srv = json_string_value(json_object_get(o, "server"));
    int ok = 0;

    if (id != NULL && cred != NULL && strlen(id) < sizeof(a->node_id) && cred[0] != '\0') {
        snprintf(a->node_id, sizeof(a->node_id), "%s", id);
        a->credential = strdup(cred);
        ok = a->credential != NULL;
        if (srv != NULL && strcmp(srv, a->cfg->server) != 0)
            LOG_WARN("agent", "node.json was written for another server", "server=%s", srv);
    }
    json_decref(o);
    return ok;
}

/* POST join; 1 on success, 0 on a final refusal, -1 to retry. */
static int do_join(struct agent *a)
{
    json_t *body, *resp = NULL;
    long status = 0;
    int ret = -1;
    const char *id, *cred;
    char *text = NULL;

    body = json_pack("{s:s, s:s, s:s, s:s, s:O}", "join_token", a->cfg->join_token, "name",
                     a->cfg->name ? a->cfg->name : a->hostname, "hostname", a->hostname, "addr",
                     a->addr, "labels", a->labels);
    if (body == NULL)
        return -1;
    if (wrk_http_request(a->http, "POST", "/api/v1/agent/join", body, REQ_TIMEOUT_MS, &status,
                         &resp) != RC_OK)
        goto out;
    if (status != 200 && status != 201) {
        const char *m =
            json_string_value(json_object_get(json_object_get(resp, "error"), "message"));
        LOG_ERROR("agent", "join refused", "status=%ld error=\"%.200s\"", status, m ? m : "");
        ret = status >= 500 ? -1 : 0;
        goto out;
    }
    id = json_string_value(json_object_get(resp, "node_id"));
    cred = json_string_value(json_object_get(resp, "credential"));
    if (id == NULL || cred == NULL || strlen(id) >= sizeof(a->node_id) || cred[0] == '\0') {
        LOG_ERROR("agent", "join answer without node_id or credential", "");
        ret = 0;
        goto out;
    }
    json_decref(body);
    body =
        json_pack("{s:s, s:s, s:s}", "server", a->cfg->server, "node_id", id, "credential", cred);
    text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (text == NULL || write_file_atomic(a->node_path, text, 0600) != RC_OK) {
        LOG_ERROR("agent", "cannot write node.json", "path=%s", a->node_path);
        ret = 0;
        goto out;
    }
    snprintf(a->node_id, sizeof(a->node_id), "%s", id);
    crypto_free_secret(a->credential); /* a re-join replaces a refused credential */
    a->credential = strdup(cred);
    ret = a->credential != NULL ? 1 : 0;
    LOG_INFO("agent", "joined", "node_id=%s", a->node_id);
out:
    crypto_free_secret(text); /* node.json's text: the credential */
    json_decref(body);
    json_decref(resp);
    return ret;
}

/* ---- register ---- */

/*
 * Network interfaces and InfiniBand ports (topo.h) plus the GPUs' PCIe and
 * NVLink paths (gpu.h), read at each register so that a link brought up
 * since the last start is seen. New reference or NULL (ENOMEM).
 */
static json_t *interconnect_json(struct agent *a)
{
    struct wrk_topo *t = malloc(sizeof(*t));
    struct ifaddrs *ifa = NULL;
    json_t *o = NULL, *g = NULL;

    if (t == NULL)
        return NULL;
    if (getifaddrs(&ifa) != 0)
        ifa = NULL; /* no addresses: still the IB ports */
    wrk_topo_read(a->cfg->sys_root ? a->cfg->sys_root : "/sys", ifa, t);
    if (ifa != NULL)
        freeifaddrs(ifa);
    o = wrk_topo_json(t);
    g = wrk_gpus_interconnect_json(a->gpus);
    if (o == NULL || g == NULL || json_object_update(o, g) != 0) {
        json_decref(o);
        o = NULL;
    }
    json_decref(g);
    free(t);
    return o;
}

/*
 * --nccl-probe-file: read and check it with the server's rules (ncclbw.h).
 * A missing or bad file is logged and left out of register, never fatal: the
 * server would refuse the whole register over it, and the node is usable
 * without a probe.
 */
static json_t *load_nccl_probe(const char *path)
{
    json_error_t jerr;
    char why[160];
    json_t *j;
    struct stat sb;

    if (path == NULL)
        return NULL;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > NCCL_PROBE_MAX_BYTES) {
        LOG_WARN("agent", "nccl probe file missing or too large, not reported", "path=%s", path);
        return NULL;
    }
    j = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (j == NULL) {
        LOG_WARN("agent", "nccl probe file is not JSON, not reported", "path=%s line=%d", path,
                 jerr.line);
        return NULL;
    }
    if (!wrk_ncclbw_check(j, why, sizeof(why))) {
        LOG_WARN("agent", "nccl probe file is invalid, not reported", "path=%s error=\"%s\"", path,
                 why);
        json_decref(j);
        return NULL;
    }
    LOG_INFO("agent", "nccl probe loaded", "path=%s gpus=%lld", path,
             (long long)json_integer_value(json_object_get(j, "gpus")));
    return j;
}

static json_t *register_body(struct agent *a, const struct wrk_state *st)
{
    json_t *running = json_array(), *gpus = wrk_gpus_register_json(a->gpus);
    for (size_t i = 0; running != NULL && st != NULL && i < st->n; i++) {
        const struct wrk_state_attempt *sa = &st->attempts[i];
        json_t *pids = json_array();
        for (size_t j = 0; pids != NULL && j < sa->nprocs; j++)
            json_array_append_new(pids, json_integer(sa->procs[j].pid));
        json_array_append_new(running,
                              json_pack("{s:s, s:o*}", "attempt_id", sa->attempt_id, "pids", pids));
    }
    return json_pack("{s:s, s:s, s:O, s:i, s:I, s:s, s:o*, s:o*, s:O, s:o*, s:O*}", "hostname",
                     a->hostname, "addr", a->addr, "labels", a->labels, "cpus", wrk_host_cpus(),
                     "memory_mb", (json_int_t)wrk_host_memory_mb(), "version", TY_VERSION, "gpus",
                     gpus, "running", running, "capabilities", a->caps, "interconnect",
                     interconnect_json(a), "nccl_probe", a->nccl_probe);
}

static int in_list(const json_t *arr, const char *id)
{
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        if (s != NULL && strcmp(s, id) == 0)
            return 1;
    }
    return 0;
}

/* Keep only the attempts of st with a live process. */
static void prune_dead(struct wrk_state *st)
{
    size_t n = 0;
    for (size_t i = 0; i < st->n; i++) {
        int alive = 0;
        for (size_t j = 0; j < st->attempts[i].nprocs; j++)
            alive |=
                wrk_proc_alive(st->attempts[i].procs[j].pid, st->attempts[i].procs[j].starttime);
        if (alive)
            st->attempts[n++] = st->attempts[i];
        else
            LOG_INFO("agent", "recorded attempt no longer running", "attempt_id=%s",
                     st->attempts[i].attempt_id);
    }
    st->n = n;
}

/*
 * Register, retrying until it works or we are told to stop. 0 ok, -1 give
 * up, -2 the credential was refused.
 */
static int do_register(struct agent *a, struct wrk_state *st)
{
    int backoff = 1000;
    for (;;) {
        json_t *body = register_body(a, st), *resp = NULL;
        long status = 0;
        enum rc rc;

        if (body == NULL)
            return -1;
        rc = wrk_http_request(a->http, "POST", "/api/v1/agent/register", body, REQ_TIMEOUT_MS,
                              &status, &resp);
        json_decref(body);
        if (rc == RC_OK && status == 200) {
            const json_t *keep = json_object_get(resp, "keep"),
                         *kill = json_object_get(resp, "kill");
            json_int_t hb = json_integer_value(json_object_get(resp, "heartbeat_interval_ms"));
            const char *id = json_string_value(json_object_get(resp, "node_id"));
            if (hb >= 100 && hb <= 60000)
                a->hb_ms = (int)hb;
            if (id != NULL && strlen(id) < sizeof(a->node_id))
                snprintf(a->node_id, sizeof(a->node_id), "%s", id);
            for (size_t i = 0; i < st->n; i++) {
                const struct wrk_state_attempt *sa = &st->attempts[i];
                if (wrk_launcher_adopt(a->launcher, sa) != RC_OK)
                    continue;
                if (in_list(kill, sa->attempt_id) || !in_list(keep, sa->attempt_id)) {
                    LOG_INFO("agent", "stopping a left-over attempt", "attempt_id=%s",
                             sa->attempt_id);
                    wrk_launcher_cancel(a->launcher, sa->attempt_id,
                                        "stopped by the server after a worker restart");
                } else {
                    LOG_INFO("agent", "reattached", "attempt_id=%s", sa->attempt_id);
                }
            }
            json_decref(resp);
            LOG_INFO("agent", "registered", "node_id=%s gpus=%d heartbeat_ms=%d", a->node_id,
                     wrk_gpus_count(a->gpus), a->hb_ms);
            return 0;
        }
        if (rc == RC_OK && status == 400) {
            /* for example a "site" label naming no site: an admin must act */
            const char *m =
                json_string_value(json_object_get(json_object_get(resp, "error"), "message"));
            LOG_ERROR("agent", "register refused, retrying", "status=%ld error=\"%.200s\"", status,
                      m ? m : "");
        }
        json_decref(resp);
        if (rc == RC_OK && (status == 401 || status == 403)) {
            LOG_ERROR("agent", "register refused: the node credential is not valid", "status=%ld",
                      status);
            return -2;
        }
        if (!(rc == RC_OK && status == 400))
            LOG_WARN("agent", "register failed, retrying", "status=%ld", status);
        for (int t = 0; t < backoff; t += 100) {
            if (stopping(a))
                return -1;
            sleep_ms(100);
        }
        if (backoff < 10000)
            backoff *= 2;
    }
}

/* ---- the assignment poller ---- */

static void enqueue(struct agent *a, struct qitem *q)
{
    pthread_mutex_lock(&a->qmu);
    if (a->qtail != NULL)
        a->qtail->next = q;
    else
        a->qhead = q;
    a->qtail = q;
    pthread_cond_signal(&a->qcv);
    pthread_mutex_unlock(&a->qmu);
}

/*
 * Wait up to ms for enqueue(): an assignment starts the moment it arrives
 * instead of at the loop's next tick (that tick cost launches 0-100 ms;
 * bench/RESULTS.md, "Launch").
 */
static void wait_for_queue(struct agent *a, int ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&a->qmu);
    if (a->qhead == NULL)
        pthread_cond_timedwait(&a->qcv, &a->qmu, &ts);
    pthread_mutex_unlock(&a->qmu);
}

static void queue_cancel(struct agent *a, const char *id)
{
    struct qitem *q;
    if (!wrk_id_valid(id))
        return;
    q = calloc(1, sizeof(*q));
    if (q == NULL)
        return;
    q->is_cancel = 1;
    snprintf(q->attempt_id, sizeof(q->attempt_id), "%s", id);
    enqueue(a, q);
}

/* 1 if the poller has received attempt_id before; else remembers it, 0. */
static int seen_before(struct agent *a, const char *attempt_id)
{
    size_t n = a->nseen < SEEN_MAX ? a->nseen : SEEN_MAX;

    for (size_t i = 0; i < n; i++)
        if (strcmp(a->seen[i], attempt_id) == 0)
            return 1;
    snprintf(a->seen[a->nseen % SEEN_MAX], sizeof(a->seen[0]), "%s", attempt_id);
    a->nseen++;
    return 0;
}

static void handle_assignments(struct agent *a, const json_t *resp)
{
    const json_t *arr = json_object_get(resp, "assignments");
    const json_t *cancel = json_object_get(resp, "cancel");

    for (size_t i = 0; i < json_array_size(arr) && i < 256; i++) {
        struct err e;
        struct wrk_assignment *as = NULL;
        char *bad_id = NULL;
        struct qitem *q = calloc(1, sizeof(*q));
        enum rc rc;
        if (q == NULL)
            return;
        err_init(&e);
        rc = wrk_assignment_parse(json_array_get(arr, i), &as, &bad_id, &e);
        if (rc == RC_OK && seen_before(a, as->attempt_id)) {
            LOG_INFO("agent", "assignment received again, ignored", "attempt_id=%s",
                     as->attempt_id);
            wrk_assignment_free(as);
            free(q);
            q = NULL;
        } else if (rc == RC_OK) {
            const json_t *nets = json_object_get(json_array_get(arr, i), "allowed_networks");
            /* A copy for the control thread, not a second reference: the
             * poller's json_decref(resp) and the control thread's
             * json_decref(q->networks) would race, as jansson's decrement
             * is release-only and the last one frees without an acquire. */
            q->networks = json_deep_copy(nets);
            snprintf(q->attempt_id, sizeof(q->attempt_id), "%s", as->attempt_id);
            if (nets != NULL && q->networks == NULL) {
                /* Refused rather than run with fewer networks than asked. */
                snprintf(q->reason, sizeof(q->reason), "out of memory on the node");
                q->code = RSN_NODE_OUT_OF_MEMORY;
                wrk_assignment_free(as);
            } else {
                q->a = as;
            }
        } else if (bad_id != NULL) {
            LOG_WARN("agent", "invalid assignment", "attempt_id=%s error=\"%s\"", bad_id,
                     e.message);
            snprintf(q->attempt_id, sizeof(q->attempt_id), "%s", bad_id);
            snprintf(q->reason, sizeof(q->reason), "%s", e.message);
            q->code = RSN_ASSIGNMENT_INVALID;
        } else {
            LOG_WARN("agent", "invalid assignment without an attempt id", "error=\"%s\"",
                     e.message);
            free(q);
            q = NULL;
        }
        free(bad_id);
        if (q != NULL)
            enqueue(a, q);
    }
    for (size_t i = 0; i < json_array_size(cancel); i++)
        queue_cancel(a, json_string_value(json_array_get(cancel, i)));
}

static void *poll_main(void *arg)
{
    struct agent *a = arg;
    int backoff = 500, resend = 0;
    char path[64];

    while (!atomic_load(&a->poll_stop)) {
        json_t *resp = NULL;
        long status = 0;
        enum rc rc;
        if (atomic_load(&a->poll_draining)) {
            sleep_ms(200);
            continue;
        }
        snprintf(path, sizeof(path), "/api/v1/agent/assignments?wait=%d%s", POLL_WAIT_S,
                 resend ? "&resend=1" : "");
        rc = wrk_http_request(a->poll_http, "GET", path, NULL, (POLL_WAIT_S + 15) * 1000L, &status,
                              &resp);
        if (rc == RC_OK && status == 200) {
            handle_assignments(a, resp);
            json_decref(resp);
            backoff = 500;
            resend = 0;
            continue;
        }
        /* No answer at all: the server may have committed a handout that
         * never arrived. An answer other than 200 changed nothing. */
        if (rc != RC_OK)
            resend = 1;
        json_decref(resp);
        if (atomic_load(&a->poll_stop))
            break;
        LOG_WARN("agent", "assignment poll failed", "status=%ld", status);
        for (int t = 0; t < backoff && !atomic_load(&a->poll_stop); t += 100)
            sleep_ms(100);
        if (backoff < 8000)
            backoff *= 2;
    }
    return NULL;
}

/* ---- callbacks from launcher to shipper ---- */

static void cb_line(void *ctx, const char *attempt_id, int rank, const char *stream, uint64_t seq,
                    int64_t ts_ms, const char *text, size_t len)
{
    struct agent *a = ctx;
    wrk_shipper_line(a->shipper, attempt_id, rank, stream, seq, ts_ms, text, len);
}

static void cb_started(void *ctx, const char *attempt_id, int node_rank, const pid_t *pids,
                       size_t npids)
{
    struct agent *a = ctx;
    wrk_shipper_started(a->shipper, attempt_id, node_rank, pids, npids);
}

static void cb_exit(void *ctx, const struct wrk_exit_report *r)
{
    struct agent *a = ctx;
    wrk_shipper_exit(a->shipper, r);
}

static enum rc post_fn(void *ctx, const char *path, const json_t *body, long *status)
{
    struct agent *a = ctx;
    return wrk_http_request(a->ship_http, "POST", path, body, REQ_TIMEOUT_MS, status, NULL);
}

/* ---- launching ---- */

/*
 * Report an attempt that did not start: every rank -1, the reason as text and
 * as code (an RSN_* constant) with params (taken; NULL = {}), and when the
 * cause is deterministic (cause.h; NULL otherwise) the failure the server
 * fails the job on without a restart. detail (may be NULL) names what failed.
 */
static void refuse_cause(struct agent *a, const char *attempt_id, const struct wrk_assignment *as,
                         const char *code, json_t *params, const char *reason, const char *cause,
                         const char *detail)
{
    struct wrk_exit_report r;
    char *ps;

    memset(&r, 0, sizeof(r));
    snprintf(r.attempt_id, sizeof(r.attempt_id), "%s", attempt_id);
    snprintf(r.reason, sizeof(r.reason), "%s", reason);
    snprintf(r.reason_code, sizeof(r.reason_code), "%s", code);
    ps = params != NULL ? json_dumps(params, JSON_COMPACT) : NULL;
    /* Too long for the report: the code alone (the text still says it all). */
    snprintf(r.reason_params, sizeof(r.reason_params), "%s",
             ps != NULL && strlen(ps) < sizeof(r.reason_params) ? ps : "{}");
    free(ps);
    json_decref(params);
    if (cause != NULL) {
        snprintf(r.failure, sizeof(r.failure), "%s", cause);
        snprintf(r.failure_detail, sizeof(r.failure_detail), "%s", detail ? detail : "");
    }
    if (as != NULL) {
        r.node_rank = as->node_rank;
        for (size_t i = 0; i < as->nranks && i < WRK_MAX_RANKS; i++) {
            r.ranks[i].rank = as->ranks[i].rank;
            r.ranks[i].exit_code = -1;
        }
        r.nranks = as->nranks;
    }
    LOG_WARN("agent", "attempt refused", "attempt_id=%s reason=\"%s\" failure=%s", attempt_id,
             reason, cause ? cause : "");
    wrk_shipper_exit(a->shipper, &r);
}

static void refuse(struct agent *a, const char *attempt_id, const struct wrk_assignment *as,
                   const char *code, json_t *params, const char *reason)
{
    refuse_cause(a, attempt_id, as, code, params, reason, NULL, NULL);
}

/* {"detail": text}, for a refusal whose words are all it has. */
static json_t *detail_params(const char *text)
{
    return json_pack("{s:s}", "detail", text);
}

/*
 * The rank-0 node confirms the rendezvous port is free before starting: a
 * port taken by another program would make every rank hang in init and fail
 * much later. Refusing at once lets the server re-place the attempt with a
 * new port (and not count it against max_restarts).
 */
static int port_free(int port)
{
    struct sockaddr_in sin;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

    if (fd < 0)
        return 1; /* cannot tell; let the ranks try */
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)port);
    sin.sin_addr.s_addr = htonl(INADDR_ANY);
    ok = bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0;
    close(fd);
    return ok;
}

static void save_state(struct agent *a)
{
    struct wrk_state *st = NULL;
    uint64_t gen = wrk_launcher_generation(a->launcher);
    if (wrk_state_new(&st) != RC_OK)
        return;
    if (wrk_launcher_snapshot(a->launcher, st) == RC_OK &&
        wrk_state_save(a->state_path, st) == RC_OK)
        a->saved_gen = gen;
    else
        LOG_ERROR("agent", "cannot write the state file", "path=%s", a->state_path);
    wrk_state_free(st);
}

/*
 * The data-residency check on this node, before anything starts: work_dir,
 * output_dir and checkpoint_dir (created), resume_from and every local dataset must
 * resolve, symlinks followed, inside this worker's --allowed-root dirs and
 * the job's site roots. On refusal reason says which path and why
 * ("policy violation: ..."; the server records it as such).
 */
static enum rc check_paths(struct agent *a, const struct wrk_assignment *as, char *work, char *ckpt,
                           char *reason, size_t reason_size)
{
    const char *const *site = (const char *const *)as->site_roots;
    char tmp[PATH_MAX], dsfield[32];
    const char *field = "work_dir";
    struct err e;
    enum rc rc;

    err_init(&e);
    rc = wrk_path_check_site(as->work_dir, a->roots, a->nroots, site, as->nsite_roots, 1, work,
                             PATH_MAX, &e);
    if (rc == RC_OK && as->output_dir != NULL) {
        field = "output_dir";
        rc = wrk_path_check_site(as->output_dir, a->roots, a->nroots, site, as->nsite_roots, 1, tmp,
                                 sizeof(tmp), &e);
    }
    if (rc == RC_OK) {
        field = "checkpoint_dir";
        rc = wrk_path_check_site(as->checkpoint_dir, a->roots, a->nroots, site, as->nsite_roots, 1,
                                 ckpt, PATH_MAX, &e);
    }
    if (rc == RC_OK && as->resume_from[0] != '\0') {
        field = "resume_from";
        rc = wrk_path_check_site(as->resume_from, a->roots, a->nroots, site, as->nsite_roots, 0,
                                 tmp, sizeof(tmp), &e);
    }
    for (size_t i = 0; rc == RC_OK && i < as->ndatasets; i++) {
        snprintf(dsfield, sizeof(dsfield), "datasets[%zu]", i);
        field = dsfield;
        rc = wrk_path_check_site(as->datasets[i], a->roots, a->nroots, site, as->nsite_roots, 0,
                                 tmp, sizeof(tmp), &e);
    }
    if (rc == RC_OK)
        return RC_OK;
    if (rc == RC_EPOLICY)
        snprintf(reason, reason_size, "policy violation: %s: %s%s%s", field, e.message,
                 e.detail[0] ? " " : "", e.detail);
    else
        snprintf(reason, reason_size, "cannot prepare %s: %s", field, e.message);
    return rc;
}

/* ---- --isolate-network (netns.h) ---- */

/*
 * Give every rank key=val unless the job's own env sets key. A value the
 * server derived (nccl_env) is replaced: it names a host interface the
 * namespace does not have.
 */
static enum rc env_default(struct wrk_assignment *as, const char *key, const char *val)
{
    for (size_t i = 0; i < as->nenv; i++) {
        char *v;
        if (strcmp(as->env_keys[i], key) != 0)
            continue;
        if (i < as->nenv_job)
            return RC_OK;
        if ((v = strdup(val)) == NULL)
            return RC_ENOMEM;
        free(as->env_vals[i]);
        as->env_vals[i] = v;
        return RC_OK;
    }
    if (as->nenv >= WRK_MAX_ENV)
        return RC_OK; /* a full table is the job's own choice of variables */
    as->env_keys[as->nenv] = strdup(key);
    as->env_vals[as->nenv] = strdup(val);
    if (as->env_keys[as->nenv] == NULL || as->env_vals[as->nenv] == NULL) {
        free(as->env_keys[as->nenv]);
        free(as->env_vals[as->nenv]);
        as->env_keys[as->nenv] = as->env_vals[as->nenv] = NULL;
        return RC_ENOMEM;
    }
    as->nenv++;
    return RC_OK;
}

/*
 * Fit the assignment to its namespace before the plan is built. The node's
 * own address does not exist inside: ranks of the rank-0 node meet at the
 * namespace's loopback (the store listens on every address, so ranks of
 * other nodes still come in through the DNAT of node address:MASTER_PORT).
 * gloo and NCCL are told the namespace's interface, as their guess from the
 * host name would name an address the namespace lacks.
 */
static enum rc isolate_prepare(const char *owner, struct wrk_assignment *as)
{
    char ifname[32];
    enum rc rc;

    if (as->node_rank == 0) {
        char *m = strdup("127.0.0.1");
        if (m == NULL)
            return RC_ENOMEM;
        free(as->master_addr);
        as->master_addr = m;
    }
    if (as->nnodes > 1)
        wrk_netns_ifname(owner, as->attempt_id, ifname, sizeof(ifname));
    else
        snprintf(ifname, sizeof(ifname), "lo");
    if ((rc = env_default(as, "GLOO_SOCKET_IFNAME", ifname)) != RC_OK)
        return rc;
    return env_default(as, "NCCL_SOCKET_IFNAME", ifname);
}

/* Create the attempt's namespace; ns_path receives where the ranks go. */
static enum rc isolate_setup(const char *owner, const struct wrk_assignment *as, const char *master,
                             const json_t *networks, char *ns_path, size_t ns_size, struct err *e)
{
    const char *cidrs[WRK_NETNS_MAX_CIDRS];
    struct wrk_netns_spec s;
    size_t n = 0, i;
    json_t *v;
    enum rc rc;

    json_array_foreach(networks, i, v)
    {
        if (json_is_string(v) && n < WRK_NETNS_MAX_CIDRS)
            cidrs[n++] = json_string_value(v);
    }
    memset(&s, 0, sizeof(s));
    s.owner = owner;
    s.attempt_id = as->attempt_id;
    s.nnodes = as->nnodes;
    s.node_rank = as->node_rank;
    s.master_addr = master;
    s.master_port = as->master_port;
    s.cidrs = cidrs;
    s.ncidrs = n;
    rc = wrk_netns_setup(&s, e);
    if (rc == RC_OK)
        wrk_netns_path(s.owner, as->attempt_id, ns_path, ns_size);
    return rc;
}

/* Remove the namespaces of attempts that are no longer running here. */
static void isolate_sweep(struct agent *a)
{
    json_t *running = a->launcher != NULL ? wrk_launcher_running_json(a->launcher) : json_array();
    const char **keep = NULL;
    size_t n = 0, i;
    json_t *v;

    if (running == NULL)
        return; /* out of memory: the next change sweeps */
    keep = calloc(json_array_size(running) + 1, sizeof(*keep));
    if (keep != NULL) {
        json_array_foreach(running, i, v)
        {
            const char *id = json_string_value(json_object_get(v, "attempt_id"));
            if (id != NULL)
                keep[n++] = id;
        }
        wrk_netns_sweep(a->cfg->work_dir, keep, n);
    }
    free(keep);
    json_decref(running);
}

/*
 * "python3 train.py" whose train.py is not there fails with exit 2 on every
 * attempt: refuse it before spawning, as script_not_found (cause.h).
 * Returns 1 when refused. work is the resolved working directory.
 */
static int refuse_missing_script(struct agent *a, const struct wrk_assignment *as, const char *work)
{
    const char *script = wrk_cause_script_arg(as->command);
    char q[160], reason[256];

    if (script == NULL || !wrk_cause_script_missing(work, script))
        return 0;
    pathpol_quote(script, strlen(script), q, sizeof(q));
    snprintf(reason, sizeof(reason), "the script \"%s\" does not exist%s", q,
             script[0] == '/' ? "" : " in the working directory");
    refuse_cause(a, as->attempt_id, as, RSN_SCRIPT_NOT_FOUND, json_pack("{s:s}", "script", q),
                 reason, WRK_CAUSE_SCRIPT_NOT_FOUND, q);
    return 1;
}

static void launch(struct agent *a, struct wrk_assignment *as, const json_t *networks)
{
    char work[PATH_MAX], ckpt[PATH_MAX], ds_path[PATH_MAX + 32];
    char master[256], ns_path[WRK_ID_MAX + 32];
    int isolated = a->cfg->isolate_network;
    struct err e;
    struct wrk_plan *plan = NULL;
    struct wrk_plan_opts o;
    struct wrk_launch_req req;
    char reason[300];
    enum rc rc;

    err_init(&e);
    if (wrk_launcher_has(a->launcher, as->attempt_id))
        return; /* delivered twice */
    if (a->draining) {
        refuse(a, as->attempt_id, as, RSN_NODE_DRAINING, NULL, "node is draining");
        return;
    }
    /* In an isolated single-node attempt the port is in a fresh namespace. */
    if (as->node_rank == 0 && !(isolated && as->nnodes == 1) && !port_free(as->master_port)) {
        snprintf(reason, sizeof(reason), "rendezvous port %d is in use on this node",
                 as->master_port);
        refuse(a, as->attempt_id, as, RSN_RENDEZVOUS_PORT_BUSY,
               json_pack("{s:i}", "port", as->master_port), reason);
        return;
    }
    rc = check_paths(a, as, work, ckpt, reason, sizeof(reason));
    if (rc == RC_EPOLICY) { /* the same paths are refused on every attempt */
        const char *prefix = "policy violation: ";
        size_t n = strlen(prefix);
        const char *what = strncmp(reason, prefix, n) == 0 ? reason + n : reason;
        refuse_cause(a, as->attempt_id, as, RSN_PATH_REFUSED, detail_params(what), reason,
                     WRK_CAUSE_PATH_REFUSED, what);
        return;
    }
    if (rc != RC_OK) {
        refuse(a, as->attempt_id, as, RSN_PREPARE_FAILED, detail_params(reason), reason);
        return;
    }
    if (refuse_missing_script(a, as, work))
        return;
    snprintf(ds_path, sizeof(ds_path), "%s/ds_config.json", work);
    if ((as->launcher == WRK_LAUNCH_DEEPSPEED || as->ds_config != NULL) &&
        write_file_atomic(ds_path, as->ds_config ? as->ds_config : wrk_default_ds_config(), 0640) !=
            RC_OK) {
        refuse(a, as->attempt_id, as, RSN_PREPARE_FAILED,
               detail_params("cannot write ds_config.json"), "cannot write ds_config.json");
        return;
    }
    snprintf(master, sizeof(master), "%s", as->master_addr);
    if (isolated && isolate_prepare(a->cfg->work_dir, as) != RC_OK) {
        refuse(a, as->attempt_id, as, RSN_NODE_OUT_OF_MEMORY, NULL, "out of memory");
        return;
    }
    memset(&o, 0, sizeof(o));
    o.path = getenv("PATH");
    o.home = getenv("HOME");
    o.lang = getenv("LANG");
    o.pythonpath = getenv("PYTHONPATH");
    o.hostname = isolated && as->nnodes == 1 ? "127.0.0.1" : a->addr;
    o.ds_config_path = ds_path;
    if (wrk_plan_build(as, &o, &plan, &e) != RC_OK) {
        const char *m = e.message[0] ? e.message : "cannot build the launch plan";
        refuse(a, as->attempt_id, as, RSN_PREPARE_FAILED, detail_params(m), m);
        return;
    }
    /* Never launched unisolated: a namespace that cannot be made refuses the attempt. */
    if (isolated && isolate_setup(a->cfg->work_dir, as, master, networks, ns_path, sizeof(ns_path),
                                  &e) != RC_OK) {
        const char *m = e.message[0] ? e.message : "network isolation failed";
        refuse(a, as->attempt_id, as, RSN_ISOLATION_FAILED, detail_params(m), m);
        wrk_plan_free(plan);
        return;
    }
    memset(&req, 0, sizeof(req));
    req.attempt_id = as->attempt_id;
    req.job_id = as->job_id;
    req.node_rank = as->node_rank;
    req.cwd = work;
    req.plan = plan;
    req.time_limit_s = as->time_limit_s;
    req.grace_s = as->grace_s;
    req.netns_path = isolated ? ns_path : NULL;
    LOG_INFO("agent", "launching", "attempt_id=%s job_id=%s launcher=%s procs=%zu isolated=%d",
             as->attempt_id, as->job_id, wrk_launcher_name(as->launcher), plan->nprocs, isolated);
    if (wrk_launcher_start(a->launcher, &req, &e) != RC_OK) {
        int for_good = strcmp(e.code, WRK_CAUSE_EXEC_FAILED) == 0;
        const char *m = e.message[0] ? e.message : "cannot start the ranks";
        refuse_cause(a, as->attempt_id, as, for_good ? RSN_EXEC_FAILED : RSN_SPAWN_FAILED,
                     detail_params(e.detail[0] ? e.detail : m), m,
                     for_good ? WRK_CAUSE_EXEC_FAILED : NULL, e.detail);
        if (isolated)
            wrk_netns_teardown(a->cfg->work_dir, as->attempt_id);
    } else
        save_state(a); /* before anything else: no rank may go unrecorded */
    wrk_plan_free(plan);
}

static void drain_queue(struct agent *a)
{
    struct qitem *q;
    for (;;) {
        pthread_mutex_lock(&a->qmu);
        q = a->qhead;
        if (q != NULL) {
            a->qhead = q->next;
            if (a->qhead == NULL)
                a->qtail = NULL;
        }
        pthread_mutex_unlock(&a->qmu);
        if (q == NULL)
            return;
        if (q->is_cancel) {
            if (wrk_launcher_cancel(a->launcher, q->attempt_id, "cancelled"))
                LOG_INFO("agent", "cancel", "attempt_id=%s", q->attempt_id);
        } else if (q->a != NULL) {
            launch(a, q->a, q->networks);
        } else {
            refuse(a, q->attempt_id, NULL, q->code != NULL ? q->code : RSN_ASSIGNMENT_INVALID,
                   detail_params(q->reason), q->reason);
        }
        wrk_assignment_free(q->a);
        json_decref(q->networks);
        free(q);
    }
}

/*
 * Raise each running rank's GPU memory peak from NVML's per-process figures
 * (gpu.h); each process counts for its process group, which its rank leads.
 * Nothing happens without NVML (fake GPUs): no figure is made up.
 */
static void sample_gpu_mem(struct agent *a)
{
    struct wrk_proc_mem pm[256];
    struct wrk_group_mem gm[256];
    int n = wrk_gpus_proc_mem(a->gpus, pm, sizeof(pm) / sizeof(pm[0]));
    size_t k = 0;

    for (int i = 0; i < n; i++) {
        pid_t pg;
        if (wrk_proc_pgid(pm[i].pid, &pg) != RC_OK)
            continue; /* gone, or a pid of another PID namespace */
        gm[k].pgid = pg;
        gm[k].bytes = pm[i].bytes;
        k++;
    }
    if (k > 0)
        wrk_launcher_note_gpu_mem(a->launcher, gm, k);
}

static void heartbeat(struct agent *a)
{
    json_t *body, *resp = NULL;
    long status = 0;

    wrk_gpus_sample(a->gpus, wrk_launcher_gpu_busy, a->launcher);
    body = json_pack("{s:o*, s:o*, s:b}", "gpus", wrk_gpus_heartbeat_json(a->gpus), "running",
                     wrk_launcher_running_json(a->launcher), "draining", a->draining);
    if (body == NULL)
        return;
    if (wrk_http_request(a->http, "POST", "/api/v1/agent/heartbeat", body, 5000L, &status, &resp) !=
        RC_OK) {
        LOG_WARN("agent", "heartbeat failed", "");
    } else if (status != 200) {
        LOG_WARN("agent", "heartbeat refused", "status=%ld", status);
    } else {
        const json_t *cancel = json_object_get(resp, "cancel");
        for (size_t i = 0; i < json_array_size(cancel); i++) {
            const char *id = json_string_value(json_array_get(cancel, i));
            if (id != NULL && wrk_launcher_cancel(a->launcher, id, "cancelled"))
                LOG_INFO("agent", "cancel", "attempt_id=%s", id);
        }
    }
    json_decref(body);
    json_decref(resp);
}

/* ---- setup and the loop ---- */

static int setup(struct agent *a)
{
    struct err e;
    const struct wrk_config *c = a->cfg;
    const struct wrk_fake_spec *fake = c->fake ? &c->fake_spec : NULL;

    err_init(&e);
    if (gethostname(a->hostname, sizeof(a->hostname) - 1) != 0)
        snprintf(a->hostname, sizeof(a->hostname), "localhost");
    if (c->addr != NULL)
        snprintf(a->addr, sizeof(a->addr), "%s", c->addr);
    else
        guess_addr(a->addr, sizeof(a->addr));
    if (wrk_labels_parse(c->labels, &a->labels, &e) != RC_OK) {
        LOG_ERROR("agent", "bad --labels", "error=\"%s\"", e.message);
        return -1;
    }
    if (wrk_gpus_open(fake, c->name ? c->name : a->hostname, &a->gpus) != RC_OK)
        return -1;
    if (wrk_caps_probe(c->python, WRK_CAPS_TIMEOUT_MS, &a->caps) != RC_OK)
        return -1;
    a->nccl_probe = load_nccl_probe(c->nccl_probe_file);
    return 0;
}

int wrk_agent_run(const struct wrk_config *cfg)
{
    struct agent ag, *a = &ag;
    struct wrk_state *st = NULL;
    struct wrk_launcher_cb cb;
    struct wrk_shipper_opts so;
    int ret = 1, joined, rc;
    int64_t next_hb, next_mem = 0, drain_deadline = 0;

    memset(a, 0, sizeof(*a));
    a->cfg = cfg;
    a->hb_ms = cfg->heartbeat_ms > 0 ? cfg->heartbeat_ms : 2000;
    atomic_init(&a->poll_stop, 0);
    atomic_init(&a->poll_draining, 0);
    pthread_mutex_init(&a->qmu, NULL);
    pthread_cond_init(&a->qcv, NULL);
    if (setup(a) != 0)
        goto out;
    if (cfg->discover_only) {
        json_t *b = register_body(a, NULL);
        char *t = b ? json_dumps(b, JSON_INDENT(2)) : NULL;
        if (t != NULL)
            printf("%s\n", t);
        free(t);
        json_decref(b);
        ret = t != NULL ? 0 : 1;
        goto out;
    }
    if (mkdir(cfg->work_dir, 0750) != 0 && errno != EEXIST) {
        LOG_ERROR("agent", "cannot create the work dir", "path=%s", cfg->work_dir);
        goto out;
    }
    for (size_t i = 0; i < cfg->nroots && i < WRK_MAX_ROOTS; i++)
        a->roots[a->nroots++] = cfg->roots[i];
    if (a->nroots == 0)
        a->roots[a->nroots++] = cfg->work_dir;
    snprintf(a->node_path, sizeof(a->node_path), "%s/node.json", cfg->work_dir);
    snprintf(a->state_path, sizeof(a->state_path), "%s/state.json", cfg->work_dir);
    if (wrk_http_new(cfg->server, cfg->ca_file, &a->http) != RC_OK ||
        wrk_http_new(cfg->server, cfg->ca_file, &a->poll_http) != RC_OK ||
        wrk_http_new(cfg->server, cfg->ca_file, &a->ship_http) != RC_OK) {
        LOG_ERROR("agent", "bad --server, want http:// or https://", "");
        goto out;
    }
    /* The node token would cross the network in the clear. */
    if (url_is_plain_remote(cfg->server))
        LOG_WARN("agent",
                 "plain HTTP to a server on another machine: the node token is sent "
                 "unencrypted; use https:// (and --ca-file for a private CA)",
                 "server=%s", cfg->server);
    joined = load_node(a);
    while (!joined) {
        int r;
        if (cfg->join_token == NULL) {
            LOG_ERROR("agent", "no node.json and no --join-token", "path=%s", a->node_path);
            goto out;
        }
        r = do_join(a);
        if (r == 0)
            goto out;
        if (r == 1)
            break;
        for (int t = 0; t < 2000; t += 100) {
            if (stopping(a))
                goto out;
            sleep_ms(100);
        }
    }
    if (wrk_http_set_credential(a->http, a->credential) != RC_OK ||
        wrk_http_set_credential(a->poll_http, a->credential) != RC_OK ||
        wrk_http_set_credential(a->ship_http, a->credential) != RC_OK)
        goto out;

    memset(&so, 0, sizeof(so));
    so.post = post_fn;
    so.post_ctx = a;
    if (wrk_shipper_new(&so, &a->shipper) != RC_OK)
        goto out;
    cb.on_line = cb_line;
    cb.on_started = cb_started;
    cb.on_exit = cb_exit;
    cb.ctx = a;
    if (wrk_launcher_new(&cb, &a->launcher) != RC_OK)
        goto out;
    if (wrk_state_load(a->state_path, &st) != RC_OK) {
        LOG_WARN("agent", "state file unreadable, ignoring it", "path=%s", a->state_path);
        if (wrk_state_new(&st) != RC_OK)
            goto out;
    }
    prune_dead(st);
    rc = do_register(a, st);
    if (rc == -2 && cfg->join_token != NULL) {
        /* a stale node.json (the node was re-joined elsewhere): join again */
        LOG_INFO("agent", "joining again with the join token", "");
        if (do_join(a) != 1 || wrk_http_set_credential(a->http, a->credential) != RC_OK ||
            wrk_http_set_credential(a->poll_http, a->credential) != RC_OK ||
            wrk_http_set_credential(a->ship_http, a->credential) != RC_OK)
            goto out;
        rc = do_register(a, st);
    }
    if (rc != 0)
        goto out;
    save_state(a);
    if (cfg->isolate_network) { /* what a crashed worker left, but not the re-adopted */
        a->swept_gen = wrk_launcher_generation(a->launcher);
        isolate_sweep(a);
    }
    if (pthread_create(&a->poll_thr, NULL, poll_main, a) != 0)
        goto out;
    a->poll_started = 1;

    next_hb = mono_ms();
    for (;;) {
        int64_t now = mono_ms();
        if (stopping(a) && !a->draining) {
            a->draining = 1;
            atomic_store(&a->poll_draining, 1);
            LOG_INFO("agent", "draining: stopping every rank", "");
            wrk_launcher_cancel_all(a->launcher, "worker shutdown", cfg->grace_s);
            drain_deadline = now + (int64_t)(cfg->grace_s > 0 ? cfg->grace_s : 30) * 1000 + 10000;
            next_hb = now;
        }
        if (now >= next_hb) {
            heartbeat(a);
            next_hb = now + a->hb_ms;
        }
        drain_queue(a);
        if (now >= next_mem && wrk_launcher_count(a->launcher) > 0) {
            sample_gpu_mem(a);
            next_mem = now + GPU_MEM_SAMPLE_MS;
        }
        if (wrk_launcher_generation(a->launcher) != a->saved_gen)
            save_state(a);
        if (cfg->isolate_network && wrk_launcher_generation(a->launcher) != a->swept_gen) {
            a->swept_gen = wrk_launcher_generation(a->launcher);
            isolate_sweep(a); /* an attempt ended (or started): drop its namespace */
        }
        if (a->draining && wrk_launcher_count(a->launcher) == 0)
            break;
        if (a->draining && now >= drain_deadline) {
            LOG_WARN("agent", "ranks still running at the drain deadline", "");
            break;
        }
        wait_for_queue(a, 100);
    }
    heartbeat(a); /* draining, nothing running */
    ret = 0;
out:
    if (a->poll_started) {
        atomic_store(&a->poll_stop, 1);
        wrk_http_abort(a->poll_http);
        pthread_join(a->poll_thr, NULL);
    }
    /* the launcher first: once it is gone no callback can reach the shipper */
    if (a->launcher != NULL) {
        wrk_launcher_free(a->launcher);
        a->launcher = NULL;
        if (cfg->isolate_network) /* every rank is gone now */
            isolate_sweep(a);
        if (ret == 0) {
            struct wrk_state *empty = NULL;
            if (wrk_state_new(&empty) == RC_OK && wrk_state_save(a->state_path, empty) != RC_OK)
                LOG_WARN("agent", "cannot clear the state file", "");
            wrk_state_free(empty);
        }
    }
    /* queued reports leave before the shipper goes */
    wrk_shipper_free(a->shipper, 10000);
    a->shipper = NULL;
    while (a->qhead != NULL) {
        struct qitem *q = a->qhead;
        a->qhead = q->next;
        wrk_assignment_free(q->a);
        json_decref(q->networks);
        free(q);
    }
    wrk_state_free(st);
    wrk_http_free(a->http);
    wrk_http_free(a->poll_http);
    wrk_http_free(a->ship_http);
    wrk_gpus_free(a->gpus);
    json_decref(a->labels);
    json_decref(a->caps);
    json_decref(a->nccl_probe);
    crypto_free_secret(a->credential);
    pthread_mutex_destroy(&a->qmu);
    pthread_cond_destroy(&a->qcv);
    return ret;
}
