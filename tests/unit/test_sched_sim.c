/*
 * test_sched_sim.c - the simulator core (scheduler/sim) on small hand-made
 * traces in tests/data/traces/, whose right answers are worked out below,
 * and the trace parser on bad input (each error names its line).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim.h"

#ifndef TY_SOURCE_DIR
#define TY_SOURCE_DIR "."
#endif

static char *slurp(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/data/traces/%s", TY_SOURCE_DIR, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *b = malloc(1 << 16);
    assert_non_null(b);
    *len = fread(b, 1, 1 << 16, f);
    fclose(f);
    return b;
}

static void run_file(const char *name, enum sim_format fmt, int nodes, int gpn, const char *pol,
                     struct sim_result *r)
{
    struct sim_trace t;
    struct err e;
    size_t len;
    char *b = slurp(name, &len);

    err_init(&e);
    assert_int_equal(sim_trace_parse(b, len, fmt, &t, &e), RC_OK);
    struct sim_config cfg = {nodes, gpn, 0, sched_policy_find(pol), 1.0, true};
    enum rc rc = sim_run(&cfg, &t, r, &e);
    if (rc != RC_OK)
        fail_msg("%s %s: %s", name, pol, e.message);
    sim_trace_free(&t);
    free(b);
}

#define NEAR(a, b) assert_true((a) > (b)-0.01 && (a) < (b) + 0.01)

/*
 * three_jobs.csv on 1 GPU: jobs of 100, 10 and 50 s all at t=0.
 * fifo (and trainyard, whose 1 h limits allow no backfill, and las, which
 * never demotes): 0-100, 100-110, 110-160: JCT 100, 110, 160.
 * sjf-oracle: 0-10, 10-60, 60-160: JCT 10, 60, 160.
 */
static void test_three_jobs(void **state)
{
    (void)state;
    struct sim_result r;
    const char *same[3] = {"fifo", "trainyard", "tiresias-las"};
    for (int i = 0; i < 3; i++) {
        run_file("three_jobs.csv", SIM_FORMAT_CSV, 1, 1, same[i], &r);
        assert_int_equal(r.jobs, 3);
        NEAR(r.avg_jct_s, 370.0 / 3);
        NEAR(r.p50_jct_s, 110);
        NEAR(r.p99_jct_s, 160);
        NEAR(r.avg_queue_s, 70);
        NEAR(r.makespan_s, 160);
        NEAR(r.gpu_utilization, 1.0);
        assert_int_equal(r.preemptions, 0);
    }
    run_file("three_jobs.csv", SIM_FORMAT_CSV, 1, 1, "sjf-oracle", &r);
    NEAR(r.avg_jct_s, 230.0 / 3);
    NEAR(r.p50_jct_s, 60);
}

/*
 * backfill.csv on 1 node x 4 GPUs, time limits given:
 * J0 2 GPUs 0-1000 (limit 1000). J1 4 GPUs at t=1 is blocked and reserved
 * for t=1000. J2 2 GPUs at t=2, limit 400, ends by 402 <= 1000: trainyard
 * backfills it (2-302). J1 runs 1000-1500.
 * trainyard: JCT 1000, 1499, 300 -> 933. fifo: J2 waits for J1: 1500-1800,
 * JCT 1000, 1499, 1798 -> 1432.33.
 */
static void test_backfill(void **state)
{
    (void)state;
    struct sim_result r;
    run_file("backfill.csv", SIM_FORMAT_CSV, 1, 4, "trainyard", &r);
    NEAR(r.avg_jct_s, 933.0);
    NEAR(r.makespan_s, 1500);
    run_file("backfill.csv", SIM_FORMAT_CSV, 1, 4, "fifo", &r);
    NEAR(r.avg_jct_s, 4297.0 / 3);
    NEAR(r.makespan_s, 1800);
}

/*
 * quota.csv on 1 node x 2 GPUs. Quotas follow GPU-time: a 200, b 500 GPU-s,
 * so a has floor(2 * 200/700) = 0 and b floor(2 * 500/700) = 1 GPU.
 * trainyard: a borrows both GPUs at 0; b arrives at 10 under quota and takes
 * one back: a is preempted with 90 s left, b runs 10-510, a resumes 510-600.
 * JCT a 600, b 500 -> 550, 1 preemption; trainyard-qspf too (a team under
 * quota goes before shorter jobs). fifo: a 0-100, b 100-600 -> 345.
 */
