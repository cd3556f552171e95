/*
 * agent.c - the control loop of trainyard-worker (see agent.h): it ties
 * together join (join.c), register (register.c), the assignment poller
 * (poller.c), the preparation and start of attempts (prepare.c, refuse.c,
 * isolate.c), heartbeats (heartbeat.c), GPU memory sampling (gpu_sample.c),
 * the launcher and the shipper.
 *
 * Threads:
 *   - control (the caller of wrk_agent_run): heartbeats, launches queued
 *     assignments, applies cancels, writes state.json, drives shutdown;
 *   - poller (poller.c): the assignment long-poll, feeding a queue;
 *   - shipper (shipper.c) and launcher I/O (launcher.c).
 * Each thread has its own struct wrk_http. Lock order does not arise: no
 * function holds two of the poller queue / launcher / shipper locks.
 */
#include "agent.h"
#include "agent_int.h"
#include "urlcheck.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "caps.h"
#include "crypto.h"
#include "gpu_sample.h"
#include "heartbeat.h"
#include "isolate.h"
#include "join.h"
#include "log.h"
#include "prepare.h"
#include "refuse.h"
#include "register.h"
#include "state.h"

#define GPU_MEM_SAMPLE_MS 500 /* per-rank GPU memory peak sampling, while ranks run */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void wrk_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

int wrk_agent_stopping(const struct wrk_agent *a)
{
    return a->cfg->stop != NULL && atomic_load(a->cfg->stop);
}

static void cb_line(void *ctx, const char *attempt_id, int rank, const char *stream, uint64_t seq,
                    int64_t ts_ms, const char *text, size_t len)
{
    struct wrk_agent *a = ctx;
    wrk_shipper_line(a->shipper, attempt_id, rank, stream, seq, ts_ms, text, len);
}

static void cb_started(void *ctx, const char *attempt_id, int node_rank, const pid_t *pids,
                       size_t npids)
{
    struct wrk_agent *a = ctx;
    wrk_shipper_started(a->shipper, attempt_id, node_rank, pids, npids);
}

static void cb_exit(void *ctx, const struct wrk_exit_report *r)
{
    struct wrk_agent *a = ctx;
    wrk_shipper_exit(a->shipper, r);
}

static enum rc post_fn(void *ctx, const char *path, const json_t *body, long *status)
{
    struct wrk_agent *a = ctx;
    return wrk_http_request(a->ship_http, "POST", path, body, WRK_REQ_TIMEOUT_MS, status, NULL);
}

static void save_state(struct wrk_agent *a)
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

static int setup(struct wrk_agent *a)
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
        wrk_join_guess_addr(a->addr, sizeof(a->addr));
    if (wrk_labels_parse(c->labels, &a->labels, &e) != RC_OK) {
        LOG_ERROR("agent", "bad --labels", "error=\"%s\"", e.message);
        return -1;
    }
    if (wrk_gpus_open(fake, c->name ? c->name : a->hostname, &a->gpus) != RC_OK)
        return -1;
    if (wrk_caps_probe(c->python, WRK_CAPS_TIMEOUT_MS, &a->caps) != RC_OK)
        return -1;
    a->nccl_probe = wrk_register_nccl_probe(c->nccl_probe_file);
    return 0;
}

/* ---- the control loop ---- */

static void drain_queue(struct wrk_agent *a)
{
    struct wrk_qitem *q;

    while ((q = wrk_poller_pop(&a->poller)) != NULL) {
        if (q->is_cancel) {
            if (wrk_launcher_cancel(a->launcher, q->attempt_id, "cancelled"))
                LOG_INFO("agent", "cancel", "attempt_id=%s", q->attempt_id);
        } else if (q->a != NULL) {
            if (wrk_prepare_start(a, q->a, q->networks))
                save_state(a); /* before anything else: no rank may go unrecorded */
        } else {
            wrk_refuse(a->shipper, q->attempt_id, NULL,
                       q->code != NULL ? q->code : RSN_ASSIGNMENT_INVALID,
                       wrk_refuse_detail(q->reason), q->reason);
        }
        wrk_qitem_free(q);
    }
}

static void heartbeat(struct wrk_agent *a)
{
    wrk_heartbeat(a->http, a->gpus, a->launcher, a->draining);
}

/* Drop the namespace of an attempt that ended (or keep a new one's). */
static void sweep_if_changed(struct wrk_agent *a)
{
    if (a->cfg->isolate_network && wrk_launcher_generation(a->launcher) != a->swept_gen) {
        a->swept_gen = wrk_launcher_generation(a->launcher);
        wrk_isolate_sweep(a->cfg->work_dir, a->launcher);
    }
}

