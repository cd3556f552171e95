/*
 * db_sched.c - snapshot in, decisions out, for the scheduler thread
 * (see db_sched.h). Times are the database's clock in ms since the epoch, so
 * replicas with skewed clocks agree.
 */
#include "db_sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "clock.h"
#include "db.h"
#include "db_alloc.h"
#include "db_jobs.h"
#include "db_lease.h"
#include "db_plan.h"
#include "jobplan.h"
#include "jx.h"
#include "log.h"
#include "metrics.h"

#define SCHED_ACTOR "system:scheduler"

static int64_t col_i64(PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? 0 : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

/* "{0,3,5}" or "0,3,5" -> mask of those indices below 64. */
static uint64_t parse_index_list(const char *s)
{
    uint64_t mask = 0;

    while (*s) {
        char *end;
        long v;
        if (*s < '0' || *s > '9') {
            s++;
            continue;
        }
        v = strtol(s, &end, 10);
        if (v >= 0 && v < 64)
            mask |= 1ULL << v;
        s = end;
    }
    return mask;
}

static char *keep(struct db_sched_snapshot *s, const char *v)
{
    char *copy;

    if (v == NULL || *v == '\0')
        return NULL;
    copy = strdup(v);
    if (copy != NULL)
        s->strings[s->nstrings++] = copy;
    return copy;
}

static enum rc read_nodes(PGconn *c, struct db_sched_snapshot *s)
{
    PGresult *r = db_exec(
        c,
        "SELECT n.id, n.name, n.state, n.labels->>'rack', n.labels->>'switch', n.addr, "
        "(SELECT count(*) FROM gpus g WHERE g.node_id = n.id), (SELECT "
        "coalesce(array_agg(x), '{}') FROM allocations a, unnest(a.gpu_indices) x WHERE "
        "a.node_id = n.id AND a.released_at IS NULL), (SELECT coalesce(json_agg(json_build_array("
        "g.idx, g.nvlink_peers)), '[]') FROM gpus g WHERE g.node_id = n.id), n.site_id FROM nodes "
        "n ORDER BY n.id",
        0, NULL);
    enum rc rc = db_result_rc(r, "sched");
    int n = rc == RC_OK ? PQntuples(r) : 0;

    if (rc == RC_OK && n > 0) {
        s->nodes = calloc((size_t)n, sizeof(*s->nodes));
        s->node_addr = calloc((size_t)n, sizeof(*s->node_addr));
        s->strings = calloc((size_t)n * 3 + 1, sizeof(char *));
        if (s->nodes == NULL || s->node_addr == NULL || s->strings == NULL)
            rc = RC_ENOMEM;
    }
    for (int i = 0; rc == RC_OK && i < n; i++) {
        struct sched_node *nd = &s->nodes[i];
        const char *st = PQgetvalue(r, i, 2);
        int64_t ngpus = col_i64(r, i, 6);
        json_t *peers = jx_loads(PQgetvalue(r, i, 8), 0);
        size_t k;
        json_t *pair;
        nd->id = col_i64(r, i, 0);
        nd->name = keep(s, PQgetvalue(r, i, 1));
        nd->state = strcmp(st, "ready") == 0      ? SCHED_NODE_READY
                    : strcmp(st, "draining") == 0 ? SCHED_NODE_DRAINING
                                                  : SCHED_NODE_DOWN;
        nd->rack = keep(s, PQgetvalue(r, i, 3));
        nd->switch_name = keep(s, PQgetvalue(r, i, 4));
        nd->site = col_i64(r, i, 9);
        snprintf(s->node_addr[i], sizeof(s->node_addr[i]), "%s", PQgetvalue(r, i, 5));
        nd->ngpus = ngpus > SCHED_MAX_GPUS_PER_NODE ? SCHED_MAX_GPUS_PER_NODE : (int)ngpus;
        nd->free_mask = (nd->ngpus == 64 ? ~0ULL : ((1ULL << nd->ngpus) - 1)) &
                        ~parse_index_list(PQgetvalue(r, i, 7));
        json_array_foreach(peers, k, pair)
        {
            json_int_t g = json_integer_value(json_array_get(pair, 0));
            json_t *list = json_array_get(pair, 1);
            size_t m;
            json_t *p;
            if (g < 0 || g >= SCHED_MAX_GPUS_PER_NODE)
                continue;
            json_array_foreach(list, m, p)
            {
                json_int_t q = json_integer_value(p);
                if (q >= 0 && q < SCHED_MAX_GPUS_PER_NODE)
                    nd->nvlink_peers[g] |= 1ULL << q;
            }
        }
        json_decref(peers);
    }
    s->cluster.nodes = s->nodes;
    s->cluster.nnodes = (size_t)n;
    PQclear(r);
    return rc;
}

static enum rc read_teams(PGconn *c, struct db_sched_snapshot *s)
{
    PGresult *r =
        db_exec(c, "SELECT id, gpu_quota, priority_weight FROM teams ORDER BY id", 0, NULL);
    enum rc rc = db_result_rc(r, "sched");
    int n = rc == RC_OK ? PQntuples(r) : 0;

    if (rc == RC_OK && n > 0 && (s->teams = calloc((size_t)n, sizeof(*s->teams))) == NULL)
        rc = RC_ENOMEM;
    for (int i = 0; rc == RC_OK && i < n; i++) {
        s->teams[i].id = col_i64(r, i, 0);
        s->teams[i].quota_gpus = (int)col_i64(r, i, 1);
        s->teams[i].weight = strtod(PQgetvalue(r, i, 2), NULL);
    }
    s->cluster.teams = s->teams;
    s->cluster.nteams = (size_t)n;
    PQclear(r);
    return rc;
}

static enum rc read_running(PGconn *c, struct db_sched_snapshot *s)
{
    PGresult *r = db_exec(
        c,
        "SELECT j.id, j.team_id, j.priority, j.gpus, (extract(epoch FROM j.created_at) * "
        "1000)::bigint, (extract(epoch FROM t.created_at) * 1000)::bigint, j.time_limit_s, "
        "a.node_id, array_to_string(a.gpu_indices, ','), j.service FROM allocations a JOIN jobs j "
        "ON "
        "j.id "
        "= a.job_id JOIN attempts t ON t.id = a.attempt_id WHERE a.released_at IS NULL ORDER BY "
        "j.id, a.node_rank",
        0, NULL);
    enum rc rc = db_result_rc(r, "sched");
    int n = rc == RC_OK ? PQntuples(r) : 0;
    size_t nrun = 0;

    if (rc == RC_OK && n > 0) {
        s->allocs = calloc((size_t)n, sizeof(*s->allocs));
        s->running = calloc((size_t)n, sizeof(*s->running));
        if (s->allocs == NULL || s->running == NULL)
            rc = RC_ENOMEM;
    }
    for (int i = 0; rc == RC_OK && i < n; i++) {
        int64_t job = col_i64(r, i, 0);
        struct sched_running *run;
        int service;
        if (nrun == 0 || s->running[nrun - 1].job_id != job) {
            run = &s->running[nrun++];
            run->job_id = job;
            run->team_id = col_i64(r, i, 1);
            run->prio = (enum sched_prio)col_i64(r, i, 2);
            run->gpus = (int)col_i64(r, i, 3);
            run->submit_ms = col_i64(r, i, 4);
            run->start_ms = col_i64(r, i, 5);
            /* A service job (a deployment's replica, 025) has no time
             * limit and is never preempted: its users' requests would fail
             * while it is away, and it keeps no checkpoint to resume from. */
            service = PQgetvalue(r, i, 9)[0] == 't';
            run->end_by_ms = service ? SCHED_TIME_UNKNOWN : run->start_ms + col_i64(r, i, 6) * 1000;
            run->true_end_ms = SCHED_TIME_UNKNOWN;
            run->allocs = &s->allocs[i];
            run->preemptible = !service;
            run->attained_gpu_ms = (s->now_ms - run->start_ms) * run->gpus;
        }
        run = &s->running[nrun - 1];
        s->allocs[i].node_id = col_i64(r, i, 7);
        s->allocs[i].gpu_mask = parse_index_list(PQgetvalue(r, i, 8));
        run->nallocs++;
    }
    s->cluster.running = s->running;
    s->cluster.nrunning = nrun;
    PQclear(r);
    return rc;
}

/* Waiting jobs; a service job whose restart is held back (jobs.not_before,
 * lifecycle_attempt_failed) is left out until its wait is over. */
static enum rc read_queue(PGconn *c, struct db_sched_snapshot *s)
{
    PGresult *r = db_exec(
        c,
        "SELECT j.id, j.team_id, j.priority, j.gpus, j.gpus_per_node, (extract(epoch FROM "
        "j.created_at) * 1000)::bigint, j.time_limit_s, j.site_id FROM jobs j WHERE j.state IN "
        "('QUEUED', "
        "'RESTARTING') AND NOT j.cancel_requested AND (j.not_before IS NULL OR j.not_before <= "
        "now()) AND NOT EXISTS (SELECT 1 FROM allocations a "
        "WHERE a.job_id = j.id AND a.released_at IS NULL) ORDER BY j.id LIMIT 100000",
        0, NULL);
    enum rc rc = db_result_rc(r, "sched");
    int n = rc == RC_OK ? PQntuples(r) : 0;

    if (rc == RC_OK && n > 0 && (s->jobs = calloc((size_t)n, sizeof(*s->jobs))) == NULL)
        rc = RC_ENOMEM;
    for (int i = 0; rc == RC_OK && i < n; i++) {
        struct sched_job *j = &s->jobs[i];
        j->id = col_i64(r, i, 0);
        j->team_id = col_i64(r, i, 1);
        j->prio = (enum sched_prio)col_i64(r, i, 2);
        j->gpus = (int)col_i64(r, i, 3);
        j->gpus_per_node = (int)col_i64(r, i, 4);
        j->submit_ms = col_i64(r, i, 5);
        j->time_limit_ms = col_i64(r, i, 6) * 1000;
        j->site = col_i64(r, i, 7);
    }
    s->queue.jobs = s->jobs;
    s->queue.njobs = (size_t)n;
    PQclear(r);
    return rc;
}

enum rc db_sched_snapshot(PGconn *c, struct db_sched_snapshot *s)
{
    PGresult *r;
    enum rc rc;

    memset(s, 0, sizeof(*s));
    r = db_exec(c, "SELECT (extract(epoch FROM now()) * 1000)::bigint", 0, NULL);
    rc = db_result_rc(r, "sched");
    if (rc == RC_OK)
        s->now_ms = col_i64(r, 0, 0);
    PQclear(r);
    if (rc == RC_OK)
        rc = read_nodes(c, s);
    if (rc == RC_OK)
        rc = read_teams(c, s);
    if (rc == RC_OK)
        rc = read_running(c, s);
    if (rc == RC_OK)
        rc = read_queue(c, s);
    return rc;
}

void db_sched_snapshot_free(struct db_sched_snapshot *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->nstrings; i++)
        free(s->strings[i]);
    free(s->strings);
    free(s->nodes);
    free(s->node_addr);
    free(s->teams);
    free(s->running);
    free(s->allocs);
    free(s->jobs);
    memset(s, 0, sizeof(*s));
}

