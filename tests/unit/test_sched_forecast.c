/*
 * test_sched_forecast.c - the queue forecast (issue 10): every reason code on
 * a small hand-made snapshot, starts from the forward simulation (the job
 * next behind a reservation starts when the reserved job ends), predictions
 * before time limits, the bounds, bad snapshots, and that the forecast never
 * reads a job's true duration (the simulator's secret) outside sjf-oracle.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched_forecast.h"

#define MAXN 16
#define MAXJ 64

struct fx {
    struct sched_node nodes[MAXN];
    struct sched_team teams[4];
    struct sched_running run[MAXJ];
    struct sched_alloc ralloc[MAXJ];
    struct sched_job jobs[MAXJ];
    struct sched_cluster c;
    struct sched_queue q;
    struct sched_forecast f;
};

static uint64_t full(int g)
{
    return g >= 64 ? ~0ULL : (1ULL << g) - 1;
}

static struct fx *fx_new(int nnodes, int g)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    for (int i = 0; i < nnodes; i++) {
        f->nodes[i].id = 100 + i;
        f->nodes[i].state = SCHED_NODE_READY;
        f->nodes[i].ngpus = g;
        f->nodes[i].free_mask = full(g);
    }
    f->c.nodes = f->nodes;
    f->c.nnodes = (size_t)nnodes;
    f->c.teams = f->teams;
    f->c.running = f->run;
    f->q.jobs = f->jobs;
    sched_forecast_init(&f->f);
    return f;
}

static void fx_free(struct fx *f)
{
    sched_forecast_cleanup(&f->f);
    free(f);
}

static struct sched_job *add_job(struct fx *f, int64_t id, int gpus, int64_t submit, int64_t limit)
{
    struct sched_job *j = &f->jobs[f->q.njobs++];
    memset(j, 0, sizeof(*j));
    j->id = id;
    j->gpus = gpus;
    j->prio = SCHED_PRIO_NORMAL;
    j->submit_ms = submit;
    j->time_limit_ms = limit;
    return j;
}

static struct sched_running *add_run(struct fx *f, int64_t id, int n, uint64_t mask, int64_t team,
                                     int64_t end)
{
    size_t r = f->c.nrunning++;
    struct sched_running *rj = &f->run[r];
    memset(rj, 0, sizeof(*rj));
    f->ralloc[r].node_id = f->nodes[n].id;
    f->ralloc[r].gpu_mask = mask;
    f->nodes[n].free_mask &= ~mask;
    rj->job_id = id;
    rj->team_id = team;
    rj->prio = SCHED_PRIO_NORMAL;
    rj->gpus = __builtin_popcountll(mask);
    rj->end_by_ms = end;
    rj->true_end_ms = SCHED_TIME_UNKNOWN;
    rj->allocs = &f->ralloc[r];
    rj->nallocs = 1;
    return rj;
}

static const struct sched_forecast_job *fc(struct fx *f, const char *policy, int64_t now)
{
    enum rc rc = sched_forecast(sched_policy_find(policy), &f->c, &f->q, now, NULL, &f->f);
    assert_int_equal(rc, RC_OK);
    for (size_t i = 0; i < f->f.njobs; i++) {
        assert_int_equal(f->f.jobs[i].position, i);
        if (i > 0)
            assert_true(f->f.jobs[i - 1].start_ms <= f->f.jobs[i].start_ms);
        if (f->f.jobs[i].reason == SCHED_WAIT_NONE)
            assert_int_equal(f->f.jobs[i].start_ms, now);
    }
    return f->f.jobs;
}

static const struct sched_forecast_job *of(const struct fx *f, int64_t id)
{
    for (size_t i = 0; i < f->f.njobs; i++)
        if (f->f.jobs[i].job_id == id)
            return &f->f.jobs[i];
    fail_msg("job %lld not in the forecast", (long long)id);
    return NULL;
}

static void test_codes(void **state)
{
    (void)state;
    static const char *names[] = {"none",     "gpus",           "quota",   "priority",
                                  "reserved", "site_too_small", "draining"};
    for (int w = 0; w <= SCHED_WAIT_DRAINING; w++)
        assert_string_equal(sched_wait_code((enum sched_wait)w), names[w]);
    assert_string_equal(sched_wait_code((enum sched_wait)99), "unknown");
}

/* NONE: it fits now; GPUS: all four busy until 1000, then it starts. */
static void test_none_and_gpus(void **state)
{
    (void)state;
    struct fx *f = fx_new(2, 4);
    add_run(f, 1, 0, full(4), 0, 1000);
    add_job(f, 10, 4, 0, 500); /* node 101 is free: starts now */
    add_job(f, 11, 4, 1, 500); /* both nodes busy: the first end is 1000 */
    fc(f, "trainyard", 0);
    assert_int_equal(of(f, 10)->reason, SCHED_WAIT_NONE);
    assert_int_equal(of(f, 10)->start_ms, 0);
    assert_int_equal(of(f, 10)->position, 0);
    assert_int_equal(of(f, 11)->reason, SCHED_WAIT_GPUS);
    assert_int_equal(of(f, 11)->need_gpus, 4);
    assert_int_equal(of(f, 11)->free_gpus, 0);
    assert_int_equal(of(f, 11)->start_ms, 500); /* job 10 ends first, at 0 + 500 */
    assert_int_equal(of(f, 11)->other_job_id, 0);
    assert_false(f->f.truncated);
    fx_free(f);
}

