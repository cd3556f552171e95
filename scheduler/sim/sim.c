/*
 * sim.c - discrete-event replay of a job trace through ty_sched.
 *
 * Events are arrivals, completions and (tiresias-las only) the moments a
 * running job's attained service crosses the demotion threshold. At each
 * event time the simulator builds a snapshot (nodes, running jobs, queue),
 * calls sched_plan(), and applies the decisions: preemptions first (the job
 * returns to the queue and later resumes from its checkpoint with its
 * remaining work; no restart cost, as in the Tiresias simulator), then
 * placements. With no free GPU a pass is skipped unless the policy is
 * tiresias-las (it may preempt) or, for trainyard, a job arrived whose team
 * is under its quota (it may take GPUs back). This skips about a third of the
 * passes of a saturated Philly replay; it can change results slightly, since
 * a pass also retries earlier under-quota jobs (up to 64 tries a pass).
 *
 * Cluster model: node i has id i, switch label "sw<i / switch_size>" and rack
 * label "rack<i / (2 * switch_size)>"; 8-GPU nodes report NVLink peers as two
 * fully linked quads plus links i <-> i+4. Teams are the trace's teams, each
 * with a quota proportional to its share of the trace's GPU-time.
 * trainyard sees only time limits: the trace's, or the duration rounded up to
 * the next whole hour (users over-ask). sjf-oracle sees the true durations.
 *
 * With the predictor (struct sim_opts.predict, predictor/) a job's predicted
 * run is asked at its arrival from what finished before it; the predictor
 * learns a job's run time only at its completion event. Forecasts
 * (forecast_every) run on the same snapshot as the pass at that time, before
 * it.
 *
 * Threading: none. Clocks: only to time sched_plan() for pass_ms_* and
 * sched_forecast() for fc_ms_*.
 */
#include "sim.h"

#include "predictor.h"
#include "sched_forecast.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { J_FUTURE = 0, J_QUEUED = 1, J_RUNNING = 2, J_DONE = 3 };

struct sj {
    int state;
    int64_t submit_ms;
    int64_t remaining_ms;  /* true work left */
    int64_t limit_left_ms; /* time limit left */
    int64_t attained_gpu_ms;
    int64_t run_start_ms;
    int64_t first_start_ms;
    int64_t finish_ms;
    struct sched_alloc *allocs; /* node_id = node index */
    size_t nallocs;
    size_t run_pos;
    int64_t ran_ms;  /* run time of earlier runs (preempted) */
    int64_t pred_ms; /* predicted whole run (asked at arrival); 0 = none (the limit) */
    int64_t fc_with; /* forecast start at arrival with predictions; -1 = not forecast */
    int64_t fc_lim;  /* the same from time limits alone */
};

struct sim {
    const struct sim_config *cfg;
    const struct sim_trace *t;
    struct sj *j;
    size_t n;
    struct sched_node *nodes;
    struct sched_team *teams;
    char (*labels)[16]; /* per node: switch label, rack label */
    int64_t *team_used; /* GPUs held per team */
    size_t *running;    /* job indices */
    size_t nrun;
    struct sched_job *queue; /* the queue itself, by (submit, id): no copy per pass */
    size_t nq;
    struct sched_running *snap_run;
    int64_t free_total;
    int64_t busy_gpu_ms;
    int64_t preemptions;
    double *pass_ms;
    size_t npass, cap_pass;
    bool preemptive;
    const struct sim_opts *o;   /* never NULL (zeros when none) */
    struct pred_state *pred;    /* owned; o->predict only */
    struct sched_job *queue2;   /* forecast scratch: the queue without predictions */
    struct sched_running *run2; /* forecast scratch: running jobs without predictions */
    double *fc_ms;
    size_t nfc, cap_fc, pred_from_runs;
};

static int64_t round_up_hour(int64_t ms)
{
    const int64_t h = 3600000;
    int64_t r = (ms + h - 1) / h * h;
    return r > 0 ? r : h;
}

