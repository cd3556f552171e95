/*
 * api_agent_int.h - what the handlers of the worker protocol
 * (docs/agent-protocol.md) share; internal to server/api/api_agent_*.c.
 *
 * The protocol's files, one concern each:
 *   api_agent_join.c       join tokens and a node's join
 *   api_agent_register.c   a worker's register at start: inventory, what to keep
 *   api_agent_heartbeat.c  heartbeats
 *   api_agent_assign.c     the assignments long-poll
 *   api_agent_report.c     started and exit reports of an attempt
 *   api_agent_output.c     batches of logs, metrics and checkpoints
 *   api_agent_policy.c     the path policy on a node's side (checkpoints, refusals)
 *   api_agent_util.c       the helpers below that are not the policy's
 *
 * Every change of a node's or a job's state is audited in the transaction
 * that makes it. Functions that take a req answer for the node that calls
 * (req->who.node_id, req->who.node_name); those that fill req->err return
 * the rc of srv_fail(). Thread-safety: reentrant; each works on its own
 * request.
 */
#ifndef TY_SERVER_API_AGENT_INT_H
#define TY_SERVER_API_AGENT_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "srv.h"

struct db_attempt_info;

/* 1 when s is a valid node name or label key: [a-z0-9][a-z0-9._-]{0,62}
 * (they appear in URLs, logs and labels), else 0. */
int agent_valid_name(const char *s);

/* 1 when s is an IPv4 or IPv6 address in text form, else 0. */
int agent_valid_ip(const char *s);

/*
 * Check a node's labels (borrowed; NULL is none): an object of at most 16
 * members with agent_valid_name() keys and string values of at most 128
 * bytes. RC_EINVAL with req->err (field "labels") otherwise.
 */
enum rc agent_check_labels(struct srv_req *req, const json_t *labels) TY_WUR;

/*
 * The site a node's labels (borrowed; NULL is none) place it in: the "site"
 * label's, the default site when labels come without one, 0 (keep the
 * node's) when no labels come, into *site_id (out). An unknown site is
 * RC_EINVAL (field "labels.site"): a node must not take jobs of a site it
 * does not belong to. RC_EUNAVAIL without a database; else db_site_id's rc.
 */
enum rc agent_label_site(struct srv_req *req, const json_t *labels, int64_t *site_id) TY_WUR;

/* The actor the calling node's changes are recorded under ("node:NAME"),
 * into the caller's buffer out of n bytes. */
void agent_node_actor(struct srv_req *req, char *out, size_t n);

/*
 * Audit the calling node's change of state from -> to for the reason why (a
 * node.state event, in the caller's transaction); nothing when from equals
 * to. RC_OK or the rc of the audit append.
 */
enum rc agent_audit_node_state(struct srv_req *req, const char *from, const char *to,
                               const char *why) TY_WUR;

/*
 * The attempt named by the path's first capture, checked against the calling
 * node, locking its job (db_attempt_info), into *attempt_id and *info (out).
 * RC_ENOTFOUND with req->err when this node holds no part of it; an rc of
 * api_param_id() or db_attempt_info() otherwise. Call in a transaction.
 */
enum rc agent_load_attempt(struct srv_req *req, int64_t *attempt_id,
                           struct db_attempt_info *info) TY_WUR;

/*
 * api_agent_policy.c: a path refused by the policy on a node's side: the
 * worker refused to launch because a path failed its realpath check (stage
 * "node", path NULL), or the node reported a checkpoint outside the job's
 * checkpoint directory (stage "checkpoint", path the quoted path). reason
 * goes to the audit event, why to the job's webhooks. Audited
 * (policy.violation) and told to the webhooks like a refusal at submit, in
 * the caller's transaction: after every row it locks (db.h "Lock order").
 * RC_ENOMEM, or the rc of the audit append or the webhook enqueue.
 */
enum rc agent_policy_violation(struct srv_req *req, int64_t job_id, int attempt, const char *stage,
                               const char *reason, const char *path, const char *why) TY_WUR;

/*
 * api_agent_policy.c: which checkpoints of an output batch (ckpts, borrowed
 * array of {"step", "path"}) of job job_id may be recorded: each path must
 * lie in the job's checkpoint directory, which lies in the site's storage
 * roots (the server's storage_root while the site lists none).
 * *ok (out): the accepted entries with normalized paths; *refused (out):
 * the others as {"index", "path" (quoted), "reason"}; both new
 * arrays the caller frees, also when the rc is not RC_OK. Only an entry is
 * refused, never the batch. RC_ENOMEM or db_export_job_get's rc otherwise.
 */
enum rc agent_checkpoints_vet(struct srv_req *req, int64_t job_id, const json_t *ckpts, json_t **ok,
                              json_t **refused) TY_WUR;

/*
 * api_agent_policy.c: record each entry of refused (borrowed, as
 * agent_checkpoints_vet() fills it) of the attempt info as a
 * policy.violation of stage "checkpoint" with its webhook, and log it.
 * RC_OK or the first failing rc of agent_policy_violation().
 */
enum rc agent_checkpoints_refused_audit(struct srv_req *req, const struct db_attempt_info *info,
                                        const json_t *refused) TY_WUR;

#endif
