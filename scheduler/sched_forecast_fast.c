/*
 * sched_forecast_fast.c - the forecast's event simulation: the starts of the
 * queued jobs after the first pass, without a sched_plan() per simulated end
 * (that costs the whole queue at every end: seconds at 10,000 jobs).
 *
 * What it keeps between events, where a pass would rebuild it:
 * - the free-capacity index of sched_place.c (a struct pass's node part, from
 *   sched_prep_nodes), changed node by node as jobs start and end, so every
 *   placement is the pass's own (best fit, gangs, NVLink peers, switches,
 *   sites);
 * - the running jobs in two min-heaps: by simulated end and by time limit;
 * - the policy's order: buckets (priority class x team for fair share, one
 *   bucket for fifo and sjf-oracle), each sorted once, with a cursor that
 *   steps over started jobs;
 * - per job shape (GPUs, GPUs per node, site) its waiting jobs sorted once by
 *   predicted run (else limit), for backfill, with a cursor too;
 * - the head job's reservation, kept while that job stays the head and no
 *   job has started on its GPUs (made anew at every event, as a pass does, it
 *   gave the same accuracy on the Philly replay at nine times the cost).
 *
 * One event: the ends up to it give their GPUs back; the head (the
 * cross-team pick of next_job() in sched.c, sched_pick_before()) and the
 * jobs after it start while they fit; the first that does not fit is
 * reserved GPUs as reserve() does (those the time limits free first, or
 * those the simulated ends free first when their holders' limits also free
 * them by then; bound by the limits); then backfill: the shortest waiting
 * job of any shape that fits off the reserved GPUs, or on them when its time
 * limit ends by the bound, until no shape fits. fifo does not backfill.
 *
 * Where it differs from a sched_plan() per event (opts->exact): no
 * preemption after the first pass (tiresias-las therefore always simulates
 * exactly); backfill looks at every waiting job, not backfill_depth of them;
 * a shape whose shortest job may not take the reserved GPUs is not searched
 * further in that event; teams at their quota are not passed over when no
 * GPU is free. tests/unit/test_sched_forecast.c compares both on random
 * snapshots, and bench/sched measures both.
 *
 * Cost per event: O(log runs) per end, O(classes x teams) per head pick, one
 * placement try (O(65) for a one-node job) per shape; a reservation walks the
 * running jobs in end order only as far as the head needs.
 *
 * Threading: none; no globals.
 */
#include "sched_forecast_int.h"

#include <stdlib.h>
#include <string.h>

struct frun {
    int64_t end;    /* simulated end */
    int64_t end_by; /* by its time limit; SCHED_TIME_UNKNOWN: none */
    int team, gpus;
    size_t aoff, na; /* its allocations in F->pool */
};

struct fa {
    int node;
    uint64_t mask;
};

/*
 * Two indexed min-heaps of running jobs: by simulated end (what the
 * simulation pops) and by time-limit end (those with a limit: what the
 * reservation's guarantee is made of). pos[] lets an ended job leave the
 * limit heap from anywhere.
 */
struct rheap {
    size_t *h;   /* run indices */
    size_t *pos; /* per run: its place in h, or SIZE_MAX */
    size_t n;
    bool by_limit;
};

struct fsim {
    struct sim *S;
    struct pass P; /* its node part only: the capacity index and placement */
    struct sched_cluster c;
    uint64_t *freem; /* per node: the GPUs actually free (reserved or not) */
    /* running jobs: append-only; the heaps hold those not ended */
    struct frun *run;
    size_t nrun, caprun;
    struct fa *pool;
    size_t npool, cappool;
    struct rheap by_end, by_limit;
    size_t npredicted; /* running jobs whose simulated end is not their limit */
    /* teams */
    int64_t *tid;
    size_t nt;
    int64_t *used;
    double *denom;  /* quota (1 without) x weight */
    int64_t *quota; /* GPUs guaranteed; 0 none */
    double *share;
    /* queued jobs (S->q order) */
    int *jteam;
    unsigned char *done;  /* started */
    unsigned char *never; /* no end frees enough for it: it never starts */
    size_t nb;            /* buckets: nclass x nbt */
    size_t nbt;           /* buckets per class: the teams (fair share), else 1 */
    int *border;          /* jobs by bucket, each sorted by the policy's order */
    size_t *bstart, *bpos;
    size_t nclass;
    size_t nshape;
    int *sorder; /* jobs by shape, each by (predicted run, submit, id) */
    int *jrank;  /* per job: its place in that run order over all shapes */
    size_t *sstart, *spos;
    int *alive; /* scratch: shapes still worth a try in this event */
    /* the reservation of the head job */
    int res_job; /* -1: none */
    int64_t res_bound;
    bool res_dirty; /* a job started on reserved GPUs since it was made */
    uint64_t *resv;
    int *resnodes;
    size_t nresnodes;
    /* reserve_head() scratch */
    size_t *aux;
    int *touched;
    int *pk_node[2];
    uint64_t *pk_mask[2];
    size_t *pk_walked[2];
    unsigned char *is_touched;
};

