/*
 * test_metrics.c - the exposition of metrics.c: counters by route pattern
 * and status, cumulative histogram buckets, label escaping, the cluster's
 * state rows, trainyard_db_up, and that the route table fits the counters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "app.h"
#include "db_scrape.h"
#include "metrics.h"
#include "router.h"
#include "routes.h"

static struct srv_config cfg;
static struct srv_app app;

static char *render(const struct db_scrape_snapshot *snap)
{
    char *text = NULL;
    size_t len = 0;
    size_t nroutes;

    (void)routes_table(&nroutes);
    assert_int_equal(metrics_render(&app, snap, nroutes, routes_name, &text, &len), RC_OK);
    assert_int_equal(strlen(text), len);
    return text;
}

/* The index of method pattern in the real route table. */
static int route_index(const char *method, const char *pattern)
{
    size_t n;
    const struct router_route *t = routes_table(&n);

    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].method, method) == 0 && strcmp(t[i].pattern, pattern) == 0)
            return (int)i;
    fail_msg("no route %s %s", method, pattern);
    return -1;
}

static void test_table_fits(void **state)
{
    size_t n;
    (void)state;
    routes_table(&n);
    assert_true(n < METRICS_MAX_ROUTES);
}

static void test_requests_and_histogram(void **state)
{
    int job = route_index("GET", "/api/v1/jobs/{id}");
    char *text;
    (void)state;

    metrics_http_observe(job, 200, 800);     /* 0.8 ms: the first bucket */
    metrics_http_observe(job, 200, 30000);   /* 30 ms: le 0.05 */
    metrics_http_observe(job, 404, 2000000); /* 2 s: le 2.5 */
    metrics_http_observe(job, 299, 100);     /* an unusual status: "other" */
    metrics_http_observe(METRICS_ROUTE_STATIC, 200, 100);
    metrics_http_observe(METRICS_ROUTE_UNMATCHED, 404, 100);
    metrics_http_observe(9999, 404, 100); /* past the table: unmatched too */
    text = render(NULL);
    assert_non_null(strstr(
        text,
        "trainyard_http_requests_total{method=\"GET\",route=\"/api/v1/jobs/{id}\",status=\"200\"} "
        "2\n"));
    assert_non_null(strstr(text, "route=\"/api/v1/jobs/{id}\",status=\"404\"} 1\n"));
    assert_non_null(strstr(text, "route=\"/api/v1/jobs/{id}\",status=\"other\"} 1\n"));
    assert_non_null(strstr(text, "{method=\"GET\",route=\"static\",status=\"200\"} 1\n"));
    assert_non_null(strstr(text, "{method=\"\",route=\"unmatched\",status=\"404\"} 2\n"));
    /* Cumulative: 0.8 ms and 0.1 ms (other) in le 0.001; 30 ms joins at 0.05. */
    assert_non_null(strstr(text, "_bucket{method=\"GET\",route=\"/api/v1/jobs/{id}\",le=\"0.001\"} "
                                 "2\n"));
    assert_non_null(strstr(text, "route=\"/api/v1/jobs/{id}\",le=\"0.025\"} 2\n"));
    assert_non_null(strstr(text, "route=\"/api/v1/jobs/{id}\",le=\"0.05\"} 3\n"));
    assert_non_null(strstr(text, "route=\"/api/v1/jobs/{id}\",le=\"1\"} 3\n"));
    assert_non_null(strstr(text, "route=\"/api/v1/jobs/{id}\",le=\"2.5\"} 4\n"));
    assert_non_null(strstr(text, "route=\"/api/v1/jobs/{id}\",le=\"+Inf\"} 4\n"));
    assert_non_null(strstr(text, "trainyard_http_request_duration_seconds_sum{method=\"GET\","
                                 "route=\"/api/v1/jobs/{id}\"} 2.030900\n"));
    assert_non_null(strstr(text, "trainyard_http_request_duration_seconds_count{method=\"GET\","
                                 "route=\"/api/v1/jobs/{id}\"} 4\n"));
    /* A route nobody called has no samples. */
    assert_null(strstr(text, "route=\"/api/v1/sites\""));
    /* No database: only its gauge of the cluster's state. */
    assert_non_null(strstr(text, "trainyard_db_up 0\n"));
    assert_null(strstr(text, "trainyard_jobs{"));
    free(text);
}

