/*
 * db_gateway.h - the SQL of the inference gateway (server/serve/,
 * docs/serving.md "The gateway"): a key by the hash of its secret, the
 * routing view of deployments and their ready replicas, the batched write
 * of request records with their usage, and the keys API's rows.
 *
 * Threads: each function uses the connection it is given (one thread at a
 * time, as every PGconn); no state of its own.
 *
 * Locks: db_gw_records_write() takes serve_usage rows and, at most once a
 * second per deployment, the deployment's row; never the audit head, so it
 * cannot close a cycle with the deployment API's transactions (deployment
 * row, then the audit head).
 */
#ifndef TY_SERVER_DB_GATEWAY_H
#define TY_SERVER_DB_GATEWAY_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"

/* A gateway key as the key check needs it. */
struct db_gw_key {
    int64_t id;            /* serve_keys.id */
    int64_t deployment_id; /* the one deployment it may call */
    char deployment[64];   /* that deployment's name */
    int is_public;         /* a chat widget's key: rate limited per visitor address */
    int revoked;           /* revoked_at is set */
    int rate_per_min;      /* requests per minute */
    int64_t token_quota;   /* prompt + completion tokens allowed, 0 = unlimited */
    int64_t tokens_used;   /* sum over serve_usage when read */
};

/* The key whose token_hash is hash (64 hex digits). RC_OK, RC_ENOTFOUND, or
 * a database error (db_result_rc). */
enum rc db_gw_key_by_hash(PGconn *c, const char *hash, struct db_gw_key *out /* out */,
                          const char *req_id) TY_WUR;

/*
 * The routing view, two arrays of rows as JSON (new references):
 * *deployments: [{"id","name","state","primary_version_id","canary_version_id",
 * "canary_weight","keep_texts_days","primary_manifest","canary_manifest"}]
 * by id (primary_version_id: version_id, or what alias points at now);
 * *replicas: [{"deployment_id","job_id","version_id","token","host","port",
 * "manifest"}] of every ready, non-retired replica whose job is RUNNING in
 * the attempt it was found ready in, its address that attempt's master
 * address and port; by deployment then job id.
 */
enum rc db_gw_view(PGconn *c, json_t **deployments /* out */, json_t **replicas /* out */,
                   const char *req_id) TY_WUR;

/*
 * Write a batch of request records in one transaction: rows is a JSON array
 * of objects with serve_requests' columns (borrowed). Adds each keyed
 * record to serve_usage (its UTC day; status >= 400 counts as an error)
 * and moves deployments.last_request_at forward (only when it is a second
 * or more behind, to spare the row). RC_OK or a database error; nothing is
 * written then.
 */
enum rc db_gw_records_write(PGconn *c, const json_t *rows, const char *req_id) TY_WUR;

/* The deployment named name: its id and team. RC_ENOTFOUND when none. */
enum rc db_gw_deployment_team(PGconn *c, const char *name, int64_t *id /* out */,
                              int64_t *team_id /* out */, const char *req_id) TY_WUR;

/* A new key row (inside the caller's transaction); *out (new reference) the
 * row as the keys API shows it. RC_ECONFLICT on a duplicate hash. */
enum rc db_gw_key_create(PGconn *c, int64_t deployment_id, const char *name, const char *hash,
                         const char *prefix, int is_public, int rate_per_min, int64_t token_quota,
                         const char *created_by, json_t **out /* out */, const char *req_id) TY_WUR;

/* Every key of the deployment with its usage totals, newest first (*out: a
 * new array). */
enum rc db_gw_key_list(PGconn *c, int64_t deployment_id, json_t **out /* out */,
                       const char *req_id) TY_WUR;

/* Revoke key id of the deployment (inside the caller's transaction).
 * RC_ENOTFOUND when it is not one of its keys; a revoked key stays RC_OK. */
enum rc db_gw_key_revoke(PGconn *c, int64_t deployment_id, int64_t id, const char *req_id) TY_WUR;

/* Usage per key and UTC day of the deployment, by day then key (*out: a new
 * array of {"key_id","key_name","day","requests","errors","prompt_tokens",
 * "completion_tokens"}). */
enum rc db_gw_usage(PGconn *c, int64_t deployment_id, json_t **out /* out */,
                    const char *req_id) TY_WUR;

#endif