/* QUOTA: team 1 holds 4 GPUs over its quota of 2; under fifo the same wait is GPUS. */
static void test_quota(void **state)
{
    (void)state;
    struct fx *f = fx_new(1, 4);
    f->teams[0] = (struct sched_team){1, 2, 1.0};
    f->teams[1] = (struct sched_team){2, 2, 1.0};
    f->c.nteams = 2;
    add_run(f, 1, 0, full(4), 1, 2000);
    add_job(f, 10, 2, 0, 100)->team_id = 1;
    fc(f, "trainyard", 0);
    assert_int_equal(of(f, 10)->reason, SCHED_WAIT_QUOTA);
    assert_int_equal(of(f, 10)->start_ms, 2000);
    fc(f, "fifo", 0);
    assert_int_equal(of(f, 10)->reason, SCHED_WAIT_GPUS);
    fx_free(f);
}

/*
 * PRIORITY: under fifo the blocked head (job 10, 4 GPUs) holds back job 11,
 * which would fit on the 2 free GPUs. RESERVED: under trainyard the 2 free
 * GPUs are reserved for job 10 and job 11 runs past the reservation start.
 */
static void test_priority_and_reserved(void **state)
{
    (void)state;
    struct fx *f = fx_new(1, 4);
    add_run(f, 1, 0, 0x3, 0, 1000);
    add_job(f, 10, 4, 0, 300);
    add_job(f, 11, 1, 1, 5000);
    fc(f, "fifo", 0);
    assert_int_equal(of(f, 11)->reason, SCHED_WAIT_PRIORITY);
    assert_int_equal(of(f, 11)->other_job_id, 10);
    assert_int_equal(of(f, 11)->free_gpus, 2);
    assert_int_equal(of(f, 10)->reason, SCHED_WAIT_GPUS);
    assert_int_equal(of(f, 10)->start_ms, 1000);
    assert_int_equal(of(f, 11)->start_ms, 1300);
    fc(f, "trainyard", 0);
    assert_int_equal(of(f, 11)->reason, SCHED_WAIT_RESERVED);
    assert_int_equal(of(f, 11)->other_job_id, 10);
    assert_int_equal(of(f, 10)->position, 0);
    /* a short job backfills instead: it ends before the reservation */
    f->jobs[1].time_limit_ms = 900;
    fc(f, "trainyard", 0);
    assert_int_equal(of(f, 11)->reason, SCHED_WAIT_NONE);
    fx_free(f);
}

/* SITE_TOO_SMALL: never starts; DRAINING: only a draining node is big enough. */
static void test_site_too_small_and_draining(void **state)
{
    (void)state;
    struct fx *f = fx_new(2, 8);
    f->nodes[0].site = 1;
    f->nodes[1].site = 2;
    f->nodes[1].state = SCHED_NODE_DRAINING;
    struct sched_job *j = add_job(f, 10, 16, 0, 100);
    j->gpus_per_node = 8;
    j->site = 1; /* one 8-GPU node in site 1 */
    add_job(f, 11, 8, 0, 100)->site = 2;
    add_job(f, 12, 2, 0, 100)->site = 1;
    fc(f, "trainyard", 0);
    assert_int_equal(of(f, 10)->reason, SCHED_WAIT_SITE_TOO_SMALL);
    assert_int_equal(of(f, 10)->start_ms, SCHED_TIME_UNKNOWN);
    assert_int_equal(of(f, 11)->reason, SCHED_WAIT_DRAINING);
    assert_int_equal(of(f, 11)->start_ms, SCHED_TIME_UNKNOWN);
    assert_int_equal(of(f, 12)->reason, SCHED_WAIT_NONE);
    /* never-starting jobs come last */
    assert_int_equal(of(f, 12)->position, 0);
    fx_free(f);
}

