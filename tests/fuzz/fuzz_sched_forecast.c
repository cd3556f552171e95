/*
 * fuzz_sched_forecast.c - random snapshots (the decoder of fuzz_sched_plan.c,
 * plus predicted run times, expected ends and sites, some of them invalid)
 * into sched_forecast() for two of the policies. A forecast must be RC_OK or
 * RC_EINVAL, and when RC_OK: one entry per valid queued job, positions
 * 0..n-1, starts in order, the jobs that start now exactly those the first
 * sched_plan() places, never-starting reasons without a start, and details
 * only where the reason has them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched_forecast.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct rd {
    const uint8_t *p;
    size_t n;
};

static uint64_t take(struct rd *r, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) {
        v = (v << 8) | (r->n ? *r->p : 0);
        if (r->n) {
            r->p++;
            r->n--;
        }
    }
    return v;
}

#define MAXN 32
#define MAXR 32
#define MAXJ 64

static void check(const struct sched_forecast *f, const struct sched_queue *q,
                  const struct sched_decisions *d, int64_t now)
{
    size_t nvalid = 0, nnone = 0;
    for (size_t i = 0; i < q->njobs; i++) {
        const struct sched_job *j = &q->jobs[i];
        if (j->gpus >= 1 && j->gpus <= SCHED_MAX_JOB_GPUS && j->gpus_per_node >= 0 &&
            j->gpus_per_node <= SCHED_MAX_GPUS_PER_NODE &&
            (j->gpus_per_node == 0 || j->gpus % j->gpus_per_node == 0) && j->time_limit_ms >= 0 &&
            j->true_duration_ms >= 0 && j->predicted_ms >= 0 && j->site >= 0 &&
            j->prio >= SCHED_PRIO_LOW && j->prio <= SCHED_PRIO_HIGH)
            nvalid++;
    }
    if (f->njobs != nvalid)
        abort();
    for (size_t i = 0; i < f->njobs; i++) {
        const struct sched_forecast_job *fj = &f->jobs[i];
        const struct sched_job *j = NULL;
        for (size_t k = 0; k < q->njobs; k++)
            if (q->jobs[k].id == fj->job_id)
                j = &q->jobs[k];
        if (j == NULL || fj->position != i || fj->need_gpus != j->gpus || fj->free_gpus < 0)
            abort();
        if (i > 0 && f->jobs[i - 1].start_ms > fj->start_ms)
            abort();
        if (fj->start_ms != SCHED_TIME_UNKNOWN && fj->start_ms < now)
            abort();
        if ((fj->reason == SCHED_WAIT_NONE) != (fj->start_ms == now && fj->reason == 0))
            abort();
        if ((fj->reason == SCHED_WAIT_SITE_TOO_SMALL || fj->reason == SCHED_WAIT_DRAINING) &&
            fj->start_ms != SCHED_TIME_UNKNOWN)
            abort();
        if (fj->other_job_id != 0 && fj->reason != SCHED_WAIT_PRIORITY &&
            fj->reason != SCHED_WAIT_RESERVED)
            abort();
        if (fj->other_job_id == fj->job_id && fj->other_job_id != 0)
            abort();
        if ((unsigned)fj->reason > SCHED_WAIT_DRAINING)
            abort();
        if (fj->reason == SCHED_WAIT_NONE) {
            bool placed = false;
            for (size_t p = 0; p < d->nplacements; p++)
                placed |= d->placements[p].job_id == fj->job_id;
            if (!placed)
                abort();
            nnone++;
        }
    }
    if (nnone != d->nplacements)
        abort();
}

static const char *labels[4] = {"s0", "s1", "r0", "r1"};

/* 1 to MAXN nodes, some with duplicate ids, labels, NVLink peers or not ready. */
static size_t decode_nodes(struct rd *r, struct sched_node *nodes)
{
    size_t nn = 1 + take(r, 1) % MAXN;
    for (size_t i = 0; i < nn; i++) {
        struct sched_node *n = &nodes[i];
        uint8_t b = (uint8_t)take(r, 1);
        n->id = (b & 0x80) ? (int64_t)(b & 7) : (int64_t)i + 100;
        n->ngpus = (int)(take(r, 1) % 65);
        n->state = (enum sched_node_state)(take(r, 1) % 5 == 0 ? 1 + (b & 1) : 0);
        n->site = (int64_t)(b & 3) == 3 ? 0 : (int64_t)(b & 3);
        uint64_t all = n->ngpus >= 64 ? ~0ULL : (1ULL << n->ngpus) - 1;
        n->free_mask = all;
        n->switch_name = (b & 0x10) ? labels[b & 1] : NULL;
        n->rack = (b & 0x20) ? labels[2 + ((b >> 1) & 1)] : NULL;
        if (b & 0x40)
            for (int g = 0; g < n->ngpus && g < 8; g++)
                n->nvlink_peers[g] = take(r, 1) & all & ~(1ULL << g);
    }
    return nn;
}

