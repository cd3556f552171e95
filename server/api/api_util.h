/*
 * api_util.h - small helpers shared by the API handlers: strict body
 * checking, path ids, pagination and one-transaction mutations.
 *
 * Thread-safety: reentrant; each works on its own request.
 */
#ifndef TY_SERVER_API_UTIL_H
#define TY_SERVER_API_UTIL_H

#include <jansson.h>
#include <stdint.h>

#include "err.h"
#include "srv.h"

/*
 * Require req->body to be a JSON object whose keys are all in allowed (a
 * NULL-terminated list). RC_EINVAL naming the field otherwise.
 */
enum rc api_body_object(struct srv_req *req, const char *const *allowed) TY_WUR;

/*
 * Optional string member: *out borrowed (NULL when absent). RC_EINVAL when
 * present with another type or a length outside [min_len, max_len].
 */
enum rc api_opt_string(struct srv_req *req, const char *key, size_t min_len, size_t max_len,
                       const char **out) TY_WUR;

/* Optional integer member in [lo, hi]; *present set to 1 when given. */
enum rc api_opt_int(struct srv_req *req, const char *key, int64_t lo, int64_t hi, int64_t *out,
                    int *present) TY_WUR;

/* Route capture i as a positive id; RC_ENOTFOUND when not one. */
enum rc api_param_id(struct srv_req *req, int i, int64_t *out, const char *what) TY_WUR;

/* ?limit= (default def, 1..max): a 400 invalid_argument (field "limit") otherwise. */
enum rc api_limit(struct srv_req *req, int def, int max, int *limit) TY_WUR;

/*
 * ?limit= as api_limit() and ?cursor= (a positive id or absent;
 * cursor_out is "" when absent).
 */
enum rc api_page(struct srv_req *req, int def, int max, int *limit, char *cursor_out,
                 size_t cursor_size) TY_WUR;

/* Begin a transaction on the request's connection (acquiring it). */
enum rc api_begin(struct srv_req *req) TY_WUR;

/* Commit when rc is RC_OK, else roll back; returns the final rc. */
enum rc api_end(struct srv_req *req, enum rc rc);

/* The database work of a request, for api_tx(). */
typedef enum rc (*api_tx_body)(struct srv_req *req, void *arg);

/*
 * Run body(req, arg) as one transaction on the request's connection
 * (acquiring it), through db_tx(): committed when it returns RC_OK, rolled
 * back otherwise, and run again from its start (req->err cleared) when
 * PostgreSQL broke a deadlock or a serialization failure, at most
 * DB_TX_TRIES times. So body only reads and writes the database (NOTIFY
 * included) and resets what it fills in arg; the reply, waking waiters and
 * the scheduler come after api_tx() returns RC_OK. For handlers whose
 * transaction changes job rows (db.h "Lock order").
 */
enum rc api_tx(struct srv_req *req, api_tx_body body, void *arg) TY_WUR;

/*
 * Whether s is a serving name: [a-z0-9][a-z0-9._-]{0,62}, the rule of
 * models.name, model_aliases.alias and deployments.name (sql/023_serving.sql).
 */
int api_serving_name_ok(const char *s);

/* The int64 as decimal text into buf (at least 24 bytes); returns buf. */
const char *api_i64(int64_t v, char *buf, size_t size);

/* Append with actor and source taken from the request. */
enum rc audit_append_req(struct srv_req *req, const char *action, const char *target,
                         const char *outcome, json_t *details) TY_WUR;

/*
 * Append one event in its own transaction (for records of refused requests,
 * such as failed logins, where there is no other change).
 */
enum rc audit_append_alone(struct srv_req *req, const char *action, const char *target,
                           const char *outcome, json_t *details) TY_WUR;

#endif
