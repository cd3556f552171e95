/*
 * bench_sched.c - time one sched_plan() pass: 10,000 queued jobs with the
 * Philly GPU-size mix on 1,000 nodes x 8 GPUs that are half busy (also with
 * the Philly size mix), 11 teams with quotas, switch and rack labels and
 * NVLink quads. Prints median and p99 over the repetitions, per policy.
 * Then the queue forecast (sched_forecast.h) over the same snapshot,
 * with every queued job's prediction at half its limit: the event simulation
 * (the default) and the exact one (a sched_plan() per simulated end) side by
 * side, with how far their starts lie apart.
 *
 * bench_sched [--nodes N] [--jobs J] [--reps R] [--seed S] [--forecast-reps F]
 *             [--exact-reps E]   (E = 0: leave out the exact rows; they take minutes)
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched.h"
#include "sched_forecast.h"

/* Philly jobs by GPU count (pollux-philly.csv, ../shared/traces/README.md) */
static const int mix_gpus[] = {1, 2, 4, 8, 12, 16, 24, 32, 64, 128};
static const int mix_count[] = {76627, 1818, 1870, 1643, 7, 199, 7, 67, 6, 3};

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int mix(uint64_t *s)
{
    int total = 0;
    for (size_t i = 0; i < sizeof(mix_count) / sizeof(int); i++)
        total += mix_count[i];
    int x = (int)(rnd(s) % (uint64_t)total);
    for (size_t i = 0; i < sizeof(mix_count) / sizeof(int); i++) {
        if (x < mix_count[i])
            return mix_gpus[i];
        x -= mix_count[i];
    }
    return 1;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long arg_min(const char *s, long min)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > 10000000) {
        fprintf(stderr, "bench_sched: bad number \"%s\"\n", s);
        exit(2);
    }
    return v;
}

static long arg(const char *s)
{
    return arg_min(s, 1);
}

/* Time reps passes of one policy and print its row; 0 ok. */
static int bench_policy(const char *name, const struct sched_cluster *c,
                        const struct sched_queue *q, double *t, long reps, long busy)
{
    struct sched_decisions d;
    struct err e;

    sched_decisions_init(&d);
    for (long r = 0; r < reps; r++) {
        double t0 = now_ms();
        enum rc rc = sched_plan(sched_policy_find(name), c, q, 3600000, &d);
        t[r] = now_ms() - t0;
        if (rc != RC_OK) {
            fprintf(stderr, "bench_sched: plan failed: %s\n", rc_str(rc));
            sched_decisions_cleanup(&d);
            return -1;
        }
    }
    if (sched_check(c, q, 3600000, &d, &e) != RC_OK) {
        fprintf(stderr, "bench_sched: check failed: %s\n", e.message);
        sched_decisions_cleanup(&d);
        return -1;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_dbl);
    size_t i99 = (size_t)((double)reps * 0.99);
    if (i99 >= (size_t)reps)
        i99 = (size_t)reps - 1;
    printf("| %s | %zu x %d | %ld | %zu | %zu | %zu | %s | %.2f | %.2f |\n", name, c->nnodes,
           c->nodes[0].ngpus, busy, q->njobs, d.nplacements, d.npreemptions,
           d.reservation.valid ? "yes" : "no", t[reps / 2], t[i99]);
    sched_decisions_cleanup(&d);
    return 0;
}

static int cmp_fjob_id(const void *a, const void *b)
{
    const struct sched_forecast_job *x = a, *y = b;
    return (x->job_id > y->job_id) - (x->job_id < y->job_id);
}

/* How far apart two forecasts' starts lie: median and p90 over jobs of |a - b|
 * in minutes, and the share of jobs with the same start. Sorts both by id. */