/* Until the worker is told to stop and every rank has ended (or the drain deadline passed). */
static void control_loop(struct wrk_agent *a)
{
    const struct wrk_config *cfg = a->cfg;
    int64_t next_hb = mono_ms(), next_mem = 0, drain_deadline = 0;

    for (;;) {
        int64_t now = mono_ms();
        if (wrk_agent_stopping(a) && !a->draining) {
            a->draining = 1;
            wrk_poller_drain(&a->poller);
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
            wrk_gpu_sample_mem(a->gpus, a->launcher);
            next_mem = now + GPU_MEM_SAMPLE_MS;
        }
        if (wrk_launcher_generation(a->launcher) != a->saved_gen)
            save_state(a);
        sweep_if_changed(a);
        if (a->draining && wrk_launcher_count(a->launcher) == 0)
            break;
        if (a->draining && now >= drain_deadline) {
            LOG_WARN("agent", "ranks still running at the drain deadline", "");
            break;
        }
        wrk_poller_wait(&a->poller, 100);
    }
}

/* ---- start and shutdown ---- */

static void agent_init(struct wrk_agent *a, const struct wrk_config *cfg)
{
    memset(a, 0, sizeof(*a));
    a->cfg = cfg;
    a->hb_ms = cfg->heartbeat_ms > 0 ? cfg->heartbeat_ms : 2000;
    wrk_poller_init(&a->poller);
}

/* --discover: print the register body. The process exit status. */
static int discover(struct wrk_agent *a)
{
    json_t *b = wrk_register_body(a, NULL);
    char *t = b ? json_dumps(b, JSON_INDENT(2)) : NULL;

    if (t != NULL)
        printf("%s\n", t);
    free(t);
    json_decref(b);
    return t != NULL ? 0 : 1;
}

/*
 * The work dir holds the node credential: no rank may list or read it.
 * 0700, or 0711 (pass through, no listing) when it is also the allowed root
 * that the ranks' run dirs lie below; node.json and state.json are 0600
 * either way. 0 or -1.
 */
