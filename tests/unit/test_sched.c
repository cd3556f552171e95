/*
 * test_sched.c - unit tests of the scheduler library, one per rule of the
 * issue (gang, placement limits, order, quotas, reservation and backfill,
 * topology), plus sched_check() catching hand-made violations and a
 * randomized property test (fixed seeds) running sched_check() on thousands
 * of random snapshots for every policy, once more with nodes and jobs spread
 * over data-residency sites.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched.h"
#include "sched_int.h" /* sched_job_order_key, sched_pick_before: the order the forecast mirrors */

#define MAXN 64
#define MAXJ 256

struct fx {
    struct sched_node nodes[MAXN];
    struct sched_team teams[8];
    struct sched_running run[MAXJ];
    struct sched_alloc ralloc[MAXJ][8];
    struct sched_job jobs[MAXJ];
    struct sched_cluster c;
    struct sched_queue q;
    struct sched_decisions d;
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
    sched_decisions_init(&f->d);
    return f;
}

static void fx_free(struct fx *f)
{
    sched_decisions_cleanup(&f->d);
    free(f);
}

static struct sched_job *add_job(struct fx *f, int64_t id, int gpus, int64_t submit)
{
    struct sched_job *j = &f->jobs[f->q.njobs++];
    memset(j, 0, sizeof(*j));
    j->id = id;
    j->gpus = gpus;
    j->prio = SCHED_PRIO_NORMAL;
    j->submit_ms = submit;
    j->time_limit_ms = 3600000;
    j->true_duration_ms = 1000;
    return j;
}

/* A running job on node index n with the given GPU mask (marked busy). */
static struct sched_running *add_run(struct fx *f, int64_t id, int n, uint64_t mask, int64_t team,
                                     int64_t start, int64_t end_by)
{
    size_t r = f->c.nrunning++;
    struct sched_running *rj = &f->run[r];
    memset(rj, 0, sizeof(*rj));
    f->ralloc[r][0].node_id = f->nodes[n].id;
    f->ralloc[r][0].gpu_mask = mask;
    f->nodes[n].free_mask &= ~mask;
    rj->job_id = id;
    rj->team_id = team;
    rj->prio = SCHED_PRIO_NORMAL;
    rj->gpus = __builtin_popcountll(mask);
    rj->start_ms = start;
    rj->submit_ms = start;
    rj->end_by_ms = end_by;
    rj->true_end_ms = end_by;
    rj->allocs = f->ralloc[r];
    rj->nallocs = 1;
    rj->preemptible = true;
    return rj;
}

static void plan_ok(struct fx *f, const char *policy, int64_t now)
{
    struct err e;
    err_init(&e);
    assert_int_equal(sched_plan(sched_policy_find(policy), &f->c, &f->q, now, &f->d), RC_OK);
    enum rc rc = sched_check(&f->c, &f->q, now, &f->d, &e);
    if (rc != RC_OK)
        fail_msg("sched_check: %s", e.message);
}

static const struct sched_placement *placed(const struct fx *f, int64_t id)
{
    for (size_t i = 0; i < f->d.nplacements; i++)
        if (f->d.placements[i].job_id == id)
            return &f->d.placements[i];
    return NULL;
}

static void test_policy_find(void **state)
{
    (void)state;
    const char *const *n = sched_policy_names();
    int k = 0;
    for (; n[k]; k++)
        assert_non_null(sched_policy_find(n[k]));
    assert_int_equal(k, 6);
    assert_null(sched_policy_find("lottery"));
    assert_null(sched_policy_find(NULL));
}

static void test_single_node_best_fit(void **state)
{
    (void)state;
    struct fx *f = fx_new(3, 8);
    f->nodes[0].free_mask = 0x3;  /* 2 free */
    f->nodes[1].free_mask = 0xF0; /* 4 free */
    add_job(f, 1, 4, 0);
    plan_ok(f, "trainyard", 0);
    const struct sched_placement *p = placed(f, 1);
    assert_non_null(p);
    assert_int_equal(p->nallocs, 1);
    assert_int_equal(p->allocs[0].node_id, 101);
    assert_int_equal(p->allocs[0].gpu_mask, 0xF0);
    fx_free(f);
}

static void test_gang_all_or_nothing(void **state)
{
    (void)state;
    struct fx *f = fx_new(2, 8);
    add_run(f, 50, 0, 0x1, 0, 0, 1000);
    add_job(f, 1, 16, 0);
    plan_ok(f, "trainyard", 0);
    assert_int_equal(f->d.nplacements, 0);
    assert_int_equal(f->d.nblocked, 1);
    /* it is given a reservation for when job 50 ends */
    assert_true(f->d.reservation.valid);
    assert_int_equal(f->d.reservation.job_id, 1);
    assert_int_equal(f->d.reservation.start_ms, 1000);
    fx_free(f);
}

static void test_multi_node_fewest(void **state)
{
    (void)state;
    struct fx *f = fx_new(4, 8);
    f->nodes[0].free_mask = 0x0F; /* 4 */
    f->nodes[1].free_mask = 0x03; /* 2 */
    add_job(f, 1, 12, 0);
    plan_ok(f, "trainyard", 0);
    const struct sched_placement *p = placed(f, 1);
    assert_non_null(p);
    assert_int_equal(p->nallocs, 2); /* one whole node + the 4-free node */
    int sum = 0;
    for (size_t i = 0; i < p->nallocs; i++)
        sum += __builtin_popcountll(p->allocs[i].gpu_mask);
    assert_int_equal(sum, 12);
    fx_free(f);
}

static void test_gpus_per_node(void **state)
{
    (void)state;
    struct fx *f = fx_new(4, 8);
    struct sched_job *j = add_job(f, 1, 8, 0);
    j->gpus_per_node = 2;
    plan_ok(f, "trainyard", 0);
    const struct sched_placement *p = placed(f, 1);
    assert_non_null(p);
    assert_int_equal(p->nallocs, 4);
    for (size_t i = 0; i < p->nallocs; i++)
        assert_int_equal(__builtin_popcountll(p->allocs[i].gpu_mask), 2);
    fx_free(f);
}

static void test_large_gang_1024(void **state)
{
    (void)state;
    struct fx *f = fx_new(64, 16);
    add_job(f, 1, 1024, 0);
    add_job(f, 2, 1, 1);
    plan_ok(f, "trainyard", 0);
    assert_non_null(placed(f, 1));
    assert_int_equal(placed(f, 1)->nallocs, 64);
    assert_null(placed(f, 2)); /* nothing left */
    fx_free(f);
}