static void compare_starts(struct sched_forecast *a, struct sched_forecast *b, double *t)
{
    size_t n = 0, same = 0;
    qsort(a->jobs, a->njobs, sizeof(*a->jobs), cmp_fjob_id);
    qsort(b->jobs, b->njobs, sizeof(*b->jobs), cmp_fjob_id);
    for (size_t i = 0; i < a->njobs && i < b->njobs; i++) {
        int64_t x = a->jobs[i].start_ms, y = b->jobs[i].start_ms;
        if (x == SCHED_TIME_UNKNOWN || y == SCHED_TIME_UNKNOWN) {
            same += x == y;
            continue;
        }
        t[n++] = (double)(x > y ? x - y : y - x) / 60000.0;
        same += x == y;
    }
    qsort(t, n, sizeof(double), cmp_dbl);
    printf(" %.1f | %.1f | %.3f |\n", n ? t[n / 2] : 0.0, n ? t[(n * 9) / 10] : 0.0,
           a->njobs ? (double)same / (double)a->njobs : 1.0);
}

/* Time reps forecasts of one policy and print its row (without ending it); f
 * keeps the last forecast. 0 ok. */
static int bench_forecast(const char *name, const struct sched_cluster *c,
                          const struct sched_queue *q, double *t, long reps, int64_t res_ms,
                          bool exact, struct sched_forecast *f)
{
    struct sched_forecast_opts o = {0, 0, 0, res_ms, exact};
    size_t started = 0, never = 0;

    for (long r = 0; r < reps; r++) {
        double t0 = now_ms();
        enum rc rc = sched_forecast(sched_policy_find(name), c, q, 3600000, &o, f);
        t[r] = now_ms() - t0;
        if (rc != RC_OK) {
            fprintf(stderr, "bench_sched: forecast failed: %s\n", rc_str(rc));
            return -1;
        }
    }
    for (size_t i = 0; i < f->njobs; i++) {
        if (f->jobs[i].reason == SCHED_WAIT_NONE)
            started++;
        if (f->jobs[i].start_ms == SCHED_TIME_UNKNOWN)
            never++;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_dbl);
    printf("| %s | %s | %zu x %d | %zu | %s | %zu | %zu | %s | %.1f | %.1f |", name,
           exact ? "exact (a pass per end)" : "events", c->nnodes, c->nodes[0].ngpus, q->njobs,
           res_ms ? "60 s" : "none", started, never, f->truncated ? "yes" : "no", t[reps / 2],
           t[reps - 1]);
    return 0;
}

struct bench_opts {
    long nodes, jobs, reps, seed, forecast_reps, exact_reps;
};

/* The options as the usage line gives them; unknown ones are ignored. */
static struct bench_opts parse_opts(int argc, char **argv)
{
    struct bench_opts o = {1000, 10000, 101, 1, 5, 1};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--nodes") == 0)
            o.nodes = arg(argv[i + 1]);
        else if (strcmp(argv[i], "--jobs") == 0)
            o.jobs = arg(argv[i + 1]);
        else if (strcmp(argv[i], "--reps") == 0)
            o.reps = arg(argv[i + 1]);
        else if (strcmp(argv[i], "--seed") == 0)
            o.seed = arg(argv[i + 1]);
        else if (strcmp(argv[i], "--forecast-reps") == 0)
            o.forecast_reps = arg(argv[i + 1]);
        else if (strcmp(argv[i], "--exact-reps") == 0)
            o.exact_reps = arg_min(argv[i + 1], 0);
    }
    return o;
}

#define GPUS_PER_NODE 8
#define NTEAMS 11

/* The synthetic snapshot: its arrays, and how much of each is used. */
struct snapshot {
    struct sched_node *nodes;
    struct sched_running *run;
    struct sched_alloc *ra;
    struct sched_job *jobs;
    struct sched_team teams[NTEAMS];
    char (*labels)[32];
    long nn, nj, nr, busy;
};

static void snapshot_free(struct snapshot *sn)
{
    free(sn->nodes);
    free(sn->run);
    free(sn->ra);
    free(sn->jobs);
    free(sn->labels);
}

/* nn ready nodes of 8 free GPUs, switches of 32 nodes, racks of 64, NVLink quads. */
static void make_nodes(struct snapshot *sn)
{
    for (long i = 0; i < sn->nn; i++) {
        struct sched_node *n = &sn->nodes[i];
        n->id = i;
        n->state = SCHED_NODE_READY;
        n->ngpus = GPUS_PER_NODE;
        n->free_mask = 0xFF;
        snprintf(sn->labels[2 * i], 32, "sw%ld", i / 32);
        snprintf(sn->labels[2 * i + 1], 32, "rack%ld", i / 64);
        n->switch_name = sn->labels[2 * i];
        n->rack = sn->labels[2 * i + 1];
        for (int g = 0; g < 8; g++)
            n->nvlink_peers[g] = ((0xFULL << (g & 4)) | (1ULL << (g ^ 4))) & ~(1ULL << g);
    }
    for (int k = 0; k < NTEAMS; k++)
        sn->teams[k] = (struct sched_team){k, (int)(sn->nn * GPUS_PER_NODE / NTEAMS), 1.0};
}