static void test_quota_preemption(void **state)
{
    (void)state;
    struct sim_result r;
    run_file("quota.csv", SIM_FORMAT_CSV, 1, 2, "trainyard", &r);
    assert_int_equal(r.preemptions, 1);
    NEAR(r.avg_jct_s, 550);
    run_file("quota.csv", SIM_FORMAT_CSV, 1, 2, "trainyard-qspf", &r); /* quota before size */
    assert_int_equal(r.preemptions, 1);
    NEAR(r.avg_jct_s, 550);
    run_file("quota.csv", SIM_FORMAT_CSV, 1, 2, "fifo", &r);
    assert_int_equal(r.preemptions, 0);
    NEAR(r.avg_jct_s, 345);
}

/* philly_small.csv: unsorted rows; arrivals 06:13:03, 06:13:36, 07:01:55. */
static void test_philly_parse(void **state)
{
    (void)state;
    struct sim_trace t;
    struct err e;
    size_t len;
    char *b = slurp("philly_small.csv", &len);

    assert_int_equal(sim_trace_parse(b, len, SIM_FORMAT_PHILLY, &t, &e), RC_OK);
    assert_int_equal(t.njobs, 3);
    assert_int_equal(t.nteams, 2);
    assert_int_equal(t.jobs[0].submit_ms, 0);
    assert_int_equal(t.jobs[0].gpus, 2);
    assert_int_equal(t.jobs[1].submit_ms, 33000);
    assert_int_equal(t.jobs[2].submit_ms,
                     (7 * 3600 + 1 * 60 + 55 - (6 * 3600 + 13 * 60 + 3)) * 1000);
    assert_int_equal(t.jobs[2].tod_s, 7 * 3600 + 60 + 55);
    assert_int_equal(t.jobs[1].team, t.jobs[0].team);
    struct sim_result r;
    struct sim_config cfg = {2, 2, 1, sched_policy_find("trainyard"), 1.0, true};
    assert_int_equal(sim_run(&cfg, &t, &r, &e), RC_OK);
    assert_int_equal(r.jobs, 3);
    sim_trace_free(&t);
    free(b);
    assert_int_equal(sim_days_from_civil(2017, 9, 4), 17413);
    assert_int_equal(sim_days_from_civil(2000, 3, 1), 11017);
    assert_int_equal(sim_days_from_civil(1970, 1, 1), 0);
}

static void expect_bad(const char *text, enum sim_format fmt, const char *needle)
{
    struct sim_trace t;
    struct err e;
    err_init(&e);
    assert_int_equal(sim_trace_parse(text, strlen(text), fmt, &t, &e), RC_EINVAL);
    if (strstr(e.message, needle) == NULL)
        fail_msg("wanted \"%s\" in \"%s\"", needle, e.message);
    assert_null(t.jobs);
}

static void test_bad_traces(void **state)
{
    (void)state;
    expect_bad("", SIM_FORMAT_CSV, "no jobs");
    expect_bad("submit_s,duration_s,num_gpus\n", SIM_FORMAT_CSV, "no jobs");
    expect_bad("0,10,1\n5,20,-2\n", SIM_FORMAT_CSV, "line 2: gpu count -2");
    expect_bad("0,10,0\n", SIM_FORMAT_CSV, "line 1: gpu count 0");
    expect_bad("0,10\n", SIM_FORMAT_CSV, "line 1: expected 3 to 5");
    expect_bad("0,abc,1\n", SIM_FORMAT_CSV, "line 1: bad duration");
    expect_bad("x,1,1\n", SIM_FORMAT_CSV, "line 1: bad submit");
    expect_bad("0,1,1,t,0\n", SIM_FORMAT_CSV, "line 1: bad time limit");
    expect_bad("0,1,99999999999999999999\n", SIM_FORMAT_CSV, "line 1: bad gpu count");
    expect_bad("0,-5,1\n", SIM_FORMAT_CSV, "line 1: bad duration");
    expect_bad("0,nan,1\n", SIM_FORMAT_CSV, "line 1: bad duration");
    expect_bad("timestamp,duration,num_gpus,gpu_time,cluster\n2017-13-01 00:00:00,1,1,1,a\n",
               SIM_FORMAT_PHILLY, "line 2: bad timestamp");
    expect_bad("2017-10-01 00:00,1,1,1,a\n", SIM_FORMAT_PHILLY, "line 1: bad timestamp");
    expect_bad("2017-10-01 00:00:00,1,1,1\n", SIM_FORMAT_PHILLY, "line 1: expected 5");
    expect_bad("0,1,1,,,,,,,,,,\n", SIM_FORMAT_CSV, "line 1: malformed");
}

static void test_job_larger_than_cluster(void **state)
{
    (void)state;
    const char *text = "0,10,1\n1,10,9\n";
    struct sim_trace t;
    struct sim_result r;
    struct err e;
    assert_int_equal(sim_trace_parse(text, strlen(text), SIM_FORMAT_CSV, &t, &e), RC_OK);
    struct sim_config cfg = {2, 4, 0, sched_policy_find("fifo"), 1.0, true};
    assert_int_equal(sim_run(&cfg, &t, &r, &e), RC_EINVAL);
    assert_non_null(strstr(e.message, "line 2"));
    sim_trace_free(&t);
}

