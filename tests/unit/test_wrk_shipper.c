/*
 * test_wrk_shipper.c - the output shipper against a fake post function:
 * report order, metric/checkpoint extraction, batching, dropping the oldest
 * lines (never checkpoints or reports, metric lines only after every plain
 * line) while the server is down, and the UTF-8 cleaning of rank output.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "shipper.h"

#define MAXP 256

struct fake {
    pthread_mutex_t mu;
    int n;
    char path[MAXP][128];
    json_t *body[MAXP];
    atomic_int fail; /* answer 503 while set */
    int refused;     /* posts answered 503 while fail was set, under mu */
    pthread_cond_t refused_cv;
    atomic_int refuse;        /* answer 400 to this many output posts */
    atomic_int fail_n;        /* answer 503 to this many posts */
    atomic_int posts_refused; /* output posts answered 400 */
};

static struct fake F;

static enum rc fake_post(void *ctx, const char *path, const json_t *body, long *status)
{
    (void)ctx;
    if (atomic_load(&F.fail)) {
        pthread_mutex_lock(&F.mu);
        F.refused++;
        pthread_cond_broadcast(&F.refused_cv);
        pthread_mutex_unlock(&F.mu);
        *status = 503;
        return RC_OK;
    }
    if (atomic_load(&F.fail_n) > 0) {
        atomic_fetch_sub(&F.fail_n, 1);
        *status = 503;
        return RC_OK;
    }
    if (strstr(path, "/output") != NULL && atomic_load(&F.refuse) > 0) {
        atomic_fetch_sub(&F.refuse, 1);
        atomic_fetch_add(&F.posts_refused, 1);
        *status = 400;
        return RC_OK;
    }
    pthread_mutex_lock(&F.mu);
    if (F.n < MAXP) {
        snprintf(F.path[F.n], sizeof(F.path[0]), "%s", path);
        F.body[F.n] = json_deep_copy(body);
        F.n++;
    }
    pthread_mutex_unlock(&F.mu);
    *status = 200;
    return RC_OK;
}

static int setup(void **state)
{
    (void)state;
    memset(&F, 0, sizeof(F));
    pthread_mutex_init(&F.mu, NULL);
    pthread_cond_init(&F.refused_cv, NULL);
    atomic_init(&F.fail, 0);
    atomic_init(&F.refuse, 0);
    atomic_init(&F.fail_n, 0);
    atomic_init(&F.posts_refused, 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < F.n; i++)
        json_decref(F.body[i]);
    pthread_mutex_destroy(&F.mu);
    pthread_cond_destroy(&F.refused_cv);
    return 0;
}

/* 1 once the shipper has had a post refused (it tried while the server was
 * down), 0 if that never happens within a bound that only catches a hang. */
static int wait_refused(void)
{
    struct timespec until;
    int ok;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    pthread_mutex_lock(&F.mu);
    while (F.refused == 0 && pthread_cond_timedwait(&F.refused_cv, &F.mu, &until) == 0)
        ;
    ok = F.refused > 0;
    pthread_mutex_unlock(&F.mu);
    return ok;
}

static void line(struct wrk_shipper *s, const char *id, uint64_t seq, const char *text)
{
    wrk_shipper_line(s, id, 0, "stdout", seq, 1764400000000 + (int64_t)seq, text, strlen(text));
}

static void test_order_and_parse(void **state)
{
    struct wrk_shipper_opts o = {fake_post, NULL, 0, 0, 50};
    struct wrk_shipper *s = NULL;
    struct wrk_exit_report r;
    pid_t pids[2] = {4242, 4243};
    json_t *b;
    (void)state;

    assert_int_equal(wrk_shipper_new(&o, &s), RC_OK);
    wrk_shipper_started(s, "31", 0, pids, 2);
    line(s, "31", 0, "hello\n");
    line(s, "31", 1, "TRAINYARD_METRIC {\"step\":120,\"loss\":0.41}\n");
    line(s, "31", 2, "TRAINYARD_CHECKPOINT {\"step\":120,\"path\":\"/c/step-120.pt\"}\n");
    wrk_shipper_line(s, "31", 1, "stderr", 0, 1, "bad \xff\n", 6);
    memset(&r, 0, sizeof(r));
    snprintf(r.attempt_id, sizeof(r.attempt_id), "31");
    r.nranks = 2;
    r.ranks[1].rank = 1;
    r.ranks[1].exit_code = 1;
    snprintf(r.reason, sizeof(r.reason), "rank 1 exited with 1");
    wrk_shipper_exit(s, &r);
    wrk_shipper_free(s, 5000);

    assert_int_equal(F.n, 3);
    assert_string_equal(F.path[0], "/api/v1/agent/attempts/31/started");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(F.body[0], "pids"), 1)),
                     4243);
    assert_string_equal(F.path[1], "/api/v1/agent/attempts/31/output");
    b = F.body[1];
    assert_int_equal(json_array_size(json_object_get(b, "logs")), 4);
    assert_int_equal(json_array_size(json_object_get(b, "metrics")), 1);
    assert_int_equal(json_array_size(json_object_get(b, "checkpoints")), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(b, "checkpoints"), 0), "path")),
                        "/c/step-120.pt");
    assert_true(json_real_value(json_object_get(
                    json_object_get(json_array_get(json_object_get(b, "metrics"), 0), "values"),
                    "loss")) == 0.41);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(b, "logs"), 3), "text")),
        "bad \xEF\xBF\xBD\n");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(b, "logs"), 3), "stream")),
        "stderr");
    assert_null(json_object_get(b, "dropped_logs"));
    assert_string_equal(F.path[2], "/api/v1/agent/attempts/31/exit");
    assert_string_equal(json_string_value(json_object_get(F.body[2], "reason")),
                        "rank 1 exited with 1");
    assert_int_equal(json_integer_value(json_object_get(
                         json_array_get(json_object_get(F.body[2], "ranks"), 1), "exit_code")),
                     1);
    assert_null(json_object_get(F.body[2], "failure")); /* an ordinary failure */
}