/* Half busy: running jobs from the mix, first fit over a shuffled node order. */
static void make_running(struct snapshot *sn, uint64_t *s)
{
    const long nn = sn->nn;
    long busy = 0, nr = 0, na = 0;
    while (busy < nn * GPUS_PER_NODE / 2) {
        int g = mix(s);
        if (g > GPUS_PER_NODE)
            g = GPUS_PER_NODE; /* running gangs: one node's part each, enough for load */
        long n = (long)(rnd(s) % (uint64_t)nn);
        for (long k = 0; k < nn; k++, n = (n + 1) % nn) {
            if (__builtin_popcountll(sn->nodes[n].free_mask) >= g)
                break;
        }
        uint64_t m = 0, f = sn->nodes[n].free_mask;
        for (int c = 0; c < g; c++) {
            uint64_t b = f & (~f + 1);
            m |= b;
            f &= ~b;
        }
        sn->nodes[n].free_mask &= ~m;
        sn->ra[na] = (struct sched_alloc){n, m};
        sn->run[nr] = (struct sched_running){.job_id = 1000000 + nr,
                                             .team_id = (int64_t)(rnd(s) % NTEAMS),
                                             .prio = SCHED_PRIO_NORMAL,
                                             .gpus = g,
                                             .submit_ms = 0,
                                             .start_ms = (int64_t)(rnd(s) % 3600000),
                                             .end_by_ms = 3600000 + (int64_t)(rnd(s) % 86400000),
                                             .allocs = &sn->ra[na],
                                             .nallocs = 1,
                                             .preemptible = true};
        sn->run[nr].true_end_ms = sn->run[nr].end_by_ms;
        na++;
        nr++;
        busy += g;
    }
    sn->nr = nr;
    sn->busy = busy;
}

/* nj queued jobs from the mix, one in ten high priority, limits of 1 to 24 hours. */
static void make_queue(struct snapshot *sn, uint64_t *s)
{
    for (long i = 0; i < sn->nj; i++) {
        sn->jobs[i] =
            (struct sched_job){.id = i + 1,
                               .team_id = (int64_t)(rnd(s) % NTEAMS),
                               .prio = (enum sched_prio)(rnd(s) % 10 == 0 ? 2 : 1),
                               .gpus = mix(s),
                               .submit_ms = (int64_t)(rnd(s) % 3600000),
                               .time_limit_ms = 3600000 * (1 + (int64_t)(rnd(s) % 24)),
                               .true_duration_ms = 1000 * (1 + (int64_t)(rnd(s) % 86400))};
    }
}

/* Allocates and fills a zeroed snapshot: nodes, then the running set, then
 * the queue (in that order, so a seed gives the same snapshot). 0 ok; on
 * failure snapshot_free() still frees what was allocated. */
static int make_snapshot(struct snapshot *sn, long nn, long nj, long seed)
{
    uint64_t s = (uint64_t)seed;
    sn->nn = nn;
    sn->nj = nj;
    sn->nodes = calloc((size_t)nn, sizeof(*sn->nodes));
    sn->run = calloc((size_t)(nn * GPUS_PER_NODE), sizeof(*sn->run));
    sn->ra = calloc((size_t)(nn * GPUS_PER_NODE), sizeof(*sn->ra));
    sn->jobs = calloc((size_t)nj, sizeof(*sn->jobs));
    sn->labels = calloc((size_t)nn * 2, 32);
    if (!sn->nodes || !sn->run || !sn->ra || !sn->jobs || !sn->labels)
        return -1;
    make_nodes(sn);
    make_running(sn, &s);
    make_queue(sn, &s);
    return 0;
}