/* ---------- small helpers ---------- */

static const struct sched_job *qjob(const struct fsim *F, int i)
{
    return &F->S->q[i];
}

/* What new work may take on node n: its free GPUs off the reservation, READY only. */
static void node_sync(struct fsim *F, int n)
{
    const struct sched_node *nd = &F->S->nodes[n];
    uint64_t m = nd->state == SCHED_NODE_READY ? F->freem[n] & ~F->resv[n] : 0;
    sched_idx_set(&F->P.main, n, m);
}

static int team_of(const struct fsim *F, int64_t id)
{
    size_t lo = 0, hi = F->nt;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (F->tid[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (int)lo; /* every id was put in tid[] at load */
}

static void team_add_f(struct fsim *F, int t, int64_t g)
{
    F->used[t] += g;
    F->share[t] = (double)F->used[t] / F->denom[t];
}

/* The end a job started at t is held to: its time limit (sjf-oracle: its true end). */
static int64_t limit_end(const struct fsim *F, const struct sched_job *j, int64_t t)
{
    if (F->S->pol->flags & F_ORACLE)
        return sched_fc_job_end(F->S, j, t);
    return j->time_limit_ms > 0 ? sched_fc_sat_add(t, j->time_limit_ms) : SCHED_TIME_UNKNOWN;
}

/* ---------- the running-job heaps ---------- */

static int64_t rkey(const struct fsim *F, const struct rheap *H, size_t r)
{
    return H->by_limit ? F->run[r].end_by : F->run[r].end;
}

static bool rless(const struct fsim *F, const struct rheap *H, size_t a, size_t b)
{
    int64_t x = rkey(F, H, a), y = rkey(F, H, b);
    return x < y || (x == y && a < b);
}

static void rput(struct rheap *H, size_t i, size_t r)
{
    H->h[i] = r;
    H->pos[r] = i;
}

static void rsift_up(const struct fsim *F, struct rheap *H, size_t i)
{
    size_t r = H->h[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!rless(F, H, r, H->h[p]))
            break;
        rput(H, i, H->h[p]);
        i = p;
    }
    rput(H, i, r);
}

static void rsift_down(const struct fsim *F, struct rheap *H, size_t i)
{
    size_t r = H->h[i];
    for (;;) {
        size_t l = 2 * i + 1, m = l;
        if (l >= H->n)
            break;
        if (l + 1 < H->n && rless(F, H, H->h[l + 1], H->h[l]))
            m = l + 1;
        if (!rless(F, H, H->h[m], r))
            break;
        rput(H, i, H->h[m]);
        i = m;
    }
    rput(H, i, r);
}

static void rpush(const struct fsim *F, struct rheap *H, size_t r)
{
    H->h[H->n] = r;
    H->pos[r] = H->n;
    H->n++;
    rsift_up(F, H, H->n - 1);
}

/* Take run r out of H (it may be anywhere in it). */
static void rremove(const struct fsim *F, struct rheap *H, size_t r)
{
    size_t i = H->pos[r];
    if (i == SIZE_MAX)
        return;
    H->pos[r] = SIZE_MAX;
    size_t last = H->h[--H->n];
    if (i == H->n)
        return;
    rput(H, i, last);
    rsift_down(F, H, i);
    rsift_up(F, H, H->pos[last]);
}

/* Add a running job on the GPUs a[0..na); -1 on no memory. */
static int run_start(struct fsim *F, int64_t end, int64_t end_by, int team, int gpus,
                     const struct fa *a, size_t na)
{
    if (sched_fc_grow((void **)&F->run, &F->caprun, F->nrun + 1, sizeof(*F->run)) != 0 ||
        sched_fc_grow((void **)&F->pool, &F->cappool, F->npool + na, sizeof(*F->pool)) != 0)
        return -1;
    memcpy(F->pool + F->npool, a, na * sizeof(*a));
    F->run[F->nrun] = (struct frun){end, end_by, team, gpus, F->npool, na};
    F->npool += na;
    /* the heaps have room for every run (sized at load) */
    F->by_end.pos[F->nrun] = SIZE_MAX;
    F->by_limit.pos[F->nrun] = SIZE_MAX;
    rpush(F, &F->by_end, F->nrun);
    if (end_by != SCHED_TIME_UNKNOWN)
        rpush(F, &F->by_limit, F->nrun);
    if (end != end_by)
        F->npredicted++;
    F->nrun++;
    team_add_f(F, team, gpus);
    return 0;
}

/* End the job that ends first: its GPUs back to its nodes. */
static void run_end_first(struct fsim *F)
{
    size_t r = F->by_end.h[0];
    const struct frun *fr = &F->run[r];
    rremove(F, &F->by_end, r);
    rremove(F, &F->by_limit, r);
    if (fr->end != fr->end_by)
        F->npredicted--;
    for (size_t k = 0; k < fr->na; k++) {
        const struct fa *a = &F->pool[fr->aoff + k];
        F->freem[a->node] |= a->mask;
        node_sync(F, a->node);
    }
    team_add_f(F, fr->team, -fr->gpus);
}

/* ---------- the reservation ---------- */

static void res_clear(struct fsim *F)
{
    for (size_t i = 0; i < F->nresnodes; i++) {
        int n = F->resnodes[i];
        F->resv[n] = 0;
        node_sync(F, n);
    }
    F->nresnodes = 0;
    F->res_job = -1;
    F->res_dirty = false;
}

/* The k smallest of heap H in order without popping it: aux[] is a heap of
 * positions in H->h, seeded with the root; each popped position adds its two
 * children. */
static bool aux_less(const struct fsim *F, const struct rheap *H, size_t a, size_t b)
{
    return rless(F, H, H->h[a], H->h[b]);
}

static void aux_push(struct fsim *F, const struct rheap *H, size_t *n, size_t pos)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!aux_less(F, H, pos, F->aux[p]))
            break;
        F->aux[i] = F->aux[p];
        i = p;
    }
    F->aux[i] = pos;
}

