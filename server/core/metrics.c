/*
 * metrics.c - see metrics.h.
 *
 * Every counter is an _Atomic uint64_t in static storage (zero at start),
 * bumped with relaxed fetch_add: each is read on its own by a scrape and no
 * other memory is published through them, so no stronger ordering is
 * needed. Durations are kept in microseconds and written in seconds.
 */
#include "metrics.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"

/* Latency bucket bounds in microseconds (le labels in seconds). */
static const int64_t bucket_us[] = {1000,   2500,   5000,    10000,   25000,   50000,   100000,
                                    250000, 500000, 1000000, 2500000, 5000000, 10000000};
#define NBUCKETS (sizeof(bucket_us) / sizeof(bucket_us[0]))

/* The statuses the server answers; anything else is counted as "other". */
static const int statuses[] = {200, 201, 202, 204, 206, 301, 302, 304, 400, 401, 403,
                               404, 405, 409, 410, 413, 415, 429, 500, 502, 503, 504};
#define NSTATUSES (sizeof(statuses) / sizeof(statuses[0]))
#define STATUS_OTHER NSTATUSES

/* Route slots: the table's routes, then "unmatched", then "static". */
#define SLOT_UNMATCHED METRICS_MAX_ROUTES
#define SLOT_STATIC (METRICS_MAX_ROUTES + 1)
#define NSLOTS (METRICS_MAX_ROUTES + 2)

struct route_counters {
    _Atomic uint64_t by_status[NSTATUSES + 1];
    _Atomic uint64_t bucket[NBUCKETS]; /* not cumulative: summed when written */
    _Atomic uint64_t count;
    _Atomic uint64_t sum_us;
};

static struct route_counters g_http[NSLOTS];

static struct {
    _Atomic uint64_t bucket[NBUCKETS];
    _Atomic uint64_t count;
    _Atomic uint64_t sum_us;
    _Atomic uint64_t failed;
} g_sched;

static _Atomic uint64_t g_pool_waits, g_pool_wait_us, g_pool_timeouts;
static _Atomic uint64_t g_webhook_failures, g_job_restarts, g_job_preemptions;
static _Atomic uint64_t g_polls_expired;
/* Long-polls parked now (a gauge: it goes down as well as up). */
static _Atomic int64_t g_polls_parked;
static _Atomic uint64_t g_lead[METRICS_LEAD_NEVENTS];
static _Atomic uint64_t g_state_reads;
static _Atomic uint64_t g_serve_sealed, g_serve_batches, g_canary_rollbacks;
/* Wall clock at metrics_mark_start(); 0 until then. */
static _Atomic int64_t g_start_s;

