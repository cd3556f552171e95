/*
 * sched_forecast.c - the queue forecast: reasons from one pass at now, starts
 * from a forward simulation of passes (see sched_forecast.h).
 *
 * Main structures (struct sim, one per call): a private copy of the nodes
 * (their free masks change as simulated jobs start and end), the running
 * jobs (the snapshot's, then the simulated ones) with their allocations in
 * one pool and their simulated end, and the simulated queue sorted by job id
 * (a placement is found by bisection), each entry with its index in the
 * output (-1: a running job the simulation preempted and queued again).
 *
 * Invariants: a running job's GPUs are never in its nodes' free masks (the
 * snapshot's promise, kept by every start and end), so each simulated pass is
 * a valid snapshot for sched_plan(); every loop turn ends at least one running
 * job or stops, and turns are bounded by max_events, so the simulation ends.
 *
 * Threading: none; no globals.
 */
#include "sched_forecast_int.h"

#include <stdlib.h>
#include <string.h>

#define DAY_MS (24LL * 3600 * 1000)

struct sched_forecast_int {
    struct sched_decisions d; /* reused by every pass of every call */
};

const char *sched_wait_code(enum sched_wait w)
{
    switch (w) {
    case SCHED_WAIT_NONE:
        return "none";
    case SCHED_WAIT_GPUS:
        return "gpus";
    case SCHED_WAIT_QUOTA:
        return "quota";
    case SCHED_WAIT_PRIORITY:
        return "priority";
    case SCHED_WAIT_RESERVED:
        return "reserved";
    case SCHED_WAIT_SITE_TOO_SMALL:
        return "site_too_small";
    case SCHED_WAIT_DRAINING:
        return "draining";
    }
    return "unknown";
}

void sched_forecast_init(struct sched_forecast *f)
{
    memset(f, 0, sizeof(*f));
}

static void out_reset(struct sched_forecast *f)
{
    free(f->jobs);
    f->jobs = NULL;
    f->njobs = 0;
    f->truncated = false;
}

void sched_forecast_cleanup(struct sched_forecast *f)
{
    if (f == NULL)
        return;
    out_reset(f);
    if (f->in) {
        sched_decisions_cleanup(&f->in->d);
        free(f->in);
    }
    memset(f, 0, sizeof(*f));
}

int64_t sched_fc_sat_add(int64_t a, int64_t b)
{
    if (b > SCHED_TIME_UNKNOWN - 1 - a)
        return SCHED_TIME_UNKNOWN - 1;
    return a + b;
}

static int node_index(const struct sim *S, int64_t id)
{
    return sched_nid_find(S->nids, S->nn, id);
}

