/*
 * sched_check.c - sched_check(): an independent verification of a plan
 * against its snapshot. It shares no code with the planner on purpose, so a
 * bug in one is caught by the other; the tests, the fuzz target and the
 * simulator (in debug runs) call it on every plan.
 *
 * Work: O((nodes + running + queue) log n + allocations), plus O(nodes) per gang
 * of a job with a site. Threading: none.
 */
#include "sched.h"

#include <stdlib.h>
#include <string.h>

struct kv {
    int64_t key;
    size_t i;
};

static int cmp_kv(const void *a, const void *b)
{
    const struct kv *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static long find(const struct kv *t, size_t n, int64_t key)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && t[lo].key == key ? (long)t[lo].i : -1;
}

static uint64_t bits(int ng)
{
    if (ng <= 0)
        return 0;
    return ng >= 64 ? ~0ULL : ((1ULL << ng) - 1);
}

struct chk {
    const struct sched_cluster *c;
    const struct sched_queue *q;
    const struct sched_decisions *d;
    struct kv *nodes, *runs, *jobs, *teams;
    uint64_t *avail;   /* GPUs a placement may take */
    uint64_t *resmask; /* reserved GPUs */
    unsigned char *placed, *preempted, *borrowing;
    int maxng;
};

static struct kv *index_of(size_t n, int64_t (*key)(const void *, size_t), const void *arr)
{
    struct kv *t = malloc((n ? n : 1) * sizeof(*t));
    if (!t)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        t[i].key = key(arr, i);
        t[i].i = i;
    }
    qsort(t, n, sizeof(*t), cmp_kv);
    return t;
}

static int64_t key_node(const void *a, size_t i)
{
    return ((const struct sched_node *)a)[i].id;
}

static int64_t key_run(const void *a, size_t i)
{
    return ((const struct sched_running *)a)[i].job_id;
}

static int64_t key_job(const void *a, size_t i)
{
    return ((const struct sched_job *)a)[i].id;
}

static int64_t key_team(const void *a, size_t i)
{
    return ((const struct sched_team *)a)[i].id;
}

static int quota_of(const struct chk *k, int64_t team)
{
    long t = find(k->teams, k->c->nteams, team);
    return t < 0 || k->c->teams[t].quota_gpus < 0 ? 0 : k->c->teams[t].quota_gpus;
}

struct rs {
    int64_t team, start, id;
    size_t r;
};

static int cmp_rs(const void *a, const void *b)
{
    const struct rs *x = a, *y = b;
    if (x->team != y->team)
        return x->team < y->team ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return (x->r > y->r) - (x->r < y->r);
}

static enum rc check_running(struct chk *k, struct err *e)
{
    const struct sched_cluster *c = k->c;
    size_t nr = c->nrunning;
    struct rs *s = malloc((nr ? nr : 1) * sizeof(*s));
    uint64_t *busy = calloc(c->nnodes ? c->nnodes : 1, sizeof(*busy));
    enum rc rc = RC_OK;

    if (!s || !busy) {
        rc = RC_ENOMEM;
        goto out;
    }
    for (size_t r = 0; r < nr; r++) {
        const struct sched_running *rj = &c->running[r];
        for (size_t a = 0; a < rj->nallocs; a++) {
            long n = find(k->nodes, c->nnodes, rj->allocs[a].node_id);
            if (n < 0) {
                rc = err_set(e, RC_ECONFLICT, "running", "running job %lld is on unknown node %lld",
                             (long long)rj->job_id, (long long)rj->allocs[a].node_id);
                goto out;
            }
            uint64_t m = rj->allocs[a].gpu_mask;
            if ((m & busy[n]) || (m & c->nodes[n].free_mask)) {
                rc = err_set(e, RC_ECONFLICT, "running",
                             "gpu booked twice: running job %lld on node %lld mask %#llx",
                             (long long)rj->job_id, (long long)c->nodes[n].id,
                             (unsigned long long)m);
                goto out;
            }
            busy[n] |= m;
        }
        s[r] = (struct rs){rj->team_id, rj->start_ms, rj->job_id, r};
    }
    qsort(s, nr, sizeof(*s), cmp_rs);
    int64_t cum = 0;
    for (size_t i = 0; i < nr; i++) {
        if (i == 0 || s[i].team != s[i - 1].team)
            cum = 0;
        int g = c->running[s[i].r].gpus;
        if (cum + g > quota_of(k, s[i].team))
            k->borrowing[s[i].r] = 1;
        cum += g;
    }
out:
    free(s);
    free(busy);
    return rc;
}