/* A deterministic cause goes out as "failure" next to the exit codes. */
static void test_exit_failure(void **state)
{
    struct wrk_shipper_opts o = {fake_post, NULL, 0, 0, 50};
    struct wrk_shipper *s = NULL;
    struct wrk_exit_report r;
    const json_t *f;
    (void)state;

    assert_int_equal(wrk_shipper_new(&o, &s), RC_OK);
    memset(&r, 0, sizeof(r));
    snprintf(r.attempt_id, sizeof(r.attempt_id), "32");
    r.nranks = 1;
    r.ranks[0].exit_code = -1;
    snprintf(r.reason, sizeof(r.reason), "cannot start the command: No such file or directory");
    snprintf(r.failure, sizeof(r.failure), "%s", WRK_CAUSE_EXEC_FAILED);
    snprintf(r.failure_detail, sizeof(r.failure_detail), "/nonexistent/prog: No such file");
    wrk_shipper_exit(s, &r);
    wrk_shipper_free(s, 5000);

    assert_int_equal(F.n, 1);
    assert_string_equal(F.path[0], "/api/v1/agent/attempts/32/exit");
    f = json_object_get(F.body[0], "failure");
    assert_true(json_is_object(f));
    assert_int_equal(json_object_size(f), 2);
    assert_string_equal(json_string_value(json_object_get(f, "code")), "exec_failed");
    assert_string_equal(json_string_value(json_object_get(f, "detail")),
                        "/nonexistent/prog: No such file");
    assert_string_equal(json_string_value(json_object_get(F.body[0], "reason")),
                        "cannot start the command: No such file or directory");
}

static void test_drop_oldest(void **state)
{
    struct wrk_shipper_opts o = {fake_post, NULL, 0, 10, 20};
    struct wrk_shipper *s = NULL;
    int logs = 0, ckpts = 0, exits = 0;
    json_int_t dropped = 0, last_seq = -1;
    struct wrk_exit_report r;
    (void)state;

    atomic_store(&F.fail, 1);
    assert_int_equal(wrk_shipper_new(&o, &s), RC_OK);
    line(s, "9", 0, "TRAINYARD_CHECKPOINT {\"step\":1,\"path\":\"/c/1\"}\n");
    for (uint64_t i = 1; i < 200; i++) {
        char t[32];
        snprintf(t, sizeof(t), "line %d\n", (int)i);
        line(s, "9", i, t); /* never blocks although nothing is sent */
    }
    memset(&r, 0, sizeof(r));
    snprintf(r.attempt_id, sizeof(r.attempt_id), "9");
    wrk_shipper_exit(s, &r);
    assert_true(wrk_shipper_dropped(s) >= 180);
    assert_true(wait_refused()); /* the shipper tried while the server was down */
    atomic_store(&F.fail, 0);
    wrk_shipper_free(s, 5000);

    for (int i = 0; i < F.n; i++) {
        json_t *b = F.body[i];
        if (strstr(F.path[i], "/exit") != NULL) {
            exits++;
            assert_int_equal(i, F.n - 1); /* after every line */
            continue;
        }
        dropped += json_integer_value(json_object_get(b, "dropped_logs"));
        logs += (int)json_array_size(json_object_get(b, "logs"));
        ckpts += (int)json_array_size(json_object_get(b, "checkpoints"));
        for (size_t j = 0; j < json_array_size(json_object_get(b, "logs")); j++) {
            json_int_t seq = json_integer_value(
                json_object_get(json_array_get(json_object_get(b, "logs"), j), "seq"));
            assert_true(seq > last_seq || seq == 0); /* kept lines stay in order */
            last_seq = seq;
        }
    }
    assert_int_equal(exits, 1);
    assert_int_equal(ckpts, 1);           /* the checkpoint line survived */
    assert_true(logs <= 20 && logs >= 2); /* queue + one batch in flight */
    assert_int_equal(dropped + logs, 200);
}