static size_t aux_pop(struct fsim *F, const struct rheap *H, size_t *n)
{
    size_t top = F->aux[0], last = F->aux[--*n], i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = l;
        if (l >= *n)
            break;
        if (l + 1 < *n && aux_less(F, H, F->aux[l + 1], F->aux[l]))
            m = l + 1;
        if (!aux_less(F, H, F->aux[m], last))
            break;
        F->aux[i] = F->aux[m];
        i = m;
    }
    if (*n > 0)
        F->aux[i] = last;
    return top;
}

/* The GPUs of a reservation: nodes and masks (a copy of P.pick_*). */
struct picks {
    int n;
    int *node;
    uint64_t *mask;
    size_t *walked; /* the running jobs walked to find them: the only ones that can hold them */
    size_t nwalked;
};

/*
 * Earliest start of job j in the order of H (simulated ends or time
 * limits), as earliest() in sched.c: the running jobs' GPUs are given to the
 * index in that order, for the while, until j fits; the GPUs it would take
 * then go to *pk. 1 found (*start set), 0 no end frees enough, -1 no memory.
 */
static int earliest_in(struct fsim *F, const struct rheap *H, const struct sched_job *j, int64_t t,
                       int64_t *start, struct picks *pk)
{
    size_t na = 0, nt = 0;
    int ok = 0;

    *start = SCHED_TIME_UNKNOWN;
    pk->nwalked = 0;
    sched_site_set(&F->P, j->site);
    if (H->n > 0)
        aux_push(F, H, &na, 0);
    while (na > 0) {
        int64_t e = rkey(F, H, H->h[F->aux[0]]);
        while (na > 0 && rkey(F, H, H->h[F->aux[0]]) == e) {
            size_t pos = aux_pop(F, H, &na), r = H->h[pos];
            pk->walked[pk->nwalked++] = r;
            if (2 * pos + 1 < H->n)
                aux_push(F, H, &na, 2 * pos + 1);
            if (2 * pos + 2 < H->n)
                aux_push(F, H, &na, 2 * pos + 2);
            for (size_t k = 0; k < F->run[r].na; k++) {
                const struct fa *a = &F->pool[F->run[r].aoff + k];
                if (F->S->nodes[a->node].state != SCHED_NODE_READY)
                    continue;
                if (!F->is_touched[a->node]) {
                    F->is_touched[a->node] = 1;
                    F->touched[nt++] = a->node;
                }
                sched_idx_set(&F->P.main, a->node, F->P.main.avail[a->node] | a->mask);
            }
        }
        if (sched_feasible(&F->P, &F->P.main, j->gpus, j->gpus_per_node)) {
            *start = e < t ? t : e;
            break;
        }
    }
    if (*start != SCHED_TIME_UNKNOWN)
        ok = sched_place(&F->P, &F->P.main, j->gpus, j->gpus_per_node);
    if (ok > 0) {
        pk->n = F->P.npick;
        memcpy(pk->node, F->P.pick_node, (size_t)pk->n * sizeof(*pk->node));
        memcpy(pk->mask, F->P.pick_mask, (size_t)pk->n * sizeof(*pk->mask));
    }
    /* back to what is free now: the walked ends and the picks were hypothetical */
    for (size_t i = 0; i < nt; i++) {
        F->is_touched[F->touched[i]] = 0;
        node_sync(F, F->touched[i]);
    }
    for (int i = 0; ok > 0 && i < pk->n; i++)
        node_sync(F, pk->node[i]);
    return ok;
}

