/*
 * db_webhooks.h - webhooks per team or per job, the deliveries queue, and
 * enqueueing notifications in the same transaction as the event they tell of.
 *
 * Thread-safety: any thread, with its own connection.
 */
#ifndef TY_SERVER_DB_WEBHOOKS_H
#define TY_SERVER_DB_WEBHOOKS_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"

/* The events a webhook may subscribe to. */
extern const char *const webhook_events[];

/*
 * Queue event ("job.failed", ...) for every webhook of the job and of its
 * team that subscribed to it, with a generic JSON payload describing the
 * job and message. Runs in the caller's transaction.
 */
enum rc webhooks_enqueue(PGconn *c, int64_t job_id, const char *event, const char *message,
                         const char *req_id) TY_WUR;

/*
 * Queue event for every webhook of team_id that subscribed to it (there is
 * no job yet: "policy.violation" of a refused submit). The generic payload
 * is {event, message, ts, team, job, details}; job (for example {"id": null,
 * "name": ..., "team": ...}) and details are borrowed and may be NULL. Runs
 * in the caller's transaction.
 */
enum rc webhooks_enqueue_team(PGconn *c, int64_t team_id, const char *event, const char *message,
                              const json_t *job, const json_t *details, const char *req_id) TY_WUR;

/* Insert a webhook (team_id or job_id is 0). *out without the secret. */
enum rc db_webhook_create(PGconn *c, int64_t team_id, int64_t job_id, const char *url,
                          const char *format, const char *secret, const char *events_literal,
                          int64_t created_by, json_t **out, const char *req_id) TY_WUR;

/* Webhooks visible to user (0 = all), without secrets. */
enum rc db_webhook_list(PGconn *c, int64_t member_of, json_t **out, const char *req_id) TY_WUR;

/* The team a webhook belongs to (directly or through its job). */
enum rc db_webhook_team(PGconn *c, int64_t id, int64_t *team_id, const char *req_id) TY_WUR;

enum rc db_webhook_delete(PGconn *c, int64_t id, const char *req_id) TY_WUR;

enum rc db_webhook_deliveries(PGconn *c, int64_t id, json_t **out, const char *req_id) TY_WUR;

/* A claimed delivery: everything the sender needs. */
struct db_delivery {
    int64_t id;
    int attempts; /* this claim's attempt number, which is also its lease token */
    char event[32];
    char format[16];
    char url[2049];
    char secret[128];
    char *payload; /* owned (free()) */
};

/*
 * Claim the most overdue pending delivery, if any, and lease it for lease_ms:
 * its next_at moves past the lease, so no replica claims it again before the
 * lease runs out (SKIP LOCKED keeps concurrent claims apart), and a crashed
 * sender's claim expires by itself. Each claim increments attempts, and
 * out->attempts is the claim's token for db_delivery_result(). One at a time
 * on purpose: a lease then has to cover one request, not a batch of them.
 * *found is 1 with *out filled (free out->payload), or 0 when nothing is due.
 * RC_OK, RC_ENOMEM, or the database's rc. Autocommit: the claim is durable
 * when this returns, and c may go back to the pool before the request.
 */
enum rc db_delivery_claim(PGconn *c, int lease_ms, struct db_delivery *out /* out */,
                          int *found /* out */) TY_WUR;

/*
 * Record the outcome of the claim of delivery id whose token is attempts:
 * delivered, or retry at now()+retry_s, or failed. Written only while that
 * claim is the latest one (still pending, attempts unchanged), so a sender
 * whose lease ran out and was claimed again cannot overwrite the newer
 * sender's result. RC_OK, RC_ECONFLICT when the claim was superseded (or the
 * webhook deleted), or the database's rc.
 */
enum rc db_delivery_result(PGconn *c, int64_t id, int attempts, int delivered, int http_status,
                           const char *error, int retry_s, int give_up) TY_WUR;

#endif
