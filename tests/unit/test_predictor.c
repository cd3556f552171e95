/*
 * test_predictor.c - the runtime predictor (predictor/predictor.h): quantiles, the key
 * fallbacks (exact, template, user, team, time limit, none), the bounded
 * history per key, bad options, and that an online replay which observes
 * jobs only when they finish never reads a job's own (future) duration: a
 * trace whose future jobs are poisoned gives the same predictions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "predictor.h"

static struct pred_state *mk(double q, size_t min, size_t max)
{
    struct pred_opts o = {q, min, max, 0};
    struct pred_state *p = NULL;
    assert_int_equal(pred_new(&o, &p), RC_OK);
    assert_non_null(p);
    return p;
}

static void obs(struct pred_state *p, const struct pred_key *k, int64_t ms)
{
    assert_int_equal(pred_observe(p, k, ms), RC_OK);
}

static void test_quantiles(void **state)
{
    (void)state;
    struct pred_key k = {"tpl", "python train.py", 1, 7, 8};
    struct pred_state *med = mk(0, 0, 0), *p90 = mk(0.9, 1, 0);
    enum pred_source src;
    for (int i = 10; i >= 1; i--) { /* 10..1 minutes, out of order */
        obs(med, &k, i * 60000);
        obs(p90, &k, i * 60000);
    }
    assert_int_equal(pred_predict(med, &k, 0, &src), 5 * 60000); /* nearest rank ceil(0.5*10) */
    assert_int_equal(src, PRED_EXACT);
    assert_int_equal(pred_predict(p90, &k, 0, NULL), 9 * 60000);
    assert_int_equal(pred_observed(med), 10);
    pred_free(med);
    pred_free(p90);
}

/* Most specific key with enough runs first, then coarser ones, then the limit. */
static void test_fallbacks(void **state)
{
    (void)state;
    struct pred_state *p = mk(0.5, 2, 0);
    struct pred_key a = {"tpl", "cmd a", 1, 7, 8};
    enum pred_source src;

    assert_int_equal(pred_predict(p, &a, 0, &src), 0);
    assert_int_equal(src, PRED_NONE);
    assert_int_equal(pred_predict(p, &a, 3600000, &src), 3600000);
    assert_int_equal(src, PRED_TIME_LIMIT);
    obs(p, &a, 100);
    /* one run is below min_samples everywhere */
    assert_int_equal(pred_predict(p, &a, 5, &src), 5);
    assert_int_equal(src, PRED_TIME_LIMIT);
    obs(p, &a, 100);
    assert_int_equal(pred_predict(p, &a, 5, &src), 100);
    assert_int_equal(src, PRED_EXACT);
    /* same template and GPUs, another user and command: template */
    struct pred_key b = {"tpl", "cmd b", 2, 9, 8};
    assert_int_equal(pred_predict(p, &b, 5, &src), 100);
    assert_int_equal(src, PRED_TEMPLATE);
    /* no template, same user and command, other GPUs: user */
    struct pred_key c = {NULL, "cmd a", 3, 7, 1};
    assert_int_equal(pred_predict(p, &c, 5, &src), 100);
    assert_int_equal(src, PRED_USER);
    /* an empty template is no template: the same team and GPUs */
    struct pred_key d = {"", "other", 1, 8, 8};
    assert_int_equal(pred_predict(p, &d, 5, &src), 100);
    assert_int_equal(src, PRED_TEAM);
    /* nothing shared */
    struct pred_key e = {"x", "y", 4, 4, 4};
    assert_int_equal(pred_predict(p, &e, 0, &src), 0);
    assert_int_equal(src, PRED_NONE);
    /* the exact key wins over the coarser ones once it has runs */
    obs(p, &b, 900);
    obs(p, &b, 900);
    assert_int_equal(pred_predict(p, &b, 5, &src), 900);
    assert_int_equal(src, PRED_EXACT);
    assert_int_equal(pred_predict(NULL, &a, 7, &src), 7);
    pred_free(p);
    /* a skipped key is not consulted: the team's runs do not answer, the limit does */
    struct pred_opts o = {0.5, 1, 0, 1u << PRED_TEAM};
    assert_int_equal(pred_new(&o, &p), RC_OK);
    obs(p, &a, 100);
    assert_int_equal(pred_predict(p, &d, 5, &src), 5);
    assert_int_equal(src, PRED_TIME_LIMIT);
    assert_int_equal(pred_predict(p, &a, 5, &src), 100);
    assert_int_equal(src, PRED_EXACT);
    pred_free(p);
}

/* A key keeps its newest max_per_key runs only. */
static void test_bounded_history(void **state)
{
    (void)state;
    struct pred_state *p = mk(0.5, 1, 4);
    struct pred_key k = {NULL, NULL, 1, 1, 1};
    for (int i = 0; i < 100; i++)
        obs(p, &k, 1000000 + i);
    obs(p, &k, 5);
    obs(p, &k, 5);
    obs(p, &k, 5);
    /* runs kept: 1000099, 5, 5, 5 -> median (rank 2) is 5 */
    assert_int_equal(pred_predict(p, &k, 0, NULL), 5);
    /* many keys: the table grows */
    for (int i = 0; i < 5000; i++) {
        struct pred_key m = {NULL, NULL, i, i, i % 9};
        obs(p, &m, 1 + i);
    }
    struct pred_key m = {NULL, NULL, 4321, 4321, 4321 % 9};
    assert_int_equal(pred_predict(p, &m, 0, NULL), 4322);
    pred_free(p);
}