/*
 * The latest time limit among the running jobs holding GPUs of pk (at least
 * start), as picks_bound() in sched.c; *unlimited when one of them has none.
 * Uses F->resv as scratch (all zero: no reservation is held).
 */
static int64_t picks_bound_f(struct fsim *F, const struct picks *pk, int64_t start, bool *unlimited)
{
    int64_t bound = start;

    *unlimited = false;
    for (int i = 0; i < pk->n; i++)
        F->resv[pk->node[i]] |= pk->mask[i];
    for (size_t i = 0; i < pk->nwalked; i++) {
        const struct frun *r = &F->run[pk->walked[i]];
        if (r->end_by <= bound && r->end_by != SCHED_TIME_UNKNOWN)
            continue;
        for (size_t k = 0; k < r->na; k++)
            if (F->pool[r->aoff + k].mask & F->resv[F->pool[r->aoff + k].node]) {
                if (r->end_by == SCHED_TIME_UNKNOWN)
                    *unlimited = true;
                else
                    bound = r->end_by;
                break;
            }
    }
    for (int i = 0; i < pk->n; i++)
        F->resv[pk->node[i]] = 0;
    return bound;
}

/*
 * Reserve for head job h (no reservation held), as reserve() in sched.c: the
 * GPUs the time limits free first (by lim_start: the guarantee); with
 * predictions in play, those the simulated ends free first instead, when
 * their holders' limits also free them by lim_start (or nothing frees them
 * by limits). bound: lim_start when known, else the predicted GPUs' latest
 * limit. 1 reserved, 0 h never fits (no end frees enough either way), -1 no memory.
 */
static int reserve_head(struct fsim *F, int h, int64_t t)
{
    const struct sched_job *j = qjob(F, h);
    struct picks lim = {0, F->pk_node[0], F->pk_mask[0], F->pk_walked[0], 0};
    struct picks exp = {0, F->pk_node[1], F->pk_mask[1], F->pk_walked[1], 0};
    const struct picks *use = &lim;
    int64_t lim_start, exp_start, start, bound;

    int ok = earliest_in(F, &F->by_limit, j, t, &lim_start, &lim), ok2 = 0;
    if (ok < 0)
        return -1;
    start = bound = lim_start;
    if (F->npredicted > 0 && (ok2 = earliest_in(F, &F->by_end, j, t, &exp_start, &exp)) < 0)
        return -1;
    if (ok2 > 0) {
        bool unlimited;
        int64_t bp = picks_bound_f(F, &exp, exp_start, &unlimited);
        if (ok > 0 ? !unlimited && bp <= lim_start : true) {
            start = exp_start;
            bound = ok > 0 ? lim_start : bp;
            use = &exp;
            ok = 1;
        }
    }
    if (ok == 0)
        return 0;
    if (bound < start)
        bound = start;
    for (int i = 0; i < use->n; i++) {
        int n = use->node[i];
        if (F->resv[n] == 0)
            F->resnodes[F->nresnodes++] = n;
        F->resv[n] |= use->mask[i];
    }
    F->res_bound = bound;
    F->res_job = h;
    for (size_t i = 0; i < F->nresnodes; i++)
        node_sync(F, F->resnodes[i]);
    return 1;
}

/* ---------- starting jobs ---------- */

/*
 * Try to place job i now; combined: the free reserved GPUs too. On success the
 * job runs from t (its output start set) and 1 is returned; 0 no fit; -1 no memory.
 */