static void test_no_draining_or_down(void **state)
{
    (void)state;
    struct fx *f = fx_new(3, 4);
    f->nodes[0].state = SCHED_NODE_DRAINING;
    f->nodes[1].state = SCHED_NODE_DOWN;
    add_job(f, 1, 4, 0);
    add_job(f, 2, 4, 1);
    plan_ok(f, "trainyard", 0);
    assert_int_equal(placed(f, 1)->allocs[0].node_id, 102);
    assert_null(placed(f, 2));
    fx_free(f);
}

static void test_priority_first(void **state)
{
    (void)state;
    struct fx *f = fx_new(1, 4);
    add_job(f, 1, 4, 0);
    add_job(f, 2, 4, 10)->prio = SCHED_PRIO_HIGH;
    add_job(f, 3, 4, 0)->prio = SCHED_PRIO_LOW;
    plan_ok(f, "trainyard", 0);
    assert_non_null(placed(f, 2));
    assert_int_equal(f->d.nplacements, 1);
    assert_int_equal(f->d.reservation.job_id, 1); /* normal beats low */
    fx_free(f);
}

static void test_fair_share_then_submit(void **state)
{
    (void)state;
    struct fx *f = fx_new(2, 4);
    f->teams[0] = (struct sched_team){1, 4, 1.0};
    f->teams[1] = (struct sched_team){2, 4, 1.0};
    f->c.nteams = 2;
    add_run(f, 50, 0, 0xF, 1, 0, 5000); /* team 1 uses its quota */
    add_job(f, 1, 4, 0)->team_id = 1;   /* older, but team 1 is served */
    add_job(f, 2, 4, 5)->team_id = 2;
    plan_ok(f, "trainyard", 0);
    assert_non_null(placed(f, 2));
    assert_null(placed(f, 1));
    fx_free(f);
    /* equal shares: submit time decides */
    f = fx_new(1, 4);
    add_job(f, 7, 4, 20);
    add_job(f, 8, 4, 10);
    plan_ok(f, "trainyard", 0);
    assert_non_null(placed(f, 8));
    fx_free(f);
}

static void test_quota_preempts_newest_borrower(void **state)
{
    (void)state;
    struct fx *f = fx_new(2, 4);
    f->teams[0] = (struct sched_team){1, 4, 1.0}; /* A */
    f->teams[1] = (struct sched_team){2, 4, 1.0}; /* B */
    f->c.nteams = 2;
    add_run(f, 50, 0, 0xF, 2, 100, 9000); /* B within quota (oldest) */
    add_run(f, 51, 1, 0x3, 2, 200, 9000); /* B borrowing */
    add_run(f, 52, 1, 0xC, 2, 300, 9000); /* B borrowing, newest */
    add_job(f, 1, 2, 400)->team_id = 1;
    plan_ok(f, "trainyard", 400);
    assert_int_equal(f->d.npreemptions, 1);
    assert_int_equal(f->d.preemptions[0].job_id, 52);
    assert_int_equal(f->d.preemptions[0].reason, SCHED_PREEMPT_QUOTA);
    assert_non_null(placed(f, 1));
    fx_free(f);
}

static void test_quota_never_preempts_within_quota(void **state)
{
    (void)state;
    struct fx *f = fx_new(1, 4);
    f->teams[0] = (struct sched_team){1, 2, 1.0};
    f->teams[1] = (struct sched_team){2, 2, 1.0};
    f->c.nteams = 2;
    add_run(f, 50, 0, 0x3, 2, 100, 9000); /* B at quota */
    add_run(f, 51, 0, 0xC, 1, 100, 9000); /* A at quota */
    add_job(f, 1, 2, 400)->team_id = 1;   /* A would exceed quota */
    plan_ok(f, "trainyard", 400);
    assert_int_equal(f->d.npreemptions, 0);
    assert_int_equal(f->d.nplacements, 0);
    fx_free(f);
}

static void test_reservation_and_backfill(void **state)
{
    (void)state;
    struct fx *f = fx_new(2, 8);
    add_run(f, 50, 0, 0x0F, 0, 0, 100000);       /* node 0: 4 busy until 100 s */
    add_run(f, 51, 1, 0xFF, 0, 0, 500000);       /* node 1: all busy until 500 s */
    add_job(f, 1, 8, 0);                         /* head: needs a whole node */
    add_job(f, 2, 2, 1)->time_limit_ms = 200000; /* ends after 100 s: must not touch */
    add_job(f, 3, 2, 2)->time_limit_ms = 50000;  /* ends before 100 s: may backfill */
    plan_ok(f, "trainyard", 0);
    assert_true(f->d.reservation.valid);
    assert_int_equal(f->d.reservation.job_id, 1);
    assert_int_equal(f->d.reservation.start_ms, 100000);
    assert_null(placed(f, 2));
    assert_non_null(placed(f, 3));
    fx_free(f);
}

static void test_backfill_outside_reservation(void **state)
{
    (void)state;
    struct fx *f = fx_new(3, 8);
    add_run(f, 50, 0, 0x0F, 0, 0, 100000);
    add_run(f, 51, 1, 0x0F, 0, 0, 900000);
    add_run(f, 52, 2, 0xFF, 0, 0, 900000);
    add_job(f, 1, 8, 0);
    add_job(f, 2, 4, 1)->time_limit_ms = 800000; /* long, but node 1 is not reserved */
    plan_ok(f, "trainyard", 0);
    assert_int_equal(f->d.reservation.allocs[0].node_id, 100);
    assert_non_null(placed(f, 2));
    assert_int_equal(placed(f, 2)->allocs[0].node_id, 101);
    fx_free(f);
}

/* Behind a blocked head, the shortest time limit backfills first. */
static void test_backfill_shortest_limit_first(void **state)
{
    (void)state;
    struct fx *f = fx_new(2, 8);
    add_run(f, 50, 0, 0x0F, 0, 0, 100000);      /* node 0: 4 free now */
    add_run(f, 51, 1, 0xFF, 0, 0, 500000);      /* node 1: all busy */
    add_job(f, 1, 8, 0);                        /* head: blocked, reserves node 0 */
    add_job(f, 2, 4, 1)->time_limit_ms = 90000; /* older, fits before 100 s */
    add_job(f, 3, 4, 2)->time_limit_ms = 30000; /* newer, shorter: goes first */
    plan_ok(f, "trainyard", 0);
    assert_null(placed(f, 2));
    assert_non_null(placed(f, 3));
    fx_free(f);
}

/* fifo over a queue the caller keeps in submit order: same plan, and
 * sched_check holds the caller to the promise. */
