/*
 * test_sched_oom.c - fail the Nth allocation, for every N, inside
 * sched_plan(), sched_check(), sched_forecast() and the simulator's trace parser and replay
 * (CONVENTIONS.md "Tests"). Each call must return RC_ENOMEM (or succeed when
 * N is past its last allocation), leave nothing leaked (ASan checks at exit)
 * and, for sched_plan(), leave an empty plan.
 *
 * How: this binary is linked with -Wl,--wrap=malloc,--wrap=calloc,
 * --wrap=realloc (scheduler/CMakeLists.txt), so every allocation made by the
 * objects linked statically (this file, ty_sched, ty_sim) goes through the
 * wrappers below; cmocka and libc are shared and unaffected.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched.h"
#include "sched_forecast.h"
#include "sim.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);

static long fail_at = -1; /* the allocation number that fails; -1: none (test only) */
static long nalloc;
static bool failed;

static bool should_fail(void)
{
    if (fail_at < 0)
        return false;
    if (++nalloc == fail_at) {
        failed = true;
        return true;
    }
    return false;
}

void *__wrap_malloc(size_t n)
{
    return should_fail() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
    return should_fail() ? NULL : __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
    return should_fail() ? NULL : __real_realloc(p, n);
}

static void arm(long n)
{
    fail_at = n;
    nalloc = 0;
    failed = false;
}

#define NN 12
#define NJ 40

struct snap {
    struct sched_node nodes[NN];
    struct sched_team teams[2];
    struct sched_running run[4];
    struct sched_alloc ra[4];
    struct sched_job jobs[NJ];
    struct sched_cluster c;
    struct sched_queue q;
};

/* A snapshot that reaches every allocating path: teams over quota, a blocked
 * head (reservation), multi-node gangs with switch labels (groups). */
static void make_snap(struct snap *s)
{
    memset(s, 0, sizeof(*s));
    for (int i = 0; i < NN; i++) {
        s->nodes[i].id = i;
        s->nodes[i].ngpus = 8;
        s->nodes[i].free_mask = 0xFF;
        s->nodes[i].switch_name = i < 6 ? "a" : "b";
        s->nodes[i].rack = "r";
    }
    s->teams[0] = (struct sched_team){1, 40, 1.0};
    s->teams[1] = (struct sched_team){2, 8, 1.0};
    for (int r = 0; r < 4; r++) {
        s->ra[r] = (struct sched_alloc){r, 0xFF};
        s->nodes[r].free_mask = 0;
        s->run[r] = (struct sched_running){.job_id = 100 + r,
                                           .team_id = 2,
                                           .gpus = 8,
                                           .start_ms = r,
                                           .end_by_ms = 1000 + r,
                                           .true_end_ms = 1000 + r,
                                           .allocs = &s->ra[r],
                                           .nallocs = 1,
                                           .preemptible = true};
    }
    for (int i = 0; i < NJ; i++)
        s->jobs[i] = (struct sched_job){.id = i + 1,
                                        .team_id = 1 + i % 3,
                                        .prio = SCHED_PRIO_NORMAL,
                                        .gpus = i % 7 == 0 ? 24 : 1 + i % 8,
                                        .submit_ms = i,
                                        .time_limit_ms = 500 + i,
                                        .true_duration_ms = 100 + i};
    s->c = (struct sched_cluster){s->nodes, NN, s->teams, 2, s->run, 4};
    s->q = (struct sched_queue){s->jobs, NJ, 0, false};
}

static void test_plan_every_allocation(void **state)
{
    (void)state;
    static struct snap s;
    const char *const *names = sched_policy_names();
    make_snap(&s);
    for (int p = 0; names[p]; p++) {
        long n = 1;
        for (;; n++) {
            struct sched_decisions d;
            struct err e;
            sched_decisions_init(&d);
            arm(n);
            enum rc rc = sched_plan(sched_policy_find(names[p]), &s.c, &s.q, 10, &d);
            bool hit = failed;
            arm(-1);
            if (hit) {
                assert_int_equal(rc, RC_ENOMEM);
                assert_int_equal(d.nplacements, 0);
                assert_int_equal(d.npreemptions, 0);
                assert_false(d.reservation.valid);
            } else {
                assert_int_equal(rc, RC_OK);
                assert_int_equal(sched_check(&s.c, &s.q, 10, &d, &e), RC_OK);
            }
            sched_decisions_cleanup(&d);
            if (!hit)
                break;
        }
        assert_true(n > 10); /* the pass allocates; every failure point was tried */
    }
}

static void test_forecast_every_allocation(void **state)
{
    (void)state;
    static struct snap s;
    const char *const *names = sched_policy_names();
    make_snap(&s);
    for (int p = 0; names[p]; p++) {
        long n = 1;
        for (;; n++) {
            struct sched_forecast f;
            sched_forecast_init(&f);
            arm(n);
            enum rc rc = sched_forecast(sched_policy_find(names[p]), &s.c, &s.q, 10, NULL, &f);
            bool hit = failed;
            arm(-1);
            if (hit) {
                assert_int_equal(rc, RC_ENOMEM);
                assert_int_equal(f.njobs, 0);
                assert_null(f.jobs);
            } else {
                assert_int_equal(rc, RC_OK);
                assert_true(f.njobs > 0);
            }
            sched_forecast_cleanup(&f);
            if (!hit)
                break;
        }
        assert_true(n > 10);
    }
}

static void test_check_every_allocation(void **state)
{
    (void)state;
    static struct snap s;
    struct sched_decisions d;
    struct err e;
    make_snap(&s);
    sched_decisions_init(&d);
    assert_int_equal(sched_plan(NULL, &s.c, &s.q, 10, &d), RC_OK);
    for (long n = 1;; n++) {
        arm(n);
        enum rc rc = sched_check(&s.c, &s.q, 10, &d, &e);
        bool hit = failed;
        arm(-1);
        assert_int_equal(rc, hit ? RC_ENOMEM : RC_OK);
        if (!hit)
            break;
    }
    sched_decisions_cleanup(&d);
}

static void test_sim_every_allocation(void **state)
{
    (void)state;
    const char *text = "submit_s,duration_s,num_gpus,team\n"
                       "0,100,2,a\n10,500,1,b\n20,50,4,a\n30,10,1,c\n";
    const char *pols[2] = {"trainyard", "tiresias-las"};
    for (int p = 0; p < 2; p++) {
        for (long n = 1;; n++) {
            struct sim_trace t;
            struct sim_result r;
            struct err e;
            arm(n);
            enum rc rc = sim_trace_parse(text, strlen(text), SIM_FORMAT_CSV, &t, &e);
            if (rc == RC_OK) {
                struct sim_config cfg = {1, 4, 1, sched_policy_find(pols[p]), 1.0, true};
                rc = sim_run(&cfg, &t, &r, &e);
                sim_trace_free(&t);
            }
            bool hit = failed;
            arm(-1);
            if (!hit) {
                assert_int_equal(rc, RC_OK);
                break;
            }
            assert_true(rc == RC_ENOMEM || rc == RC_EINTERNAL); /* a failed pass */
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_every_allocation),
        cmocka_unit_test(test_forecast_every_allocation),
        cmocka_unit_test(test_check_every_allocation),
        cmocka_unit_test(test_sim_every_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