static void test_sample_pollux_style(void **state)
{
    (void)state;
    const char *text = "timestamp,duration,num_gpus,gpu_time,cluster\n"
                       "2017-10-01 01:59:59,100,1,100,a\n"    /* before the window */
                       "2017-10-01 02:00:00,30,1,30,a\n"      /* under 60 s */
                       "2017-10-01 03:00:00,100,4,400,a\n"    /* kept: offset 3600 s */
                       "2017-10-02 09:59:59,100,1,100,b\n"    /* kept: offset 28799 s */
                       "2017-10-02 05:00:00,4000000,1,1,b\n"; /* 1,111 GPU-hours */
    struct sim_trace t;
    struct err e;
    assert_int_equal(sim_trace_parse(text, strlen(text), SIM_FORMAT_PHILLY, &t, &e), RC_OK);
    assert_int_equal(sim_trace_sample(&t, 2, 7, &e), RC_OK);
    assert_int_equal(t.njobs, 2);
    assert_int_equal(t.jobs[0].submit_ms, 3600000);
    assert_int_equal(t.jobs[1].submit_ms, 28799000);
    sim_trace_free(&t);
    assert_int_equal(sim_trace_parse(text, strlen(text), SIM_FORMAT_PHILLY, &t, &e), RC_OK);
    assert_int_equal(sim_trace_sample(&t, 3, 7, &e), RC_EINVAL);
    sim_trace_free(&t);
}

/*
 * The simulator feeds the predictor from finished jobs only: a trace of 120
 * jobs (explicit time limits, so that durations reach the scheduler through
 * nothing else) is replayed with --predict; then every job still unfinished
 * at time T of that replay gets a poisoned duration and the trace is
 * replayed again. Every job that arrived by T must get the same prediction,
 * and some later one a different one (the poison is learnt once those jobs
 * finish), so the test can fail.
 */
static void test_predictor_never_sees_the_future(void **state)
{
    (void)state;
    enum { N = 120 };
    static char text[N * 64 + 64];
    static struct sim_job_out a[N], b[N];
    int64_t dur[N];
    uint64_t x = 99;
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        dur[i] = 60 + (int64_t)((x >> 33) % 3000);
    }
    for (int pass = 0; pass < 2; pass++) {
        size_t n = (size_t)snprintf(text, sizeof(text),
                                    "submit_s,duration_s,num_gpus,team,"
                                    "time_limit_s\n");
        for (int i = 0; i < N; i++)
            n += (size_t)snprintf(text + n, sizeof(text) - n, "%d,%lld,%d,%c,100000\n", i * 40,
                                  (long long)dur[i], 1 + i % 2, "ab"[i % 3 == 0]);
        struct sim_trace t;
        struct sim_result r;
        struct err e;
        err_init(&e);
        assert_int_equal(sim_trace_parse(text, n, SIM_FORMAT_CSV, &t, &e), RC_OK);
        struct sim_config cfg = {2, 4, 0, sched_policy_find("trainyard-spf"), 1.0, true};
        struct sim_opts o = {true, 0.5, true, 7, 0, false, pass == 0 ? a : b};
        if (sim_run_opts(&cfg, &o, &t, &r, &e) != RC_OK)
            fail_msg("%s", e.message);
        assert_true(r.pred_from_runs > 0);
        assert_true(r.fc_sampled > 0);
        sim_trace_free(&t);
        if (pass == 0) { /* poison whatever has not finished by T = the 60th arrival */
            int64_t T = 60 * 40 * 1000;
            for (int i = 0; i < N; i++)
                if (a[i].finish_ms > T)
                    dur[i] = dur[i] * 7 + 13;
        }
    }
    int later_differ = 0;
    for (int i = 0; i < N; i++) {
        if ((int64_t)i * 40 * 1000 <= 60 * 40 * 1000)
            assert_int_equal(a[i].pred_ms, b[i].pred_ms);
        else if (a[i].pred_ms != b[i].pred_ms)
            later_differ++;
    }
    assert_true(later_differ > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_jobs),
        cmocka_unit_test(test_backfill),
        cmocka_unit_test(test_quota_preemption),
        cmocka_unit_test(test_philly_parse),
        cmocka_unit_test(test_bad_traces),
        cmocka_unit_test(test_job_larger_than_cluster),
        cmocka_unit_test(test_sample_pollux_style),
        cmocka_unit_test(test_predictor_never_sees_the_future),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