/* The plan table: one row per policy. 0 ok. */
static int bench_plans(const struct sched_cluster *c, const struct sched_queue *q, double *t,
                       long reps, long busy)
{
    const char *const *names = sched_policy_names();
    printf("| policy | nodes x GPUs | busy GPUs | queued | placed | preempted | reserved | "
           "median ms | p99 ms |\n");
    printf("|---|---|---:|---:|---:|---:|---|---:|---:|\n");
    for (int p = 0; names[p]; p++)
        if (bench_policy(names[p], c, q, t, reps, busy) != 0)
            return -1;
    return 0;
}

/* Predictions at half the limits, expected ends halfway from start to limit. */
static void set_predictions(struct snapshot *sn)
{
    for (long i = 0; i < sn->nj; i++)
        sn->jobs[i].predicted_ms = sn->jobs[i].time_limit_ms / 2;
    for (long r = 0; r < sn->nr; r++)
        sn->run[r].expected_end_ms =
            sn->run[r].start_ms + (sn->run[r].end_by_ms - sn->run[r].start_ms) / 2;
}

/* One forecast row: the event simulation, then (ereps > 0) the exact one and
 * how far their starts lie apart. td holds a value per queued job. 0 ok. */
static int bench_forecast_row(const char *name, const struct sched_cluster *c,
                              const struct sched_queue *q, double *t, double *td, long freps,
                              long ereps, int64_t res_ms)
{
    struct sched_forecast fe, fx;
    sched_forecast_init(&fe);
    sched_forecast_init(&fx);
    int bad = bench_forecast(name, c, q, t, freps, res_ms, false, &fe);
    if (bad == 0 && ereps > 0) {
        printf(" |  |  |\n");
        bad = bench_forecast(name, c, q, t, ereps, res_ms, true, &fx);
        if (bad == 0)
            compare_starts(&fe, &fx, td);
    } else if (bad == 0) {
        printf(" |  |  |\n");
    }
    sched_forecast_cleanup(&fe);
    sched_forecast_cleanup(&fx);
    return bad;
}

/* The forecast table: four policies, without and with a 60 s resolution. 0 ok. */
static int bench_forecasts(const struct sched_cluster *c, const struct sched_queue *q, double *t,
                           long freps, long ereps)
{
    printf("\nForecast (sched_forecast, %ld repetitions of the event simulation, %ld of the "
           "exact one; predictions at half the limits; the last three columns: the event "
           "simulation's starts against the exact one's):\n\n",
           freps, ereps);
    printf("| policy | simulation | nodes x GPUs | queued | resolution | start now | "
           "never / past horizon | truncated | median ms | max ms | median start diff min | "
           "p90 start diff min | same start |\n");
    printf("|---|---|---|---:|---|---:|---:|---|---:|---:|---:|---:|---:|\n");
    const char *fpol[] = {"fifo", "trainyard", "trainyard-spf", "trainyard-qspf"};
    double *td = calloc(q->njobs + 1, sizeof(double));
    if (td == NULL)
        return -1;
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < 4; p++)
            if (bench_forecast_row(fpol[p], c, q, t, td, freps, ereps, k ? 60000 : 0) != 0) {
                free(td);
                return -1;
            }
    free(td);
    return 0;
}

int main(int argc, char **argv)
{
    struct bench_opts o = parse_opts(argc, argv);
    struct snapshot sn;
    memset(&sn, 0, sizeof(sn));
    double *t =
        calloc((size_t)(o.reps > o.forecast_reps ? o.reps : o.forecast_reps), sizeof(double));
    int rc = 1;

    if (t != NULL && make_snapshot(&sn, o.nodes, o.jobs, o.seed) == 0) {
        struct sched_cluster c = {sn.nodes, (size_t)sn.nn, sn.teams, NTEAMS, sn.run, (size_t)sn.nr};
        struct sched_queue q = {sn.jobs, (size_t)sn.nj, 0, false};
        if (bench_plans(&c, &q, t, o.reps, sn.busy) == 0) {
            set_predictions(&sn);
            if (bench_forecasts(&c, &q, t, o.forecast_reps, o.exact_reps) == 0)
                rc = 0;
        }
    }
    snapshot_free(&sn);
    free(t);
    return rc;
}