/* 0 to 4 teams with small quotas and weights. */
static size_t decode_teams(struct rd *r, struct sched_team *teams)
{
    size_t nt = take(r, 1) % 5;
    for (size_t t = 0; t < nt; t++)
        teams[t] =
            (struct sched_team){(int64_t)t, (int)(take(r, 1) % 64), (double)(take(r, 1) % 4)};
    return nt;
}

/* Running jobs on the nodes' free GPUs, on one node or two; takes their GPUs. */
static size_t decode_running(struct rd *r, struct sched_node *nodes, size_t nn,
                             struct sched_running *run, struct sched_alloc (*ra)[2])
{
    size_t nr = 0, want = take(r, 1) % MAXR;
    for (size_t k = 0; k < want; k++) {
        size_t ni = take(r, 1) % nn;
        uint64_t m = nodes[ni].free_mask & take(r, 8);
        if (m == 0)
            continue;
        struct sched_running *rj = &run[nr];
        ra[nr][0] = (struct sched_alloc){nodes[ni].id, m};
        nodes[ni].free_mask &= ~m;
        rj->nallocs = 1;
        rj->gpus = __builtin_popcountll(m);
        size_t n2 = take(r, 1) % nn;
        uint64_t m2 = nodes[n2].free_mask & take(r, 1);
        if (n2 != ni && m2 && nodes[n2].id != nodes[ni].id) {
            ra[nr][1] = (struct sched_alloc){nodes[n2].id, m2};
            nodes[n2].free_mask &= ~m2;
            rj->nallocs = 2;
            rj->gpus += __builtin_popcountll(m2);
        }
        rj->job_id = 1000 + (int64_t)k;
        rj->team_id = (int64_t)(take(r, 1) % 6);
        rj->prio = (enum sched_prio)(take(r, 1) % 3);
        rj->start_ms = (int64_t)take(r, 1);
        rj->submit_ms = rj->start_ms;
        uint64_t lim = take(r, 2);
        rj->end_by_ms = lim == 0 ? SCHED_TIME_UNKNOWN : (int64_t)lim;
        rj->true_end_ms = rj->end_by_ms;
        rj->allocs = ra[nr];
        rj->preemptible = take(r, 1) & 1;
        rj->attained_gpu_ms = (int64_t)take(r, 1) * 1000000;
        rj->expected_end_ms = (int64_t)take(r, 2) - 64;
        nr++;
    }
    return nr;
}

