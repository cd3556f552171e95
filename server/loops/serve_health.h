/*
 * serve_health.h - the thread that tells which deployment replicas are
 * ready (docs/serving.md, "The model server"): about every
 * SERVE_HEALTH_INTERVAL_MS it probes GET http://<host>:<port>/health of
 * every replica not retired whose job is RUNNING (host and port: the
 * attempt's master address and port, where the model server listens) and
 * records serve_replicas.ready, ready_at and attempt (store/db_deployments.h)
 * for the job's current attempt. A replica is ready after one 200 answer; it
 * is not ready again after SERVE_HEALTH_FAILS failed probes in a row, or at
 * once when its job leaves RUNNING or starts another attempt.
 *
 * One replica of the server at a time writes: each turn the thread borrows
 * a pooled connection and takes its PostgreSQL session advisory lock
 * (SERVE_HEALTH_LEADER_KEY, pg_try_advisory_lock) to read what to probe and
 * clear what is stale, gives the connection back while it probes (no
 * connection is held across HTTP), then takes the lock again to record the
 * answers. A replica that finds the lock taken skips the turn.
 *
 * Threads: one thread; main starts and stops it.
 */
#ifndef TY_SERVER_SERVE_HEALTH_H
#define TY_SERVER_SERVE_HEALTH_H

#include "app.h"
#include "err.h"

#define SERVE_HEALTH_INTERVAL_MS 1000
/* Failed probes in a row that make a ready replica not ready. */
#define SERVE_HEALTH_FAILS 3
/* One probe's limits: a model server answers /health at once or not at all. */
#define SERVE_HEALTH_CONNECT_MS 300
#define SERVE_HEALTH_TIMEOUT_MS 1000
/* Advisory lock key of the health loop's leader (retention's is 7243004). */
#define SERVE_HEALTH_LEADER_KEY "7243021"

struct serve_health;

/* Start the thread. *out owned by the caller (serve_health_stop). RC_ENOMEM,
 * RC_EINTERNAL when the thread cannot start. Main thread. */
enum rc serve_health_start(struct srv_app *app, struct serve_health **out) TY_WUR;

/* Stop and join the thread (a probe in flight ends within its timeout) and
 * free it; NULL is a no-op. Main thread. */
void serve_health_stop(struct serve_health *h);

#endif