static void test_fifo_in_submit_order(void **state)
{
    (void)state;
    struct fx *f = fx_new(2, 8);
    struct err e;
    add_job(f, 1, 4, 0);
    add_job(f, 2, 8, 1);
    add_job(f, 3, 1, 2)->gpus = 0; /* invalid: skipped, not blocking */
    add_job(f, 4, 4, 3);
    add_job(f, 5, 8, 4); /* does not fit: the head blocks */
    add_job(f, 6, 1, 5);
    f->q.in_submit_order = true;
    plan_ok(f, "fifo", 0);
    assert_int_equal(f->d.nplacements, 3);
    assert_non_null(placed(f, 1));
    assert_non_null(placed(f, 2));
    assert_non_null(placed(f, 4));
    assert_null(placed(f, 6));
    f->jobs[0].submit_ms = 10; /* job 1 now belongs after job 4 */
    err_init(&e);
    assert_int_equal(sched_check(&f->c, &f->q, 0, &f->d, &e), RC_EINVAL);
    assert_string_equal(e.field, "in_submit_order");
    fx_free(f);
}

static void test_fifo_no_backfill(void **state)
{
    (void)state;
    struct fx *f = fx_new(1, 8);
    add_run(f, 50, 0, 0x0F, 0, 0, 100000);
    add_job(f, 1, 8, 0);
    add_job(f, 2, 1, 1)->time_limit_ms = 1000;
    plan_ok(f, "fifo", 0);
    assert_int_equal(f->d.nplacements, 0);
    plan_ok(f, "trainyard", 0);
    assert_non_null(placed(f, 2));
    fx_free(f);
}

static void test_sjf_oracle_order(void **state)
{
    (void)state;
    struct fx *f = fx_new(1, 4);
    add_job(f, 1, 4, 0)->true_duration_ms = 9000;
    add_job(f, 2, 4, 5)->true_duration_ms = 10;
    plan_ok(f, "sjf-oracle", 0);
    assert_non_null(placed(f, 2));
    assert_int_equal(placed(f, 2)->end_by_ms, 10);
    fx_free(f);
}

static void test_las_preempts_served_job(void **state)
{
    (void)state;
    struct fx *f = fx_new(1, 4);
    struct sched_running *r = add_run(f, 50, 0, 0xF, 0, 0, SCHED_TIME_UNKNOWN);
    r->attained_gpu_ms = SCHED_LAS_THRESHOLD_GPU_MS + 1;
    add_job(f, 1, 4, 10);
    plan_ok(f, "tiresias-las", 10);
    assert_int_equal(f->d.npreemptions, 1);
    assert_int_equal(f->d.preemptions[0].reason, SCHED_PREEMPT_LAS);
    assert_non_null(placed(f, 1));
    /* the same job below the threshold keeps its GPUs (earlier submit) */
    r->attained_gpu_ms = 0;
    plan_ok(f, "tiresias-las", 10);
    assert_int_equal(f->d.npreemptions, 0);
    fx_free(f);
}

static void test_topology_switch_then_rack(void **state)
{
    (void)state;
    struct fx *f = fx_new(4, 8);
    const char *sw[4] = {"s1", "s2", "s3", "s3"};
    const char *rk[4] = {"r1", "r1", "r2", "r2"};
    for (int i = 0; i < 4; i++) {
        f->nodes[i].switch_name = sw[i];
        f->nodes[i].rack = rk[i];
    }
    add_job(f, 1, 16, 0);
    plan_ok(f, "trainyard", 0);
    const struct sched_placement *p = placed(f, 1);
    assert_int_equal(p->nallocs, 2);
    assert_true(p->allocs[0].node_id >= 102 && p->allocs[1].node_id >= 102);
    fx_free(f);
    f = fx_new(4, 8);
    const char *sw2[4] = {"s1", "s2", "s3", "s4"};
    const char *rk2[4] = {"r1", "r2", "r2", "r3"};
    for (int i = 0; i < 4; i++) {
        f->nodes[i].switch_name = sw2[i];
        f->nodes[i].rack = rk2[i];
    }
    add_job(f, 1, 16, 0);
    plan_ok(f, "trainyard", 0);
    p = placed(f, 1);
    int64_t a = p->allocs[0].node_id, b = p->allocs[1].node_id;
    assert_true((a == 101 && b == 102) || (a == 102 && b == 101));
    fx_free(f);
}

static void test_nvlink_peers(void **state)
{
    (void)state;
    struct fx *f = fx_new(1, 4);
    /* peers: {0,1} and {2,3} */
    f->nodes[0].nvlink_peers[0] = 0x2;
    f->nodes[0].nvlink_peers[1] = 0x1;
    f->nodes[0].nvlink_peers[2] = 0x8;
    f->nodes[0].nvlink_peers[3] = 0x4;
    f->nodes[0].free_mask = 0xD; /* 0, 2, 3 */
    add_job(f, 1, 2, 0);
    plan_ok(f, "trainyard", 0);
    assert_int_equal(placed(f, 1)->allocs[0].gpu_mask, 0xC);
    fx_free(f);
}

static void test_invalid_jobs_skipped(void **state)
{
    (void)state;
    struct fx *f = fx_new(2, 8);
    add_job(f, 1, 0, 0);
    add_job(f, 2, 2000, 0);
    add_job(f, 3, 6, 0)->gpus_per_node = 4;
    add_job(f, 4, 2, 0);
    plan_ok(f, "trainyard", 0);
    assert_int_equal(f->d.nskipped, 3);
    assert_non_null(placed(f, 4));
    assert_true(strstr(f->d.first_invalid.message, "job 1") != NULL);
    fx_free(f);
}

static void test_bad_snapshot(void **state)
{
    (void)state;
    struct fx *f = fx_new(2, 8);
    f->nodes[1].id = f->nodes[0].id;
    add_job(f, 1, 1, 0);
    assert_int_equal(sched_plan(NULL, &f->c, &f->q, 0, &f->d), RC_EINVAL);
    assert_int_equal(f->d.nplacements, 0);
    fx_free(f);
    f = fx_new(1, 8);
    f->nodes[0].ngpus = 65;
    assert_int_equal(sched_plan(NULL, &f->c, &f->q, 0, &f->d), RC_EINVAL);
    fx_free(f);
}