static enum rc check_preemptions(struct chk *k, struct err *e)
{
    const struct sched_decisions *d = k->d;

    for (size_t p = 0; p < d->npreemptions; p++) {
        const struct sched_preemption *pr = &d->preemptions[p];
        long r = find(k->runs, k->c->nrunning, pr->job_id);
        if (r < 0)
            return err_set(e, RC_ECONFLICT, "preemptions", "preempted job %lld is not running",
                           (long long)pr->job_id);
        const struct sched_running *rj = &k->c->running[r];
        if (k->preempted[r]++)
            return err_set(e, RC_ECONFLICT, "preemptions", "job %lld preempted twice",
                           (long long)pr->job_id);
        if (!rj->preemptible)
            return err_set(e, RC_ECONFLICT, "preemptions", "job %lld is not preemptible",
                           (long long)pr->job_id);
        if (pr->reason == SCHED_PREEMPT_QUOTA && !k->borrowing[r])
            return err_set(e, RC_ECONFLICT, "preemptions",
                           "quota preemption of job %lld, which is not borrowing",
                           (long long)pr->job_id);
        if (pr->reason != SCHED_PREEMPT_QUOTA && pr->reason != SCHED_PREEMPT_LAS)
            return err_set(e, RC_ECONFLICT, "preemptions", "job %lld: unknown reason %d",
                           (long long)pr->job_id, (int)pr->reason);
        for (size_t a = 0; a < rj->nallocs; a++) {
            long n = find(k->nodes, k->c->nnodes, rj->allocs[a].node_id);
            k->avail[n] |= rj->allocs[a].gpu_mask & bits(k->c->nodes[n].ngpus);
        }
    }
    return RC_OK;
}

static bool site_match(int64_t node_site, int64_t job_site)
{
    return node_site == 0 || job_site == 0 || node_site == job_site;
}

/* The most GPUs of a READY node the job may use (its site's nodes). */
static int site_maxng(const struct chk *k, const struct sched_job *j)
{
    int m = 0;

    if (j->site == 0)
        return k->maxng;
    for (size_t i = 0; i < k->c->nnodes; i++) {
        const struct sched_node *nd = &k->c->nodes[i];
        if (nd->state == SCHED_NODE_READY && site_match(nd->site, j->site) && nd->ngpus > m)
            m = nd->ngpus;
    }
    return m;
}

/* One gang: nodes exist, READY, of the job's site, distinct; GPU count; gpus_per_node; single
 * node when small. */
static enum rc check_gang(struct chk *k, const struct sched_job *j, const struct sched_alloc *al,
                          size_t nal, const char *what, struct err *e)
{
    int sum = 0;

    if (nal == 0 || al == NULL)
        return err_set(e, RC_ECONFLICT, what, "job %lld has no gpus", (long long)j->id);
    for (size_t a = 0; a < nal; a++) {
        long n = find(k->nodes, k->c->nnodes, al[a].node_id);
        if (n < 0)
            return err_set(e, RC_ECONFLICT, what, "job %lld on unknown node %lld", (long long)j->id,
                           (long long)al[a].node_id);
        const struct sched_node *nd = &k->c->nodes[n];
        if (nd->state != SCHED_NODE_READY)
            return err_set(e, RC_ECONFLICT, what, "job %lld on node %lld, which is not ready",
                           (long long)j->id, (long long)nd->id);
        if (!site_match(nd->site, j->site))
            return err_set(e, RC_ECONFLICT, what, "job %lld of site %lld on node %lld of site %lld",
                           (long long)j->id, (long long)j->site, (long long)nd->id,
                           (long long)nd->site);
        if (al[a].gpu_mask == 0 || (al[a].gpu_mask & ~bits(nd->ngpus)))
            return err_set(e, RC_ECONFLICT, what, "job %lld: bad gpu mask %#llx on node %lld",
                           (long long)j->id, (unsigned long long)al[a].gpu_mask, (long long)nd->id);
        for (size_t b = 0; b < a; b++)
            if (al[b].node_id == al[a].node_id)
                return err_set(e, RC_ECONFLICT, what, "job %lld lists node %lld twice",
                               (long long)j->id, (long long)nd->id);
        int cnt = __builtin_popcountll(al[a].gpu_mask);
        if (j->gpus_per_node > 0 && cnt != j->gpus_per_node)
            return err_set(e, RC_ECONFLICT, what,
                           "job %lld: %d gpus on node %lld, gpus_per_node is %d", (long long)j->id,
                           cnt, (long long)nd->id, j->gpus_per_node);
        sum += cnt;
    }
    if (sum != j->gpus)
        return err_set(e, RC_ECONFLICT, what, "gang of job %lld has %d gpus, wants %d",
                       (long long)j->id, sum, j->gpus);
    if (j->gpus_per_node == 0 && j->gpus <= site_maxng(k, j) && nal != 1)
        return err_set(e, RC_ECONFLICT, what, "job %lld of %d gpus spans %zu nodes",
                       (long long)j->id, j->gpus, nal);
    return RC_OK;
}