static long queue_index(const struct sim *S, int64_t id)
{
    size_t lo = 0, hi = S->nq;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (S->q[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < S->nq && S->q[lo].id == id ? (long)lo : -1;
}

int64_t sched_fc_job_dur(const struct sim *S, const struct sched_job *j)
{
    if ((S->pol->flags & F_ORACLE) && j->true_duration_ms > 0)
        return j->true_duration_ms;
    if (j->predicted_ms > 0)
        return j->predicted_ms;
    if (j->time_limit_ms > 0)
        return j->time_limit_ms;
    return S->dflt;
}

int64_t sched_fc_job_end(const struct sim *S, const struct sched_job *j, int64_t t)
{
    int64_t dur = sched_fc_job_dur(S, j);
    if (!(S->pol->flags & F_ORACLE) && j->time_limit_ms > 0 && dur > j->time_limit_ms)
        dur = j->time_limit_ms; /* stopped at its limit */
    return sched_fc_sat_add(t, dur);
}

int sched_fc_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 16;
    while (nc < need)
        nc *= 2;
    void *np = realloc(*p, nc * elem);
    if (np == NULL)
        return -1;
    *p = np;
    *cap = nc;
    return 0;
}

/* Add a running job (allocs copied into the pool); -1 on no memory. */
static int run_add(struct sim *S, const struct sched_running *r, const struct sched_alloc *a,
                   size_t na, int64_t end)
{
    if (S->nrun == S->caprun) {
        size_t nc = S->caprun ? S->caprun * 2 : 64;
        struct sched_running *nr = realloc(S->run, nc * sizeof(*nr));
        if (nr == NULL)
            return -1;
        S->run = nr;
        size_t *no = realloc(S->raoff, nc * sizeof(*no));
        if (no == NULL)
            return -1;
        S->raoff = no;
        int64_t *ne = realloc(S->rend, nc * sizeof(*ne));
        if (ne == NULL)
            return -1;
        S->rend = ne;
        S->caprun = nc;
    }
    if (sched_fc_grow((void **)&S->pool, &S->cappool, S->npool + na, sizeof(*S->pool)) != 0)
        return -1;
    if (na)
        memcpy(S->pool + S->npool, a, na * sizeof(*a));
    S->run[S->nrun] = *r;
    S->run[S->nrun].allocs = NULL;
    S->run[S->nrun].nallocs = na;
    S->raoff[S->nrun] = S->npool;
    S->rend[S->nrun] = end;
    S->npool += na;
    S->nrun++;
    return 0;
}

/* Give running job r's GPUs back to its nodes and drop it (order not kept). */
static void run_remove(struct sim *S, size_t r)
{
    const struct sched_alloc *a = S->pool + S->raoff[r];
    for (size_t k = 0; k < S->run[r].nallocs; k++) {
        int n = node_index(S, a[k].node_id);
        if (n >= 0)
            S->nodes[n].free_mask |= a[k].gpu_mask;
    }
    S->nrun--;
    S->run[r] = S->run[S->nrun];
    S->raoff[r] = S->raoff[S->nrun];
    S->rend[r] = S->rend[S->nrun];
}

/* Insert job j (queue stays sorted by id); -1 on no memory. */
static int queue_insert(struct sim *S, const struct sched_job *j, long out)
{
    size_t cap = S->capq;
    if (sched_fc_grow((void **)&S->q, &S->capq, S->nq + 1, sizeof(*S->q)) != 0)
        return -1;
    if (S->capq != cap) {
        long *no = realloc(S->qout, S->capq * sizeof(*no));
        unsigned char *ng = no ? realloc(S->gone, S->capq) : NULL;
        if (no)
            S->qout = no;
        if (ng)
            S->gone = ng;
        if (no == NULL || ng == NULL) {
            S->capq = cap; /* q grew, its mates did not: keep the smaller capacity */
            return -1;
        }
    }
    size_t lo = 0, hi = S->nq;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (S->q[mid].id < j->id)
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(S->q + lo + 1, S->q + lo, (S->nq - lo) * sizeof(*S->q));
    memmove(S->qout + lo + 1, S->qout + lo, (S->nq - lo) * sizeof(*S->qout));
    S->q[lo] = *j;
    S->qout[lo] = out;
    S->nq++;
    return 0;
}

static bool site_ok(int64_t node_site, int64_t job_site)
{
    return node_site == 0 || job_site == 0 || node_site == job_site;
}

/*
 * Could (g, gpn) be placed on the nodes whose usable GPU counts are cnt[]
 * (negative: the node cannot take the job)? single: the job must fit one node.
 */
static bool fits(const int *cnt, size_t nn, int g, int gpn, bool single)
{
    int64_t sum = 0;
    for (size_t i = 0; i < nn; i++) {
        if (cnt[i] <= 0)
            continue;
        if (single && cnt[i] >= g)
            return true;
        sum += gpn > 0 ? cnt[i] / gpn : cnt[i];
    }
    if (single)
        return false;
    return gpn > 0 ? sum >= g / gpn : sum >= g;
}

enum cnt_kind { CNT_ALL, CNT_READY, CNT_FREE, CNT_FREE_UNRESERVED };

/* Fill cnt[] for job j: per node the GPUs of that kind, -1 where j cannot go. */
static void counts(const struct sim *S, const struct sched_job *j, enum cnt_kind kind,
                   const uint64_t *resv, int *cnt, bool *single, int *free_sum)
{
    int maxng = 0;
    *free_sum = 0;
    for (size_t i = 0; i < S->nn; i++) {
        const struct sched_node *nd = &S->nodes[i];
        cnt[i] = -1;
        if (!site_ok(nd->site, j->site) || (j->gpus_per_node > 0 && nd->ngpus < j->gpus_per_node))
            continue;
        if (kind != CNT_ALL && nd->state != SCHED_NODE_READY)
            continue;
        if (nd->ngpus > maxng)
            maxng = nd->ngpus;
        uint64_t m = gpu_bits(nd->ngpus);
        if (kind == CNT_FREE || kind == CNT_FREE_UNRESERVED)
            m &= nd->free_mask;
        if (kind == CNT_FREE_UNRESERVED)
            m &= ~resv[i];
        cnt[i] = popc(m);
    }
    *single = (j->gpus_per_node == 0 && j->gpus <= maxng) || j->gpus_per_node == j->gpus;
    for (size_t i = 0; i < S->nn; i++)
        if (cnt[i] > 0 && (!*single || S->nodes[i].ngpus >= j->gpus))
            *free_sum += cnt[i];
}

static int team_quota(const struct sched_cluster *c, int64_t team)
{
    for (size_t t = 0; t < c->nteams; t++)
        if (c->teams[t].id == team)
            return c->teams[t].quota_gpus > 0 ? c->teams[t].quota_gpus : 0;
    return 0;
}

/* What the reason of a waiting job depends on besides its team: its shape. */
struct shape_facts {
    int free_sum;    /* GPUs free now on nodes that could take it */
    bool fits_all;   /* fits the site's nodes whatever their state or load */
    bool fits_ready; /* fits the READY ones */
    bool fits_unres; /* fits what is free off the reservation */
    bool fits_free;  /* fits what is free, reserved GPUs included */
};

static struct shape_facts shape_facts(const struct sim *S, const struct sched_job *j,
                                      const uint64_t *resv, int *cnt)
{
    struct shape_facts f;
    bool single;
    int sum;

    counts(S, j, CNT_FREE, resv, cnt, &single, &f.free_sum);
    f.fits_free = fits(cnt, S->nn, j->gpus, j->gpus_per_node, single);
    counts(S, j, CNT_ALL, resv, cnt, &single, &sum);
    f.fits_all = fits(cnt, S->nn, j->gpus, j->gpus_per_node, single);
    counts(S, j, CNT_READY, resv, cnt, &single, &sum);
    f.fits_ready = fits(cnt, S->nn, j->gpus, j->gpus_per_node, single);
    counts(S, j, CNT_FREE_UNRESERVED, resv, cnt, &single, &sum);
    f.fits_unres = fits(cnt, S->nn, j->gpus, j->gpus_per_node, single);
    return f;
}

struct rkey {
    int gpus, gpn;
    int64_t site;
    size_t i;
};

static int cmp_rkey_f(const void *a, const void *b)
{
    const struct rkey *x = a, *y = b;
    if (x->gpus != y->gpus)
        return x->gpus < y->gpus ? -1 : 1;
    if (x->gpn != y->gpn)
        return x->gpn < y->gpn ? -1 : 1;
    if (x->site != y->site)
        return x->site < y->site ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

struct tused {
    int64_t team, used;
};

static int cmp_tused(const void *a, const void *b)
{
    const struct tused *x = a, *y = b;
    return (x->team > y->team) - (x->team < y->team);
}

/* GPUs in use by team, from the running jobs: sorted (team, used) pairs, *n of them. */
static struct tused *teams_used(const struct sim *S, size_t *n)
{
    struct tused *u = malloc((S->nrun ? S->nrun : 1) * sizeof(*u));
    size_t m = 0;

    *n = 0;
    if (u == NULL)
        return NULL;
    for (size_t r = 0; r < S->nrun; r++)
        u[r] = (struct tused){S->run[r].team_id, S->run[r].gpus};
    qsort(u, S->nrun, sizeof(*u), cmp_tused);
    for (size_t r = 0; r < S->nrun; r++) {
        if (m > 0 && u[m - 1].team == u[r].team)
            u[m - 1].used += u[r].used;
        else
            u[m++] = u[r];
    }
    *n = m;
    return u;
}

static int64_t team_used(const struct tused *u, size_t n, int64_t team)
{
    struct tused k = {team, 0};
    const struct tused *f = bsearch(&k, u, n, sizeof(*u), cmp_tused);
    return f ? f->used : 0;
}

/*
 * The reason of every output job not started by the first pass, from the
 * state right after that pass (its placements and preemptions applied).
 * Jobs of one shape (GPUs, GPUs per node, site) share every node count, so
 * the nodes are counted once per shape, not once per job: O(shapes x nodes
 * + jobs log jobs).
 */
static enum rc first_reasons(struct sim *S, const struct sched_decisions *d)
{
    int *cnt = calloc(S->nn ? S->nn : 1, sizeof(*cnt));
    uint64_t *resv = calloc(S->nn ? S->nn : 1, sizeof(*resv));
    struct rkey *rk = malloc((S->nq ? S->nq : 1) * sizeof(*rk));
    size_t nused = 0, nk = 0;
    struct tused *used = teams_used(S, &nused);
    enum rc rc = RC_ENOMEM;

    if (cnt == NULL || resv == NULL || rk == NULL || used == NULL)
        goto out;
    if (d->reservation.valid)
        for (size_t a = 0; a < d->reservation.nallocs; a++) {
            int n = node_index(S, d->reservation.allocs[a].node_id);
            if (n >= 0)
                resv[n] |= d->reservation.allocs[a].gpu_mask;
        }
    for (size_t i = 0; i < S->nq; i++) {
        long o = S->qout[i];
        if (o >= 0 && S->out[o].start_ms == SCHED_TIME_UNKNOWN)
            rk[nk++] = (struct rkey){S->q[i].gpus, S->q[i].gpus_per_node, S->q[i].site, i};
    }
    qsort(rk, nk, sizeof(*rk), cmp_rkey_f);
    struct shape_facts f = {0};
    for (size_t k = 0; k < nk; k++) {
        const struct sched_job *j = &S->q[rk[k].i];
        struct sched_forecast_job *fj = &S->out[S->qout[rk[k].i]];
        if (k == 0 || cmp_rkey_f(&(struct rkey){rk[k - 1].gpus, rk[k - 1].gpn, rk[k - 1].site, 0},
                                 &(struct rkey){j->gpus, j->gpus_per_node, j->site, 0}) != 0)
            f = shape_facts(S, j, resv, cnt);
        fj->free_gpus = f.free_sum;
        bool other_res = d->reservation.valid && d->reservation.job_id != j->id;
        if (!f.fits_all) {
            fj->reason = SCHED_WAIT_SITE_TOO_SMALL;
        } else if (!f.fits_ready) {
            fj->reason = SCHED_WAIT_DRAINING;
        } else if (other_res ? f.fits_unres : f.fits_free) {
            fj->reason = SCHED_WAIT_PRIORITY; /* other_job_id once the order is known */
        } else if (other_res && f.fits_free) {
            fj->reason = SCHED_WAIT_RESERVED;
            fj->other_job_id = d->reservation.job_id;
        } else {
            int quota = team_quota(S->c0, j->team_id);
            bool over = (S->pol->flags & F_QUOTA) && quota > 0 &&
                        team_used(used, nused, j->team_id) + j->gpus > quota;
            fj->reason = over ? SCHED_WAIT_QUOTA : SCHED_WAIT_GPUS;
        }
    }
    rc = RC_OK;
out:
    free(cnt);
    free(resv);
    free(rk);
    free(used);
    return rc;
}

/* Apply one pass at time t: preemptions (requeued), then placements (started). */
static enum rc apply(struct sim *S, const struct sched_decisions *d, int64_t t)
{
    for (size_t p = 0; p < d->npreemptions; p++) {
        for (size_t r = 0; r < S->nrun; r++) {
            if (S->run[r].job_id != d->preemptions[p].job_id)
                continue;
            struct sched_job j;
            memset(&j, 0, sizeof(j));
            int64_t rest = S->rend[r] > t ? S->rend[r] - t : 0;
            j.id = S->run[r].job_id;
            j.team_id = S->run[r].team_id;
            j.prio = S->run[r].prio;
            j.gpus = S->run[r].gpus;
            j.submit_ms = S->run[r].submit_ms;
            j.predicted_ms = rest;
            j.true_duration_ms = rest;
            if (S->run[r].end_by_ms != SCHED_TIME_UNKNOWN && S->run[r].end_by_ms > t)
                j.time_limit_ms = S->run[r].end_by_ms - t;
            j.attained_gpu_ms = S->run[r].attained_gpu_ms;
            run_remove(S, r);
            if (rest > 0 && j.gpus >= 1 && j.gpus <= SCHED_MAX_JOB_GPUS &&
                queue_insert(S, &j, -1) != 0)
                return RC_ENOMEM;
            break;
        }
    }
    memset(S->gone, 0, S->nq);
    for (size_t p = 0; p < d->nplacements; p++) {
        const struct sched_placement *pl = &d->placements[p];
        long qi = queue_index(S, pl->job_id);
        if (NEVER(qi < 0))
            return RC_EINTERNAL;
        const struct sched_job *j = &S->q[qi];
        for (size_t a = 0; a < pl->nallocs; a++) {
            int n = node_index(S, pl->allocs[a].node_id);
            if (NEVER(n < 0))
                return RC_EINTERNAL;
            S->nodes[n].free_mask &= ~pl->allocs[a].gpu_mask;
        }
        struct sched_running r;
        memset(&r, 0, sizeof(r));
        r.job_id = j->id;
        r.team_id = j->team_id;
        r.prio = j->prio;
        r.gpus = j->gpus;
        r.submit_ms = j->submit_ms;
        r.start_ms = t;
        r.end_by_ms =
            j->time_limit_ms > 0 ? sched_fc_sat_add(t, j->time_limit_ms) : SCHED_TIME_UNKNOWN;
        r.expected_end_ms = sched_fc_job_end(S, j, t);
        r.true_end_ms = r.expected_end_ms;
        r.attained_gpu_ms = j->attained_gpu_ms;
        r.preemptible = false; /* a forecast does not churn its own simulated jobs */
        if (run_add(S, &r, pl->allocs, pl->nallocs, r.expected_end_ms) != 0)
            return RC_ENOMEM;
        long o = S->qout[qi];
        if (o >= 0 && S->out[o].start_ms == SCHED_TIME_UNKNOWN) {
            S->out[o].start_ms = t;
            S->left--;
        }
        S->gone[qi] = 1;
    }
    size_t m = 0;
    for (size_t i = 0; i < S->nq; i++) {
        if (S->gone[i])
            continue;
        S->q[m] = S->q[i];
        S->qout[m] = S->qout[i];
        m++;
    }
    S->nq = m;
    return RC_OK;
}

/* Put the output in scheduling order and name the job ahead of PRIORITY waits. */
static enum rc order_output(struct sim *S, const struct sched_queue *q0, const long *in_of_out,
                            int64_t res_job)
{
    struct sched_sort_key *k = malloc((S->nout ? S->nout : 1) * sizeof(*k));
    struct sched_forecast_job *o = malloc((S->nout ? S->nout : 1) * sizeof(*o));
    int64_t first_waiting = 0;

    if (k == NULL || o == NULL) {
        free(k);
        free(o);
        return RC_ENOMEM;
    }
    for (size_t i = 0; i < S->nout; i++) {
        const struct sched_job *j = &q0->jobs[in_of_out[i]];
        /* start, then higher priority first, then submit and id */
        k[i] = (struct sched_sort_key){S->out[i].start_ms, -(int64_t)j->prio, j->submit_ms, j->id,
                                       (int)i};
    }
    qsort(k, S->nout, sizeof(*k), sched_sort_key_cmp);
    for (size_t p = 0; p < S->nout; p++) {
        o[p] = S->out[k[p].i];
        o[p].position = p;
        if (o[p].reason == SCHED_WAIT_PRIORITY) {
            o[p].other_job_id = first_waiting            ? first_waiting
                                : res_job != o[p].job_id ? res_job
                                                         : 0;
        }
        if (o[p].reason != SCHED_WAIT_NONE && first_waiting == 0)
            first_waiting = o[p].job_id;
    }
    free(k);
    free(S->out);
    S->out = o;
    return RC_OK;
}

int sched_fc_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

struct qkey {
    int64_t id;
    long i;
};

static int cmp_qkey(const void *a, const void *b)
{
    const struct qkey *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Copy the snapshot into S; RC_EINVAL on what sched_plan cannot see (ids, NULLs). */
static enum rc sim_load(struct sim *S, const struct sched_cluster *c, const struct sched_queue *q,
                        long **in_of_out)
{
    size_t nn = c->nnodes, nr = c->nrunning, nj = q->njobs;
    int64_t *ids = NULL;
    struct qkey *qk = NULL;
    enum rc rc = RC_ENOMEM;
    struct err e;

    if ((nn && !c->nodes) || (c->nteams && !c->teams) || (nr && !c->running) || (nj && !q->jobs))
        return RC_EINVAL;
    for (size_t r = 0; r < nr; r++)
        if (c->running[r].nallocs > SCHED_MAX_JOB_GPUS ||
            (c->running[r].nallocs && !c->running[r].allocs))
            return RC_EINVAL;
    S->nn = nn;
    S->nodes = malloc((nn ? nn : 1) * sizeof(*S->nodes));
    S->nids = malloc((nn ? nn : 1) * sizeof(*S->nids));
    ids = malloc((nr + nj + 1) * sizeof(*ids));
    qk = malloc((nj + 1) * sizeof(*qk));
    S->out = calloc(nj ? nj : 1, sizeof(*S->out));
    *in_of_out = calloc(nj ? nj : 1, sizeof(**in_of_out));
    if (!S->nodes || !S->nids || !ids || !qk || !S->out || !*in_of_out)
        goto out;
    if (nn)
        memcpy(S->nodes, c->nodes, nn * sizeof(*S->nodes));
    for (size_t i = 0; i < nn; i++)
        S->nids[i] = (struct nid){c->nodes[i].id, (int)i};
    qsort(S->nids, nn, sizeof(*S->nids), sched_nid_cmp);
    size_t nid = 0, m = 0;
    for (size_t r = 0; r < nr; r++)
        ids[nid++] = c->running[r].job_id;
    for (size_t i = 0; i < nj; i++) {
        ids[nid++] = q->jobs[i].id;
        if (sched_job_valid(&q->jobs[i], &e))
            qk[m++] = (struct qkey){q->jobs[i].id, (long)i};
    }
    qsort(ids, nid, sizeof(*ids), sched_fc_cmp_i64);
    for (size_t i = 1; i < nid; i++)
        if (ids[i] == ids[i - 1]) {
            rc = RC_EINVAL;
            goto out;
        }
    for (size_t r = 0; r < nr; r++) {
        const struct sched_running *rj = &c->running[r];
        int64_t end;
        if ((S->pol->flags & F_ORACLE) && rj->true_end_ms != SCHED_TIME_UNKNOWN)
            end = rj->true_end_ms;
        else if (rj->expected_end_ms > 0 && rj->expected_end_ms < rj->end_by_ms)
            end = rj->expected_end_ms; /* never past its limit: it is stopped there */
        else if (rj->end_by_ms != SCHED_TIME_UNKNOWN)
            end = rj->end_by_ms;
        else
            end = sched_fc_sat_add(rj->start_ms > 0 ? rj->start_ms : 0, S->dflt);
        if (end < S->now)
            end = S->now; /* overdue: it ends at the first simulated event */
        if (run_add(S, rj, rj->allocs, rj->nallocs, end) != 0)
            goto out;
    }
    qsort(qk, m, sizeof(*qk), cmp_qkey);
    S->capq = m ? m : 1;
    S->q = malloc(S->capq * sizeof(*S->q));
    S->qout = malloc(S->capq * sizeof(*S->qout));
    S->gone = malloc(S->capq);
    if (!S->q || !S->qout || !S->gone)
        goto out;
    for (size_t i = 0; i < m; i++) {
        const struct sched_job *j = &q->jobs[qk[i].i];
        S->q[i] = *j;
        S->qout[i] = (long)i;
        (*in_of_out)[i] = qk[i].i;
        S->out[i] = (struct sched_forecast_job){
            j->id, 0, SCHED_TIME_UNKNOWN, SCHED_WAIT_NONE, j->gpus, 0, 0};
    }
    S->nq = S->nout = S->left = m;
    rc = RC_OK;
out:
    free(ids);
    free(qk);
    return rc;
}

static void sim_free(struct sim *S)
{
    free(S->nodes);
    free(S->nids);
    free(S->run);
    free(S->raoff);
    free(S->rend);
    free(S->pool);
    free(S->q);
    free(S->qout);
    free(S->gone);
    free(S->out);
}

enum rc sched_forecast(const struct sched_policy *policy, const struct sched_cluster *cluster,
                       const struct sched_queue *queue, int64_t now_ms,
                       const struct sched_forecast_opts *opts, struct sched_forecast *out)
{
    struct sim S;
    long *in_of_out = NULL;
    enum rc rc = RC_EINVAL;
    struct sched_forecast_opts o = {0};
    int64_t res_job = 0;

    memset(&S, 0, sizeof(S));
    if (out == NULL)
        return RC_EINVAL;
    out_reset(out);
    if (cluster == NULL || queue == NULL)
        goto out;
    if (opts)
        o = *opts;
    if (o.horizon_ms < 0 || o.default_duration_ms < 0 || o.resolution_ms < 0)
        goto out;
    if (policy == NULL)
        policy = sched_policy_find("trainyard");
    if (out->in == NULL && (out->in = calloc(1, sizeof(*out->in))) == NULL) {
        rc = RC_ENOMEM;
        goto out;
    }
    S.pol = policy;
    S.c0 = cluster;
    S.now = now_ms;
    S.dflt = o.default_duration_ms > 0 ? o.default_duration_ms : 3600LL * 1000;
    S.horizon_end = sched_fc_sat_add(now_ms, o.horizon_ms > 0 ? o.horizon_ms : 30 * DAY_MS);
    size_t max_events = o.max_events ? o.max_events : 4 * (queue->njobs + cluster->nrunning);
    if ((rc = sim_load(&S, cluster, queue, &in_of_out)) != RC_OK)
        goto out;

    struct sched_decisions *d = &out->in->d;
    int64_t t = now_ms;
    size_t events = 0;
    for (bool first = true;; first = false) {
        for (size_t r = 0; r < S.nrun; r++)
            S.run[r].allocs = S.pool + S.raoff[r];
        struct sched_cluster c = {S.nodes, S.nn, cluster->teams, cluster->nteams, S.run, S.nrun};
        struct sched_queue q = {S.q, S.nq, queue->backfill_depth, false};
        if ((rc = sched_plan(policy, &c, &q, t, d)) != RC_OK)
            goto out;
        if ((rc = apply(&S, d, t)) != RC_OK)
            goto out;
        if (first) {
            res_job = d->reservation.valid ? d->reservation.job_id : 0;
            if ((rc = first_reasons(&S, d)) != RC_OK)
                goto out;
            if (!o.exact && policy->kind != KIND_LAS) {
                /* the starts from here on: the event simulation */
                if (S.left > 0 &&
                    (rc = sched_fc_simulate_fast(&S, &o, max_events, &out->truncated)) != RC_OK)
                    goto out;
                break;
            }
        }
        if (S.left == 0 || S.nrun == 0)
            break; /* done, or nothing runs and nothing started: the rest never starts */
        int64_t next = SCHED_TIME_UNKNOWN;
        for (size_t r = 0; r < S.nrun; r++)
            if (S.rend[r] < next)
                next = S.rend[r];
        if (o.resolution_ms > 0 && next > t) { /* up to the next multiple after now */
            int64_t k = (next - now_ms + o.resolution_ms - 1) / o.resolution_ms;
            next = k > (SCHED_TIME_UNKNOWN - 1 - now_ms) / o.resolution_ms
                       ? SCHED_TIME_UNKNOWN - 1
                       : now_ms + k * o.resolution_ms;
        }
        if (next > S.horizon_end || ++events > max_events) {
            out->truncated = true;
            break;
        }
        for (size_t r = S.nrun; r-- > 0;)
            if (S.rend[r] <= next)
                run_remove(&S, r);
        t = next;
    }
    if ((rc = order_output(&S, queue, in_of_out, res_job)) != RC_OK)
        goto out;
    out->jobs = S.out;
    out->njobs = S.nout;
    S.out = NULL;
    rc = RC_OK;
out:
    if (rc != RC_OK)
        out_reset(out);
    free(in_of_out);
    sim_free(&S);
    return rc;
}
