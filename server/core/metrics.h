/*
 * metrics.h - the server's Prometheus metrics (docs/metrics.md lists them).
 *
 * Two kinds of numbers:
 *  - events this process counts as they happen (HTTP requests by route and
 *    status with latency histograms, scheduler passes, database pool waits,
 *    webhook delivery failures, job restarts): C11 atomics in static
 *    storage, one relaxed fetch_add per event, no lock;
 *  - the cluster's state read from PostgreSQL at scrape time
 *    (db_scrape.h): one bounded query, cached for metrics_cache_ms so that
 *    many scrapers cost one query per interval (single-flight: scrapes that
 *    find the cache stale while a read is in flight wait for that read).
 *
 * metrics_render() writes the text exposition format (version 0.0.4).
 *
 * Thread-safety: every function is thread-safe. Counters are monotonic for
 * the life of the process; rendering reads each atomic once, so a scrape is
 * not one atomic snapshot of all of them (Prometheus does not need one).
 */
#ifndef TY_SERVER_METRICS_H
#define TY_SERVER_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct srv_app;

/* The most routes the request counters can tell apart; routes past it are
 * counted as METRICS_ROUTE_UNMATCHED (a unit test keeps the table below it). */
#define METRICS_MAX_ROUTES 128
/* Pseudo-routes for requests that matched no route of the table. */
#define METRICS_ROUTE_UNMATCHED (-1) /* no route: a 404 or 405 from the router */
#define METRICS_ROUTE_STATIC (-2)    /* a dashboard file (web_dir) */

/* Note the process's start (process_start_time_seconds); main.c, once. */
void metrics_mark_start(void);

/* One finished request: route is an index into routes_table() or one of
 * the pseudo-routes above, status its HTTP status (0: cut before an
 * answer), duration_us from its first byte to its completion. */
void metrics_http_observe(int route, int status, int64_t duration_us);

/* One scheduler pass of duration_us; ok is 0 when the pass failed. */
void metrics_sched_pass(int64_t duration_us, int ok);

/* A db_acquire() that found no free connection and waited waited_us;
 * timed_out is 1 when it gave up without one. */
void metrics_db_pool_wait(int64_t waited_us, int timed_out);

/* A webhook delivery attempt that failed (any reason). */
void metrics_webhook_failure(void);

/* One query of the cluster's state for /metrics (db_scrape_read), however
 * many scrapes it answered. */
void metrics_state_read(void);

/* A batch of gateway request records this process sealed
 * (loops/serve_seal.c): trainyard_serve_sealed_records_total and
 * trainyard_serve_seal_batches_total. */
void metrics_serve_sealed(int records);

/* A canary this process rolled back because it broke its bound
 * (loops/serve_canary.c): trainyard_canary_rollbacks_total. */
void metrics_canary_rollback(void);

/* A job this process moved to RESTARTING after a failed or lost attempt. */
void metrics_job_restart(void);

/* A running job the scheduler preempted (moved to RESTARTING). */
void metrics_job_preempted(void);

/* A request parked (delta +1) or resumed (delta -1) by http/waiters.c (a
 * worker's long-poll, a log or event stream waiting for news):
 * trainyard_long_polls_parked, those this process holds right now. */
void metrics_long_polls_parked_add(int delta);

/* A parked request resumed by its deadline rather than by news. */
void metrics_long_poll_expired(void);

/* The scheduling lease's events on this replica (docs/metrics.md). */
enum metrics_lead_event {
    METRICS_LEAD_ACQUIRED, /* it took the lease and leads */
    METRICS_LEAD_LOST,     /* it stopped leading: lease taken, session ended or lapsed */
    METRICS_LEAD_TAKEOVER, /* it ended a stale leader's session */
    METRICS_LEAD_NEVENTS
};
void metrics_lead_event(enum metrics_lead_event e);

/* The cluster's state as /metrics shows it: rows that store/db_scrape.c
 * reads from PostgreSQL in one query. Kinds of rows; each names the metric
 * it feeds in metrics.c. */
enum db_scrape_kind {
    DB_SCRAPE_QUEUE = 0,      /* label: team name; value: QUEUED + RESTARTING jobs */
    DB_SCRAPE_JOB_STATE,      /* label: state; value: jobs in it */
    DB_SCRAPE_GPUS_TOTAL,     /* value: GPUs registered */
    DB_SCRAPE_GPUS_USED,      /* value: GPUs in live allocations */
    DB_SCRAPE_GPUS_IDLE,      /* value: allocated GPUs last reported below 5 % busy */
    DB_SCRAPE_GPUS_DOWN,      /* value: GPUs on nodes that are down */
    DB_SCRAPE_NODE_STATE,     /* label: state; value: nodes in it */
    DB_SCRAPE_HEARTBEAT_AGE,  /* label: node name; value: seconds since its last heartbeat */
    DB_SCRAPE_AUDIT_SEQ,      /* value: audit events appended, ever (the head's seq) */
    DB_SCRAPE_SERVE_UNSEALED, /* value: gateway request records not sealed yet */
    DB_SCRAPE_SERVE_READY,    /* label: deployment name; value: replicas ready now */
    DB_SCRAPE_SERVE_WANTED,   /* label: deployment name; value: replicas wanted (0 when stopped) */
    DB_SCRAPE_NKINDS
};

struct db_scrape_row {
    enum db_scrape_kind kind;
    char label[128]; /* "" when the kind has none */
    double value;
};

struct db_scrape_snapshot {
    struct db_scrape_row *rows; /* owned */
    size_t nrows;
};

/* The method and pattern of route slot i (i < the nroutes given to
 * metrics_render), the labels of its series; both borrowed, static. The
 * route table lives in api/ (routes.h), above this layer. */
typedef void (*metrics_route_name_fn)(size_t i, const char **method, const char **pattern);

/*
 * The whole exposition: the process's counters, then the cluster's state
 * from snap (borrowed; NULL when the database could not be read, which
 * sets trainyard_db_up to 0). HTTP series are labelled for the first
 * nroutes route slots (at most METRICS_MAX_ROUTES) by route_name. *out is
 * returned-owned (free()), *out_len its length. Returns RC_OK or RC_ENOMEM.
 */
enum rc metrics_render(const struct srv_app *app, const struct db_scrape_snapshot *snap,
                       size_t nroutes, metrics_route_name_fn route_name, char **out /* out */,
                       size_t *out_len /* out */) TY_WUR;

#endif