static void test_check_catches_violations(void **state)
{
    (void)state;
    struct fx *f = fx_new(2, 4);
    struct err e;
    struct sched_alloc a[2];
    struct sched_placement p = {1, a, 1, 3600000, 3600000};
    f->teams[0] = (struct sched_team){1, 4, 1.0};
    f->c.nteams = 1;
    add_run(f, 50, 1, 0x3, 1, 0, 100); /* within quota */
    add_job(f, 1, 2, 0);
    f->d.placements = &p;
    f->d.nplacements = 1;
    /* booked twice: GPUs of job 50 */
    a[0] = (struct sched_alloc){101, 0x3};
    assert_int_equal(sched_check(&f->c, &f->q, 0, &f->d, &e), RC_ECONFLICT);
    assert_true(strstr(e.message, "booked twice") != NULL);
    /* wrong size */
    a[0] = (struct sched_alloc){100, 0x7};
    assert_int_equal(sched_check(&f->c, &f->q, 0, &f->d, &e), RC_ECONFLICT);
    /* a draining node */
    a[0] = (struct sched_alloc){100, 0x3};
    f->nodes[0].state = SCHED_NODE_DRAINING;
    assert_int_equal(sched_check(&f->c, &f->q, 0, &f->d, &e), RC_ECONFLICT);
    assert_true(strstr(e.message, "not ready") != NULL);
    f->nodes[0].state = SCHED_NODE_READY;
    assert_int_equal(sched_check(&f->c, &f->q, 0, &f->d, &e), RC_OK);
    /* split over two nodes although it fits on one */
    a[0] = (struct sched_alloc){100, 0x1};
    a[1] = (struct sched_alloc){101, 0x4};
    p.nallocs = 2;
    assert_int_equal(sched_check(&f->c, &f->q, 0, &f->d, &e), RC_ECONFLICT);
    p.nallocs = 1;
    a[0] = (struct sched_alloc){100, 0x3};
    /* quota preemption of a job that is not borrowing */
    struct sched_preemption pr = {50, SCHED_PREEMPT_QUOTA, 1};
    f->d.preemptions = &pr;
    f->d.npreemptions = 1;
    assert_int_equal(sched_check(&f->c, &f->q, 0, &f->d, &e), RC_ECONFLICT);
    assert_true(strstr(e.message, "not borrowing") != NULL);
    f->d.preemptions = NULL;
    f->d.npreemptions = 0;
    /* a long job on reserved GPUs */
    struct sched_alloc ra = {100, 0xF};
    f->d.reservation = (struct sched_reservation){true, 2, 1000, &ra, 1, 1000};
    add_job(f, 2, 4, 0);
    assert_int_equal(sched_check(&f->c, &f->q, 0, &f->d, &e), RC_ECONFLICT);
    assert_true(strstr(e.message, "reserved") != NULL);
    memset(&f->d, 0, sizeof(f->d)); /* nothing owned */
    fx_free(f);
}

static void test_deterministic_any_input_order(void **state)
{
    (void)state;
    struct fx *f = fx_new(4, 8), *g = fx_new(4, 8);
    for (int i = 0; i < 40; i++) {
        add_job(f, i + 1, 1 + (i * 7) % 8, i % 5);
        f->jobs[i].team_id = i % 3;
    }
    for (int i = 0; i < 40; i++)
        g->jobs[i] = f->jobs[39 - i];
    g->q.njobs = 40;
    plan_ok(f, "trainyard", 0);
    plan_ok(g, "trainyard", 0);
    assert_int_equal(f->d.nplacements, g->d.nplacements);
    for (size_t i = 0; i < f->d.nplacements; i++) {
        assert_int_equal(f->d.placements[i].job_id, g->d.placements[i].job_id);
        assert_int_equal(f->d.placements[i].allocs[0].gpu_mask,
                         g->d.placements[i].allocs[0].gpu_mask);
    }
    fx_free(f);
    fx_free(g);
}

static int64_t node_site(const struct fx *f, int64_t node_id)
{
    for (size_t i = 0; i < f->c.nnodes; i++)
        if (f->nodes[i].id == node_id)
            return f->nodes[i].site;
    fail_msg("unknown node %lld", (long long)node_id);
    return -1;
}

/* Jobs run only on nodes of their site; "fits one node" means one node of the site. */
static void test_sites(void **state)
{
    (void)state;
    const char *pol[4] = {"fifo", "sjf-oracle", "trainyard", "tiresias-las"};
    for (int p = 0; p < 4; p++) {
        struct fx *f = fx_new(4, 4);
        f->nodes[0].site = f->nodes[1].site = 1; /* 2 x 4 GPUs */
        f->nodes[2].site = f->nodes[3].site = 2; /* 2 x 8 GPUs */
        for (int i = 2; i < 4; i++) {
            f->nodes[i].ngpus = 8;
            f->nodes[i].free_mask = full(8);
        }
        add_job(f, 1, 8, 0)->site = 2;
        add_job(f, 2, 8, 1)->site = 1;
        add_job(f, 4, 2, 2)->site = 0;
        add_job(f, 3, 1, 3)->site = 3; /* no node of site 3 */
        plan_ok(f, pol[p], 0);
        const struct sched_placement *a = placed(f, 1), *b = placed(f, 2);
        assert_non_null(a);
        assert_int_equal(a->nallocs, 1);
        assert_int_equal(node_site(f, a->allocs[0].node_id), 2);
        assert_non_null(b);
        assert_int_equal(b->nallocs, 2); /* no node of site 1 holds 8 */
        for (size_t k = 0; k < b->nallocs; k++)
            assert_int_equal(node_site(f, b->allocs[k].node_id), 1);
        assert_non_null(placed(f, 4));
        assert_null(placed(f, 3));
        fx_free(f);
    }
    /* a site's job waits for its site's GPUs even when others are free */
    struct fx *f = fx_new(2, 8);
    f->nodes[0].site = 1;
    f->nodes[1].site = 2;
    add_run(f, 50, 0, full(8), 0, 0, 1000);
    add_job(f, 1, 4, 0)->site = 1;
    plan_ok(f, "trainyard", 0);
    assert_null(placed(f, 1));
    assert_true(f->d.reservation.valid);
    assert_int_equal(f->d.reservation.allocs[0].node_id, 100);
    /* negative sites are refused (node) or skipped (job) */
    f->jobs[0].site = -1;
    plan_ok(f, "trainyard", 0);
    assert_int_equal(f->d.nskipped, 1);
    f->jobs[0].site = 1;
    f->nodes[1].site = -2;
    assert_int_equal(sched_plan(NULL, &f->c, &f->q, 0, &f->d), RC_EINVAL);
    fx_free(f);
}