/* Totals over everything posted for lines: logs, metrics, dropped_logs. */
static void posted_totals(int *logs, int *metrics, json_int_t *dropped, json_int_t *min_metric_step)
{
    *logs = *metrics = 0;
    *dropped = 0;
    *min_metric_step = -1;
    for (int i = 0; i < F.n; i++) {
        json_t *b = F.body[i], *m = json_object_get(b, "metrics");
        if (strstr(F.path[i], "/output") == NULL)
            continue;
        *dropped += json_integer_value(json_object_get(b, "dropped_logs"));
        *logs += (int)json_array_size(json_object_get(b, "logs"));
        *metrics += (int)json_array_size(m);
        for (size_t j = 0; j < json_array_size(m); j++) {
            json_int_t step = json_integer_value(json_object_get(json_array_get(m, j), "step"));
            if (*min_metric_step < 0 || step < *min_metric_step)
                *min_metric_step = step;
        }
    }
}

/* Wait until the shipper has set n bodies aside, within a bound that only
 * catches a hang. */
static void wait_set_aside(struct wrk_shipper *s, uint64_t n)
{
    struct timespec ts = {0, 1000000L};
    for (int i = 0; i < 60000 && wrk_shipper_refused(s) < n; i++)
        nanosleep(&ts, NULL);
    assert_int_equal(wrk_shipper_refused(s), n);
}

/* A batch the server refuses for good (400) is set aside: its lines are
 * counted as dropped and reported by the attempt's next batch, and the
 * lines and the exit report queued after it still go. */
static void test_refused_batch_set_aside(void **state)
{
    struct wrk_shipper_opts o = {fake_post, NULL, 0, 0, 20};
    struct wrk_shipper *s = NULL;
    struct wrk_exit_report r;
    int logs = 0, metrics = 0;
    json_int_t dropped = 0, min_step = -1, max_seq = -1;
    uint64_t lost;
    (void)state;

    atomic_store(&F.refuse, 1);
    assert_int_equal(wrk_shipper_new(&o, &s), RC_OK);
    for (uint64_t i = 0; i < 5; i++)
        line(s, "7", i, "before\n");
    wait_set_aside(s, 1);
    lost = wrk_shipper_dropped(s);
    assert_true(lost >= 1 && lost <= 5); /* the refused batch: some of the five */
    for (uint64_t i = 5; i < 8; i++)
        line(s, "7", i, "after\n");
    memset(&r, 0, sizeof(r));
    snprintf(r.attempt_id, sizeof(r.attempt_id), "7");
    wrk_shipper_exit(s, &r);
    wrk_shipper_free(s, 5000);

    assert_int_equal(atomic_load(&F.posts_refused), 1);
    posted_totals(&logs, &metrics, &dropped, &min_step);
    assert_int_equal(dropped, (json_int_t)lost); /* reported, not silently lost */
    assert_int_equal(logs + dropped, 8);
    for (int i = 0; i < F.n; i++)
        for (size_t j = 0; j < json_array_size(json_object_get(F.body[i], "logs")); j++) {
            json_int_t seq = json_integer_value(
                json_object_get(json_array_get(json_object_get(F.body[i], "logs"), j), "seq"));
            max_seq = seq > max_seq ? seq : max_seq;
        }
    assert_int_equal(max_seq, 7); /* the later lines arrived */
    assert_non_null(strstr(F.path[F.n - 1], "/exit"));
}

/* A 5xx is not final: the batch is posted again until it is taken. */
static void test_5xx_retried(void **state)
{
    struct wrk_shipper_opts o = {fake_post, NULL, 0, 0, 20};
    struct wrk_shipper *s = NULL;
    int logs = 0, metrics = 0;
    json_int_t dropped = 0, min_step = -1;
    (void)state;

    atomic_store(&F.fail_n, 3);
    assert_int_equal(wrk_shipper_new(&o, &s), RC_OK);
    for (uint64_t i = 0; i < 4; i++)
        line(s, "8", i, "x\n");
    wrk_shipper_free(s, 10000);
    posted_totals(&logs, &metrics, &dropped, &min_step);
    assert_int_equal(logs, 4);
    assert_int_equal(dropped, 0);
    assert_int_equal(atomic_load(&F.fail_n), 0);
}