static const char *node_addr(const struct db_sched_snapshot *s, int64_t node_id, const char **name)
{
    for (size_t i = 0; i < s->cluster.nnodes; i++) {
        if (s->nodes[i].id == node_id) {
            *name = s->nodes[i].name ? s->nodes[i].name : "";
            return s->node_addr[i];
        }
    }
    *name = "";
    return "";
}

/* A uniform random number below n (n small), from the OpenSSL CSPRNG. */
static unsigned random_below(unsigned n)
{
    unsigned v = 0;

    if (RAND_bytes((unsigned char *)&v, sizeof(v)) != 1)
        v = (unsigned)srv_mono_us();
    return v % n;
}

static void touch(int64_t node, int64_t *nodes, size_t max, size_t *n)
{
    for (size_t i = 0; i < *n; i++)
        if (nodes[i] == node)
            return;
    if (*n < max)
        nodes[(*n)++] = node;
}

/* "ddp (torch), micro-batch 4 x accumulation 2 x 2 ranks, fp32, ..." */
static void plan_summary(const json_t *plan, char *buf, size_t size)
{
    const json_t *gb = json_object_get(plan, "global_batch");
    const json_t *st = json_object_get(plan, "status");
    size_t off, i;
    json_t *w;
    int n;

    n = snprintf(buf, size,
                 "plan: %s (%s), micro-batch %" JSON_INTEGER_FORMAT
                 " x accumulation %" JSON_INTEGER_FORMAT " x %" JSON_INTEGER_FORMAT
                 " ranks = %" JSON_INTEGER_FORMAT ", %s, activation checkpointing %s%s",
                 json_string_value(json_object_get(plan, "strategy")),
                 json_string_value(json_object_get(plan, "engine")),
                 json_integer_value(json_object_get(plan, "micro_batch")),
                 json_integer_value(json_object_get(plan, "grad_accum")),
                 json_integer_value(json_object_get(plan, "dp_degree")),
                 json_integer_value(json_object_get(gb, "reached")),
                 json_string_value(json_object_get(plan, "precision")),
                 json_is_true(json_object_get(plan, "activation_checkpointing")) ? "on" : "off",
                 json_is_string(st) && strcmp(json_string_value(st), "ok") == 0 ? ""
                                                                                : "; does not fit");
    off = n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
    json_array_foreach(json_object_get(plan, "warnings"), i, w)
    {
        n = snprintf(buf + off, size - off, "%s%s",
                     i ? ", " : "; warnings: ", json_string_value(json_object_get(w, "code")));
        if (n < 0 || (size_t)n >= size - off)
            break;
        off += (size_t)n;
    }
}