static void test_check_catches_wrong_site(void **state)
{
    (void)state;
    struct fx *f = fx_new(2, 4);
    struct err e;
    struct sched_alloc a[2];
    struct sched_placement p = {1, a, 1, 3600000, 3600000};
    f->nodes[0].site = 1;
    f->nodes[1].site = 2;
    add_job(f, 1, 2, 0)->site = 1;
    f->d.placements = &p;
    f->d.nplacements = 1;
    a[0] = (struct sched_alloc){101, 0x3};
    err_init(&e);
    assert_int_equal(sched_check(&f->c, &f->q, 0, &f->d, &e), RC_ECONFLICT);
    assert_true(strstr(e.message, "site") != NULL);
    a[0] = (struct sched_alloc){100, 0x3};
    assert_int_equal(sched_check(&f->c, &f->q, 0, &f->d, &e), RC_OK);
    /* a node of site 0 takes any job; a job of site 0 any node */
    f->nodes[1].site = 0;
    a[0] = (struct sched_alloc){101, 0x3};
    assert_int_equal(sched_check(&f->c, &f->q, 0, &f->d, &e), RC_OK);
    f->nodes[1].site = 2;
    f->jobs[0].site = 0;
    assert_int_equal(sched_check(&f->c, &f->q, 0, &f->d, &e), RC_OK);
    /* 8 GPUs over the two 4-GPU nodes of site 1 is right although a node of
     * site 2 holds 8: "fits one node" is per site */
    f->nodes[1].site = 1;
    f->nodes[0].ngpus = f->nodes[1].ngpus = 4;
    f->nodes[0].free_mask = f->nodes[1].free_mask = full(4);
    f->nodes[2] = f->nodes[1];
    f->nodes[2].id = 102;
    f->nodes[2].site = 2;
    f->nodes[2].ngpus = 8;
    f->nodes[2].free_mask = full(8);
    f->c.nnodes = 3;
    f->jobs[0].site = 1;
    f->jobs[0].gpus = 8;
    a[0] = (struct sched_alloc){100, 0xF};
    a[1] = (struct sched_alloc){101, 0xF};
    p.nallocs = 2;
    assert_int_equal(sched_check(&f->c, &f->q, 0, &f->d, &e), RC_OK);
    f->jobs[0].site = 0; /* without a site it fits node 102: splitting is wrong */
    assert_int_equal(sched_check(&f->c, &f->q, 0, &f->d, &e), RC_ECONFLICT);
    memset(&f->d, 0, sizeof(f->d)); /* nothing owned */
    fx_free(f);
}

/* ---- randomized property test ---- */

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void random_fx(struct fx *f, uint64_t *s)
{
    static const char *labels[3] = {"a", "b", "c"};
    int nn = 1 + (int)(rnd(s) % 24);
    memset(f, 0, offsetof(struct fx, d));
    f->c.nodes = f->nodes;
    f->c.nnodes = (size_t)nn;
    f->c.teams = f->teams;
    f->c.running = f->run;
    f->q.jobs = f->jobs;
    int g0 = (int)(1 + rnd(s) % 8);
    for (int i = 0; i < nn; i++) {
        struct sched_node *n = &f->nodes[i];
        n->id = (int64_t)(rnd(s) % 4 == 0 ? 1000 - i : i);
        n->ngpus = rnd(s) % 5 == 0 ? (int)(rnd(s) % 17) : g0;
        n->state = rnd(s) % 8 == 0 ? (enum sched_node_state)(1 + rnd(s) % 2) : SCHED_NODE_READY;
        n->free_mask = full(n->ngpus);
        n->switch_name = rnd(s) % 3 ? labels[rnd(s) % 3] : NULL;
        n->rack = rnd(s) % 3 ? labels[rnd(s) % 3] : NULL;
        if (rnd(s) % 2)
            for (int k = 0; k < n->ngpus; k++)
                n->nvlink_peers[k] = rnd(s) & full(n->ngpus) & ~(1ULL << k);
    }
    f->c.nteams = rnd(s) % 4;
    for (size_t t = 0; t < f->c.nteams; t++)
        f->teams[t] = (struct sched_team){(int64_t)t, (int)(rnd(s) % 24), 0.5 + (double)t};
    int nr = (int)(rnd(s) % 20);
    for (int r = 0; r < nr; r++) {
        int n = (int)(rnd(s) % (uint64_t)nn);
        uint64_t m = f->nodes[n].free_mask & rnd(s);
        if (m == 0)
            continue;
        struct sched_running *rj =
            add_run(f, 10000 + r, n, m, (int64_t)(rnd(s) % 4), (int64_t)(rnd(s) % 100),
                    rnd(s) % 5 ? (int64_t)(rnd(s) % 5000) : SCHED_TIME_UNKNOWN);
        rj->preemptible = rnd(s) % 4 != 0;
        rj->attained_gpu_ms = (int64_t)(rnd(s) % (2 * SCHED_LAS_THRESHOLD_GPU_MS));
        if (rnd(s) % 3 == 0) { /* a second node */
            int n2 = (int)(rnd(s) % (uint64_t)nn);
            uint64_t m2 = f->nodes[n2].free_mask & rnd(s);
            if (n2 != n && m2) {
                f->ralloc[f->c.nrunning - 1][1] = (struct sched_alloc){f->nodes[n2].id, m2};
                f->nodes[n2].free_mask &= ~m2;
                rj->nallocs = 2;
                rj->gpus += __builtin_popcountll(m2);
            }
        }
    }
    int nj = (int)(rnd(s) % 60);
    for (int i = 0; i < nj; i++) {
        int g = rnd(s) % 6 == 0 ? (int)(1 + rnd(s) % 64) : (int)(1 + rnd(s) % 8);
        struct sched_job *j = add_job(f, i + 1, g, (int64_t)(rnd(s) % 50));
        j->team_id = (int64_t)(rnd(s) % 5);
        j->prio = (enum sched_prio)(rnd(s) % 3);
        if (rnd(s) % 4 == 0)
            j->gpus_per_node = (int)(1 + rnd(s) % 8);
        j->time_limit_ms = rnd(s) % 5 ? (int64_t)(1 + rnd(s) % 6000) : 0;
        j->true_duration_ms = (int64_t)(1 + rnd(s) % 6000);
        j->attained_gpu_ms = (int64_t)(rnd(s) % (2 * SCHED_LAS_THRESHOLD_GPU_MS));
    }
}

static void test_random_property(void **state)
{
    (void)state;
    const char *pol[4] = {"fifo", "sjf-oracle", "trainyard", "tiresias-las"};
    struct fx *f = fx_new(1, 1);
    int planned = 0;
    for (uint64_t seed = 1; seed <= 3000; seed++) {
        uint64_t s = seed;
        random_fx(f, &s);
        for (int p = 0; p < 4; p++) {
            struct err e;
            err_init(&e);
            enum rc rc = sched_plan(sched_policy_find(pol[p]), &f->c, &f->q, 50, &f->d);
            if (rc == RC_EINVAL)
                continue; /* duplicate node ids: refused, as documented */
            assert_int_equal(rc, RC_OK);
            planned++;
            if (sched_check(&f->c, &f->q, 50, &f->d, &e) != RC_OK)
                fail_msg("seed %llu policy %s: %s", (unsigned long long)seed, pol[p], e.message);
        }
    }
    assert_true(planned > 8000);
    fx_free(f);
}