/* The exit report's reason is valid UTF-8 whatever the node put in it. */
static void test_exit_reason_cleaned(void **state)
{
    struct wrk_shipper_opts o = {fake_post, NULL, 0, 0, 20};
    struct wrk_shipper *s = NULL;
    struct wrk_exit_report r;
    (void)state;

    assert_int_equal(wrk_shipper_new(&o, &s), RC_OK);
    memset(&r, 0, sizeof(r));
    snprintf(r.attempt_id, sizeof(r.attempt_id), "6");
    snprintf(r.reason, sizeof(r.reason), "bad \xE4\xB8 byte");
    wrk_shipper_exit(s, &r);
    wrk_shipper_free(s, 5000);
    assert_int_equal(F.n, 1);
    assert_string_equal(json_string_value(json_object_get(F.body[0], "reason")),
                        "bad \xEF\xBF\xBD\xEF\xBF\xBD byte");
}

/* Progress output around the metrics overflows the queue: every metric survives. */
static void test_drop_keeps_metrics(void **state)
{
    struct wrk_shipper_opts o = {fake_post, NULL, 0, 30, 20};
    struct wrk_shipper *s = NULL;
    int logs = 0, metrics = 0;
    json_int_t dropped = 0, min_step = -1;
    (void)state;

    atomic_store(&F.fail, 1);
    assert_int_equal(wrk_shipper_new(&o, &s), RC_OK);
    for (uint64_t i = 0; i < 400; i++) {
        char t[80];
        if (i % 20 == 0)
            snprintf(t, sizeof(t), "TRAINYARD_METRIC {\"step\":%d,\"loss\":0.5}\n", (int)i);
        else
            snprintf(t, sizeof(t), "epoch 1: %d%%|###  |\n", (int)i);
        line(s, "9", i, t);
    }
    assert_true(wrk_shipper_dropped(s) >= 340);
    assert_true(wait_refused()); /* the shipper tried while the server was down */
    atomic_store(&F.fail, 0);
    wrk_shipper_free(s, 5000);
    posted_totals(&logs, &metrics, &dropped, &min_step);
    assert_int_equal(metrics, 20); /* 20 metric lines, 30 places: none dropped */
    assert_int_equal(min_step, 0);
    assert_int_equal(dropped + logs, 400);
}

/* Only metrics, more than fit: the oldest go, counted, and the newest arrive. */
static void test_drop_metrics_when_nothing_else(void **state)
{
    struct wrk_shipper_opts o = {fake_post, NULL, 0, 10, 20};
    struct wrk_shipper *s = NULL;
    int logs = 0, metrics = 0;
    json_int_t dropped = 0, min_step = -1;
    (void)state;

    atomic_store(&F.fail, 1);
    assert_int_equal(wrk_shipper_new(&o, &s), RC_OK);
    line(s, "9", 0, "plain line\n");
    for (uint64_t i = 1; i <= 200; i++) {
        char t[80];
        snprintf(t, sizeof(t), "TRAINYARD_METRIC {\"step\":%d,\"loss\":0.5}\n", (int)i);
        line(s, "9", i, t); /* never blocks, bounded although all are metrics */
    }
    assert_true(wrk_shipper_dropped(s) >= 180);
    assert_true(wait_refused()); /* the shipper tried while the server was down */
    atomic_store(&F.fail, 0);
    wrk_shipper_free(s, 5000);
    posted_totals(&logs, &metrics, &dropped, &min_step);
    assert_true(metrics >= 9 && metrics <= 21); /* the queue, and a batch taken before it filled */
    assert_int_equal(dropped + logs, 201);
    assert_true(logs - metrics <= 1);
}

static void test_utf8_clean(void **state)
{
    static const struct {
        const char *in;
        size_t len;
        const char *out;
    } cases[] = {
        {"plain", 5, "plain"},
        {"caf\xc3\xa9", 5, "caf\xc3\xa9"},
        {"\xe4\xb8\xad\xe6\x96\x87", 6, "\xe4\xb8\xad\xe6\x96\x87"},
        {"a\0b", 3,
         "a\xEF\xBF\xBD"
         "b"},
        {"\xff", 1, "\xEF\xBF\xBD"},
        {"\xe4\xb8", 2, "\xEF\xBF\xBD\xEF\xBF\xBD"},                 /* truncated */
        {"\xc0\xaf", 2, "\xEF\xBF\xBD\xEF\xBF\xBD"},                 /* overlong '/' */
        {"\xed\xa0\x80", 3, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"}, /* surrogate */
        {"\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *c = wrk_utf8_clean(cases[i].in, cases[i].len);
        assert_non_null(c);
        assert_string_equal(c, cases[i].out);
        free(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_order_and_parse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exit_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drop_oldest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drop_keeps_metrics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drop_metrics_when_nothing_else, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_batch_set_aside, setup, teardown),
        cmocka_unit_test_setup_teardown(test_5xx_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exit_reason_cleaned, setup, teardown),
        cmocka_unit_test(test_utf8_clean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