/* The predictor's key of job ji: its team and GPUs, its time limit as the command. */
static struct pred_key pkey(const struct sim *S, size_t ji, char *buf, size_t n)
{
    const struct sim_job *tj = &S->t->jobs[ji];
    int64_t lim = tj->time_limit_ms > 0 ? tj->time_limit_ms : round_up_hour(tj->duration_ms);
    snprintf(buf, n, "limit=%lld", (long long)lim);
    return (struct pred_key){NULL, buf, tj->team, 0, tj->gpus};
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(const double *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t i = (size_t)ceil(p * (double)n) - 1;
    if (i >= n)
        i = n - 1;
    return v[i];
}

static void stop_job(struct sim *S, size_t ji, int64_t now)
{
    struct sj *j = &S->j[ji];
    int64_t ran = now - j->run_start_ms;
    int g = S->t->jobs[ji].gpus;

    j->remaining_ms -= ran;
    j->limit_left_ms -= ran;
    j->ran_ms += ran;
    j->attained_gpu_ms += ran * g;
    S->busy_gpu_ms += ran * g;
    for (size_t a = 0; a < j->nallocs; a++) {
        S->nodes[j->allocs[a].node_id].free_mask |= j->allocs[a].gpu_mask;
        S->free_total += __builtin_popcountll(j->allocs[a].gpu_mask);
    }
    free(j->allocs);
    j->allocs = NULL;
    j->nallocs = 0;
    S->team_used[S->t->jobs[ji].team] -= g;
    /* remove from running (swap with last) */
    size_t p = j->run_pos;
    S->running[p] = S->running[--S->nrun];
    S->j[S->running[p]].run_pos = p;
}

static void queue_insert(struct sim *S, size_t ji)
{
    size_t lo = 0, hi = S->nq;
    int64_t sub = S->j[ji].submit_ms;
    const struct sj *j = &S->j[ji];

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const struct sched_job *m = &S->queue[mid];
        if (m->submit_ms < sub || (m->submit_ms == sub && m->id < (int64_t)ji))
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(S->queue + lo + 1, S->queue + lo, (S->nq - lo) * sizeof(*S->queue));
    S->queue[lo] = (struct sched_job){
        .id = (int64_t)ji,
        .team_id = S->t->jobs[ji].team,
        .prio = SCHED_PRIO_NORMAL,
        .gpus = S->t->jobs[ji].gpus,
        .submit_ms = sub,
        .time_limit_ms = j->limit_left_ms > 0 ? j->limit_left_ms : 1,
        .true_duration_ms = j->remaining_ms > 0 ? j->remaining_ms : 1,
        .attained_gpu_ms = j->attained_gpu_ms,
        /* the rest of the prediction; one that ran out counts as nearly done */
        .predicted_ms = j->pred_ms <= 0              ? 0
                        : j->pred_ms - j->ran_ms > 0 ? j->pred_ms - j->ran_ms
                                                     : 1000,
    };
    S->nq++;
    S->j[ji].state = J_QUEUED;
}

static enum rc setup(struct sim *S, struct err *e)
{
    const struct sim_config *c = S->cfg;
    const struct sim_trace *t = S->t;
    int64_t G = (int64_t)c->nodes * c->gpus_per_node;
    double total = 0;