/* The property test again with nodes and jobs spread over sites 0..3. */
static void test_random_sites(void **state)
{
    (void)state;
    const char *pol[4] = {"fifo", "sjf-oracle", "trainyard", "tiresias-las"};
    struct fx *f = fx_new(1, 1);
    int planned = 0, placed_site = 0;
    for (uint64_t seed = 1; seed <= 1500; seed++) {
        uint64_t s = seed, s2 = seed * 7919 + 1;
        random_fx(f, &s);
        for (size_t i = 0; i < f->c.nnodes; i++)
            f->nodes[i].site = (int64_t)(rnd(&s2) % 4);
        for (size_t i = 0; i < f->q.njobs; i++)
            f->jobs[i].site = (int64_t)(rnd(&s2) % 4);
        for (int p = 0; p < 4; p++) {
            struct err e;
            err_init(&e);
            enum rc rc = sched_plan(sched_policy_find(pol[p]), &f->c, &f->q, 50, &f->d);
            if (rc == RC_EINVAL)
                continue;
            assert_int_equal(rc, RC_OK);
            planned++;
            if (sched_check(&f->c, &f->q, 50, &f->d, &e) != RC_OK)
                fail_msg("seed %llu policy %s: %s", (unsigned long long)seed, pol[p], e.message);
            for (size_t k = 0; k < f->d.nplacements; k++)
                for (size_t i = 0; i < f->q.njobs; i++)
                    if (f->jobs[i].id == f->d.placements[k].job_id && f->jobs[i].site != 0)
                        placed_site++;
        }
    }
    assert_true(planned > 4000);
    assert_true(placed_site > 1000);
    fx_free(f);
}

/*
 * Predictions in the reservation never break the time-limit guarantee. Node
 * 100: job 1 holds 2 GPUs, expected to end at 1000, limit 5000; 2 GPUs free.
 * Node 101: job 2 holds all 4, expected 4000, limit 6000. The head (job 10,
 * 4 GPUs) gets node 100, expected free at 1000; by limits it is free at 5000,
 * the bound. Job 11 (2 GPUs, predicted 500, limit 4000) may backfill onto the
 * reserved GPUs: even if it runs to its limit the head starts by 5000. Job
 * 12 (predicted 500 too, limit 6000) may not: if it outlived its prediction
 * it would hold the head past 5000.
 */
static void test_prediction_keeps_limit_guarantee(void **state)
{
    (void)state;
    for (int variant = 0; variant < 2; variant++) {
        struct fx *f = fx_new(2, 4);
        add_run(f, 1, 0, 0x3, 0, 0, 5000)->expected_end_ms = 1000;
        add_run(f, 2, 1, 0xF, 0, 0, 6000)->expected_end_ms = 4000;
        add_job(f, 10, 4, 0);
        struct sched_job *j = add_job(f, 11 + variant, 2, 1);
        j->predicted_ms = 500;
        j->time_limit_ms = variant == 0 ? 4000 : 6000;
        plan_ok(f, "trainyard", 0);
        const struct sched_reservation *r = &f->d.reservation;
        assert_true(r->valid);
        assert_int_equal(r->job_id, 10);
        assert_int_equal(r->nallocs, 1);
        assert_int_equal(r->allocs[0].node_id, 100);
        assert_int_equal(r->start_ms, 1000);
        assert_int_equal(r->bound_ms, 5000);
        if (variant == 0) {
            const struct sched_placement *p = placed(f, 11);
            assert_non_null(p);
            assert_int_equal(p->expected_end_ms, 500);
            /* it outlives its prediction and runs to its limit: still by the bound */
            assert_true(p->end_by_ms <= r->bound_ms);
        } else {
            assert_null(placed(f, 12));
        }
        fx_free(f);
    }
}

/*
 * When the GPUs expected to free first would only be guaranteed later than
 * the time limits guarantee others, the limit-based GPUs are kept: node 100's
 * job is expected at 1000 but limited to 8000, node 101's expected at 5000
 * and limited to 6000. Without predictions the bound is the start.
 */
static void test_prediction_never_worse_than_limits(void **state)
{
    (void)state;
    struct fx *f = fx_new(2, 4);
    struct sched_running *a = add_run(f, 1, 0, 0xF, 0, 0, 8000);
    struct sched_running *b = add_run(f, 2, 1, 0xF, 0, 0, 6000);
    a->expected_end_ms = 1000;
    b->expected_end_ms = 5000;
    add_job(f, 10, 4, 0);
    plan_ok(f, "trainyard", 0);
    assert_true(f->d.reservation.valid);
    assert_int_equal(f->d.reservation.allocs[0].node_id, 101);
    assert_int_equal(f->d.reservation.start_ms, 6000);
    assert_int_equal(f->d.reservation.bound_ms, 6000);
    a->expected_end_ms = b->expected_end_ms = 0;
    plan_ok(f, "trainyard", 0);
    assert_int_equal(f->d.reservation.start_ms, 6000);
    assert_int_equal(f->d.reservation.bound_ms, 6000);
    fx_free(f);
}

/* sched_check catches a job on reserved GPUs whose limit ends after the bound,
 * even when its prediction ends before the reservation starts. */
static void test_check_catches_limit_past_bound(void **state)
{
    (void)state;
    struct fx *f = fx_new(2, 4);
    struct err e;
    add_run(f, 1, 0, 0x3, 0, 0, 5000)->expected_end_ms = 1000;
    add_run(f, 2, 1, 0xF, 0, 0, 6000)->expected_end_ms = 4000;
    add_job(f, 10, 4, 0);
    struct sched_job *j = add_job(f, 12, 2, 1);
    j->predicted_ms = 500;
    j->time_limit_ms = 6000;
    plan_ok(f, "trainyard", 0);
    assert_null(placed(f, 12));
    /* place job 12 by hand on the reserved, free GPUs 2-3 of node 100 */
    struct sched_alloc a = {100, 0xC};
    struct sched_placement p = {12, &a, 1, 6000, 500};
    f->d.placements = &p;
    f->d.nplacements = 1;
    err_init(&e);
    assert_int_equal(sched_check(&f->c, &f->q, 0, &f->d, &e), RC_ECONFLICT);
    assert_non_null(strstr(e.message, "reserved for job 10"));
    /* a bound that a running holder's limit does not keep is caught too */
    f->d.nplacements = 0;
    f->d.reservation.bound_ms = 4000;
    err_init(&e);
    assert_int_equal(sched_check(&f->c, &f->q, 0, &f->d, &e), RC_ECONFLICT);
    assert_non_null(strstr(e.message, "after the bound"));
    f->d.reservation.bound_ms = 500; /* before the start */
    assert_int_equal(sched_check(&f->c, &f->q, 0, &f->d, NULL), RC_ECONFLICT);
    f->d.placements = NULL; /* owned by the decisions again: nothing to free */
    fx_free(f);
}

