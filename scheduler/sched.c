/*
 * sched.c - one scheduling pass: order the queue, place gangs, reserve for the
 * blocked head job, backfill, and preempt borrowed GPUs back for teams under
 * quota (trainyard) or jobs with less attained service (tiresias-las).
 *
 * Main structures:
 *  - struct idx: the free-capacity index. Per node the GPUs new work may take
 *    (avail: free, READY, not reserved) and a doubly linked bucket list per
 *    free-GPU count (0..64). Best fit for a one-node job scans at most 65
 *    buckets; a multi-node job walks buckets from the most-free down. Updates
 *    are O(1). A second index ("hypo") is a scratch copy for what-if
 *    questions: when the head job could start, what a preemption would free.
 *  - struct pass: everything one sched_plan() call allocates; freed at its end.
 *
 * Why it is fast enough (10,000 jobs, 1,000 nodes in single-digit ms): jobs
 * are bucketed by (priority, team) with a counting sort and only sorted where
 * the input is not already in submit order; a failed fit of g GPUs means every
 * larger job of the same shape fails too until GPUs come back, so blocked jobs
 * cost O(1); the pass stops when no GPU is left; backfill examines at most
 * backfill_depth jobs after the head blocks. Multi-node jobs scan the node
 * list (O(nodes)) because topology groups need it; they are rare.
 *
 * Invariants kept here and verified by sched_check(): a GPU leaves an index
 * exactly once per pass; reserved GPUs are never in the main index, so only
 * jobs that end before the reservation start may take them (through the
 * "combined" path); preemption only happens when the freed GPUs are used by
 * the placement that asked for them.
 *
 * Threading: none; no globals. Deterministic: every sort has the job or node
 * id (then the input position) as its last key.
 */
#include "sched_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---------- output ---------- */

static int push_allocs(struct pass *P)
{
    struct sched_plan_int *in = P->in;

    if (in->nallocs + (size_t)P->npick > in->cap_allocs) {
        size_t nc = in->cap_allocs ? in->cap_allocs * 2 : 256;
        while (nc < in->nallocs + (size_t)P->npick)
            nc *= 2;
        struct sched_alloc *na = realloc(in->allocs, nc * sizeof(*na));
        if (!na)
            return -1;
        in->allocs = na;
        in->cap_allocs = nc;
    }
    for (int i = 0; i < P->npick; i++) {
        in->allocs[in->nallocs].node_id = P->c->nodes[P->pick_node[i]].id;
        in->allocs[in->nallocs].gpu_mask = P->pick_mask[i];
        in->nallocs++;
    }
    return 0;
}

/* The end a job started now is held to: its time limit (sjf-oracle: its true end). */
static int64_t job_end(const struct pass *P, const struct sched_job *j)
{
    int64_t dur = (P->pol->flags & F_ORACLE) ? j->true_duration_ms : j->time_limit_ms;

    if (dur <= 0 || dur > INT64_MAX / 4 || P->now > INT64_MAX / 4)
        return SCHED_TIME_UNKNOWN;
    return P->now + dur;
}

/* The end expected of a job started now: its prediction, else job_end(). */
static int64_t job_expect(const struct pass *P, const struct sched_job *j)
{
    int64_t lim = job_end(P, j);

    if ((P->pol->flags & F_ORACLE) || j->predicted_ms <= 0 || j->predicted_ms > INT64_MAX / 4 ||
        P->now > INT64_MAX / 4)
        return lim;
    /* never later than the limit: the job is stopped there */
    return P->now + j->predicted_ms < lim ? P->now + j->predicted_ms : lim;
}

/* The end a running job is expected at: its prediction, else its limit (sjf-oracle: the truth). */
static int64_t run_expect(const struct pass *P, const struct sched_running *r)
{
    if (P->pol->flags & F_ORACLE)
        return r->true_end_ms;
    if (r->expected_end_ms > 0 && r->expected_end_ms < r->end_by_ms)
        return r->expected_end_ms; /* never later than the limit: it is stopped there */
    return r->end_by_ms;
}

static int record_placement(struct pass *P, const struct sched_job *j)
{
    struct sched_decisions *d = P->d;
    struct sched_plan_int *in = P->in;

    if (d->nplacements == in->cap_pl) {
        size_t nc = in->cap_pl ? in->cap_pl * 2 : 64;
        struct sched_placement *np = realloc(d->placements, nc * sizeof(*np));
        if (!np)
            return -1;
        d->placements = np;
        size_t *no = realloc(in->pl_off, nc * sizeof(*no));
        if (!no)
            return -1;
        in->pl_off = no;
        in->cap_pl = nc;
    }
    in->pl_off[d->nplacements] = in->nallocs;
    if (push_allocs(P) != 0)
        return -1;
    struct sched_placement *p = &d->placements[d->nplacements++];
    p->job_id = j->id;
    p->allocs = NULL;
    p->nallocs = (size_t)P->npick;
    p->end_by_ms = job_end(P, j);
    p->expected_end_ms = job_expect(P, j);
    return 0;
}

static int record_preemption(struct pass *P, int r, enum sched_preempt_reason why, int64_t forid)
{
    struct sched_decisions *d = P->d;

    if (d->npreemptions == P->in->cap_pre) {
        size_t nc = P->in->cap_pre ? P->in->cap_pre * 2 : 16;
        struct sched_preemption *np = realloc(d->preemptions, nc * sizeof(*np));
        if (!np)
            return -1;
        d->preemptions = np;
        P->in->cap_pre = nc;
    }
    d->preemptions[d->npreemptions].job_id = P->c->running[r].job_id;
    d->preemptions[d->npreemptions].reason = why;
    d->preemptions[d->npreemptions].for_job_id = forid;
    d->npreemptions++;
    return 0;
}

/* ---------- snapshot preparation ---------- */

int sched_nid_cmp(const void *a, const void *b)
{
    const struct nid *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->idx - y->idx;
}