    S->n = t->njobs;
    S->j = calloc(S->n ? S->n : 1, sizeof(*S->j));
    S->nodes = calloc((size_t)c->nodes, sizeof(*S->nodes));
    S->teams = calloc((size_t)t->nteams, sizeof(*S->teams));
    S->running = calloc(S->n ? S->n : 1, sizeof(size_t));
    S->queue = calloc(S->n ? S->n : 1, sizeof(*S->queue));
    S->snap_run = calloc(S->n ? S->n : 1, sizeof(*S->snap_run));
    S->labels = calloc(2 * (size_t)c->nodes, sizeof(*S->labels));
    S->team_used = calloc((size_t)t->nteams, sizeof(int64_t));
    if (!S->j || !S->nodes || !S->teams || !S->running || !S->queue || !S->snap_run || !S->labels ||
        !S->team_used)
        return RC_ENOMEM;
    for (int i = 0; i < c->nodes; i++) {
        struct sched_node *nd = &S->nodes[i];
        nd->id = i;
        nd->state = SCHED_NODE_READY;
        nd->ngpus = c->gpus_per_node;
        nd->free_mask = c->gpus_per_node >= 64 ? ~0ULL : (1ULL << c->gpus_per_node) - 1;
        if (c->switch_size > 0) {
            snprintf(S->labels[2 * i], sizeof(S->labels[0]), "sw%d", i / c->switch_size);
            snprintf(S->labels[2 * i + 1], sizeof(S->labels[0]), "rack%d",
                     i / (2 * c->switch_size));
            nd->switch_name = S->labels[2 * i];
            nd->rack = S->labels[2 * i + 1];
        }
        if (c->gpus_per_node == 8)
            for (int g = 0; g < 8; g++)
                nd->nvlink_peers[g] = ((0xFULL << (g & 4)) | (1ULL << (g ^ 4))) & ~(1ULL << g);
    }
    S->free_total = G;
    for (size_t i = 0; i < S->n; i++) {
        const struct sim_job *tj = &t->jobs[i];
        if (tj->gpus > G || tj->gpus < 1)
            return err_set(e, RC_EINVAL, "trace",
                           "line %ld: the job needs %d gpus, the cluster has %lld", tj->line,
                           tj->gpus, (long long)G);
        if (tj->team < 0 || tj->team >= t->nteams)
            return err_set(e, RC_EINVAL, "trace", "line %ld: bad team", tj->line);
        struct sj *j = &S->j[i];
        j->submit_ms = (int64_t)((double)tj->submit_ms / c->load);
        j->remaining_ms = tj->duration_ms;
        j->limit_left_ms =
            tj->time_limit_ms > 0 ? tj->time_limit_ms : round_up_hour(tj->duration_ms);
        if (j->remaining_ms > j->limit_left_ms)
            j->remaining_ms = j->limit_left_ms; /* killed at its limit */
        j->first_start_ms = -1;
        j->fc_with = j->fc_lim = -1;
        total += (double)tj->duration_ms * tj->gpus;
        S->teams[tj->team].quota_gpus += 0; /* filled below */
    }
    for (int64_t k = 0; k < t->nteams; k++) {
        S->teams[k].id = k;
        S->teams[k].weight = 1.0;
    }
    double *tt = calloc((size_t)t->nteams, sizeof(double));
    if (!tt)
        return RC_ENOMEM;
    for (size_t i = 0; i < S->n; i++)
        tt[t->jobs[i].team] += (double)t->jobs[i].duration_ms * t->jobs[i].gpus;
    for (int64_t k = 0; k < t->nteams; k++)
        S->teams[k].quota_gpus = total > 0 ? (int)floor((double)G * tt[k] / total) : 0;
    free(tt);
    return RC_OK;
}

static void teardown(struct sim *S)
{
    if (S->j)
        for (size_t i = 0; i < S->n; i++)
            free(S->j[i].allocs);
    free(S->j);
    free(S->nodes);
    free(S->teams);
    free(S->labels);
    free(S->team_used);
    free(S->running);
    free(S->queue);
    free(S->snap_run);
    free(S->pass_ms);
    free(S->queue2);
    free(S->run2);
    free(S->fc_ms);
    pred_free(S->pred);
}

static enum rc apply(struct sim *S, const struct sched_decisions *d, int64_t now, struct err *e)
{
    for (size_t p = 0; p < d->npreemptions; p++) {
        size_t ji = (size_t)d->preemptions[p].job_id;
        if (NEVER(ji >= S->n || S->j[ji].state != J_RUNNING))
            return err_set(e, RC_EINTERNAL, NULL, "preemption of a job that is not running");
        stop_job(S, ji, now);
        queue_insert(S, ji);
        S->preemptions++;
    }
    for (size_t p = 0; p < d->nplacements; p++) {
        const struct sched_placement *pl = &d->placements[p];
        size_t ji = (size_t)pl->job_id;
        if (NEVER(ji >= S->n || S->j[ji].state != J_QUEUED))
            return err_set(e, RC_EINTERNAL, NULL, "placement of a job that is not queued");
        struct sj *j = &S->j[ji];
        j->allocs = malloc(pl->nallocs * sizeof(*j->allocs));
        if (!j->allocs)
            return RC_ENOMEM;
        memcpy(j->allocs, pl->allocs, pl->nallocs * sizeof(*j->allocs));
        j->nallocs = pl->nallocs;
        for (size_t a = 0; a < pl->nallocs; a++) {
            struct sched_node *nd = &S->nodes[pl->allocs[a].node_id];
            if (NEVER((nd->free_mask & pl->allocs[a].gpu_mask) != pl->allocs[a].gpu_mask))
                return err_set(e, RC_EINTERNAL, NULL, "placement on a busy gpu");
            nd->free_mask &= ~pl->allocs[a].gpu_mask;
            S->free_total -= __builtin_popcountll(pl->allocs[a].gpu_mask);
        }
        j->state = J_RUNNING;
        S->team_used[S->t->jobs[ji].team] += S->t->jobs[ji].gpus;
        j->run_start_ms = now;
        if (j->first_start_ms < 0)
            j->first_start_ms = now;
        j->run_pos = S->nrun;
        S->running[S->nrun++] = ji;
    }
    /* drop the placed jobs from the queue, keeping its order */
    if (d->nplacements == 0)
        return RC_OK;
    size_t k = 0;
    for (size_t i = 0; i < S->nq; i++)
        if (S->j[S->queue[i].id].state == J_QUEUED)
            S->queue[k++] = S->queue[i];
    S->nq = k;
    return RC_OK;
}

/* Fill S->snap_run for a pass (or forecast) at now. */
static void snapshot(struct sim *S, int64_t now)
{
    const struct sim_trace *t = S->t;

    for (size_t r = 0; r < S->nrun; r++) {
        size_t ji = S->running[r];
        const struct sj *j = &S->j[ji];
        int g = t->jobs[ji].gpus;
        S->snap_run[r] = (struct sched_running){
            .job_id = (int64_t)ji,
            .team_id = t->jobs[ji].team,
            .prio = SCHED_PRIO_NORMAL,
            .gpus = g,
            .submit_ms = j->submit_ms,
            .start_ms = j->run_start_ms,
            .end_by_ms = j->run_start_ms + j->limit_left_ms,
            .true_end_ms = j->run_start_ms + j->remaining_ms,
            .allocs = j->allocs,
            .nallocs = j->nallocs,
            .preemptible = true,
            .attained_gpu_ms = j->attained_gpu_ms + (now - j->run_start_ms) * g,
            /* past its prediction nothing better is known than its limit */
            .expected_end_ms = j->pred_ms > 0 && j->run_start_ms + (j->pred_ms - j->ran_ms) > now
                                   ? j->run_start_ms + (j->pred_ms - j->ran_ms)
                                   : 0,
        };
    }
}

static enum rc pass(struct sim *S, struct sched_decisions *d, int64_t now, struct err *e)
{
    const struct sim_trace *t = S->t;