static int try_start(struct fsim *F, int i, bool combined, int64_t t)
{
    const struct sched_job *j = qjob(F, i);
    struct fa a[SCHED_MAX_JOB_GPUS];
    int ok;

    sched_site_set(&F->P, j->site);
    if (combined)
        for (size_t k = 0; k < F->nresnodes; k++) {
            int n = F->resnodes[k];
            if (F->S->nodes[n].state == SCHED_NODE_READY)
                sched_idx_set(&F->P.main, n, F->freem[n]);
        }
    ok = sched_place(&F->P, &F->P.main, j->gpus, j->gpus_per_node);
    size_t na = 0;
    if (ok > 0)
        for (int k = 0; k < F->P.npick && na < SCHED_MAX_JOB_GPUS; k++) {
            a[na++] = (struct fa){F->P.pick_node[k], F->P.pick_mask[k]};
            F->freem[F->P.pick_node[k]] &= ~F->P.pick_mask[k];
        }
    if (combined)
        for (size_t k = 0; k < F->nresnodes; k++)
            node_sync(F, F->resnodes[k]);
    if (ok <= 0)
        return ok;
    int64_t end = sched_fc_job_end(F->S, j, t);
    if (run_start(F, end, limit_end(F, j, t), F->jteam[i], j->gpus, a, na) != 0)
        return -1;
    F->done[i] = 1;
    long o = F->S->qout[i];
    if (o >= 0 && F->S->out[o].start_ms == SCHED_TIME_UNKNOWN) {
        F->S->out[o].start_ms = t;
        F->S->left--;
    }
    return 1;
}

/* The next job in the policy's order (fair share: the front job of the team
 * that sched_pick_before() puts first, in the top class, as next_job() in
 * sched.c); -1 when none waits. */
static int head_pick(struct fsim *F)
{
    const struct sched_policy *pol = F->S->pol;

    for (size_t p = 0; p < F->nclass; p++) {
        int best = -1;
        struct sched_pick bp = {0}, cand;
        for (size_t t = 0; t < F->nbt; t++) {
            size_t b = p * F->nbt + t;
            while (F->bpos[b] < F->bstart[b + 1] && F->done[F->border[F->bpos[b]]])
                F->bpos[b]++;
            if (F->bpos[b] >= F->bstart[b + 1])
                continue;
            int i = F->border[F->bpos[b]];
            if (F->nbt == 1)
                return i; /* one bucket: its order is the policy's */
            const struct sched_job *j = qjob(F, i);
            cand.share = F->share[t];
            cand.under_quota = F->used[t] + j->gpus <= F->quota[t];
            cand.key = (pol->flags & F_QSPF) ? sched_job_order_key(pol, j) : 0;
            cand.submit_ms = j->submit_ms;
            cand.id = j->id;
            if (best < 0 || sched_pick_before(pol, &cand, &bp)) {
                best = i;
                bp = cand;
            }
        }
        if (best >= 0)
            return best;
    }
    return -1;
}

/* The first waiting job of shape s other than the head; -1 when none. */
static int shape_top(struct fsim *F, size_t s)
{
    while (F->spos[s] < F->sstart[s + 1] &&
           (F->done[F->sorder[F->spos[s]]] || F->never[F->sorder[F->spos[s]]]))
        F->spos[s]++;
    for (size_t p = F->spos[s]; p < F->sstart[s + 1]; p++) {
        int i = F->sorder[p];
        if (!F->done[i] && !F->never[i] && i != F->res_job)
            return i;
    }
    return -1;
}

/* Backfill behind the reserved head: shortest first over every shape that fits. */
static int backfill(struct fsim *F, int64_t t)
{
    size_t nalive = 0;
    int64_t resfree = 0;

    for (size_t k = 0; k < F->nresnodes; k++) {
        int n = F->resnodes[k];
        if (F->S->nodes[n].state == SCHED_NODE_READY)
            resfree += __builtin_popcountll(F->freem[n] & F->resv[n]);
    }
    for (size_t s = 0; s < F->nshape; s++) {
        int i = shape_top(F, s);
        if (i >= 0 && qjob(F, i)->gpus <= F->P.main.total + resfree)
            F->alive[nalive++] = (int)s;
    }
    while (nalive > 0) {
        size_t best = 0;
        int bi = -1;
        for (size_t k = 0; k < nalive; k++) {
            int i = shape_top(F, (size_t)F->alive[k]);
            if (i >= 0 && (bi < 0 || F->jrank[i] < F->jrank[bi])) {
                bi = i;
                best = k;
            }
        }
        if (bi < 0)
            break;
        int ok = try_start(F, bi, false, t);
        if (ok == 0 && F->nresnodes > 0 && limit_end(F, qjob(F, bi), t) <= F->res_bound) {
            ok = try_start(F, bi, true, t);
            F->res_dirty |= ok > 0;
        }
        if (ok < 0)
            return -1;
        if (ok == 0 || shape_top(F, (size_t)F->alive[best]) < 0)
            F->alive[best] = F->alive[--nalive];
    }
    return 0;
}