/*
 * The job next behind a reservation starts when the reserved job ends: the
 * head starts at the reservation start (1000, from the running job's
 * predicted end) and runs its predicted 400 ms, so job 11 starts at 1400,
 * not at 1000 + its time limit of 5000.
 */
static void test_behind_reservation(void **state)
{
    (void)state;
    struct fx *f = fx_new(1, 4);
    struct sched_running *r = add_run(f, 1, 0, full(4), 0, 9000);
    r->expected_end_ms = 1000;
    add_job(f, 10, 4, 0, 5000)->predicted_ms = 400;
    add_job(f, 11, 4, 1, 5000)->predicted_ms = 50;
    fc(f, "trainyard", 0);
    assert_int_equal(of(f, 10)->start_ms, 1000);
    assert_int_equal(of(f, 11)->start_ms, 1000 + 400);
    assert_int_equal(of(f, 11)->reason, SCHED_WAIT_GPUS);
    /* the head's start is the reservation sched_plan makes (from the expected end) */
    struct sched_decisions d;
    sched_decisions_init(&d);
    assert_int_equal(sched_plan(NULL, &f->c, &f->q, 0, &d), RC_OK);
    assert_true(d.reservation.valid);
    assert_int_equal(d.reservation.job_id, 10);
    assert_int_equal(d.reservation.start_ms, of(f, 10)->start_ms);
    assert_int_equal(d.reservation.bound_ms, 9000);
    sched_decisions_cleanup(&d);
    /* without predictions: time limits */
    r->expected_end_ms = 0;
    f->jobs[0].predicted_ms = 0;
    fc(f, "trainyard", 0);
    assert_int_equal(of(f, 10)->start_ms, 9000);
    assert_int_equal(of(f, 11)->start_ms, 9000 + 5000);
    fx_free(f);
}

/* Neither prediction nor limit: the default duration; the horizon and event bounds cut. */
static void test_defaults_and_bounds(void **state)
{
    (void)state;
    struct fx *f = fx_new(1, 1);
    add_run(f, 1, 0, 1, 0, SCHED_TIME_UNKNOWN)->start_ms = 0;
    for (int i = 0; i < 5; i++)
        add_job(f, 10 + i, 1, i, 0);
    struct sched_forecast_opts o = {0, 0, 100, 0};
    assert_int_equal(sched_forecast(NULL, &f->c, &f->q, 0, &o, &f->f), RC_OK);
    for (int i = 0; i < 5; i++)
        assert_int_equal(of(f, 10 + i)->start_ms, 100 * (i + 1));
    assert_false(f->f.truncated);
    o.horizon_ms = 250;
    assert_int_equal(sched_forecast(NULL, &f->c, &f->q, 0, &o, &f->f), RC_OK);
    assert_true(f->f.truncated);
    assert_int_equal(of(f, 11)->start_ms, 200);
    assert_int_equal(of(f, 12)->start_ms, SCHED_TIME_UNKNOWN);
    o.horizon_ms = 0;
    o.max_events = 1;
    assert_int_equal(sched_forecast(NULL, &f->c, &f->q, 0, &o, &f->f), RC_OK);
    assert_true(f->f.truncated);
    assert_int_equal(of(f, 10)->start_ms, 100);
    assert_int_equal(of(f, 11)->start_ms, SCHED_TIME_UNKNOWN);
    /* a resolution of 150: each event waits for the next multiple of 150 after now */
    o.max_events = 0;
    o.resolution_ms = 150;
    assert_int_equal(sched_forecast(NULL, &f->c, &f->q, 0, &o, &f->f), RC_OK);
    for (int i = 0; i < 5; i++)
        assert_int_equal(of(f, 10 + i)->start_ms, 150 * (i + 1));
    o.resolution_ms = -1;
    assert_int_equal(sched_forecast(NULL, &f->c, &f->q, 0, &o, &f->f), RC_EINVAL);
    fx_free(f);
}