/*
 * The plan for the GPUs just allocated (jobplan.h), stored with the attempt,
 * as a "plan" job event and a job.plan audit event. Lock order (db.h): the
 * job's row is held (lock_decided_jobs) and its transition has taken the
 * audit head; only this job's new attempt and event rows are written. A job
 * without a model is not planned; a plan the advisor refuses is logged and
 * left out (its ranks then split the batch themselves).
 */
static enum rc plan_placed(PGconn *c, int64_t job_id, const char *attempt_id)
{
    char job[24], why[320], reason[512];
    const char *pp[] = {db_i64(job_id, job, sizeof(job))};
    json_t *spec = NULL, *nodes = NULL, *alloc = NULL, *caps = NULL, *plan = NULL;
    PGresult *r = db_exec(c, "SELECT spec FROM jobs WHERE id = $1", 1, pp);
    int64_t aid = 0;
    struct err e;
    enum rc rc = db_result_rc(r, "sched");

    err_init(&e);
    if (rc == RC_OK && PQntuples(r) == 1)
        spec = jx_loads(PQgetvalue(r, 0, 0), 0);
    PQclear(r);
    if (rc != RC_OK || !jobplan_wanted(spec))
        goto out;
    if ((rc = db_parse_i64(attempt_id, &aid)) != RC_OK ||
        (rc = db_plan_attempt_nodes(c, aid, &nodes, "sched")) != RC_OK)
        goto out;
    rc = jobplan_placed_alloc(nodes, &alloc, &caps, why, sizeof(why));
    if (rc == RC_OK)
        rc = jobplan_make(spec, alloc, caps, "placement", why, &plan, &e);
    if (rc == RC_ENOTFOUND || rc == RC_EINVAL) {
        LOG_WARN("sched", "job not planned at placement", "job_id=%lld field=%s msg=\"%s\"",
                 (long long)job_id, e.field, e.message);
        rc = RC_OK;
        goto out;
    }
    if (rc != RC_OK)
        goto out;
    plan_summary(plan, reason, sizeof(reason));
    rc = db_plan_placed(c, job_id, aid, "PLACED", plan, reason, SCHED_ACTOR, "sched");
out:
    json_decref(spec);
    json_decref(nodes);
    json_decref(alloc);
    json_decref(caps);
    json_decref(plan);
    return rc;
}