/* One simulated pass at t. 0, or -1 on no memory. */
static int pass_at(struct fsim *F, int64_t t)
{
    for (;;) {
        int h = head_pick(F);
        if (h < 0) {
            res_clear(F);
            return 0;
        }
        if (F->res_job >= 0 && (F->res_job != h || F->res_dirty))
            res_clear(F);
        if (F->never[h])
            return backfill(F, t); /* a head that never fits reserves nothing (sched.c too) */
        int ok = try_start(F, h, F->res_job == h, t);
        if (ok < 0)
            return -1;
        if (ok > 0) {
            res_clear(F);
            continue;
        }
        if (!(F->S->pol->flags & F_BACKFILL))
            return 0; /* fifo: the head blocks everyone */
        if (F->res_job < 0) {
            ok = reserve_head(F, h, t);
            if (ok < 0)
                return -1;
            if (ok == 0)
                F->never[h] = 1; /* it stays the head, as in sched_plan() */
        }
        return backfill(F, t);
    }
}

/* ---------- loading ---------- */

/* Teams: every id of the teams, the running and the queued jobs, sorted. */
static int load_teams(struct fsim *F)
{
    struct sim *S = F->S;
    const struct sched_cluster *c0 = S->c0;
    size_t k = 0;

    F->tid = malloc((c0->nteams + S->nrun + S->nq + 1) * sizeof(*F->tid));
    if (F->tid == NULL)
        return -1;
    for (size_t i = 0; i < c0->nteams; i++)
        F->tid[k++] = c0->teams[i].id;
    for (size_t r = 0; r < S->nrun; r++)
        F->tid[k++] = S->run[r].team_id;
    for (size_t i = 0; i < S->nq; i++)
        F->tid[k++] = S->q[i].team_id;
    if (k == 0)
        F->tid[k++] = 0;
    qsort(F->tid, k, sizeof(*F->tid), sched_fc_cmp_i64);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || F->tid[u - 1] != F->tid[i])
            F->tid[u++] = F->tid[i];
    F->nt = u;
    F->used = calloc(u, sizeof(*F->used));
    F->denom = calloc(u, sizeof(*F->denom));
    F->share = calloc(u, sizeof(*F->share));
    F->quota = calloc(u, sizeof(*F->quota));
    if (!F->used || !F->denom || !F->share || !F->quota)
        return -1;
    for (size_t t = 0; t < u; t++)
        F->denom[t] = 1.0;
    for (size_t i = 0; i < c0->nteams; i++) {
        int t = team_of(F, c0->teams[i].id);
        double q = c0->teams[i].quota_gpus > 0 ? c0->teams[i].quota_gpus : 1;
        double w = c0->teams[i].weight > 0 ? c0->teams[i].weight : 1.0;
        F->denom[t] = q * w;
        F->quota[t] = c0->teams[i].quota_gpus > 0 ? c0->teams[i].quota_gpus : 0;
    }
    return 0;
}