static void test_bad_options(void **state)
{
    (void)state;
    struct pred_state *p = (struct pred_state *)&p;
    struct pred_opts o = {1.0, 0, 0, 0};
    assert_int_equal(pred_new(&o, &p), RC_EINVAL);
    assert_null(p);
    o.quantile = -0.1;
    assert_int_equal(pred_new(&o, &p), RC_EINVAL);
    o.quantile = 0.5;
    o.max_per_key = PRED_MAX_PER_KEY + 1;
    assert_int_equal(pred_new(&o, &p), RC_EINVAL);
    o.max_per_key = 2;
    o.min_samples = 3;
    assert_int_equal(pred_new(&o, &p), RC_EINVAL);
    assert_int_equal(pred_new(NULL, NULL), RC_EINVAL);
    assert_int_equal(pred_new(NULL, &p), RC_OK);
    struct pred_key k = {NULL, NULL, 1, 1, 1};
    assert_int_equal(pred_observe(p, &k, 0), RC_EINVAL);
    assert_int_equal(pred_observe(p, NULL, 5), RC_EINVAL);
    assert_int_equal(pred_observe(NULL, &k, 5), RC_EINVAL);
    assert_int_equal(pred_observed(p), 0);
    assert_string_equal(pred_source_name(PRED_TIME_LIMIT), "time_limit");
    assert_string_equal(pred_source_name(PRED_TEMPLATE), "template");
    assert_string_equal(pred_source_name((enum pred_source)42), "unknown");
    pred_free(p);
    pred_free(NULL);
}

/* ---- online replay with poisoned futures ---- */

#define NT 200

struct tj {
    int64_t submit, start, dur; /* start: when the replay ran it (a serial queue per GPU count) */
    struct pred_key k;
};

static const char *cmds[4] = {"train a", "train b", "eval", "sweep"};

static void make_trace(struct tj *t)
{
    uint64_t s = 12345;
    int64_t free_at[3] = {0, 0, 0}; /* three lanes, like a tiny cluster */
    for (int i = 0; i < NT; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        t[i].submit = i * 1000;
        t[i].dur = 500 + (int64_t)((s >> 33) % 5000);
        t[i].k = (struct pred_key){i % 3 ? "tpl" : NULL, cmds[(s >> 20) % 4], (s >> 10) % 2,
                                   (s >> 12) % 3, 1 + (int)((s >> 14) % 2)};
        int lane = i % 3;
        t[i].start = t[i].submit > free_at[lane] ? t[i].submit : free_at[lane];
        free_at[lane] = t[i].start + t[i].dur;
    }
}

/*
 * The replay the simulator does: events in time order, a finish observed
 * before a submit at the same time; at each submit, predict.
 */
static void replay(const struct tj *t, int64_t *pred)
{
    struct pred_state *p = mk(0.5, 2, 8);
    unsigned char done[NT] = {0};
    for (int i = 0; i < NT; i++) {
        for (;;) { /* observe every job finished by this submit, earliest first */
            int best = -1;
            for (int k = 0; k < NT; k++)
                if (!done[k] && t[k].start + t[k].dur <= t[i].submit &&
                    (best < 0 || t[k].start + t[k].dur < t[best].start + t[best].dur))
                    best = k;
            if (best < 0)
                break;
            done[best] = 1;
            obs(p, &t[best].k, t[best].dur);
        }
        pred[i] = pred_predict(p, &t[i].k, 3600000, NULL);
    }
    pred_free(p);
}

static void test_poisoned_future(void **state)
{
    (void)state;
    static struct tj t[NT], u[NT];
    int64_t a[NT], b[NT];
    make_trace(t);
    replay(t, a);
    int64_t cut = t[NT / 2].submit;
    /* poison every job that has not finished by the cut: its duration (but not
     * its end, which the replay's clock saw) is garbage the predictor would show */
    memcpy(u, t, sizeof(t));
    for (int i = 0; i < NT; i++)
        if (u[i].start + u[i].dur > cut) {
            int64_t end = u[i].start + u[i].dur;
            u[i].dur = 987654321;
            u[i].start = end - u[i].dur;
        }
    replay(u, b);
    size_t changed = 0;
    for (int i = 0; i < NT; i++) {
        if (t[i].submit <= cut)
            assert_int_equal(a[i], b[i]);
        else if (a[i] != b[i])
            changed++;
    }
    /* the poison does show after it is observed: the test can fail */
    assert_true(changed > 0);
    for (int i = 0; i < NT; i++)
        assert_true(b[i] != 987654321 || t[i].submit > cut);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantiles),       cmocka_unit_test(test_fallbacks),
        cmocka_unit_test(test_bounded_history), cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_poisoned_future),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