/* Write one placement: job -> PLACED, a new attempt, its allocations. The
 * job's row is locked already (lock_decided_jobs); after the transition has
 * taken the audit head, only this job's row and new rows are written. */
static enum rc place_one(PGconn *c, const struct db_sched_snapshot *s,
                         const struct sched_placement *p, int port_min, int port_max, int *placed,
                         int64_t *nodes, size_t max, size_t *nnodes)
{
    static const char *const from[] = {"QUEUED", "RESTARTING", NULL};
    char job[24], attempt[16], attempt_id[24], port[16], node[24], rank[16], start[16], gpus[256];
    struct job_reason why;
    const char *name0 = "", *addr0 = node_addr(s, p->allocs[0].node_id, &name0);
    PGresult *r;
    enum rc rc;
    int rank_start = 0;
    size_t off;

    snprintf(job, sizeof(job), "%lld", (long long)p->job_id);
    job_reason_init(&why, RSN_PLACED,
                    json_pack("{s:i,s:s}", "nodes", (int)p->nallocs, "rank0_node", name0),
                    "placed on %zu node(s), rank 0 on %s", p->nallocs, name0);
    rc = db_job_transition(c, p->job_id, from, "PLACED", &why, SCHED_ACTOR, "", "sched");
    job_reason_cleanup(&why);
    if (rc == RC_ECONFLICT || rc == RC_ENOTFOUND)
        return RC_OK; /* cancelled or changed since the snapshot */
    if (rc != RC_OK)
        return rc;
    {
        const char *pp[] = {job};
        r = db_exec(c, "UPDATE jobs SET attempt = attempt + 1 WHERE id = $1 RETURNING attempt", 1,
                    pp);
    }
    if ((rc = db_result_rc(r, "sched")) == RC_OK)
        snprintf(attempt, sizeof(attempt), "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    if (rc != RC_OK)
        return rc;
    {
        const char *pp[] = {job, attempt, addr0};
        r = db_exec(c,
                    "INSERT INTO attempts (job_id, attempt, master_addr, master_port, "
                    "resume_from) VALUES ($1, $2, $3, 0, coalesce((SELECT path FROM checkpoints "
                    "WHERE job_id = $1 ORDER BY step DESC, id DESC LIMIT 1), '')) RETURNING id",
                    3, pp);
    }
    if ((rc = db_result_rc(r, "sched")) == RC_OK)
        snprintf(attempt_id, sizeof(attempt_id), "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    if (rc != RC_OK)
        return rc;
    /* A random port per attempt, by default from a range below the kernel's
     * ephemeral ports (32768+) and above the common service ports, so that
     * two attempts on one node rarely meet. The rank-0 worker confirms it can
     * bind the port and refuses the attempt otherwise (re-placed, not
     * counted against max_restarts). */
    snprintf(port, sizeof(port), "%u",
             (unsigned)port_min + random_below((unsigned)(port_max - port_min + 1)));
    {
        const char *pp[] = {attempt_id, port};
        rc = db_exec_ok(c, "sched", "UPDATE attempts SET master_port = $2 WHERE id = $1", 2, pp);
    }
    for (size_t i = 0; rc == RC_OK && i < p->nallocs; i++) {
        int count = 0;
        off = 0;
        gpus[off++] = '{';
        for (int g = 0; g < 64 && off + 4 < sizeof(gpus); g++) {
            if (!(p->allocs[i].gpu_mask & (1ULL << g)))
                continue;
            off += (size_t)snprintf(gpus + off, sizeof(gpus) - off, "%s%d", count ? "," : "", g);
            count++;
        }
        gpus[off++] = '}';
        gpus[off] = '\0';
        snprintf(node, sizeof(node), "%lld", (long long)p->allocs[i].node_id);
        snprintf(rank, sizeof(rank), "%zu", i);
        snprintf(start, sizeof(start), "%d", rank_start);
        rank_start += count;
        {
            const char *pp[] = {attempt_id, job, node, rank, gpus, start};
            rc = db_exec_ok(c, "sched",
                            "INSERT INTO allocations (attempt_id, job_id, node_id, node_rank, "
                            "gpu_indices, rank_start) VALUES ($1, $2, $3, $4, $5, $6)",
                            6, pp);
        }
        touch(p->allocs[i].node_id, nodes, max, nnodes);
    }
    if (rc == RC_OK)
        rc = plan_placed(c, p->job_id, attempt_id);
    if (rc == RC_OK)
        (*placed)++;
    return rc;
}

/* One pass's writes, as a db_tx() body; the counts are reset on each run. */
struct apply_tx {
    PGconn *c;
    const struct db_sched_snapshot *s;
    const struct sched_decisions *d;
    int64_t lease_epoch;
    int port_min, port_max;
    int *placed;
    int64_t *nodes_touched;
    size_t nodes_max;
    size_t *nnodes_touched;
};

/* Lock order (db.h): every job this pass may change, in id order, before the
 * first transition takes the audit head. Locking them one by one as the
 * decisions come would take job rows after the audit head, and a cancel
 * (one job row, then the audit head) would deadlock with the pass. */
static enum rc lock_decided_jobs(PGconn *c, const struct sched_decisions *d)
{
    size_t n = 0;
    int64_t *ids = malloc((d->npreemptions + d->nplacements + 1) * sizeof(*ids));
    enum rc rc;

    if (ids == NULL)
        return RC_ENOMEM;
    for (size_t i = 0; i < d->npreemptions; i++)
        ids[n++] = d->preemptions[i].job_id;
    for (size_t i = 0; i < d->nplacements; i++)
        if (d->placements[i].nallocs > 0)
            ids[n++] = d->placements[i].job_id;
    rc = db_jobs_lock(c, ids, n, "sched");
    free(ids);
    return rc;
}

static enum rc apply_body(void *arg)
{
    static const char *const running[] = {"PLACED", "STARTING", "RUNNING", NULL};
    struct apply_tx *x = arg;
    PGconn *c = x->c;
    const struct sched_decisions *d = x->d;
    enum rc rc;

    *x->placed = 0;
    *x->nnodes_touched = 0;
    /* Lock order (db.h): the lease row before the job rows. */
    rc = db_lease_fence(c, DB_LEASE_SCHEDULER, x->lease_epoch, "sched");
    if (rc == RC_OK)
        rc = lock_decided_jobs(c, d);
    for (size_t i = 0; rc == RC_OK && i < d->npreemptions; i++) {
        const struct sched_preemption *pe = &d->preemptions[i];
        int quota = pe->reason == SCHED_PREEMPT_QUOTA;
        struct job_reason why;
        job_reason_init(&why, RSN_PREEMPTED,
                        json_pack("{s:I,s:s}", "for_job_id", (json_int_t)pe->for_job_id, "why",
                                  quota ? "team_quota" : "least_attained_service"),
                        "preempted for job %lld (%s)", (long long)pe->for_job_id,
                        quota ? "team quota" : "least attained service");
        rc =
            db_job_transition(c, pe->job_id, running, "RESTARTING", &why, SCHED_ACTOR, "", "sched");
        job_reason_cleanup(&why);
        if (rc == RC_OK)
            metrics_job_preempted(); /* counted again if the transaction is retried (rare) */
        if (rc == RC_ECONFLICT || rc == RC_ENOTFOUND) {
            rc = RC_OK;
            continue;
        }
        if (rc == RC_OK)
            rc = db_alloc_release_job(c, pe->job_id, "preempted", "sched");
        /* Its workers stop the ranks as soon as their polls answer. */
        for (size_t r = 0; rc == RC_OK && r < x->s->cluster.nrunning; r++) {
            const struct sched_running *run = &x->s->cluster.running[r];
            if (run->job_id != pe->job_id)
                continue;
            for (size_t a = 0; a < run->nallocs; a++)
                touch(run->allocs[a].node_id, x->nodes_touched, x->nodes_max, x->nnodes_touched);
        }
    }
    for (size_t i = 0; rc == RC_OK && i < d->nplacements; i++)
        if (d->placements[i].nallocs > 0)
            rc = place_one(c, x->s, &d->placements[i], x->port_min, x->port_max, x->placed,
                           x->nodes_touched, x->nodes_max, x->nnodes_touched);
    return rc;
}

enum rc db_sched_apply(PGconn *c, int64_t lease_epoch, const struct db_sched_snapshot *s,
                       const struct sched_decisions *d, int port_min, int port_max, int *placed,
                       int64_t *nodes_touched, size_t nodes_max, size_t *nnodes_touched)
{
    struct apply_tx x = {
        c, s, d, lease_epoch, port_min, port_max, placed, nodes_touched, nodes_max, nnodes_touched};
    enum rc rc = db_tx(c, apply_body, &x, "sched");

    if (rc == RC_OK) {
        db_jobs_changed();
    } else {
        *placed = 0;
        *nnodes_touched = 0;
    }
    return rc;
}