/*
 * trainyard-spf: inside a team, shortest predicted first with aging (key
 * submit + run). Job 1 (submitted 0, predicted 5000) goes after job 2
 * (submitted 100, predicted 1000) but before job 3 (submitted 6000, 1 ms):
 * waiting ages it. trainyard keeps submit order.
 */
static void test_spf_order(void **state)
{
    (void)state;
    struct fx *f = fx_new(1, 1);
    add_run(f, 9, 0, 1, 0, 0, 100000);
    add_job(f, 1, 1, 0)->predicted_ms = 5000;
    add_job(f, 2, 1, 100)->predicted_ms = 1000;
    add_job(f, 3, 1, 6000)->predicted_ms = 1;
    plan_ok(f, "trainyard-spf", 7000);
    assert_int_equal(f->d.reservation.job_id, 2);
    f->jobs[1].predicted_ms = 0; /* no prediction: its limit, 1 h */
    plan_ok(f, "trainyard-spf", 7000);
    assert_int_equal(f->d.reservation.job_id, 1);
    f->jobs[0].submit_ms = 6500; /* now job 3 (6001) is ahead of job 1 (11500) */
    plan_ok(f, "trainyard-spf", 7000);
    assert_int_equal(f->d.reservation.job_id, 3);
    plan_ok(f, "trainyard", 7000);
    assert_int_equal(f->d.reservation.job_id, 2);
    fx_free(f);
}

/*
 * trainyard-qspf across teams, on one busy GPU (the first job in order is the
 * one reserved for). Teams 1 and 2 have no quota: the shortest predicted job
 * goes first whatever the shares (trainyard-spf: the team with the lower
 * share), and a long job submitted long enough before a short one of another
 * team still goes first (aging, SCHED_QSPF_AGING x its run).
 */
static void test_qspf_shortest_across_teams(void **state)
{
    (void)state;
    struct fx *f = fx_new(1, 1);
    f->teams[0] = (struct sched_team){1, 0, 1.0};
    f->teams[1] = (struct sched_team){2, 0, 1.0};
    f->c.nteams = 2;
    add_run(f, 9, 0, 1, 2, 0, 1000000)->preemptible = false; /* team 2 holds the GPU */
    struct sched_job *j1 = add_job(f, 1, 1, 0), *j2 = add_job(f, 2, 1, 100);
    j1->team_id = 1;
    j1->predicted_ms = 5000;
    j2->team_id = 2;
    j2->predicted_ms = 1000;
    plan_ok(f, "trainyard-spf", 7000);
    assert_int_equal(f->d.reservation.job_id, 1); /* team 1's share is lower */
    plan_ok(f, "trainyard-qspf", 7000);
    assert_int_equal(f->d.reservation.job_id, 2); /* 100 + 32 x 1000 < 0 + 32 x 5000 */
    j2->submit_ms = 130000;                       /* 130000 + 32000 > 160000: job 1 aged */
    plan_ok(f, "trainyard-qspf", 140000);
    assert_int_equal(f->d.reservation.job_id, 1);
    fx_free(f);
}

/*
 * trainyard-qspf: a team under quota goes before shorter jobs of teams that
 * are not, even with a higher share, and takes its quota back by preemption
 * (of a borrowing job only, which plan_ok's sched_check verifies); between
 * two teams under quota the lower share goes first, not the shorter job.
 */
static void test_qspf_quota_first(void **state)
{
    (void)state;
    /* two busy GPUs, nothing borrowing: team 1 (quota 2, share 1/2) is under quota for
     * its long job, team 2 (no quota, share 0) is not: team 1 first (trainyard-spf:
     * team 2, the lower share; shortest first alone: team 2 too) */
    struct fx *f = fx_new(1, 2);
    f->teams[0] = (struct sched_team){1, 2, 1.0};
    f->teams[1] = (struct sched_team){2, 0, 1.0};
    f->teams[2] = (struct sched_team){3, 1, 1.0};
    f->c.nteams = 3;
    add_run(f, 8, 0, 1, 1, 0, 100000);
    add_run(f, 9, 0, 2, 3, 0, 100000);
    struct sched_job *j1 = add_job(f, 1, 1, 0), *j2 = add_job(f, 2, 1, 0);
    j1->team_id = 1;
    j1->predicted_ms = 50000;
    j2->team_id = 2;
    j2->predicted_ms = 1000;
    plan_ok(f, "trainyard-qspf", 7000);
    assert_int_equal(f->d.reservation.job_id, 1);
    plan_ok(f, "trainyard-spf", 7000);
    assert_int_equal(f->d.reservation.job_id, 2);
    fx_free(f);

    /* under quota, it takes its GPU back from a borrowing job */
    f = fx_new(1, 1);
    f->teams[0] = (struct sched_team){1, 1, 1.0};
    f->teams[1] = (struct sched_team){2, 0, 1.0};
    f->c.nteams = 2;
    add_run(f, 9, 0, 1, 2, 0, 100000); /* team 2 borrows the only GPU */
    j1 = add_job(f, 1, 1, 0);
    j2 = add_job(f, 2, 1, 0);
    j1->team_id = 1;
    j1->predicted_ms = 50000; /* long, but under quota */
    j2->team_id = 2;
    j2->predicted_ms = 1000;
    plan_ok(f, "trainyard-qspf", 7000);
    assert_non_null(placed(f, 1));
    assert_null(placed(f, 2));
    assert_int_equal(f->d.npreemptions, 1);
    assert_int_equal(f->d.preemptions[0].job_id, 9);
    assert_int_equal(f->d.preemptions[0].reason, SCHED_PREEMPT_QUOTA);
    fx_free(f);

    /* both under quota, nothing borrowing: team 2 (share 0) before team 1 (share 1/2) */
    f = fx_new(1, 2);
    f->teams[0] = (struct sched_team){1, 2, 1.0};
    f->teams[1] = (struct sched_team){2, 2, 1.0};
    f->teams[2] = (struct sched_team){3, 1, 1.0};
    f->c.nteams = 3;
    add_run(f, 8, 0, 1, 1, 0, 100000);
    add_run(f, 9, 0, 2, 3, 0, 100000);
    j1 = add_job(f, 1, 1, 0);
    j2 = add_job(f, 2, 1, 0);
    j1->team_id = 1;
    j1->predicted_ms = 1000;
    j2->team_id = 2;
    j2->predicted_ms = 50000;
    plan_ok(f, "trainyard-qspf", 7000);
    assert_int_equal(f->d.npreemptions, 0);
    assert_int_equal(f->d.reservation.job_id, 2);
    fx_free(f);
}