static void add(_Atomic uint64_t *c, uint64_t v)
{
    atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

static uint64_t get(_Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

static size_t bucket_of(int64_t us)
{
    size_t b = 0;
    while (b < NBUCKETS && us > bucket_us[b])
        b++;
    return b; /* NBUCKETS: only +Inf */
}

void metrics_mark_start(void)
{
    atomic_store(&g_start_s, (int64_t)time(NULL));
}

void metrics_http_observe(int route, int status, int64_t duration_us)
{
    size_t slot, st = STATUS_OTHER, b;
    struct route_counters *rc;

    if (route >= 0 && route < METRICS_MAX_ROUTES)
        slot = (size_t)route;
    else if (route == METRICS_ROUTE_STATIC)
        slot = SLOT_STATIC;
    else
        slot = SLOT_UNMATCHED;
    for (size_t i = 0; i < NSTATUSES; i++)
        if (statuses[i] == status)
            st = i;
    if (duration_us < 0)
        duration_us = 0;
    rc = &g_http[slot];
    add(&rc->by_status[st], 1);
    add(&rc->count, 1);
    add(&rc->sum_us, (uint64_t)duration_us);
    b = bucket_of(duration_us);
    if (b < NBUCKETS)
        add(&rc->bucket[b], 1);
}

void metrics_sched_pass(int64_t duration_us, int ok)
{
    size_t b;

    if (duration_us < 0)
        duration_us = 0;
    add(&g_sched.count, 1);
    add(&g_sched.sum_us, (uint64_t)duration_us);
    if (!ok)
        add(&g_sched.failed, 1);
    b = bucket_of(duration_us);
    if (b < NBUCKETS)
        add(&g_sched.bucket[b], 1);
}

void metrics_db_pool_wait(int64_t waited_us, int timed_out)
{
    add(&g_pool_waits, 1);
    add(&g_pool_wait_us, waited_us > 0 ? (uint64_t)waited_us : 0);
    if (timed_out)
        add(&g_pool_timeouts, 1);
}

void metrics_webhook_failure(void)
{
    add(&g_webhook_failures, 1);
}

void metrics_serve_sealed(int records)
{
    add(&g_serve_sealed, records > 0 ? (uint64_t)records : 0);
    add(&g_serve_batches, 1);
}

void metrics_canary_rollback(void)
{
    add(&g_canary_rollbacks, 1);
}

void metrics_state_read(void)
{
    add(&g_state_reads, 1);
}

void metrics_job_restart(void)
{
    add(&g_job_restarts, 1);
}

void metrics_job_preempted(void)
{
    add(&g_job_preemptions, 1);
}

void metrics_long_polls_parked_add(int delta)
{
    atomic_fetch_add_explicit(&g_polls_parked, delta, memory_order_relaxed);
}

void metrics_long_poll_expired(void)
{
    add(&g_polls_expired, 1);
}

void metrics_lead_event(enum metrics_lead_event e)
{
    if (e >= 0 && e < METRICS_LEAD_NEVENTS)
        add(&g_lead[e], 1);
}

/* ------------------------------------------------------------------ */
/* Text exposition                                                      */

struct out {
    char *buf;
    size_t len, cap;
    int oom;
};

static void put(struct out *o, const char *fmt, ...) TY_PRINTF(2, 3);

static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (o->oom)
        return;
    for (;;) {
        size_t room = o->cap - o->len;
        va_start(ap, fmt);
        n = vsnprintf(o->buf + o->len, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            o->oom = 1;
            return;
        }
        if ((size_t)n < room) {
            o->len += (size_t)n;
            return;
        }
        size_t cap = o->cap * 2 + (size_t)n + 1;
        char *nb = realloc(o->buf, cap);
        if (nb == NULL) {
            o->oom = 1;
            return;
        }
        o->buf = nb;
        o->cap = cap;
    }
}

/* A label value with \, " and newline escaped as the format asks. */
static void put_label(struct out *o, const char *v)
{
    char esc[2 * 128 + 1];
    size_t n = 0;

    for (const char *p = v; *p != '\0' && n + 2 < sizeof(esc); p++) {
        if (*p == '\\' || *p == '"') {
            esc[n++] = '\\';
            esc[n++] = *p;
        } else if (*p == '\n') {
            esc[n++] = '\\';
            esc[n++] = 'n';
        } else {
            esc[n++] = *p;
        }
    }
    esc[n] = '\0';
    put(o, "%s", esc);
}

static void head(struct out *o, const char *name, const char *type, const char *help)
{
    put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A histogram's lines; labels is "" or 'a="x",b="y"' (no trailing comma). */
static void put_buckets(struct out *o, const char *name, const char *labels,
                        _Atomic uint64_t *bucket, uint64_t count, uint64_t sum_us)
{
    const char *sep = labels[0] ? "," : "";
    uint64_t cum = 0;

    for (size_t b = 0; b < NBUCKETS; b++) {
        cum += get(&bucket[b]);
        put(o, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, (double)bucket_us[b] / 1e6,
            (unsigned long long)cum);
    }
    /* count was read before the buckets: +Inf must not be below the last one. */
    if (count < cum)
        count = cum;
    put(o, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep, (unsigned long long)count);
    if (labels[0]) {
        put(o, "%s_sum{%s} %.6f\n", name, labels, (double)sum_us / 1e6);
        put(o, "%s_count{%s} %llu\n", name, labels, (unsigned long long)count);
    } else {
        put(o, "%s_sum %.6f\n", name, (double)sum_us / 1e6);
        put(o, "%s_count %llu\n", name, (unsigned long long)count);
    }
}

static void route_labels(char *buf, size_t size, size_t slot, metrics_route_name_fn route_name)
{
    const char *method, *pattern;

    if (slot == SLOT_UNMATCHED) {
        snprintf(buf, size, "method=\"\",route=\"unmatched\"");
    } else if (slot == SLOT_STATIC) {
        snprintf(buf, size, "method=\"GET\",route=\"static\"");
    } else {
        route_name(slot, &method, &pattern);
        snprintf(buf, size, "method=\"%s\",route=\"%s\"", method, pattern);
    }
}

static void render_http(struct out *o, size_t nroutes, metrics_route_name_fn route_name)
{
    char labels[256];

    if (nroutes > METRICS_MAX_ROUTES)
        nroutes = METRICS_MAX_ROUTES;
    head(o, "trainyard_http_requests_total", "counter",
         "HTTP requests answered, by route pattern and status");
    for (size_t s = 0; s < NSLOTS; s++) {
        if (s >= nroutes && s < METRICS_MAX_ROUTES)
            continue;
        route_labels(labels, sizeof(labels), s, route_name);
        for (size_t st = 0; st <= NSTATUSES; st++) {
            uint64_t v = get(&g_http[s].by_status[st]);
            if (v == 0)
                continue;
            if (st == STATUS_OTHER)
                put(o, "trainyard_http_requests_total{%s,status=\"other\"} %llu\n", labels,
                    (unsigned long long)v);
            else
                put(o, "trainyard_http_requests_total{%s,status=\"%d\"} %llu\n", labels,
                    statuses[st], (unsigned long long)v);
        }
    }
    head(o, "trainyard_http_request_duration_seconds", "histogram",
         "Time from a request's first byte to its completion, by route pattern");
    for (size_t s = 0; s < NSLOTS; s++) {
        uint64_t sum, count;
        if (s >= nroutes && s < METRICS_MAX_ROUTES)
            continue;
        count = get(&g_http[s].count);
        sum = get(&g_http[s].sum_us);
        if (count == 0)
            continue;
        route_labels(labels, sizeof(labels), s, route_name);
        put_buckets(o, "trainyard_http_request_duration_seconds", labels, g_http[s].bucket, count,
                    sum);
    }
}

static void render_process(const struct srv_app *app, struct out *o)
{
    uint64_t count = get(&g_sched.count), sum = get(&g_sched.sum_us);
    int64_t start = atomic_load(&g_start_s);

    head(o, "process_start_time_seconds", "gauge",
         "When this trainyard-server started, in seconds since the epoch (a change is a restart)");
    put(o, "process_start_time_seconds %lld\n", (long long)start);
    head(o, "trainyard_scheduler_pass_duration_seconds", "histogram",
         "Time of one scheduler pass (snapshot, plan, apply); only the leader runs passes");
    put_buckets(o, "trainyard_scheduler_pass_duration_seconds", "", g_sched.bucket, count, sum);
    head(o, "trainyard_scheduler_pass_failures_total", "counter",
         "Scheduler passes that failed (logged with their cause)");
    put(o, "trainyard_scheduler_pass_failures_total %llu\n",
        (unsigned long long)get(&g_sched.failed));
    head(o, "trainyard_long_polls_parked", "gauge",
         "Requests parked on this process (worker long-polls, log and event streams) waiting "
         "for news or their deadline");
    put(o, "trainyard_long_polls_parked %lld\n",
        (long long)atomic_load_explicit(&g_polls_parked, memory_order_relaxed));
    head(o, "trainyard_long_polls_expired_total", "counter",
         "Parked requests resumed by their deadline rather than by news");
    put(o, "trainyard_long_polls_expired_total %llu\n", (unsigned long long)get(&g_polls_expired));
    head(o, "trainyard_db_pool_connections", "gauge", "Size of this process's PostgreSQL pool");
    put(o, "trainyard_db_pool_connections %d\n", app->cfg->db_pool_size);
    head(o, "trainyard_db_pool_waits_total", "counter",
         "Checkouts that found every pooled connection busy and waited");
    put(o, "trainyard_db_pool_waits_total %llu\n", (unsigned long long)get(&g_pool_waits));
    head(o, "trainyard_db_pool_wait_seconds_total", "counter",
         "Time spent waiting for a pooled connection");
    put(o, "trainyard_db_pool_wait_seconds_total %.6f\n", (double)get(&g_pool_wait_us) / 1e6);
    head(o, "trainyard_db_pool_timeouts_total", "counter",
         "Checkouts that gave up without a connection (the request answered 503)");
    put(o, "trainyard_db_pool_timeouts_total %llu\n", (unsigned long long)get(&g_pool_timeouts));
    head(o, "trainyard_webhook_delivery_failures_total", "counter",
         "Webhook delivery attempts that failed (network error or non-2xx answer)");
    put(o, "trainyard_webhook_delivery_failures_total %llu\n",
        (unsigned long long)get(&g_webhook_failures));
    head(o, "trainyard_serve_sealed_records_total", "counter",
         "Gateway request records this replica sealed into the audit chain");
    put(o, "trainyard_serve_sealed_records_total %llu\n", (unsigned long long)get(&g_serve_sealed));
    head(o, "trainyard_serve_seal_batches_total", "counter",
         "Batches of request records this replica sealed (one serve.requests.seal event each)");
    put(o, "trainyard_serve_seal_batches_total %llu\n", (unsigned long long)get(&g_serve_batches));
    head(o, "trainyard_canary_rollbacks_total", "counter",
         "Canaries this replica rolled back automatically (they broke their bound)");
    put(o, "trainyard_canary_rollbacks_total %llu\n", (unsigned long long)get(&g_canary_rollbacks));
    head(o, "trainyard_job_restarts_total", "counter",
         "Jobs this replica moved to RESTARTING after a failed or lost attempt");
    put(o, "trainyard_job_restarts_total %llu\n", (unsigned long long)get(&g_job_restarts));
    head(o, "trainyard_job_preemptions_total", "counter",
         "Running jobs the scheduler preempted (they restart when GPUs free up)");
    put(o, "trainyard_job_preemptions_total %llu\n", (unsigned long long)get(&g_job_preemptions));
    head(o, "trainyard_scheduler_lead_changes_total", "counter",
         "Scheduling lease events on this replica: acquired, lost, and takeover (a stale "
         "leader's session ended)");
    {
        static const char *const ev[] = {"acquired", "lost", "takeover"};
        _Static_assert(sizeof(ev) / sizeof(ev[0]) == METRICS_LEAD_NEVENTS, "one name per event");
        for (size_t i = 0; i < METRICS_LEAD_NEVENTS; i++)
            put(o, "trainyard_scheduler_lead_changes_total{event=\"%s\"} %llu\n", ev[i],
                (unsigned long long)get(&g_lead[i]));
    }
    head(o, "trainyard_metrics_state_reads_total", "counter",
         "Queries of the cluster's state this replica ran for /metrics");
    put(o, "trainyard_metrics_state_reads_total %llu\n", (unsigned long long)get(&g_state_reads));
}

static const char *const job_states[] = {"QUEUED",     "PLACED",    "STARTING", "RUNNING",
                                         "RESTARTING", "SUCCEEDED", "FAILED",   "CANCELLED"};
static const char *const node_states[] = {"ready", "draining", "down"};

static double row_value(const struct db_scrape_snapshot *s, enum db_scrape_kind k,
                        const char *label)
{
    for (size_t i = 0; i < s->nrows; i++)
        if (s->rows[i].kind == k && (label == NULL || strcmp(s->rows[i].label, label) == 0))
            return s->rows[i].value;
    return 0;
}

static void render_labelled(struct out *o, const struct db_scrape_snapshot *s,
                            enum db_scrape_kind k, const char *name, const char *label)
{
    for (size_t i = 0; i < s->nrows; i++) {
        if (s->rows[i].kind != k)
            continue;
        put(o, "%s{%s=\"", name, label);
        put_label(o, s->rows[i].label);
        put(o, "\"} %.17g\n", s->rows[i].value);
    }
}

static void render_cluster(struct out *o, const struct db_scrape_snapshot *s)
{
    head(o, "trainyard_db_up", "gauge",
         "1 when this scrape read the cluster's state from PostgreSQL, else 0");
    put(o, "trainyard_db_up %d\n", s != NULL);
    if (s == NULL)
        return;
    head(o, "trainyard_queue_length", "gauge",
         "Jobs waiting for GPUs (QUEUED or RESTARTING), by team");
    render_labelled(o, s, DB_SCRAPE_QUEUE, "trainyard_queue_length", "team");
    head(o, "trainyard_jobs", "gauge", "Jobs by state");
    for (size_t i = 0; i < sizeof(job_states) / sizeof(job_states[0]); i++)
        put(o, "trainyard_jobs{state=\"%s\"} %.17g\n", job_states[i],
            row_value(s, DB_SCRAPE_JOB_STATE, job_states[i]));
    head(o, "trainyard_gpus_registered", "gauge", "GPUs registered by worker nodes");
    put(o, "trainyard_gpus_registered %.17g\n", row_value(s, DB_SCRAPE_GPUS_TOTAL, NULL));
    head(o, "trainyard_gpus_used", "gauge", "GPUs allocated to jobs");
    put(o, "trainyard_gpus_used %.17g\n", row_value(s, DB_SCRAPE_GPUS_USED, NULL));
    head(o, "trainyard_gpus_idle_allocated", "gauge",
         "Allocated GPUs whose node last reported them below 5 % utilisation");
    put(o, "trainyard_gpus_idle_allocated %.17g\n", row_value(s, DB_SCRAPE_GPUS_IDLE, NULL));
    head(o, "trainyard_gpus_down", "gauge", "GPUs on nodes that are down");
    put(o, "trainyard_gpus_down %.17g\n", row_value(s, DB_SCRAPE_GPUS_DOWN, NULL));
    head(o, "trainyard_nodes", "gauge", "Worker nodes by state");
    for (size_t i = 0; i < sizeof(node_states) / sizeof(node_states[0]); i++)
        put(o, "trainyard_nodes{state=\"%s\"} %.17g\n", node_states[i],
            row_value(s, DB_SCRAPE_NODE_STATE, node_states[i]));
    head(o, "trainyard_node_heartbeat_age_seconds", "gauge",
         "Seconds since each node's last heartbeat");
    render_labelled(o, s, DB_SCRAPE_HEARTBEAT_AGE, "trainyard_node_heartbeat_age_seconds", "node");
    head(o, "trainyard_deployment_replicas_ready", "gauge",
         "Replicas of each deployment whose model server answered its health check");
    render_labelled(o, s, DB_SCRAPE_SERVE_READY, "trainyard_deployment_replicas_ready",
                    "deployment");
    head(o, "trainyard_deployment_replicas_wanted", "gauge",
         "Replicas each deployment asks for (0 while stopped)");
    render_labelled(o, s, DB_SCRAPE_SERVE_WANTED, "trainyard_deployment_replicas_wanted",
                    "deployment");
    head(o, "trainyard_audit_events_total", "counter",
         "Audit events appended to the chain, ever (rate() gives the append rate)");
    put(o, "trainyard_audit_events_total %.17g\n", row_value(s, DB_SCRAPE_AUDIT_SEQ, NULL));
    head(o, "trainyard_serve_unsealed_records", "gauge",
         "Gateway request records not sealed into the audit chain yet");
    put(o, "trainyard_serve_unsealed_records %.17g\n",
        row_value(s, DB_SCRAPE_SERVE_UNSEALED, NULL));
}

enum rc metrics_render(const struct srv_app *app, const struct db_scrape_snapshot *snap,
                       size_t nroutes, metrics_route_name_fn route_name, char **out,
                       size_t *out_len)
{
    struct out o = {NULL, 0, 0, 0};

    o.buf = malloc(16384);
    if (o.buf == NULL)
        return RC_ENOMEM;
    o.cap = 16384;
    render_http(&o, nroutes, route_name);
    render_process(app, &o);
    render_cluster(&o, snap);
    if (o.oom) {
        free(o.buf);
        return RC_ENOMEM;
    }
    *out = o.buf;
    *out_len = o.len;
    return RC_OK;
}