static void test_process_counters(void **state)
{
    char *text;
    (void)state;

    metrics_sched_pass(3000, 1);
    metrics_sched_pass(20000, 0);
    metrics_db_pool_wait(1500, 0);
    metrics_db_pool_wait(500, 1);
    metrics_webhook_failure();
    metrics_job_restart();
    metrics_job_restart();
    metrics_job_preempted();
    metrics_long_polls_parked_add(1);
    metrics_long_polls_parked_add(1);
    metrics_long_polls_parked_add(-1); /* a gauge: resumed polls leave it */
    metrics_long_poll_expired();
    metrics_lead_event(METRICS_LEAD_ACQUIRED);
    metrics_lead_event(METRICS_LEAD_ACQUIRED);
    metrics_lead_event(METRICS_LEAD_TAKEOVER);
    text = render(NULL);
    assert_non_null(strstr(text, "trainyard_scheduler_pass_duration_seconds_bucket{le=\"0.005\"} "
                                 "1\n"));
    assert_non_null(strstr(text, "trainyard_scheduler_pass_duration_seconds_bucket{le=\"0.025\"} "
                                 "2\n"));
    assert_non_null(strstr(text, "trainyard_scheduler_pass_duration_seconds_count 2\n"));
    assert_non_null(strstr(text, "trainyard_scheduler_pass_failures_total 1\n"));
    assert_non_null(strstr(text, "trainyard_db_pool_waits_total 2\n"));
    assert_non_null(strstr(text, "trainyard_db_pool_wait_seconds_total 0.002000\n"));
    assert_non_null(strstr(text, "trainyard_db_pool_timeouts_total 1\n"));
    assert_non_null(strstr(text, "trainyard_db_pool_connections 7\n"));
    assert_non_null(strstr(text, "trainyard_webhook_delivery_failures_total 1\n"));
    assert_non_null(strstr(text, "trainyard_job_restarts_total 2\n"));
    assert_non_null(strstr(text, "trainyard_job_preemptions_total 1\n"));
    assert_non_null(strstr(text, "# TYPE trainyard_long_polls_parked gauge\n"));
    assert_non_null(strstr(text, "trainyard_long_polls_parked 1\n"));
    assert_non_null(strstr(text, "trainyard_long_polls_expired_total 1\n"));
    assert_non_null(strstr(text, "trainyard_scheduler_lead_changes_total{event=\"acquired\"} 2\n"));
    assert_non_null(strstr(text, "trainyard_scheduler_lead_changes_total{event=\"lost\"} 0\n"));
    assert_non_null(strstr(text, "trainyard_scheduler_lead_changes_total{event=\"takeover\"} 1\n"));
    free(text);
}

static void test_cluster_rows(void **state)
{
    struct db_scrape_row rows[] = {
        {DB_SCRAPE_QUEUE, "ml", 3},
        {DB_SCRAPE_QUEUE, "we\"ird\\team\nx", 1},
        {DB_SCRAPE_JOB_STATE, "RUNNING", 5},
        {DB_SCRAPE_GPUS_TOTAL, "", 16},
        {DB_SCRAPE_GPUS_USED, "", 12},
        {DB_SCRAPE_GPUS_IDLE, "", 2},
        {DB_SCRAPE_GPUS_DOWN, "", 4},
        {DB_SCRAPE_NODE_STATE, "ready", 3},
        {DB_SCRAPE_HEARTBEAT_AGE, "gpu-01", 0.25},
        {DB_SCRAPE_AUDIT_SEQ, "", 1234567},
    };
    struct db_scrape_snapshot snap = {rows, sizeof(rows) / sizeof(rows[0])};
    char *text;
    (void)state;

    text = render(&snap);
    assert_non_null(strstr(text, "trainyard_db_up 1\n"));
    assert_non_null(strstr(text, "trainyard_queue_length{team=\"ml\"} 3\n"));
    assert_non_null(strstr(text, "trainyard_queue_length{team=\"we\\\"ird\\\\team\\nx\"} 1\n"));
    /* Every state is written, 0 when no row names it. */
    assert_non_null(strstr(text, "trainyard_jobs{state=\"RUNNING\"} 5\n"));
    assert_non_null(strstr(text, "trainyard_jobs{state=\"QUEUED\"} 0\n"));
    assert_non_null(strstr(text, "trainyard_jobs{state=\"CANCELLED\"} 0\n"));
    assert_non_null(strstr(text, "trainyard_gpus_registered 16\n"));
    assert_non_null(strstr(text, "trainyard_gpus_used 12\n"));
    assert_non_null(strstr(text, "trainyard_gpus_idle_allocated 2\n"));
    assert_non_null(strstr(text, "trainyard_gpus_down 4\n"));
    assert_non_null(strstr(text, "trainyard_nodes{state=\"ready\"} 3\n"));
    assert_non_null(strstr(text, "trainyard_nodes{state=\"down\"} 0\n"));
    assert_non_null(strstr(text, "trainyard_node_heartbeat_age_seconds{node=\"gpu-01\"} 0.25\n"));
    assert_non_null(strstr(text, "trainyard_audit_events_total 1234567\n"));
    /* Each family is introduced once, with its type. */
    assert_non_null(strstr(text, "# TYPE trainyard_audit_events_total counter\n"));
    assert_non_null(strstr(text, "# TYPE trainyard_queue_length gauge\n"));
    assert_null(
        strstr(strstr(text, "# TYPE trainyard_queue_length") + 1, "# TYPE trainyard_queue_length"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_fits),
        cmocka_unit_test(test_requests_and_histogram),
        cmocka_unit_test(test_process_counters),
        cmocka_unit_test(test_cluster_rows),
    };
    srv_config_defaults(&cfg);
    cfg.db_pool_size = 7;
    app.cfg = &cfg;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