static enum rc check_placements(struct chk *k, int64_t now, struct err *e)
{
    const struct sched_decisions *d = k->d;
    const struct sched_reservation *res = &d->reservation;
    enum rc rc;

    for (size_t p = 0; p < d->nplacements; p++) {
        const struct sched_placement *pl = &d->placements[p];
        long ji = find(k->jobs, k->q->njobs, pl->job_id);
        if (ji < 0)
            return err_set(e, RC_ECONFLICT, "placements", "placed job %lld is not queued",
                           (long long)pl->job_id);
        if (k->placed[ji]++)
            return err_set(e, RC_ECONFLICT, "placements", "job %lld placed twice",
                           (long long)pl->job_id);
        const struct sched_job *j = &k->q->jobs[ji];
        if ((rc = check_gang(k, j, pl->allocs, pl->nallocs, "placements", e)) != RC_OK)
            return rc;
        int64_t e1 = j->time_limit_ms > 0 ? now + j->time_limit_ms : SCHED_TIME_UNKNOWN;
        int64_t e2 = j->true_duration_ms > 0 ? now + j->true_duration_ms : SCHED_TIME_UNKNOWN;
        if (pl->end_by_ms != e1 && pl->end_by_ms != e2)
            return err_set(e, RC_ECONFLICT, "placements", "job %lld: end %lld is not its limit",
                           (long long)j->id, (long long)pl->end_by_ms);
        for (size_t a = 0; a < pl->nallocs; a++) {
            long n = find(k->nodes, k->c->nnodes, pl->allocs[a].node_id);
            uint64_t m = pl->allocs[a].gpu_mask;
            if ((k->avail[n] & m) != m)
                return err_set(e, RC_ECONFLICT, "placements",
                               "gpu booked twice: job %lld on node %lld mask %#llx",
                               (long long)j->id, (long long)pl->allocs[a].node_id,
                               (unsigned long long)m);
            k->avail[n] &= ~m;
            /* its limit, not its prediction: a job may outlive the prediction */
            if (res->valid && (k->resmask[n] & m) &&
                (pl->end_by_ms == SCHED_TIME_UNKNOWN || pl->end_by_ms > res->bound_ms))
                return err_set(e, RC_ECONFLICT, "placements",
                               "job %lld uses gpus reserved for job %lld and ends after %lld",
                               (long long)j->id, (long long)res->job_id, (long long)res->bound_ms);
        }
    }
    return RC_OK;
}

/*
 * The time-limit guarantee of the reserved head job: every running job that
 * holds a reserved GPU (and is not preempted) ends by the bound, by its limit
 * or (sjf-oracle) its true end. With the placements' own check (their limit
 * ends by the bound), every reserved GPU is then free by bound_ms however long
 * the predicted jobs really run. Jobs without a limit give no guarantee.
 */
static enum rc check_reserved_holders(struct chk *k, struct err *e)
{
    const struct sched_reservation *res = &k->d->reservation;

    for (size_t r = 0; r < k->c->nrunning; r++) {
        const struct sched_running *rj = &k->c->running[r];
        if (k->preempted[r] || rj->end_by_ms == SCHED_TIME_UNKNOWN ||
            rj->end_by_ms <= res->bound_ms ||
            (rj->true_end_ms != SCHED_TIME_UNKNOWN && rj->true_end_ms <= res->bound_ms))
            continue;
        for (size_t a = 0; a < rj->nallocs; a++) {
            long n = find(k->nodes, k->c->nnodes, rj->allocs[a].node_id);
            if (n >= 0 && (rj->allocs[a].gpu_mask & k->resmask[n]))
                return err_set(e, RC_ECONFLICT, "reservation",
                               "running job %lld holds gpus reserved for job %lld until %lld, "
                               "after the bound %lld",
                               (long long)rj->job_id, (long long)res->job_id,
                               (long long)rj->end_by_ms, (long long)res->bound_ms);
        }
    }
    return RC_OK;
}

static enum rc check_reservation(struct chk *k, int64_t now, struct err *e)
{
    const struct sched_reservation *res = &k->d->reservation;