    snapshot(S, now);
    struct sched_cluster c = {S->nodes,          (size_t)S->cfg->nodes, S->teams,
                              (size_t)t->nteams, S->snap_run,           S->nrun};
    struct sched_queue q = {S->queue, S->nq, 0, true}; /* kept by (submit, id) */
    double t0 = now_s();
    enum rc rc = sched_plan(S->cfg->policy, &c, &q, now, d);
    double ms = (now_s() - t0) * 1000.0;
    if (rc != RC_OK)
        return err_set(e, RC_EINTERNAL, NULL, "the scheduler failed: %s", rc_str(rc));
    if (S->npass == S->cap_pass) {
        size_t nc = S->cap_pass ? S->cap_pass * 2 : 1024;
        double *np = realloc(S->pass_ms, nc * sizeof(double));
        if (!np)
            return RC_ENOMEM;
        S->pass_ms = np;
        S->cap_pass = nc;
    }
    S->pass_ms[S->npass++] = ms;
    if (S->cfg->check && sched_check(&c, &q, now, d, e) != RC_OK)
        return RC_EINTERNAL;
    return apply(S, d, now, e);
}

static int64_t forecast_of(const struct sched_forecast *f, int64_t id)
{
    for (size_t i = 0; i < f->njobs; i++)
        if (f->jobs[i].job_id == id)
            return f->jobs[i].start_ms;
    return SCHED_TIME_UNKNOWN;
}

/* Forecast job ji's start now, with predictions and from time limits alone. */
static enum rc forecast(struct sim *S, size_t ji, int64_t now, struct sched_forecast *f)
{
    snapshot(S, now);
    struct sched_cluster c = {
        S->nodes, (size_t)S->cfg->nodes, S->teams, (size_t)S->t->nteams, S->snap_run, S->nrun};
    struct sched_queue q = {S->queue, S->nq, 0, true};
    for (int k = 0; k < 2; k++) {
        if (k == 1) { /* time limits alone, as Slurm's squeue --start */
            for (size_t i = 0; i < S->nq; i++) {
                S->queue2[i] = S->queue[i];
                S->queue2[i].predicted_ms = 0;
            }
            for (size_t r = 0; r < S->nrun; r++) {
                S->run2[r] = S->snap_run[r];
                S->run2[r].expected_end_ms = 0;
            }
            c.running = S->run2;
            q.jobs = S->queue2;
        }
        double t0 = now_s();
        struct sched_forecast_opts fo = {0};
        fo.exact = S->o->forecast_exact;
        enum rc rc = sched_forecast(S->cfg->policy, &c, &q, now, &fo, f);
        double ms = (now_s() - t0) * 1000.0;
        if (rc != RC_OK)
            return rc;
        if (S->nfc == S->cap_fc) {
            size_t nc = S->cap_fc ? S->cap_fc * 2 : 256;
            double *np = realloc(S->fc_ms, nc * sizeof(double));
            if (!np)
                return RC_ENOMEM;
            S->fc_ms = np;
            S->cap_fc = nc;
        }
        S->fc_ms[S->nfc++] = ms;
        int64_t st = forecast_of(f, (int64_t)ji);
        if (k == 0)
            S->j[ji].fc_with = st;
        else
            S->j[ji].fc_lim = st;
    }
    return RC_OK;
}

/* The next event time after now, or INT64_MAX. */
static int64_t next_event(const struct sim *S, size_t next, int64_t now)
{
    int64_t tn = next < S->n ? S->j[next].submit_ms : INT64_MAX;

    for (size_t r = 0; r < S->nrun; r++) {
        const struct sj *j = &S->j[S->running[r]];
        int64_t end = j->run_start_ms + j->remaining_ms;
        if (end < tn)
            tn = end;
        if (S->preemptive && S->nq > 0) {
            int g = S->t->jobs[S->running[r]].gpus;
            int64_t left = SCHED_LAS_THRESHOLD_GPU_MS - j->attained_gpu_ms;
            if (left > 0) {
                int64_t cross = j->run_start_ms + (left + g - 1) / g;
                if (cross > now && cross < tn)
                    tn = cross;
            }
        }
    }
    return tn;
}

/* Forecast accuracy over the forecast jobs that waited at least min_wait (v: scratch). */
static void fc_results(struct sim *S, struct sim_result *out, double *v)
{
    int64_t minw = S->o->min_wait_ms > 0 ? S->o->min_wait_ms : 600000;
    size_t m = 0;
    double *w = v, *e1 = v + S->n, *e2 = v + 2 * S->n, *r1 = v + 3 * S->n, *r2 = v + 4 * S->n;

    for (size_t i = 0; i < S->n; i++) {
        const struct sj *j = &S->j[i];
        if (j->fc_with < 0)
            continue;
        out->fc_sampled++;
        int64_t wait = j->first_start_ms - j->submit_ms;
        if (wait < minw)
            continue;
        out->fc_counted++;
        if (j->fc_with == SCHED_TIME_UNKNOWN || j->fc_lim == SCHED_TIME_UNKNOWN) {
            out->fc_unknown++;
            continue;
        }
        w[m] = (double)wait / 1000.0;
        e1[m] = fabs((double)(j->fc_with - j->first_start_ms)) / 1000.0;
        e2[m] = fabs((double)(j->fc_lim - j->first_start_ms)) / 1000.0;
        r1[m] = e1[m] / w[m];
        r2[m] = e2[m] / w[m];
        m++;
    }
    double *arr[5] = {w, e1, e2, r1, r2};
    for (int k = 0; k < 5 && m > 0; k++)
        qsort(arr[k], m, sizeof(double), cmp_dbl);
    out->fc_med_wait_s = pct(w, m, 0.5);
    out->fc_med_err_s = pct(e1, m, 0.5);
    out->fc_p90_err_s = pct(e1, m, 0.9);
    out->lim_med_err_s = pct(e2, m, 0.5);
    out->lim_p90_err_s = pct(e2, m, 0.9);
    out->fc_med_ratio = pct(r1, m, 0.5);
    out->lim_med_ratio = pct(r2, m, 0.5);
    if (S->nfc)
        qsort(S->fc_ms, S->nfc, sizeof(double), cmp_dbl);
    out->fc_ms_p50 = pct(S->fc_ms, S->nfc, 0.5);
    out->fc_ms_max = S->nfc ? S->fc_ms[S->nfc - 1] : 0;
}

static void results(struct sim *S, struct sim_result *out, double *v)
{
    const struct sim_config *c = S->cfg;
    double sum = 0, qsum = 0, first = 0, last = 0, work = 0;

    for (size_t i = 0; i < S->n; i++) {
        const struct sj *j = &S->j[i];
        v[i] = (double)(j->finish_ms - j->submit_ms) / 1000.0;
        sum += v[i];
        qsum += (double)(j->first_start_ms - j->submit_ms) / 1000.0;
        if (i == 0 || (double)j->submit_ms < first)
            first = (double)j->submit_ms;
        if ((double)j->finish_ms > last)
            last = (double)j->finish_ms;
        work += (double)S->t->jobs[i].duration_ms * S->t->jobs[i].gpus;
    }
    qsort(v, S->n, sizeof(double), cmp_dbl);
    double G = (double)c->nodes * c->gpus_per_node;
    double span = (double)(S->j[S->n - 1].submit_ms - S->j[0].submit_ms);
    out->jobs = S->n;
    out->avg_jct_s = sum / (double)S->n;
    out->p50_jct_s = pct(v, S->n, 0.50);
    out->p99_jct_s = pct(v, S->n, 0.99);
    out->avg_queue_s = qsum / (double)S->n;
    out->makespan_s = (last - first) / 1000.0;
    out->gpu_utilization = last > first ? (double)S->busy_gpu_ms / (G * (last - first)) : 0;
    out->offered_load = span > 0 ? work / (G * span) : 0;
    out->preemptions = S->preemptions;
    out->passes = (int64_t)S->npass;
    qsort(S->pass_ms, S->npass, sizeof(double), cmp_dbl);
    out->pass_ms_p50 = pct(S->pass_ms, S->npass, 0.50);
    out->pass_ms_p99 = pct(S->pass_ms, S->npass, 0.99);
    out->pred_from_runs = S->pred_from_runs;
    fc_results(S, out, v);
}

enum rc sim_run(const struct sim_config *cfg, const struct sim_trace *t, struct sim_result *out,
                struct err *e)
{
    return sim_run_opts(cfg, NULL, t, out, e);
}

enum rc sim_run_opts(const struct sim_config *cfg, const struct sim_opts *o,
                     const struct sim_trace *t, struct sim_result *out, struct err *e)
{
    static const struct sim_opts none;
    struct sim S;
    struct sched_decisions d;
    struct sched_forecast fc;
    enum rc rc;
    double *v = NULL;
    double w0 = now_s();
    char kb[48];

    memset(&S, 0, sizeof(S));
    memset(out, 0, sizeof(*out));
    sched_decisions_init(&d);
    sched_forecast_init(&fc);
    S.o = o ? o : &none;
    if (!cfg || !t || !cfg->policy || cfg->nodes < 1 || cfg->nodes > 100000 ||
        cfg->gpus_per_node < 1 || cfg->gpus_per_node > SCHED_MAX_GPUS_PER_NODE ||
        !(cfg->load > 0) || cfg->load > 1e6 || t->njobs == 0 || t->nteams < 1) {
        rc = err_set(e, RC_EINVAL, NULL, "bad simulator configuration");
        goto out;
    }
    S.cfg = cfg;
    S.t = t;
    S.preemptive = strcmp(cfg->policy->name, "tiresias-las") == 0;
    bool quota = strncmp(cfg->policy->name, "trainyard", 9) == 0; /* and trainyard-spf, -qspf */
    if ((rc = setup(&S, e)) != RC_OK)
        goto out;
    if (S.o->predict) {
        struct pred_opts po = {S.o->quantile, 0, 0, S.o->pred_team ? 0 : 1u << PRED_TEAM};
        if ((rc = pred_new(&po, &S.pred)) != RC_OK) {
            err_set(e, rc, NULL, "bad predictor options");
            goto out;
        }
    }
    if (S.o->forecast_every) {
        S.queue2 = calloc(S.n ? S.n : 1, sizeof(*S.queue2));
        S.run2 = calloc(S.n ? S.n : 1, sizeof(*S.run2));
        if (!S.queue2 || !S.run2) {
            rc = RC_ENOMEM;
            goto out;
        }
    }
    size_t next = 0, ndone = 0, arrivals = 0;
    int64_t now = 0;
    while (ndone < S.n) {
        int64_t tn = next_event(&S, next, now);
        if (tn == INT64_MAX) {
            rc =
                err_set(e, RC_EINTERNAL, NULL, "the simulation stalled with %zu jobs queued", S.nq);
            goto out;
        }
        if (tn > now)
            now = tn;
        bool claim = false; /* an arrival whose team is under quota */
        for (size_t r = S.nrun; r-- > 0;) {
            size_t ji = S.running[r];
            struct sj *j = &S.j[ji];
            int64_t end = j->run_start_ms + j->remaining_ms;
            if (end <= now) {
                stop_job(&S, ji, end);
                j->state = J_DONE;
                j->finish_ms = end;
                ndone++;
                if (S.pred) { /* learnt only now that it has finished */
                    struct pred_key k = pkey(&S, ji, kb, sizeof(kb));
                    if ((rc = pred_observe(S.pred, &k, j->ran_ms > 0 ? j->ran_ms : 1)) != RC_OK)
                        goto out;
                }
            }
        }
        size_t fc_job = SIZE_MAX;
        while (next < S.n && S.j[next].submit_ms <= now) {
            if (S.pred) {
                struct pred_key k = pkey(&S, next, kb, sizeof(kb));
                enum pred_source src;
                int64_t p = pred_predict(S.pred, &k, 0, &src);
                S.j[next].pred_ms = p;
                if (p > 0)
                    S.pred_from_runs++;
            }
            if (S.o->forecast_every && ++arrivals % S.o->forecast_every == 0)
                fc_job = next;
            queue_insert(&S, next++);
            int64_t tm = S.t->jobs[next - 1].team;
            if (S.team_used[tm] + S.t->jobs[next - 1].gpus <= S.teams[tm].quota_gpus)
                claim = true;
        }
        if (S.nq == 0)
            continue;
        if (fc_job != SIZE_MAX && (rc = forecast(&S, fc_job, now, &fc)) != RC_OK) {
            err_set(e, rc, NULL, "the forecast failed: %s", rc_str(rc));
            goto out;
        }
        /* Nothing can change without a free GPU, unless LAS may preempt or a
         * new job's team is under quota and may take GPUs back. */
        if (S.free_total == 0 && !S.preemptive && !(quota && claim))
            continue;
        if ((rc = pass(&S, &d, now, e)) != RC_OK)
            goto out;
    }
    v = malloc(5 * S.n * sizeof(double));
    if (!v) {
        rc = RC_ENOMEM;
        goto out;
    }
    results(&S, out, v);
    for (size_t i = 0; S.o->jobs_out && i < S.n; i++)
        S.o->jobs_out[i] =
            (struct sim_job_out){S.j[i].pred_ms, S.j[i].first_start_ms, S.j[i].finish_ms};
    out->wall_s = now_s() - w0;
    rc = RC_OK;
out:
    free(v);
    sched_decisions_cleanup(&d);
    sched_forecast_cleanup(&fc);
    teardown(&S);
    return rc;
}