/* The per-job key and the cross-team rule, as sched_int.h states them for the forecast. */
static void test_order_key_and_pick(void **state)
{
    (void)state;
    const struct sched_policy *ty = sched_policy_find("trainyard"),
                              *spf = sched_policy_find("trainyard-spf"),
                              *q = sched_policy_find("trainyard-qspf");
    struct sched_job j = {.id = 1, .gpus = 1, .submit_ms = 1000, .time_limit_ms = 7000};
    assert_int_equal(sched_job_order_key(ty, &j), 1000);
    assert_int_equal(sched_job_order_key(spf, &j), 1000 + SCHED_SPF_AGING * 7000);
    assert_int_equal(sched_job_order_key(q, &j), 1000 + SCHED_QSPF_AGING * 7000);
    j.predicted_ms = 300;
    assert_int_equal(sched_job_order_key(q, &j), 1000 + SCHED_QSPF_AGING * 300);
    j.predicted_ms = 0;
    j.time_limit_ms = 0; /* neither: 1 h */
    assert_int_equal(sched_job_order_key(q, &j), 1000 + SCHED_QSPF_AGING * 3600000LL);
    j.predicted_ms = INT64_MAX; /* clamped, no overflow */
    j.submit_ms = INT64_MAX;
    assert_true(sched_job_order_key(q, &j) <= INT64_MAX / 2);

    struct sched_pick under = {0.5, true, 900, 0, 1}, over = {0.1, false, 100, 0, 2};
    assert_true(sched_pick_before(q, &under, &over)); /* under quota first */
    assert_false(sched_pick_before(q, &over, &under));
    assert_true(sched_pick_before(spf, &over, &under)); /* fair share: lower share */
    struct sched_pick o2 = {0.0, false, 200, 0, 3};
    assert_true(sched_pick_before(q, &over, &o2)); /* not under: key, shares ignored */
    struct sched_pick u2 = {0.2, true, 5000, 0, 4};
    assert_true(sched_pick_before(q, &u2, &under)); /* both under: share before key */
    struct sched_pick u3 = {0.2, true, 5000, 0, 5};
    assert_true(sched_pick_before(q, &u2, &u3)); /* then id */
    assert_false(sched_pick_before(q, &u3, &u2));
}

/* The property test with predicted run times and expected ends, every policy. */
static void test_random_predictions(void **state)
{
    (void)state;
    const char *const *pol = sched_policy_names();
    struct fx *f = fx_new(1, 1);
    int planned = 0, wider = 0;
    for (uint64_t seed = 1; seed <= 1500; seed++) {
        uint64_t s = seed, s2 = seed * 104729 + 7;
        random_fx(f, &s);
        for (size_t i = 0; i < f->q.njobs; i++)
            f->jobs[i].predicted_ms = rnd(&s2) % 3 ? (int64_t)(1 + rnd(&s2) % 6000) : 0;
        for (size_t r = 0; r < f->c.nrunning; r++)
            f->run[r].expected_end_ms = rnd(&s2) % 3 ? (int64_t)(rnd(&s2) % 5000) : 0;
        for (int p = 0; pol[p]; p++) {
            struct err e;
            err_init(&e);
            enum rc rc = sched_plan(sched_policy_find(pol[p]), &f->c, &f->q, 50, &f->d);
            if (rc == RC_EINVAL)
                continue;
            assert_int_equal(rc, RC_OK);
            planned++;
            if (f->d.reservation.valid && f->d.reservation.bound_ms > f->d.reservation.start_ms)
                wider++;
            if (sched_check(&f->c, &f->q, 50, &f->d, &e) != RC_OK)
                fail_msg("seed %llu policy %s: %s", (unsigned long long)seed, pol[p], e.message);
        }
    }
    assert_true(planned > 5000);
    assert_true(wider > 0); /* predictions did move some reservations ahead of their bound */
    fx_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy_find),
        cmocka_unit_test(test_single_node_best_fit),
        cmocka_unit_test(test_gang_all_or_nothing),
        cmocka_unit_test(test_multi_node_fewest),
        cmocka_unit_test(test_gpus_per_node),
        cmocka_unit_test(test_large_gang_1024),
        cmocka_unit_test(test_no_draining_or_down),
        cmocka_unit_test(test_priority_first),
        cmocka_unit_test(test_fair_share_then_submit),
        cmocka_unit_test(test_quota_preempts_newest_borrower),
        cmocka_unit_test(test_quota_never_preempts_within_quota),
        cmocka_unit_test(test_reservation_and_backfill),
        cmocka_unit_test(test_backfill_outside_reservation),
        cmocka_unit_test(test_backfill_shortest_limit_first),
        cmocka_unit_test(test_fifo_no_backfill),
        cmocka_unit_test(test_fifo_in_submit_order),
        cmocka_unit_test(test_sjf_oracle_order),
        cmocka_unit_test(test_las_preempts_served_job),
        cmocka_unit_test(test_topology_switch_then_rack),
        cmocka_unit_test(test_nvlink_peers),
        cmocka_unit_test(test_invalid_jobs_skipped),
        cmocka_unit_test(test_bad_snapshot),
        cmocka_unit_test(test_check_catches_violations),
        cmocka_unit_test(test_deterministic_any_input_order),
        cmocka_unit_test(test_random_property),
        cmocka_unit_test(test_sites),
        cmocka_unit_test(test_check_catches_wrong_site),
        cmocka_unit_test(test_random_sites),
        cmocka_unit_test(test_prediction_keeps_limit_guarantee),
        cmocka_unit_test(test_prediction_never_worse_than_limits),
        cmocka_unit_test(test_check_catches_limit_past_bound),
        cmocka_unit_test(test_spf_order),
        cmocka_unit_test(test_qspf_shortest_across_teams),
        cmocka_unit_test(test_qspf_quota_first),
        cmocka_unit_test(test_order_key_and_pick),
        cmocka_unit_test(test_random_predictions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