/* The forecast reads predicted_ms and time limits, never true_duration_ms (but sjf-oracle). */
static void test_never_reads_true_duration(void **state)
{
    (void)state;
    struct fx *f = fx_new(2, 4);
    add_run(f, 1, 0, full(4), 0, 700);
    for (int i = 0; i < 12; i++)
        add_job(f, 10 + i, 1 + i % 4, i, 100 * (i + 1))->predicted_ms = i % 3 ? 50 * i : 0;
    const char *pols[] = {"fifo", "trainyard", "tiresias-las"};
    for (int p = 0; p < 3; p++) {
        struct sched_forecast_job a[MAXJ];
        fc(f, pols[p], 0);
        size_t n = f->f.njobs;
        memcpy(a, f->f.jobs, n * sizeof(*a));
        for (int i = 0; i < 12; i++)
            f->jobs[i].true_duration_ms = 1 + 7919 * i; /* poison */
        fc(f, pols[p], 0);
        assert_int_equal(f->f.njobs, n);
        assert_memory_equal(a, f->f.jobs, n * sizeof(*a));
        for (int i = 0; i < 12; i++)
            f->jobs[i].true_duration_ms = 0;
    }
    fx_free(f);
}

/* Malformed snapshots are refused and leave the output empty; invalid jobs are left out. */
static void test_bad_input(void **state)
{
    (void)state;
    struct fx *f = fx_new(2, 4);
    add_job(f, 10, 1, 0, 100);
    add_job(f, 11, 0, 0, 100); /* invalid: skipped */
    fc(f, "trainyard", 0);
    assert_int_equal(f->f.njobs, 1);
    add_job(f, 10, 1, 0, 100); /* a duplicate id */
    assert_int_equal(sched_forecast(NULL, &f->c, &f->q, 0, NULL, &f->f), RC_EINVAL);
    assert_int_equal(f->f.njobs, 0);
    assert_null(f->f.jobs);
    f->q.njobs = 2;
    f->nodes[1].id = f->nodes[0].id; /* duplicate node ids: sched_plan refuses */
    assert_int_equal(sched_forecast(NULL, &f->c, &f->q, 0, NULL, &f->f), RC_EINVAL);
    f->nodes[1].id = 101;
    struct sched_forecast_opts o = {-1, 0, 0, 0};
    assert_int_equal(sched_forecast(NULL, &f->c, &f->q, 0, &o, &f->f), RC_EINVAL);
    assert_int_equal(sched_forecast(NULL, NULL, &f->q, 0, NULL, &f->f), RC_EINVAL);
    assert_int_equal(sched_forecast(NULL, &f->c, &f->q, 0, NULL, NULL), RC_EINVAL);
    sched_forecast_cleanup(NULL);
    fx_free(f);
}

/* A job the simulation preempts for a team under quota comes back and still ends. */
static void test_preempted_requeued(void **state)
{
    (void)state;
    struct fx *f = fx_new(1, 4);
    f->teams[0] = (struct sched_team){1, 2, 1.0};
    f->teams[1] = (struct sched_team){2, 2, 1.0};
    f->c.nteams = 2;
    struct sched_running *r = add_run(f, 1, 0, full(4), 1, 1000);
    r->preemptible = true;
    add_job(f, 10, 2, 0, 300)->team_id = 2;
    add_job(f, 11, 4, 1, 300)->team_id = 2;
    fc(f, "trainyard", 0);
    assert_int_equal(of(f, 10)->reason, SCHED_WAIT_NONE);
    /* job 11 waits for job 10 (300) and the preempted job 1's rest (1000 from 0) */
    assert_true(of(f, 11)->start_ms != SCHED_TIME_UNKNOWN);
    assert_true(of(f, 11)->start_ms >= 300);
    fx_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codes),
        cmocka_unit_test(test_none_and_gpus),
        cmocka_unit_test(test_quota),
        cmocka_unit_test(test_priority_and_reserved),
        cmocka_unit_test(test_site_too_small_and_draining),
        cmocka_unit_test(test_behind_reservation),
        cmocka_unit_test(test_defaults_and_bounds),
        cmocka_unit_test(test_never_reads_true_duration),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_preempted_requeued),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