int sched_nid_find(const struct nid *nids, size_t n, int64_t id)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (nids[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && nids[lo].id == id ? nids[lo].idx : -1;
}

static int node_lookup(const struct pass *P, int64_t id)
{
    return sched_nid_find(P->nids, P->nn, id);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int team_lookup(const struct pass *P, int64_t id)
{
    size_t lo = 0, hi = P->nt;

    if (hi <= 16) { /* the usual handful of teams: a linear scan beats bisection */
        for (size_t t = 0; t < hi; t++)
            if (P->tid[t] >= id)
                return (int)t;
        return (int)hi;
    }

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (P->tid[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (int)lo; /* always present: every id was collected */
}

#define ALLOC(p, n)                                                                                \
    do {                                                                                           \
        (p) = calloc((n) ? (n) : 1, sizeof(*(p)));                                                 \
        if (!(p))                                                                                  \
            return RC_ENOMEM;                                                                      \
    } while (0)

enum rc sched_prep_nodes(struct pass *P, struct err *e)
{
    const struct sched_cluster *c = P->c;
    size_t nn = c->nnodes;

    P->nn = nn;
    ALLOC(P->nids, nn);
    ALLOC(P->topo, nn);
    ALLOC(P->resv, nn);
    ALLOC(P->resfree, nn);
    ALLOC(P->resnodes, nn);
    ALLOC(P->tmp1, 2 * nn + 1);
    ALLOC(P->tmp2, nn + 1);
    ALLOC(P->pick_node, nn + 1);
    ALLOC(P->pick_mask, nn + 1);
    ALLOC(P->hid, nn);
    ALLOC(P->hid_avail, nn);
    if (sched_idx_alloc(&P->main, nn) != 0 || sched_idx_alloc(&P->hypo, nn) != 0)
        return RC_ENOMEM;
    for (size_t i = 0; i < nn; i++) {
        const struct sched_node *nd = &c->nodes[i];
        if (nd->ngpus < 0 || nd->ngpus > SCHED_MAX_GPUS_PER_NODE)
            return err_set(e, RC_EINVAL, "ngpus", "node %lld has %d gpus, allowed 0..%d",
                           (long long)nd->id, nd->ngpus, SCHED_MAX_GPUS_PER_NODE);
        if (nd->state != SCHED_NODE_READY && nd->state != SCHED_NODE_DRAINING &&
            nd->state != SCHED_NODE_DOWN)
            return err_set(e, RC_EINVAL, "state", "node %lld has an unknown state %d",
                           (long long)nd->id, (int)nd->state);
        if (nd->site < 0)
            return err_set(e, RC_EINVAL, "site", "node %lld has a negative site %lld",
                           (long long)nd->id, (long long)nd->site);
        if (nd->site != 0)
            P->node_site = P->node_site == 0 || P->node_site == nd->site ? nd->site : -1;
        P->nids[i].id = nd->id;
        P->nids[i].idx = (int)i;
        for (int g = 0; g < nd->ngpus; g++)
            if (nd->nvlink_peers[g] & gpu_bits(nd->ngpus))
                P->topo[i] = true;
    }
    qsort(P->nids, nn, sizeof(*P->nids), sched_nid_cmp);
    for (size_t i = 1; i < nn; i++)
        if (P->nids[i].id == P->nids[i - 1].id)
            return err_set(e, RC_EINVAL, "nodes", "node id %lld appears twice",
                           (long long)P->nids[i].id);
    struct idx *x = &P->main;
    for (int b = 0; b < NB; b++) {
        x->head[b] = -1;
        x->cnt[b] = 0;
    }
    x->total = 0;
    P->maxng = 0;
    for (size_t k = nn; k-- > 0;) {
        const struct sched_node *nd = &c->nodes[k];
        bool ready = nd->state == SCHED_NODE_READY;
        x->avail[k] = ready ? nd->free_mask & gpu_bits(nd->ngpus) : 0;
        x->nav[k] = popc(x->avail[k]);
        sched_idx_link(x, (int)k);
        if (ready && nd->ngpus > P->maxng)
            P->maxng = nd->ngpus;
    }
    return RC_OK;
}

static enum rc prep_running(struct pass *P, struct err *e)
{
    const struct sched_cluster *c = P->c;
    size_t nr = c->nrunning, na = 0;

    ALLOC(P->run_aoff, nr + 1);
    for (size_t r = 0; r < nr; r++) {
        if (c->running[r].nallocs > (size_t)SCHED_MAX_JOB_GPUS || !c->running[r].allocs)
            if (c->running[r].nallocs != 0)
                return err_set(e, RC_EINVAL, "running", "running job %lld has %zu allocations",
                               (long long)c->running[r].job_id, c->running[r].nallocs);
        P->run_aoff[r] = na;
        na += c->running[r].nallocs;
    }
    P->run_aoff[nr] = na;
    ALLOC(P->run_anode, na);
    ALLOC(P->run_pre, nr);
    ALLOC(P->run_borrow, nr);
    ALLOC(P->run_team, nr);
    for (size_t r = 0; r < nr; r++) {
        const struct sched_running *rj = &c->running[r];
        for (size_t a = 0; a < rj->nallocs; a++) {
            int n = node_lookup(P, rj->allocs[a].node_id);
            if (n < 0)
                return err_set(e, RC_EINVAL, "running", "running job %lld is on unknown node %lld",
                               (long long)rj->job_id, (long long)rj->allocs[a].node_id);
            if (rj->allocs[a].gpu_mask & c->nodes[n].free_mask)
                return err_set(e, RC_EINVAL, "running",
                               "running job %lld holds gpus that node %lld reports free",
                               (long long)rj->job_id, (long long)rj->allocs[a].node_id);
            P->run_anode[P->run_aoff[r] + a] = n;
        }
    }
    return RC_OK;
}

bool sched_job_valid(const struct sched_job *j, struct err *e)
{
    if (j->gpus < 1 || j->gpus > SCHED_MAX_JOB_GPUS) {
        err_set(e, RC_EINVAL, "gpus", "job %lld asks for %d gpus, allowed 1..%d", (long long)j->id,
                j->gpus, SCHED_MAX_JOB_GPUS);
        return false;
    }
    if (j->gpus_per_node < 0 || j->gpus_per_node > SCHED_MAX_GPUS_PER_NODE ||
        (j->gpus_per_node > 0 && j->gpus % j->gpus_per_node != 0)) {
        err_set(e, RC_EINVAL, "gpus_per_node", "job %lld: gpus_per_node %d does not divide %d gpus",
                (long long)j->id, j->gpus_per_node, j->gpus);
        return false;
    }
    if (j->time_limit_ms < 0 || j->true_duration_ms < 0 || j->predicted_ms < 0) {
        err_set(e, RC_EINVAL, "time_limit_ms", "job %lld has a negative time limit",
                (long long)j->id);
        return false;
    }
    if (j->site < 0) {
        err_set(e, RC_EINVAL, "site", "job %lld has a negative site %lld", (long long)j->id,
                (long long)j->site);
        return false;
    }
    if (j->prio < SCHED_PRIO_LOW || j->prio > SCHED_PRIO_HIGH) {
        err_set(e, RC_EINVAL, "prio", "job %lld has an unknown priority %d", (long long)j->id,
                (int)j->prio);
        return false;
    }
    return true;
}

/* Validate queued job i once; an invalid job is counted and skipped. */
static bool check_job(struct pass *P, size_t i, struct err *e)
{
    bool ok = sched_job_valid(&P->q->jobs[i], e);

    P->job_ok[i] = ok;
    if (!ok && P->d->nskipped++ == 0)
        P->d->first_invalid = *e;
    return ok;
}

/* Look up every queued job's team; false when some id is not in P->tid. */
static bool lookup_job_teams(struct pass *P)
{
    const struct sched_queue *q = P->q;
    int64_t last = 0;
    int lt = -1;

    for (size_t i = 0; i < q->njobs; i++) {
        int64_t id = q->jobs[i].team_id;
        if (lt < 0 || id != last) {
            lt = team_lookup(P, id);
            if ((size_t)lt >= P->nt || P->tid[lt] != id)
                return false;
            last = id;
        }
        P->job_team[i] = lt;
    }
    for (size_t r = 0; r < P->c->nrunning; r++) {
        int64_t id = P->c->running[r].team_id;
        int t = team_lookup(P, id);
        if ((size_t)t >= P->nt || P->tid[t] != id)
            return false;
    }
    return true;
}

/*
 * Team table: every team id seen in teams, running and queue, sorted, and
 * each queued job's index into it. The usual case (every id listed in teams)
 * costs one lookup per job; unknown ids (quota 0, weight 1) trigger a
 * rebuild. Only fair share and quotas need teams: other policies see one.
 */
static enum rc prep_teams(struct pass *P)
{
    const struct sched_cluster *c = P->c;
    const struct sched_queue *q = P->q;
    size_t n = c->nteams + c->nrunning + q->njobs + 1, k = 0;

    ALLOC(P->tid, n);
    ALLOC(P->job_team, q->njobs);
    for (size_t i = 0; i < c->nteams; i++)
        P->tid[k++] = c->teams[i].id;
    if (k == 0)
        P->tid[k++] = 0;
    if (P->pol->kind == KIND_FAIR) {
        qsort(P->tid, k, sizeof(int64_t), cmp_i64);
        size_t u = 0;
        for (size_t i = 0; i < k; i++)
            if (u == 0 || P->tid[u - 1] != P->tid[i])
                P->tid[u++] = P->tid[i];
        P->nt = u;
        if (lookup_job_teams(P))
            return RC_OK;
        k = u; /* slow path: add every id seen */
        for (size_t i = 0; i < c->nrunning; i++)
            P->tid[k++] = c->running[i].team_id;
        for (size_t i = 0; i < q->njobs; i++)
            P->tid[k++] = q->jobs[i].team_id;
    }
    qsort(P->tid, k, sizeof(int64_t), cmp_i64);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || P->tid[u - 1] != P->tid[i])
            P->tid[u++] = P->tid[i];
    P->nt = u;
    if (P->pol->kind == KIND_FAIR && NEVER(!lookup_job_teams(P)))
        return RC_EINTERNAL;
    return RC_OK;
}

/* Change a team's GPUs in use and its cached fair-share key. */
static void team_add(struct pass *P, int t, int64_t d)
{
    double q = P->t_quota[t] > 0 ? P->t_quota[t] : 1;

    P->t_used[t] += d;
    P->t_share[t] = (double)P->t_used[t] / q / P->t_w[t];
}

static enum rc prep_team_state(struct pass *P)
{
    const struct sched_cluster *c = P->c;
    const struct sched_queue *q = P->q;
    size_t u = P->nt;

    ALLOC(P->t_used, u);
    ALLOC(P->t_quota, u);
    ALLOC(P->t_w, u);
    ALLOC(P->t_share, u);
    for (size_t t = 0; t < u; t++)
        P->t_w[t] = 1.0;
    for (size_t i = 0; i < c->nteams; i++) {
        int t = team_lookup(P, c->teams[i].id);
        P->t_quota[t] = c->teams[i].quota_gpus > 0 ? c->teams[i].quota_gpus : 0;
        P->t_w[t] = c->teams[i].weight > 0 ? c->teams[i].weight : 1.0;
    }
    for (size_t r = 0; r < c->nrunning; r++) {
        P->run_team[r] = P->pol->kind == KIND_FAIR ? team_lookup(P, c->running[r].team_id) : 0;
        P->t_used[P->run_team[r]] += c->running[r].gpus;
    }
    ALLOC(P->job_ok, q->njobs);
    for (size_t t = 0; t < u; t++)
        team_add(P, (int)t, 0);
    return RC_OK;
}

/* ---------- borrowing jobs (quota) ---------- */

struct rkey {
    int team;
    int64_t start;
    int64_t id;
    int r;
};

static int cmp_rkey(const void *a, const void *b)
{
    const struct rkey *x = a, *y = b;
    if (x->team != y->team)
        return x->team - y->team;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->r - y->r;
}

static int cmp_rkey_newest(const void *a, const void *b)
{
    const struct rkey *x = a, *y = b;
    if (x->start != y->start)
        return x->start > y->start ? -1 : 1;
    if (x->id != y->id)
        return x->id > y->id ? -1 : 1;
    return x->r - y->r;
}

/* Borrowing: within its team, oldest first, the job's GPUs reach past quota. */
static enum rc prep_borrowing(struct pass *P)
{
    size_t nr = P->c->nrunning, nb = 0;
    struct rkey *k = NULL;

    ALLOC(P->cands, nr);
    P->ncands = 0;
    bool over = false; /* without a team over quota nobody borrows */
    for (size_t t = 0; t < P->nt && (P->pol->flags & F_QUOTA); t++)
        if (P->t_used[t] > P->t_quota[t])
            over = true;
    if (!over)
        return RC_OK;
    k = calloc(nr ? nr : 1, sizeof(*k));
    if (!k)
        return RC_ENOMEM;
    for (size_t r = 0; r < nr; r++) {
        k[r].team = P->run_team[r];
        k[r].start = P->c->running[r].start_ms;
        k[r].id = P->c->running[r].job_id;
        k[r].r = (int)r;
    }
    qsort(k, nr, sizeof(*k), cmp_rkey);
    int64_t cum = 0;
    for (size_t i = 0; i < nr; i++) {
        if (i == 0 || k[i].team != k[i - 1].team)
            cum = 0;
        const struct sched_running *rj = &P->c->running[k[i].r];
        if (cum + rj->gpus > P->t_quota[k[i].team]) {
            P->run_borrow[k[i].r] = 1;
            if (rj->preemptible)
                k[nb++] = k[i];
        }
        cum += rj->gpus;
    }
    qsort(k, nb, sizeof(*k), cmp_rkey_newest);
    for (size_t i = 0; i < nb; i++)
        P->cands[i] = k[i].r;
    P->ncands = nb;
    free(k);
    return RC_OK;
}

/* ---------- preempt to fit ---------- */

static void free_running_into(struct pass *P, struct idx *x, int r, bool to_resfree)
{
    const struct sched_running *rj = &P->c->running[r];

    for (size_t a = 0; a < rj->nallocs; a++) {
        int n = P->run_anode[P->run_aoff[r] + a];
        const struct sched_node *nd = &P->c->nodes[n];
        if (nd->state != SCHED_NODE_READY)
            continue;
        uint64_t m = rj->allocs[a].gpu_mask & gpu_bits(nd->ngpus);
        if (to_resfree && (m & P->resv[n])) {
            P->resfree[n] |= m & P->resv[n];
            P->resfree_total += popc(m & P->resv[n]);
        }
        sched_idx_set(x, n, x->avail[n] | (m & ~P->resv[n]));
    }
}

static bool running_touches_pick(const struct pass *P, int r)
{
    const struct sched_running *rj = &P->c->running[r];

    for (size_t a = 0; a < rj->nallocs; a++) {
        int n = P->run_anode[P->run_aoff[r] + a];
        for (int i = 0; i < P->npick; i++)
            if (P->pick_node[i] == n && (P->pick_mask[i] & rj->allocs[a].gpu_mask))
                return true;
    }
    return false;
}

/*
 * Try to fit job j by preempting candidates (in order) and place it in main.
 * Only the candidates whose GPUs the placement uses are preempted.
 * Returns 1 placed, 0 not, -1 ENOMEM.
 */
static int preempt_fit(struct pass *P, const struct sched_job *j, enum sched_preempt_reason why)
{
    int considered[MAX_PREEMPT_CANDS];
    int nc = 0, placed = 0;

    if (P->preempt_tries >= MAX_PREEMPT_TRIES)
        return 0;
    P->preempt_tries++;
    sched_site_set(P, j->site);
    sched_idx_copy(&P->hypo, &P->main);
    for (size_t i = 0; i < P->ncands && nc < MAX_PREEMPT_CANDS; i++) {
        int r = P->cands[i];
        if (P->run_pre[r])
            continue;
        if (why == SCHED_PREEMPT_QUOTA && P->t_used[P->run_team[r]] <= P->t_quota[P->run_team[r]])
            continue;
        free_running_into(P, &P->hypo, r, false);
        considered[nc++] = r;
        if (sched_feasible(P, &P->hypo, j->gpus, j->gpus_per_node)) {
            placed = sched_place(P, &P->hypo, j->gpus, j->gpus_per_node);
            break;
        }
    }
    if (placed <= 0)
        return placed;
    for (int i = 0; i < nc; i++) {
        int r = considered[i];
        if (!running_touches_pick(P, r))
            continue;
        P->run_pre[r] = 1;
        team_add(P, P->run_team[r], -P->c->running[r].gpus);
        if (record_preemption(P, r, why, j->id) != 0)
            return -1;
        free_running_into(P, &P->main, r, true);
    }
    for (int i = 0; i < P->npick; i++) {
        int n = P->pick_node[i];
        if (NEVER((P->main.avail[n] & P->pick_mask[i]) != P->pick_mask[i]))
            return 0;
        sched_idx_set(&P->main, n, P->main.avail[n] & ~P->pick_mask[i]);
    }
    return 1;
}

/* ---------- reservation ---------- */

struct rel {
    int64_t t;
    int64_t id;
    int kind; /* 0 running, 1 placed this pass */
    int i;
};

static int cmp_rel(const void *a, const void *b)
{
    const struct rel *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind - y->kind;
    return x->i - y->i;
}

/* Is some end in this pass predicted (so that the two ways of reserving can differ)? */
static bool preds_in_play(const struct pass *P)
{
    if (P->pol->flags & F_ORACLE)
        return false;
    for (size_t r = 0; r < P->c->nrunning; r++)
        if (!P->run_pre[r] && run_expect(P, &P->c->running[r]) != P->c->running[r].end_by_ms)
            return true;
    for (size_t p = 0; p < P->d->nplacements; p++)
        if (P->d->placements[p].expected_end_ms != P->d->placements[p].end_by_ms)
            return true;
    return false;
}

/*
 * Earliest start of j in hypo when the running jobs and this pass's
 * placements end at their expected ends (expected) or at their time limits
 * (sjf-oracle: true ends either way). On 1 the GPUs are in P->pick_* and
 * *start is set; 0: no known end frees enough; -1: no memory.
 */
static int earliest(struct pass *P, const struct sched_job *j, bool expected, int64_t *start)
{
    const struct sched_cluster *c = P->c;
    struct sched_decisions *d = P->d;
    size_t nrel = 0, cap = c->nrunning + d->nplacements;
    struct rel *rl = calloc(cap ? cap : 1, sizeof(*rl));

    *start = SCHED_TIME_UNKNOWN;
    if (!rl)
        return -1;
    for (size_t r = 0; r < c->nrunning; r++) {
        const struct sched_running *rj = &c->running[r];
        int64_t t = expected                     ? run_expect(P, rj)
                    : (P->pol->flags & F_ORACLE) ? rj->true_end_ms
                                                 : rj->end_by_ms;
        if (P->run_pre[r] || t == SCHED_TIME_UNKNOWN)
            continue;
        rl[nrel++] = (struct rel){t, rj->job_id, 0, (int)r};
    }
    for (size_t p = 0; p < d->nplacements; p++) {
        int64_t t = expected ? d->placements[p].expected_end_ms : d->placements[p].end_by_ms;
        if (t != SCHED_TIME_UNKNOWN)
            rl[nrel++] = (struct rel){t, d->placements[p].job_id, 1, (int)p};
    }
    qsort(rl, nrel, sizeof(*rl), cmp_rel);
    sched_site_set(P, j->site);
    sched_idx_copy(&P->hypo, &P->main);
    for (size_t i = 0; i < nrel;) {
        int64_t t = rl[i].t;
        for (; i < nrel && rl[i].t == t; i++) {
            if (rl[i].kind == 0) {
                free_running_into(P, &P->hypo, rl[i].i, false);
                continue;
            }
            const struct sched_alloc *a = P->in->allocs + P->in->pl_off[rl[i].i];
            for (size_t k = 0; k < d->placements[rl[i].i].nallocs; k++) {
                int n = node_lookup(P, a[k].node_id);
                sched_idx_set(&P->hypo, n, P->hypo.avail[n] | a[k].gpu_mask);
            }
        }
        if (sched_feasible(P, &P->hypo, j->gpus, j->gpus_per_node)) {
            *start = t < P->now ? P->now : t;
            break;
        }
    }
    free(rl);
    if (*start == SCHED_TIME_UNKNOWN)
        return 0;
    return sched_place(P, &P->hypo, j->gpus, j->gpus_per_node);
}

/*
 * The latest time limit among the jobs holding the GPUs in P->pick_* (at
 * least start): by then those GPUs are free whatever the predictions say.
 * Holders without a limit give no guarantee: they are left out, and
 * *unlimited says some running job (1) or some placement of this pass (2,
 * taking precedence) is one. Uses P->resv as scratch (all zero before the
 * pass's one reservation).
 */
static int64_t picks_bound(struct pass *P, int64_t start, int *unlimited)
{
    const struct sched_cluster *c = P->c;
    const struct sched_decisions *d = P->d;
    int64_t bound = start;

    *unlimited = 0;
    for (int i = 0; i < P->npick; i++)
        P->resv[P->pick_node[i]] |= P->pick_mask[i];
    for (size_t r = 0; r < c->nrunning; r++) {
        const struct sched_running *rj = &c->running[r];
        if (P->run_pre[r] || rj->end_by_ms <= bound)
            continue;
        for (size_t a = 0; a < rj->nallocs; a++)
            if (rj->allocs[a].gpu_mask & P->resv[P->run_anode[P->run_aoff[r] + a]]) {
                if (rj->end_by_ms == SCHED_TIME_UNKNOWN)
                    *unlimited |= 1;
                else
                    bound = rj->end_by_ms;
                break;
            }
    }
    for (size_t p = 0; p < d->nplacements; p++) {
        const struct sched_placement *pl = &d->placements[p];
        if (pl->end_by_ms <= bound)
            continue;
        const struct sched_alloc *a = P->in->allocs + P->in->pl_off[p];
        for (size_t k = 0; k < pl->nallocs; k++)
            if (a[k].gpu_mask & P->resv[node_lookup(P, a[k].node_id)]) {
                if (pl->end_by_ms == SCHED_TIME_UNKNOWN)
                    *unlimited = 2;
                else
                    bound = pl->end_by_ms;
                break;
            }
    }
    for (int i = 0; i < P->npick; i++)
        P->resv[P->pick_node[i]] = 0;
    return bound;
}

/*
 * Reserve GPUs for the blocked head job j. From time limits alone (today's
 * way) its GPUs would be free by lim_start: that is the guarantee a
 * prediction must never break. With predictions, the GPUs expected to free
 * first are reserved instead (start_ms: when they are expected free), but
 * only when the time limits of their holders also free them by lim_start;
 * else the limit-based GPUs are kept (also when a holder has no limit at
 * all). bound_ms is lim_start (when known, else the latest known limit):
 * a job may take reserved GPUs only if its limit ends by it, so a job that
 * outlives its prediction still never delays the head past lim_start.
 * Returns 0 (reserved or nothing known), -1 on no memory.
 */
static int reserve(struct pass *P, const struct sched_job *j)
{
    struct sched_decisions *d = P->d;
    int64_t lim_start, exp_start, start, bound;
    int *save_node = NULL;
    uint64_t *save_mask = NULL;
    int nsave = 0, ok, rc = -1;

    if ((ok = earliest(P, j, false, &lim_start)) < 0)
        return -1;
    start = bound = lim_start;
    if (preds_in_play(P)) {
        save_node = malloc(((size_t)P->npick + 1) * sizeof(*save_node));
        save_mask = malloc(((size_t)P->npick + 1) * sizeof(*save_mask));
        if (!save_node || !save_mask)
            goto out;
        nsave = ok > 0 ? P->npick : 0;
        memcpy(save_node, P->pick_node, (size_t)nsave * sizeof(*save_node));
        memcpy(save_mask, P->pick_mask, (size_t)nsave * sizeof(*save_mask));
        int ok2 = earliest(P, j, true, &exp_start);
        if (ok2 < 0)
            goto out;
        int unlimited = 0;
        int64_t bp = ok2 > 0 ? picks_bound(P, exp_start, &unlimited) : SCHED_TIME_UNKNOWN;
        /* with a limit-based choice, the predicted GPUs must be guaranteed as early; without
         * one, a job placed in this pass and holding them needs a limit (it cannot later be
         * told from a job backfilled onto them) */
        if (ok2 > 0 && (ok > 0 ? unlimited == 0 && bp <= lim_start : unlimited < 2)) {
            start = exp_start;
            bound = ok > 0 ? lim_start : bp;
            ok = 1;
        } else if (ok > 0) { /* back to the GPUs the time limits free first */
            P->npick = nsave;
            memcpy(P->pick_node, save_node, (size_t)nsave * sizeof(*save_node));
            memcpy(P->pick_mask, save_mask, (size_t)nsave * sizeof(*save_mask));
        }
    }
    if (ok == 0) {
        rc = 0;
        goto out;
    }
    if (bound < start)
        bound = start;
    size_t off = P->in->nallocs;
    if (push_allocs(P) != 0)
        goto out;
    P->res_off = off;
    d->reservation.valid = true;
    d->reservation.job_id = j->id;
    d->reservation.start_ms = start;
    d->reservation.nallocs = (size_t)P->npick;
    d->reservation.bound_ms = bound;
    P->has_res = true;
    P->res_start = start;
    P->res_bound = bound;
    for (int i = 0; i < P->npick; i++) {
        int n = P->pick_node[i];
        uint64_t m = P->pick_mask[i];
        if (P->resv[n] == 0)
            P->resnodes[P->nresnodes++] = n;
        P->resv[n] |= m;
        P->resfree[n] |= P->main.avail[n] & m;
        P->resfree_total += popc(P->main.avail[n] & m);
        sched_idx_set(&P->main, n, P->main.avail[n] & ~m);
    }
    rc = 0;
out:
    free(save_node);
    free(save_mask);
    return rc;
}

/* Place j on main plus the free reserved GPUs (it ends before the reservation). */
static int place_combined(struct pass *P, const struct sched_job *j)
{
    sched_site_set(P, j->site);
    for (size_t i = 0; i < P->nresnodes; i++) {
        int n = P->resnodes[i];
        sched_idx_set(&P->main, n, P->main.avail[n] | P->resfree[n]);
    }
    int ok = sched_place(P, &P->main, j->gpus, j->gpus_per_node);
    P->resfree_total = 0;
    for (size_t i = 0; i < P->nresnodes; i++) {
        int n = P->resnodes[i];
        P->resfree[n] = P->main.avail[n] & P->resv[n];
        P->resfree_total += popc(P->resfree[n]);
        sched_idx_set(&P->main, n, P->main.avail[n] & ~P->resv[n]);
    }
    return ok;
}

/* ---------- ordering ---------- */

int sched_sort_key_cmp(const void *a, const void *b)
{
    const struct sched_sort_key *x = a, *y = b;
    if (x->k1 != y->k1)
        return x->k1 < y->k1 ? -1 : 1;
    if (x->k2 != y->k2)
        return x->k2 < y->k2 ? -1 : 1;
    if (x->k3 != y->k3)
        return x->k3 < y->k3 ? -1 : 1;
    if (x->k4 != y->k4)
        return x->k4 < y->k4 ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/*
 * trainyard-spf and trainyard-qspf inside a team: shortest predicted run
 * first, with aging. The key submit + aging x run orders like the job's run
 * minus what it waited divided by aging, up to a term common to all jobs at
 * any now, so it never changes while the job waits: a job goes ahead of
 * every job submitted more than aging x its run after it, so no job waits
 * forever behind shorter ones. The run is the prediction, else the time
 * limit, else 1 h. Other policies: submit time.
 */
int64_t sched_job_order_key(const struct sched_policy *pol, const struct sched_job *j)
{
    int64_t sub = j->submit_ms;

    if (!(pol->flags & F_SPF))
        return sub;
    if (sub > INT64_MAX / 4)
        sub = INT64_MAX / 4;
    if (sub < INT64_MIN / 4)
        sub = INT64_MIN / 4;
    int64_t aging = (pol->flags & F_QSPF) ? SCHED_QSPF_AGING : SCHED_SPF_AGING;
    int64_t run = j->predicted_ms > 0    ? j->predicted_ms
                  : j->time_limit_ms > 0 ? j->time_limit_ms
                                         : 3600LL * 1000;
    if (run > INT64_MAX / 4 / aging)
        run = INT64_MAX / 4 / aging;
    return sub + aging * run;
}

bool sched_pick_before(const struct sched_policy *pol, const struct sched_pick *a,
                       const struct sched_pick *b)
{
    if (pol->flags & F_QSPF) {
        if (a->under_quota != b->under_quota)
            return a->under_quota;
        /* under quota, fair share decides between teams: each gets its quota first */
        if (a->under_quota && a->share != b->share)
            return a->share < b->share;
        if (a->key != b->key)
            return a->key < b->key;
        return a->id < b->id;
    }
    if (a->share != b->share)
        return a->share < b->share;
    if (a->submit_ms != b->submit_ms)
        return a->submit_ms < b->submit_ms;
    return a->id < b->id;
}

/* Sort idx[0..m) of queued jobs by (k1, k2, k3=id); skip when already sorted. */
static enum rc sort_jobs(struct pass *P, int *ix, size_t m, int kind)
{
    const struct sched_job *J = P->q->jobs;
    struct sched_sort_key *k = NULL;
    bool sorted = true;

    if (m < 2)
        return RC_OK;
    if (kind == KIND_FIFO) {
        size_t i = 1;
        for (; i < m; i++) {
            const struct sched_job *a = &J[ix[i - 1]], *b = &J[ix[i]];
            if (a->submit_ms > b->submit_ms || (a->submit_ms == b->submit_ms && a->id > b->id))
                break;
        }
        if (i == m)
            return RC_OK;
    }
    k = malloc(m * sizeof(*k));
    if (!k)
        return RC_ENOMEM;
    for (size_t i = 0; i < m; i++) {
        const struct sched_job *j = &J[ix[i]];
        if (kind == KIND_SJF) {
            k[i].k1 = j->true_duration_ms > 0 ? j->true_duration_ms : INT64_MAX;
            k[i].k2 = j->submit_ms;
        } else if (kind == KIND_SPF) {
            k[i].k1 = sched_job_order_key(P->pol, j);
            k[i].k2 = j->submit_ms;
        } else {
            k[i].k1 = j->submit_ms;
            k[i].k2 = 0;
        }
        k[i].k3 = j->id;
        k[i].k4 = 0;
        k[i].i = ix[i];
        if (i > 0 && sorted && sched_sort_key_cmp(&k[i - 1], &k[i]) > 0)
            sorted = false;
    }
    if (!sorted) {
        qsort(k, m, sizeof(*k), sched_sort_key_cmp);
        for (size_t i = 0; i < m; i++)
            ix[i] = k[i].i;
    }
    free(k);
    return RC_OK;
}

/* order[]: valid jobs bucketed by (priority desc, team), each bucket in submit order. */
static enum rc build_order(struct pass *P)
{
    const struct sched_queue *q = P->q;
    size_t nj = q->njobs, nb = 3 * P->nt;
    struct err e;
    enum rc rc;

    ALLOC(P->order, nj);
    P->norder = 0;
    if (P->pol->kind == KIND_FIFO && q->in_submit_order) {
        P->lazy_order = true; /* next_job validates as it goes */
        P->norder = nj;
        return RC_OK;
    }
    if (P->pol->kind != KIND_FAIR) {
        /* one sweep: validate, collect, and see whether submit order holds */
        const struct sched_job *prev = NULL;
        bool sorted = true;
        for (size_t i = 0; i < nj; i++) {
            if (!check_job(P, i, &e))
                continue;
            const struct sched_job *j = &q->jobs[i];
            if (prev && (prev->submit_ms > j->submit_ms ||
                         (prev->submit_ms == j->submit_ms && prev->id > j->id)))
                sorted = false;
            prev = j;
            P->order[P->norder++] = (int)i;
        }
        if (P->pol->kind == KIND_FIFO && sorted)
            return RC_OK;
        return sort_jobs(P, P->order, P->norder, P->pol->kind);
    }
    ALLOC(P->bstart, nb + 1);
    ALLOC(P->bpos, nb + 1);
    for (size_t i = 0; i < nj; i++)
        if (check_job(P, i, &e))
            P->bstart[(size_t)(2 - q->jobs[i].prio) * P->nt + (size_t)P->job_team[i] + 1]++;
    for (size_t b = 1; b <= nb; b++)
        P->bstart[b] += P->bstart[b - 1];
    memcpy(P->bpos, P->bstart, (nb + 1) * sizeof(size_t));
    for (size_t i = 0; i < nj; i++)
        if (P->job_ok[i])
            P->order[P->bpos[(size_t)(2 - q->jobs[i].prio) * P->nt + (size_t)P->job_team[i]]++] =
                (int)i;
    P->norder = P->bstart[nb];
    for (size_t b = 0; b < nb; b++) {
        rc = sort_jobs(P, P->order + P->bstart[b], P->bstart[b + 1] - P->bstart[b],
                       (P->pol->flags & F_SPF) ? KIND_SPF : KIND_FIFO);
        if (rc != RC_OK)
            return rc;
        P->bpos[b] = P->bstart[b];
    }
    return RC_OK;
}

static double share(const struct pass *P, int t)
{
    return P->t_share[t];
}

/*
 * The next job: for fair share, the front job of the team that
 * sched_pick_before() puts first (trainyard: the least-served team's oldest
 * job) of the top class. When no GPU is free (saturated), only teams under
 * quota can still place (by preemption), so the others are passed over.
 */
static int next_job(struct pass *P, size_t *pos, bool saturated)
{
    if (P->lazy_order) {
        struct err e;
        while (*pos < P->norder) {
            size_t i = (*pos)++;
            if (check_job(P, i, &e))
                return (int)i;
        }
        return -1;
    }
    if (P->pol->kind != KIND_FAIR)
        return *pos < P->norder ? P->order[(*pos)++] : -1;
    const struct sched_job *J = P->q->jobs;
    for (size_t p = 0; p < 3; p++) {
        int bt = -1;
        struct sched_pick best = {0}, cand;
        const size_t *st = P->bstart + p * P->nt, *ps = P->bpos + p * P->nt;
        if (P->bstart[(p + 1) * P->nt] == P->bstart[p * P->nt])
            continue; /* an empty class */
        for (size_t t = 0; t < P->nt; t++) {
            if (ps[t] >= st[t + 1])
                continue;
            if (saturated && P->t_used[t] >= P->t_quota[t])
                continue;
            const struct sched_job *j = &J[P->order[ps[t]]];
            cand.share = share(P, (int)t);
            cand.under_quota = P->t_used[t] + j->gpus <= P->t_quota[t];
            /* only trainyard-qspf compares keys across teams */
            cand.key = (P->pol->flags & F_QSPF) ? sched_job_order_key(P->pol, j) : 0;
            cand.submit_ms = j->submit_ms;
            cand.id = j->id;
            if (bt < 0 || sched_pick_before(P->pol, &cand, &best)) {
                bt = (int)t;
                best = cand;
            }
        }
        if (bt >= 0)
            return P->order[P->bpos[p * P->nt + (size_t)bt]++];
    }
    return -1;
}

/* ---------- the pass ---------- */

static bool under_quota(const struct pass *P, const struct sched_job *j, int t)
{
    return (P->pol->flags & F_QUOTA) && P->t_used[t] + j->gpus <= P->t_quota[t];
}

/* Could a team under quota still take GPUs back by preemption? */
static bool quota_possible(const struct pass *P)
{
    if (!(P->pol->flags & F_QUOTA) || P->preempt_tries >= MAX_PREEMPT_TRIES)
        return false;
    bool under = false, over = false;
    for (size_t t = 0; t < P->nt && !(under && over); t++) {
        if (P->t_used[t] < P->t_quota[t])
            under = true;
        else if (P->t_used[t] > P->t_quota[t])
            over = true;
    }
    return under && over;
}

/* Backfill candidates: shortest predicted run (else time limit) first, then their
 * fair-share order. */
struct bfkey {
    int64_t limit_ms; /* the prediction, else the time limit, else INT64_MAX */
    size_t rank;
    int job;
};

static bool bf_less(const struct bfkey *x, const struct bfkey *y)
{
    return x->limit_ms < y->limit_ms || (x->limit_ms == y->limit_ms && x->rank < y->rank);
}

/* A binary min-heap: candidates come out one at a time, and a pass usually
 * stops after a few (the free GPUs run out), so sorting them all would be
 * wasted work; building the heap is linear. */
static void bf_sift_down(struct bfkey *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && bf_less(&h[l], &h[m]))
            m = l;
        if (l + 1 < n && bf_less(&h[l + 1], &h[m]))
            m = l + 1;
        if (m == i)
            return;
        struct bfkey t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/*
 * Once the head job is blocked and holds its reservation, only jobs whose
 * limit ends by its bound or that stay off its GPUs may go ahead, and the
 * order among them is free: shortest first (by prediction, else time limit)
 * lets more of them finish before the reservation and shortens average
 * completion time (the head's start is protected by limits either way).
 * Fills a heap of the next (at most depth) jobs; returns NULL on no memory.
 */
static struct bfkey *backfill_candidates(struct pass *P, size_t *pos, size_t depth, size_t *n)
{
    const struct sched_job *J = P->q->jobs;
    size_t cap = depth < P->norder ? depth : P->norder, m = 0;
    struct bfkey *h = malloc((cap + 1) * sizeof(*h));
    int ji;

    if (h == NULL)
        return NULL;
    /* A job larger than every free GPU can only start by taking GPUs back
     * under its team's quota; the others are not worth ordering. */
    int64_t free_now = (int64_t)P->main.total + (int64_t)P->resfree_total;
    for (size_t pulled = 0; pulled < cap && (ji = next_job(P, pos, false)) >= 0; pulled++) {
        if (J[ji].gpus > free_now && !under_quota(P, &J[ji], P->job_team[ji]))
            continue;
        h[m].limit_ms = J[ji].predicted_ms > 0    ? J[ji].predicted_ms
                        : J[ji].time_limit_ms > 0 ? J[ji].time_limit_ms
                                                  : INT64_MAX;
        if (J[ji].predicted_ms > 0)
            P->bf_pred = true;
        h[m].rank = m;
        h[m].job = ji;
        m++;
    }
    for (size_t i = m / 2; i-- > 0;)
        bf_sift_down(h, m, i);
    *n = m;
    return h;
}

/*
 * The next job to try: in policy order, or the shortest backfill candidate.
 * Once no GPU is free outside the reservation and either none is free inside
 * it or the shortest candidate ends after it starts, no candidate can start
 * on free GPUs any more; only a team under its quota can still take GPUs
 * back by preemption. The heap is then cut, once, to those teams' jobs.
 */
static int next_try(struct pass *P, size_t *pos, bool saturated, struct bfkey *bf, size_t *nbf,
                    bool *cut)
{
    int ji;

    if (bf == NULL)
        return next_job(P, pos, saturated);
    if (!*cut && *nbf > 0 && P->main.total == 0 &&
        (P->resfree_total == 0 ||
         (!P->bf_pred && job_end(P, &P->q->jobs[bf[0].job]) > P->res_start))) {
        size_t m = 0;
        for (size_t i = 0; i < *nbf; i++)
            if (under_quota(P, &P->q->jobs[bf[i].job], P->job_team[bf[i].job]))
                bf[m++] = bf[i];
        for (size_t i = m / 2; i-- > 0;)
            bf_sift_down(bf, m, i);
        *nbf = m;
        *cut = true;
    }
    if (*nbf == 0)
        return -1;
    ji = bf[0].job;
    bf[0] = bf[--*nbf];
    bf_sift_down(bf, *nbf, 0);
    return ji;
}

static enum rc plan_main(struct pass *P)
{
    const struct sched_job *J = P->q->jobs;
    size_t pos = 0, after = 0, nbf = 0;
    bool cut = false;
    struct bfkey *bf = NULL;
    enum rc rc = RC_OK;
    size_t depth = P->q->backfill_depth > 0 ? (size_t)P->q->backfill_depth : SCHED_BACKFILL_DEPTH;
    int fail_single = INT_MAX, fail_multi = INT_MAX, fail_comb = INT_MAX, fail_pre = INT_MAX;
    bool blocked = false;
    int ji;

    while ((ji = next_try(P, &pos, blocked && P->main.total == 0 && P->resfree_total == 0, bf, &nbf,
                          &cut)) >= 0) {
        const struct sched_job *j = &J[ji];
        /* a job limited to its site's nodes neither reads nor sets the fail memos */
        bool memo_ok = !sched_site_set(P, j->site);
        int g = j->gpus, gpn = j->gpus_per_node, ok = 0;
        bool single = (gpn == 0 && g <= P->maxng) || gpn == g;
        int *memo = single ? &fail_single : &fail_multi;

        if (blocked && ++after > depth)
            break;
        if (P->main.total == 0 && P->resfree_total == 0 && (fail_pre <= 1 || !quota_possible(P))) {
            /* nothing more can start; still name the head job's reservation */
            if (!blocked && (P->pol->flags & F_BACKFILL) && reserve(P, j) != 0)
                rc = RC_ENOMEM;
            break;
        }
        if (memo_ok && gpn == 0 && g >= *memo) {
            ok = 0;
        } else {
            ok = sched_place(P, &P->main, g, gpn);
            if (ok == 0 && gpn == 0 && memo_ok)
                *memo = g;
        }
        /* onto reserved GPUs: only if its limit ends by the bound, the head's
         * time-limit guarantee (asking also that its prediction end by the expected
         * start backfilled less: avg JCT 137,843 s against 114,904 s on Philly) */
        if (ok == 0 && blocked && P->resfree_total > 0 && job_end(P, j) <= P->res_bound &&
            !(memo_ok && gpn == 0 && g >= fail_comb)) {
            ok = place_combined(P, j);
            if (ok == 0 && gpn == 0 && memo_ok)
                fail_comb = g;
        }
        if (ok == 0 && under_quota(P, j, P->job_team[ji]) && P->ncands > 0 &&
            !(memo_ok && gpn == 0 && g >= fail_pre)) {
            /* a failed try for g GPUs fails for more too, until a preemption */
            ok = preempt_fit(P, j, SCHED_PREEMPT_QUOTA);
            if (ok > 0)
                fail_single = fail_multi = fail_comb = fail_pre = INT_MAX;
            else if (ok == 0 && gpn == 0 && memo_ok)
                fail_pre = g;
        }
        if (ok < 0) {
            rc = RC_ENOMEM;
            break;
        }
        if (ok > 0) {
            if (record_placement(P, j) != 0) {
                rc = RC_ENOMEM;
                break;
            }
            team_add(P, P->job_team[ji], g);
            continue;
        }
        if (!blocked) {
            if (!(P->pol->flags & F_BACKFILL))
                break; /* fifo: the head blocks everyone */
            blocked = true;
            if (reserve(P, j) != 0 || ((P->pol->flags & F_BF_SHORTEST) &&
                                       (bf = backfill_candidates(P, &pos, depth, &nbf)) == NULL)) {
                rc = RC_ENOMEM;
                break;
            }
        }
    }
    free(bf);
    return rc;
}

struct lkey {
    int64_t prio, level, submit, id;
    int run; /* running index or -1 */
    int job; /* queued index or -1 */
};

static int cmp_lkey(const void *a, const void *b)
{
    const struct lkey *x = a, *y = b;
    if (x->prio != y->prio)
        return x->prio > y->prio ? -1 : 1;
    if (x->level != y->level)
        return x->level < y->level ? -1 : 1;
    if (x->submit != y->submit)
        return x->submit < y->submit ? -1 : 1;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->run - y->run;
}

/*
 * tiresias-las: two queues by attained GPU service (below / above 16
 * GPU-hours), FIFO within a queue. Greedily admit in that order up to the
 * READY capacity; running jobs left out become victims (worst first) that an
 * admitted queued job may preempt when it does not fit otherwise.
 */
static enum rc plan_las(struct pass *P)
{
    const struct sched_cluster *c = P->c;
    const struct sched_queue *q = P->q;
    size_t n = c->nrunning + q->njobs, m = 0, nv = 0;
    struct lkey *k = calloc(n ? n : 1, sizeof(*k));
    int64_t cap = 0, used = 0;
    enum rc rc = RC_ENOMEM;

    if (!k)
        return RC_ENOMEM;
    for (size_t i = 0; i < P->nn; i++)
        if (c->nodes[i].state == SCHED_NODE_READY)
            cap += c->nodes[i].ngpus;
    for (size_t r = 0; r < c->nrunning; r++) {
        const struct sched_running *rj = &c->running[r];
        if (!rj->preemptible) {
            used += rj->gpus;
            continue;
        }
        k[m++] = (struct lkey){rj->prio,      rj->attained_gpu_ms >= LAS_THRESHOLD_GPU_MS,
                               rj->submit_ms, rj->job_id,
                               (int)r,        -1};
    }
    for (size_t i = 0; i < q->njobs; i++) {
        const struct sched_job *j = &q->jobs[i];
        if (P->job_ok[i])
            k[m++] = (struct lkey){j->prio,      j->attained_gpu_ms >= LAS_THRESHOLD_GPU_MS,
                                   j->submit_ms, j->id,
                                   -1,           (int)i};
    }
    qsort(k, m, sizeof(*k), cmp_lkey);
    P->ncands = 0;
    size_t na = 0;
    for (size_t i = 0; i < m; i++) {
        int g = k[i].run >= 0 ? c->running[k[i].run].gpus : q->jobs[k[i].job].gpus;
        bool fits = used + g <= cap;
        if (fits)
            used += g;
        if (k[i].run >= 0 && !fits)
            nv++;
        if (k[i].job >= 0 && fits)
            k[na++].job = k[i].job; /* reuse the front of k for admitted jobs, in order */
        if (k[i].run >= 0 && !fits)
            P->cands[P->ncands++] = k[i].run; /* order fixed below */
    }
    /* victims worst first: reverse of LAS order */
    for (size_t a = 0, b = P->ncands; a + 1 < b; a++, b--) {
        int t = P->cands[a];
        P->cands[a] = P->cands[b - 1];
        P->cands[b - 1] = t;
    }
    (void)nv;
    for (size_t i = 0; i < na; i++) {
        const struct sched_job *j = &q->jobs[k[i].job];
        int ok;
        sched_site_set(P, j->site);
        ok = sched_place(P, &P->main, j->gpus, j->gpus_per_node);
        if (ok == 0 && P->ncands > 0)
            ok = preempt_fit(P, j, SCHED_PREEMPT_LAS);
        if (ok < 0)
            goto out;
        if (ok > 0 && record_placement(P, j) != 0)
            goto out;
    }
    rc = RC_OK;
out:
    free(k);
    return rc;
}

/* ---------- entry points ---------- */

void sched_pass_free(struct pass *P)
{
    sched_idx_free(&P->main);
    sched_idx_free(&P->hypo);
    free(P->resv);
    free(P->resfree);
    free(P->resnodes);
    free(P->topo);
    free(P->nids);
    free(P->run_aoff);
    free(P->run_anode);
    free(P->run_team);
    free(P->run_pre);
    free(P->run_borrow);
    free(P->cands);
    free(P->tid);
    free(P->t_used);
    free(P->t_quota);
    free(P->t_w);
    free(P->t_share);
    free(P->job_team);
    free(P->job_ok);
    free(P->order);
    free(P->bstart);
    free(P->bpos);
    free(P->grp_start);
    free(P->grp_mem);
    free(P->pick_node);
    free(P->pick_mask);
    free(P->hid);
    free(P->hid_avail);
    free(P->tmp1);
    free(P->tmp2);
}

static void decisions_reset(struct sched_decisions *d)
{
    d->nplacements = 0;
    d->npreemptions = 0;
    memset(&d->reservation, 0, sizeof(d->reservation));
    d->nblocked = 0;
    d->nskipped = 0;
    err_init(&d->first_invalid);
    if (d->in)
        d->in->nallocs = 0;
}

void sched_decisions_init(struct sched_decisions *d)
{
    memset(d, 0, sizeof(*d));
}

void sched_decisions_cleanup(struct sched_decisions *d)
{
    if (d == NULL)
        return;
    free(d->placements);
    free(d->preemptions);
    if (d->in) {
        free(d->in->allocs);
        free(d->in->pl_off);
        free(d->in);
    }
    memset(d, 0, sizeof(*d));
}

static enum rc plan_generic(const struct sched_policy *policy, const struct sched_cluster *cluster,
                            const struct sched_queue *queue, int64_t now_ms,
                            struct sched_decisions *out)
{
    struct pass P;
    enum rc rc;
    struct err e;

    memset(&P, 0, sizeof(P));
    err_init(&e);
    P.pol = policy;
    P.c = cluster;
    P.q = queue;
    P.now = now_ms;
    P.d = out;
    P.in = out->in;
    P.res_start = SCHED_TIME_UNKNOWN;
    P.res_bound = SCHED_TIME_UNKNOWN;
    if ((cluster->nnodes && !cluster->nodes) || (cluster->nteams && !cluster->teams) ||
        (cluster->nrunning && !cluster->running) || (queue->njobs && !queue->jobs)) {
        rc = RC_EINVAL;
        goto out;
    }
    if ((rc = sched_prep_nodes(&P, &out->first_invalid)) != RC_OK)
        goto out;
    if ((rc = prep_running(&P, &out->first_invalid)) != RC_OK)
        goto out;
    if ((rc = prep_teams(&P)) != RC_OK)
        goto out;
    if ((rc = prep_team_state(&P)) != RC_OK)
        goto out;
    if ((rc = prep_borrowing(&P)) != RC_OK)
        goto out;
    if (policy->kind == KIND_LAS) {
        for (size_t i = 0; i < queue->njobs; i++)
            check_job(&P, i, &e);
        rc = plan_las(&P);
    } else {
        if ((rc = build_order(&P)) != RC_OK)
            goto out;
        rc = plan_main(&P);
    }
    if (rc != RC_OK)
        goto out;
    for (size_t p = 0; p < out->nplacements; p++)
        out->placements[p].allocs = P.in->allocs + P.in->pl_off[p];
    if (out->reservation.valid)
        out->reservation.allocs = P.in->allocs + P.res_off;
    out->nblocked = queue->njobs - out->nskipped - out->nplacements;
out:
    if (rc != RC_OK) {
        struct err keep = out->first_invalid;
        decisions_reset(out);
        out->first_invalid = keep;
    }
    sched_pass_free(&P);
    return rc;
}

enum rc sched_plan(const struct sched_policy *policy, const struct sched_cluster *cluster,
                   const struct sched_queue *queue, int64_t now_ms, struct sched_decisions *out)
{
    if (out == NULL || cluster == NULL || queue == NULL)
        return RC_EINVAL;
    if (policy == NULL)
        policy = sched_policy_find("trainyard");
    decisions_reset(out);
    if (out->in == NULL) {
        out->in = calloc(1, sizeof(*out->in));
        if (out->in == NULL)
            return RC_ENOMEM;
    }
    return policy->plan(policy, cluster, queue, now_ms, out);
}

static const struct sched_policy policies[] = {
    {"fifo", plan_generic, KIND_FIFO, 0},
    {"sjf-oracle", plan_generic, KIND_SJF, F_BACKFILL | F_ORACLE},
    {"trainyard", plan_generic, KIND_FAIR, F_BACKFILL | F_QUOTA | F_BF_SHORTEST},
    {"trainyard-spf", plan_generic, KIND_FAIR, F_BACKFILL | F_QUOTA | F_BF_SHORTEST | F_SPF},
    {"trainyard-qspf", plan_generic, KIND_FAIR,
     F_BACKFILL | F_QUOTA | F_BF_SHORTEST | F_SPF | F_QSPF},
    {"tiresias-las", plan_generic, KIND_LAS, F_LAS},
};

static const char *const policy_names[] = {
    "fifo", "sjf-oracle", "trainyard", "tiresias-las", "trainyard-spf", "trainyard-qspf", NULL};

const struct sched_policy *sched_policy_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
        if (strcmp(policies[i].name, name) == 0)
            return &policies[i];
    return NULL;
}

const char *const *sched_policy_names(void)
{
    return policy_names;
}