    if (!res->valid)
        return RC_OK;
    long ji = find(k->jobs, k->q->njobs, res->job_id);
    if (ji < 0)
        return err_set(e, RC_ECONFLICT, "reservation", "reserved job %lld is not queued",
                       (long long)res->job_id);
    if (k->placed[ji])
        return err_set(e, RC_ECONFLICT, "reservation", "reserved job %lld is also placed",
                       (long long)res->job_id);
    if (res->start_ms < now)
        return err_set(e, RC_ECONFLICT, "reservation", "reservation starts in the past");
    if (res->bound_ms < res->start_ms)
        return err_set(e, RC_ECONFLICT, "reservation",
                       "reservation bound %lld is before its start %lld", (long long)res->bound_ms,
                       (long long)res->start_ms);
    enum rc rc = check_gang(k, &k->q->jobs[ji], res->allocs, res->nallocs, "reservation", e);
    if (rc != RC_OK)
        return rc;
    for (size_t a = 0; a < res->nallocs; a++) {
        long n = find(k->nodes, k->c->nnodes, res->allocs[a].node_id);
        k->resmask[n] |= res->allocs[a].gpu_mask;
    }
    return check_reserved_holders(k, e);
}

enum rc sched_check(const struct sched_cluster *cluster, const struct sched_queue *queue,
                    int64_t now_ms, const struct sched_decisions *d, struct err *e)
{
    struct chk k;
    enum rc rc = RC_ENOMEM;

    memset(&k, 0, sizeof(k));
    if (!cluster || !queue || !d)
        return err_set(e, RC_EINVAL, NULL, "nothing to check");
    k.c = cluster;
    k.q = queue;
    k.d = d;
    size_t nn = cluster->nnodes, nr = cluster->nrunning, nj = queue->njobs;
    k.nodes = index_of(nn, key_node, cluster->nodes);
    k.runs = index_of(nr, key_run, cluster->running);
    k.jobs = index_of(nj, key_job, queue->jobs);
    k.teams = index_of(cluster->nteams, key_team, cluster->teams);
    k.avail = calloc(nn ? nn : 1, sizeof(uint64_t));
    k.resmask = calloc(nn ? nn : 1, sizeof(uint64_t));
    k.placed = calloc(nj ? nj : 1, 1);
    k.preempted = calloc(nr ? nr : 1, 1);
    k.borrowing = calloc(nr ? nr : 1, 1);
    if (!k.nodes || !k.runs || !k.jobs || !k.teams || !k.avail || !k.resmask || !k.placed ||
        !k.preempted || !k.borrowing) {
        err_set(e, RC_ENOMEM, NULL, "out of memory");
        goto out;
    }
    for (size_t i = 1; queue->in_submit_order && i < nj; i++) {
        const struct sched_job *a = &queue->jobs[i - 1], *b = &queue->jobs[i];
        if (a->submit_ms > b->submit_ms || (a->submit_ms == b->submit_ms && a->id > b->id)) {
            rc = err_set(e, RC_EINVAL, "in_submit_order",
                         "job %lld comes after job %lld but was submitted earlier",
                         (long long)b->id, (long long)a->id);
            goto out;
        }
    }
    for (size_t i = 0; i < nn; i++) {
        const struct sched_node *nd = &cluster->nodes[i];
        k.avail[i] = nd->free_mask & bits(nd->ngpus);
        if (nd->state == SCHED_NODE_READY && nd->ngpus > k.maxng)
            k.maxng = nd->ngpus;
    }
    if ((rc = check_running(&k, e)) != RC_OK)
        goto out;
    if ((rc = check_preemptions(&k, e)) != RC_OK)
        goto out;
    /* reservation masks first (placed[] is filled later, so re-check below) */
    if ((rc = check_reservation(&k, now_ms, e)) != RC_OK)
        goto out;
    if ((rc = check_placements(&k, now_ms, e)) != RC_OK)
        goto out;
    if (d->reservation.valid) {
        long ji = find(k.jobs, nj, d->reservation.job_id);
        if (ji >= 0 && k.placed[ji]) {
            rc = err_set(e, RC_ECONFLICT, "reservation", "reserved job %lld is also placed",
                         (long long)d->reservation.job_id);
            goto out;
        }
    }
    rc = RC_OK;
out:
    free(k.nodes);
    free(k.runs);
    free(k.jobs);
    free(k.teams);
    free(k.avail);
    free(k.resmask);
    free(k.placed);
    free(k.preempted);
    free(k.borrowing);
    return rc;
}