/* The policy's order: buckets (fair share: class x team), each sorted; shapes by run. */
static int load_order(struct fsim *F)
{
    struct sim *S = F->S;
    const struct sched_policy *pol = S->pol;
    size_t nq = S->nq;
    bool fair = pol->kind == KIND_FAIR;
    struct sched_sort_key *k = malloc((nq ? nq : 1) * sizeof(*k));
    int rc = -1;

    F->nclass = fair ? 3 : 1;
    F->nbt = fair ? F->nt : 1;
    F->nb = F->nclass * F->nbt;
    F->border = malloc((nq ? nq : 1) * sizeof(*F->border));
    F->bstart = calloc(F->nb + 1, sizeof(*F->bstart));
    F->bpos = calloc(F->nb + 1, sizeof(*F->bpos));
    F->sorder = malloc((nq ? nq : 1) * sizeof(*F->sorder));
    F->jteam = malloc((nq ? nq : 1) * sizeof(*F->jteam));
    if (!k || !F->border || !F->bstart || !F->bpos || !F->sorder || !F->jteam)
        goto out;
    for (size_t i = 0; i < nq; i++) {
        const struct sched_job *j = &S->q[i];
        F->jteam[i] = team_of(F, j->team_id);
        size_t b = fair ? (size_t)(2 - j->prio) * F->nt + (size_t)F->jteam[i] : 0;
        k[i].k1 = (int64_t)b;
        if (pol->kind == KIND_SJF) {
            k[i].k2 = j->true_duration_ms > 0 ? j->true_duration_ms : INT64_MAX;
            k[i].k3 = j->submit_ms;
        } else if (fair) {
            k[i].k2 = sched_job_order_key(pol, j); /* submit_ms unless an spf policy */
            k[i].k3 = j->submit_ms;
        } else {
            k[i].k2 = j->submit_ms;
            k[i].k3 = 0;
        }
        k[i].k4 = j->id;
        k[i].i = (int)i;
        F->bstart[b + 1]++;
    }
    qsort(k, nq, sizeof(*k), sched_sort_key_cmp);
    for (size_t i = 0; i < nq; i++)
        F->border[i] = k[i].i;
    for (size_t b = 1; b <= F->nb; b++)
        F->bstart[b] += F->bstart[b - 1];
    memcpy(F->bpos, F->bstart, (F->nb + 1) * sizeof(*F->bpos));

    /* shapes: sorted by (gpus, gpus per node, site), then shortest run, submit, id;
     * rank r of a job among all is its place in that run order (ties as above) */
    for (size_t i = 0; i < nq; i++) {
        const struct sched_job *j = &S->q[i];
        k[i].k1 = j->predicted_ms > 0    ? j->predicted_ms
                  : j->time_limit_ms > 0 ? j->time_limit_ms
                                         : INT64_MAX;
        k[i].k2 = j->submit_ms;
        k[i].k3 = j->id;
        k[i].k4 = 0;
        k[i].i = (int)i;
    }
    qsort(k, nq, sizeof(*k), sched_sort_key_cmp);
    F->jrank = malloc((nq ? nq : 1) * sizeof(*F->jrank));
    if (F->jrank == NULL)
        goto out;
    for (size_t r = 0; r < nq; r++)
        F->jrank[k[r].i] = (int)r;
    for (size_t i = 0; i < nq; i++) {
        const struct sched_job *j = &S->q[i];
        k[i].k1 = j->gpus;
        k[i].k2 = j->gpus_per_node;
        k[i].k3 = j->site;
        k[i].k4 = F->jrank[i];
        k[i].i = (int)i;
    }
    qsort(k, nq, sizeof(*k), sched_sort_key_cmp);
    F->nshape = 0;
    for (size_t i = 0; i < nq; i++)
        if (i == 0 || k[i].k1 != k[i - 1].k1 || k[i].k2 != k[i - 1].k2 || k[i].k3 != k[i - 1].k3)
            F->nshape++;
    F->sstart = calloc(F->nshape + 1, sizeof(*F->sstart));
    F->spos = calloc(F->nshape + 1, sizeof(*F->spos));
    F->alive = malloc((F->nshape + 1) * sizeof(*F->alive));
    if (!F->sstart || !F->spos || !F->alive)
        goto out;
    size_t s = 0;
    for (size_t i = 0; i < nq; i++) {
        if (i > 0 && (k[i].k1 != k[i - 1].k1 || k[i].k2 != k[i - 1].k2 || k[i].k3 != k[i - 1].k3))
            F->sstart[++s] = i;
        F->sorder[i] = k[i].i;
    }
    F->sstart[F->nshape] = nq;
    memcpy(F->spos, F->sstart, (F->nshape + 1) * sizeof(*F->spos));
    rc = 0;
out:
    free(k);
    return rc;
}