static int seal_work_dir(const struct wrk_config *cfg, int is_root)
{
    mode_t mode = is_root && cfg->job_ident != NULL && cfg->job_ident->switch_ids ? 0711 : 0700;
    struct stat st;

    if (mkdir(cfg->work_dir, mode) != 0 && errno != EEXIST) {
        LOG_ERROR("agent", "cannot create the work dir", "path=%s", cfg->work_dir);
        return -1;
    }
    if (lstat(cfg->work_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        LOG_ERROR("agent", "the work dir is not a directory", "path=%s", cfg->work_dir);
        return -1;
    }
    /* A root worker takes over a dir another user owns (an image's
     * package-made state dir): the owner could swap the credential. */
    if (st.st_uid != geteuid() && geteuid() == 0 && lchown(cfg->work_dir, 0, 0) == 0) {
        LOG_INFO("agent", "work dir taken over by root", "path=%s previous_uid=%d", cfg->work_dir,
                 (int)st.st_uid);
        st.st_uid = 0;
    }
    if (st.st_uid != geteuid()) {
        LOG_ERROR("agent",
                  "the work dir belongs to another user: the node credential would not "
                  "be the worker's alone",
                  "path=%s owner_uid=%d", cfg->work_dir, (int)st.st_uid);
        return -1;
    }
    if ((st.st_mode & 07777) != mode && chmod(cfg->work_dir, mode) != 0) {
        LOG_ERROR("agent", "cannot restrict the work dir", "path=%s", cfg->work_dir);
        return -1;
    }
    return 0;
}

/* The work dir, the allowed roots, and one HTTP client per thread. 0 or -1. */
static int open_clients(struct wrk_agent *a)
{
    const struct wrk_config *cfg = a->cfg;

    for (size_t i = 0; i < cfg->nroots && i < WRK_MAX_ROOTS; i++)
        a->roots[a->nroots++] = cfg->roots[i];
    if (a->nroots == 0)
        a->roots[a->nroots++] = cfg->work_dir;
    if (seal_work_dir(cfg, cfg->nroots == 0) != 0)
        return -1;
    snprintf(a->node_path, sizeof(a->node_path), "%s/node.json", cfg->work_dir);
    snprintf(a->state_path, sizeof(a->state_path), "%s/state.json", cfg->work_dir);
    if (wrk_http_new(cfg->server, cfg->ca_file, &a->http) != RC_OK ||
        wrk_http_new(cfg->server, cfg->ca_file, &a->poll_http) != RC_OK ||
        wrk_http_new(cfg->server, cfg->ca_file, &a->ship_http) != RC_OK) {
        LOG_ERROR("agent", "bad --server, want http:// or https://", "");
        return -1;
    }
    /* The node token would cross the network in the clear. */
    if (url_is_plain_remote(cfg->server))
        LOG_WARN("agent",
                 "plain HTTP to a server on another machine: the node token is sent "
                 "unencrypted; use https:// (and --ca-file for a private CA)",
                 "server=%s", cfg->server);
    return 0;
}

/* Give every thread's HTTP client the node credential. 0 or -1. */
static int set_credentials(struct wrk_agent *a)
{
    if (wrk_http_set_credential(a->http, a->credential) != RC_OK ||
        wrk_http_set_credential(a->poll_http, a->credential) != RC_OK ||
        wrk_http_set_credential(a->ship_http, a->credential) != RC_OK)
        return -1;
    return 0;
}

/* The shipper, then the launcher whose callbacks feed it. 0 or -1. */
static int start_output(struct wrk_agent *a)
{
    struct wrk_launcher_cb cb;
    struct wrk_shipper_opts so;

    memset(&so, 0, sizeof(so));
    so.post = post_fn;
    so.post_ctx = a;
    if (wrk_shipper_new(&so, &a->shipper) != RC_OK)
        return -1;
    cb.on_line = cb_line;
    cb.on_started = cb_started;
    cb.on_exit = cb_exit;
    cb.ctx = a;
    if (wrk_launcher_new(&cb, &a->launcher) != RC_OK)
        return -1;
    return 0;
}

/*
 * Register with the attempts state.json (*st, the caller frees it) says may
 * still run here; a credential the server refuses is replaced by joining
 * again when there is a join token. 0 or -1.
 */
static int register_node(struct wrk_agent *a, struct wrk_state **st)
{
    int rc;

    if (wrk_state_load(a->state_path, st) != RC_OK) {
        LOG_WARN("agent", "state file unreadable, ignoring it", "path=%s", a->state_path);
        if (wrk_state_new(st) != RC_OK)
            return -1;
    }
    wrk_register_prune_dead(*st);
    rc = wrk_register(a, *st);
    if (rc == -2 && a->cfg->join_token != NULL) {
        /* a stale node.json (the node was re-joined elsewhere): join again */
        LOG_INFO("agent", "joining again with the join token", "");
        if (wrk_join(a) != 1 || set_credentials(a) != 0)
            return -1;
        rc = wrk_register(a, *st);
    }
    return rc == 0 ? 0 : -1;
}

/*
 * Stop the poller and the launcher, clear the state file after a clean
 * exit (ok), flush the shipper, and free everything a holds.
 */
static void agent_cleanup(struct wrk_agent *a, int ok)
{
    wrk_poller_stop(&a->poller);
    /* the launcher first: once it is gone no callback can reach the shipper */
    if (a->launcher != NULL) {
        wrk_launcher_free(a->launcher);
        a->launcher = NULL;
        if (a->cfg->isolate_network) /* every rank is gone now */
            wrk_isolate_sweep(a->cfg->work_dir, NULL);
        if (ok) {
            struct wrk_state *empty = NULL;
            if (wrk_state_new(&empty) == RC_OK && wrk_state_save(a->state_path, empty) != RC_OK)
                LOG_WARN("agent", "cannot clear the state file", "");
            wrk_state_free(empty);
        }
    }
    /* queued reports leave before the shipper goes */
    wrk_shipper_free(a->shipper, 10000);
    a->shipper = NULL;
    wrk_poller_cleanup(&a->poller);
    wrk_http_free(a->http);
    wrk_http_free(a->poll_http);
    wrk_http_free(a->ship_http);
    wrk_gpus_free(a->gpus);
    json_decref(a->labels);
    json_decref(a->caps);
    json_decref(a->nccl_probe);
    crypto_free_secret(a->credential);
}

int wrk_agent_run(const struct wrk_config *cfg)
{
    struct wrk_agent ag, *a = &ag;
    struct wrk_state *st = NULL;
    int ret = 1;

    agent_init(a, cfg);
    if (setup(a) != 0)
        goto out;
    if (cfg->discover_only) {
        ret = discover(a);
        goto out;
    }
    if (open_clients(a) != 0 || wrk_join_node(a) != 0 || set_credentials(a) != 0 ||
        start_output(a) != 0 || register_node(a, &st) != 0)
        goto out;
    save_state(a);
    if (cfg->isolate_network) { /* what a crashed worker left, but not the re-adopted */
        a->swept_gen = wrk_launcher_generation(a->launcher);
        wrk_isolate_sweep(cfg->work_dir, a->launcher);
    }
    if (wrk_poller_start(&a->poller, a->poll_http) != RC_OK)
        goto out;
    control_loop(a);
    heartbeat(a); /* draining, nothing running */
    ret = 0;
out:
    agent_cleanup(a, ret == 0);
    wrk_state_free(st);
    return ret;
}