/* Up to MAXJ queued jobs, some invalid; duplicate ids are renumbered. */
static size_t decode_jobs(struct rd *r, struct sched_job *jobs)
{
    size_t nj = take(r, 1) % MAXJ;
    for (size_t i = 0; i < nj; i++) {
        struct sched_job *j = &jobs[i];
        j->id = (int64_t)(take(r, 1) % 128);
        j->team_id = (int64_t)(take(r, 1) % 6);
        j->prio = (enum sched_prio)(take(r, 1) % 4);
        j->gpus = (int)take(r, 2) % 1100 - 2;
        j->gpus_per_node = (int)(take(r, 1) % 70) - 1;
        j->submit_ms = (int64_t)take(r, 1);
        j->time_limit_ms = (int64_t)take(r, 2);
        j->true_duration_ms = (int64_t)take(r, 2);
        j->attained_gpu_ms = (int64_t)take(r, 1) * 1000000;
        j->predicted_ms = (int64_t)take(r, 2) - 16;
        j->site = (int64_t)(take(r, 1) % 4) - (j->id == 127);
    }
    /* duplicate queued ids make checking ambiguous: keep the first */
    for (size_t i = 0; i < nj; i++)
        for (size_t k = 0; k < i; k++)
            if (jobs[k].id == jobs[i].id)
                jobs[i].id = 200 + (int64_t)i;
    return nj;
}

/* Whether the jobs are in submit order (submit time, then id). */
static bool in_submit_order(const struct sched_job *jobs, size_t nj)
{
    bool sorted = true;
    for (size_t i = 1; i < nj; i++)
        if (jobs[i - 1].submit_ms > jobs[i].submit_ms ||
            (jobs[i - 1].submit_ms == jobs[i].submit_ms && jobs[i - 1].id > jobs[i].id))
            sorted = false;
    return sorted;
}

/* Forecasts under two of the six policies (all six across the corpus: a
 * forecast is many passes), each checked against that policy's first pass. */
static void forecast_and_check(struct rd *r, const struct sched_cluster *c,
                               const struct sched_queue *q, const struct sched_forecast_opts *o)
{
    static const char *pols[6] = {"fifo",         "sjf-oracle",    "trainyard",
                                  "tiresias-las", "trainyard-spf", "trainyard-qspf"};
    struct sched_forecast f;
    struct sched_decisions d;
    struct err e;

    sched_forecast_init(&f);
    sched_decisions_init(&d);
    int p0 = (int)(take(r, 1) % 6), p1 = (p0 + 1 + (int)(take(r, 1) % 5)) % 6;
    for (int k = 0; k < 2; k++) {
        const struct sched_policy *pol = sched_policy_find(pols[k ? p1 : p0]);
        enum rc rc = sched_forecast(pol, c, q, 100, o, &f);
        if (rc == RC_EINVAL) {
            if (f.njobs != 0 || f.jobs != NULL)
                abort();
            continue;
        }
        if (rc != RC_OK)
            abort();
        if (sched_plan(pol, c, q, 100, &d) != RC_OK)
            abort();
        err_init(&e);
        check(&f, q, &d, 100);
    }
    sched_forecast_cleanup(&f);
    sched_decisions_cleanup(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sched_node nodes[MAXN];
    struct sched_team teams[4];
    struct sched_running run[MAXR];
    struct sched_alloc ra[MAXR][2];
    struct sched_job jobs[MAXJ];
    struct rd r = {data, size};

    memset(nodes, 0, sizeof(nodes));
    memset(run, 0, sizeof(run));
    memset(jobs, 0, sizeof(jobs));
    size_t nn = decode_nodes(&r, nodes);
    size_t nt = decode_teams(&r, teams);
    size_t nr = decode_running(&r, nodes, nn, run, ra);
    size_t nj = decode_jobs(&r, jobs);
    struct sched_cluster c = {nodes, nn, teams, nt, run, nr};
    /* fifo's fast path for a queue in submit order, when the input is one */
    bool sorted = in_submit_order(jobs, nj);
    struct sched_queue q = {jobs, nj, (int)(take(&r, 1) % 8), sorted && (take(&r, 1) & 1)};
    /* a bounded simulation keeps the runs fast; the default bound is 4 * (queued + running) */
    struct sched_forecast_opts o = {(int64_t)take(&r, 2) * 64, 1 + take(&r, 1) % 12,
                                    (int64_t)take(&r, 1), (int64_t)(take(&r, 1) % 4) * 50,
                                    (take(&r, 1) & 1) != 0};
    forecast_and_check(&r, &c, &q, &o);
    return 0;
}