/* Running jobs, with node indices, into the heap; the index from S's nodes. */
static int load_state(struct fsim *F)
{
    struct sim *S = F->S;
    struct err e;
    size_t nn = S->nn;
    size_t cap_runs = S->nrun + S->nq + 1;

    F->c = (struct sched_cluster){S->nodes, nn, NULL, 0, NULL, 0};
    F->P.c = &F->c;
    F->P.pol = S->pol;
    F->P.now = S->now;
    err_init(&e);
    if (sched_prep_nodes(&F->P, &e) != RC_OK)
        return -1; /* the snapshot was checked by the first pass: only memory fails here */
    F->freem = malloc((nn ? nn : 1) * sizeof(*F->freem));
    F->resv = calloc(nn ? nn : 1, sizeof(*F->resv));
    F->resnodes = malloc((nn ? nn : 1) * sizeof(*F->resnodes));
    F->touched = malloc((nn ? nn : 1) * sizeof(*F->touched));
    F->is_touched = calloc(nn ? nn : 1, 1);
    F->by_end.h = malloc(cap_runs * sizeof(size_t));
    F->by_end.pos = malloc(cap_runs * sizeof(size_t));
    F->by_limit.h = malloc(cap_runs * sizeof(size_t));
    F->by_limit.pos = malloc(cap_runs * sizeof(size_t));
    F->by_limit.by_limit = true;
    F->aux = malloc(cap_runs * sizeof(*F->aux));
    F->done = calloc(S->nq ? S->nq : 1, 1);
    F->never = calloc(S->nq ? S->nq : 1, 1);
    for (int k = 0; k < 2; k++) {
        F->pk_node[k] = malloc((nn + 1) * sizeof(int));
        F->pk_mask[k] = malloc((nn + 1) * sizeof(uint64_t));
        F->pk_walked[k] = malloc(cap_runs * sizeof(size_t));
        if (!F->pk_node[k] || !F->pk_mask[k] || !F->pk_walked[k])
            return -1;
    }
    if (!F->freem || !F->resv || !F->resnodes || !F->touched || !F->is_touched || !F->by_end.h ||
        !F->by_end.pos || !F->by_limit.h || !F->by_limit.pos || !F->aux || !F->done || !F->never)
        return -1;
    for (size_t n = 0; n < nn; n++)
        F->freem[n] = S->nodes[n].free_mask & gpu_bits(S->nodes[n].ngpus);
    F->res_job = -1;
    for (size_t r = 0; r < S->nrun; r++) {
        const struct sched_running *rj = &S->run[r];
        const struct sched_alloc *al = S->pool + S->raoff[r];
        struct fa a[SCHED_MAX_JOB_GPUS];
        size_t na = 0;
        for (size_t k = 0; k < rj->nallocs && na < SCHED_MAX_JOB_GPUS; k++) {
            int n = sched_nid_find(S->nids, S->nn, al[k].node_id);
            if (n >= 0)
                a[na++] = (struct fa){n, al[k].gpu_mask};
        }
        int64_t end_by = (S->pol->flags & F_ORACLE) ? S->rend[r] : rj->end_by_ms;
        if (run_start(F, S->rend[r], end_by, team_of(F, rj->team_id), rj->gpus, a, na) != 0)
            return -1;
    }
    return 0;
}

static void fsim_free(struct fsim *F)
{
    sched_pass_free(&F->P);
    free(F->freem);
    free(F->run);
    free(F->pool);
    free(F->by_end.h);
    free(F->by_end.pos);
    free(F->by_limit.h);
    free(F->by_limit.pos);
    for (int k = 0; k < 2; k++) {
        free(F->pk_node[k]);
        free(F->pk_mask[k]);
        free(F->pk_walked[k]);
    }
    free(F->tid);
    free(F->used);
    free(F->denom);
    free(F->share);
    free(F->quota);
    free(F->jteam);
    free(F->done);
    free(F->never);
    free(F->border);
    free(F->bstart);
    free(F->bpos);
    free(F->sorder);
    free(F->jrank);
    free(F->sstart);
    free(F->spos);
    free(F->alive);
    free(F->resv);
    free(F->resnodes);
    free(F->aux);
    free(F->touched);
    free(F->is_touched);
}

enum rc sched_fc_simulate_fast(struct sim *S, const struct sched_forecast_opts *opts,
                               size_t max_events, bool *truncated)
{
    struct fsim F;
    enum rc rc = RC_ENOMEM;
    size_t events = 0;
    int64_t t = S->now;

    memset(&F, 0, sizeof(F));
    F.S = S;
    if (load_teams(&F) != 0 || load_order(&F) != 0 || load_state(&F) != 0)
        goto out;
    while (S->left > 0 && F.by_end.n > 0) {
        int64_t next = F.run[F.by_end.h[0]].end;
        if (next < t)
            next = t;
        if (opts->resolution_ms > 0 && next > t) { /* up to the next multiple after now */
            int64_t k = (next - S->now + opts->resolution_ms - 1) / opts->resolution_ms;
            next = k > (SCHED_TIME_UNKNOWN - 1 - S->now) / opts->resolution_ms
                       ? SCHED_TIME_UNKNOWN - 1
                       : S->now + k * opts->resolution_ms;
        }
        if (next > S->horizon_end || ++events > max_events) {
            *truncated = true;
            break;
        }
        while (F.by_end.n > 0 && F.run[F.by_end.h[0]].end <= next)
            run_end_first(&F);
        t = next;
        if (pass_at(&F, t) != 0)
            goto out;
    }
    rc = RC_OK;
out:
    fsim_free(&F);
    return rc;
}
