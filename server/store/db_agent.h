/*
 * db_agent.h - SQL behind the worker protocol (docs/agent-protocol.md):
 * join tokens, node registration and heartbeats, assignments, attempt
 * reports, logs, metrics and checkpoints.
 *
 * Functions that change rows run in the caller's open transaction; the
 * caller records job transitions and audit events in the same one.
 *
 * Thread-safety: any thread, with its own connection.
 */
#ifndef TY_SERVER_DB_AGENT_H
#define TY_SERVER_DB_AGENT_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"

/* Insert a join token (hash only), bound to node name when node is not
 * NULL. *out: {id, expires_at, uses, node}. */
enum rc db_join_token_create(PGconn *c, int64_t created_by, int64_t ttl_s, int64_t uses,
                             const char *node, const char *token_hash, json_t **out,
                             const char *req_id) TY_WUR;

/*
 * Every join token, newest first (at most 500), never its hash: *out an
 * array of {id, created_at, created_by (user name or null), expires_at, uses
 * (null before migration 018), uses_left, used, revoked_at, node (the bound
 * name or null), state ("active", "expired", "used_up", "revoked")}.
 */
enum rc db_join_token_list(PGconn *c, json_t **out, const char *req_id) TY_WUR;

/*
 * Revoke join token id (by user revoked_by): RC_ENOTFOUND if there is none,
 * RC_ECONFLICT if it is already revoked. *out: the row as the list shows it.
 */
enum rc db_join_token_revoke(PGconn *c, int64_t id, int64_t revoked_by, json_t **out,
                             const char *req_id) TY_WUR;

/*
 * Use one use of a join token for node name: *token_id receives the token's
 * id, *retry 0 and *bound whether the token is bound to name. When the token
 * has no use left but is the unexpired token node name joined with and that
 * node never registered with the credential it got (its answer was lost;
 * migration 016), nothing is spent, the node's row is locked and *retry is 1.
 * RC_EAUTH otherwise (unknown, expired, revoked, used up, or bound to
 * another name).
 */
enum rc db_join_token_use(PGconn *c, const char *token_hash, const char *name, int64_t *token_id,
                          int *retry, int *bound, const char *req_id) TY_WUR;

/*
 * Create the node, or give an existing one of that name a new credential,
 * not yet used, joined with token_id. An existing node is taken only when
 * bound (the token is bound to its name) or when token_id's own earlier join
 * made it and it never registered since (a retry); otherwise RC_ECONFLICT
 * and nothing changes: a join token is no licence to take over a node.
 */
enum rc db_node_join(PGconn *c, const char *name, const char *hostname, const char *addr,
                     const char *labels, const char *cred_hash, int64_t token_id, int bound,
                     int64_t *node_id, const char *req_id) TY_WUR;

/*
 * Update a node's inventory and mark it ready (a node an admin drained
 * stays draining). gpus: the GPU array of the protocol, replacing the old list.
 * site_id: the node's site (from its "site" label); 0 keeps the current one.
 * old_state receives the state before (for the audit record).
 */
enum rc db_node_register(PGconn *c, int64_t node_id, const json_t *body, const char *addr,
                         int64_t site_id, char *old_state, char *new_state, size_t state_size,
                         const char *req_id) TY_WUR;

/*
 * Record a heartbeat: last seen, GPU stats; a down node becomes ready again,
 * draining=1 makes a ready node draining. old/new state for the audit.
 * Each GPU of gpu_stats ({"index", "util_pct", "mem_used_mb"}; other shapes
 * are skipped) keeps its sample, and low_util_since (sql/011_overview.sql)
 * starts, goes on or stops by whether it is allocated and below
 * idle_util_pct.
 */
enum rc db_node_heartbeat(PGconn *c, int64_t node_id, const json_t *gpu_stats, int idle_util_pct,
                          int draining, char *old_state, char *new_state, size_t state_size,
                          const char *req_id) TY_WUR;

/* Set a node's state (admin drain/undrain); RC_ENOTFOUND if missing.
 * old_state receives the state before, name the node's name (for its audit
 * target), both caller's buffers. */
enum rc db_node_set_state(PGconn *c, int64_t node_id, const char *state, char *old_state,
                          size_t state_size, char *name, size_t name_size,
                          const char *req_id) TY_WUR;

/*
 * Lock order (db.h): lock, in id order, the jobs with an allocation on
 * node_id that a worker was handed (delivered, not released), before a
 * register changes them (lost ranks, redelivery) or takes the audit head.
 */
enum rc db_node_jobs_lock(PGconn *c, int64_t node_id, const char *req_id) TY_WUR;

/*
 * Of the attempt ids a node reports running (JSON array of strings), those
 * that must stop: the attempt ended, its job is being cancelled, or this
 * node's allocation was released. *out is a JSON array of id strings.
 */
enum rc db_attempts_to_stop(PGconn *c, int64_t node_id, const json_t *running, json_t **out,
                            const char *req_id) TY_WUR;

/*
 * Live allocations of this node that were delivered but that the node does
 * not report running (after a worker restart): JSON array of attempt ids.
 */
enum rc db_attempts_lost_on_node(PGconn *c, int64_t node_id, const json_t *running, json_t **out,
                                 const char *req_id) TY_WUR;

/* The node's current generation (see sql/003_agents.sql). */
enum rc db_node_generation(PGconn *c, int64_t node_id, int64_t *generation,
                           const char *req_id) TY_WUR;

/*
 * After a worker restart: allocations handed to the previous process but
 * never started are handed out again (the answer may have been lost).
 */
enum rc db_allocs_redeliver(PGconn *c, int64_t node_id, const char *req_id) TY_WUR;

/*
 * Take the node's undelivered allocations, marking them delivered, and
 * build the assignments of the protocol. The jobs concerned are locked first,
 * in id order (db.h "Lock order"); a job placed after that is left for the
 * next poll. Nothing is taken when the node's
 * generation moved on (a request left over from a previous worker process). *jobs_started receives
 * the ids of jobs to move PLACED -> STARTING (JSON array of strings). *cancels receives attempts
 * this node must stop that were not yet sent. Each assignment carries the job's site roots
 * ("allowed_roots") and checked local dataset paths ("datasets"); default work and output
 * dirs go below storage_root when it lies in a site root, else below the site's first root.
 *
 * With resend, the node's allocations that were delivered but not reported
 * started are taken again too: the worker's previous poll got no answer, so
 * a response the server committed may never have reached it (the server
 * died, the connection was reset). The worker ignores attempts it has
 * already received.
 */
enum rc db_assignments_take(PGconn *c, int64_t node_id, int64_t generation, int resend,
                            const char *storage_root, json_t **assignments, json_t **jobs_started,
                            json_t **cancels, const char *req_id) TY_WUR;

/* What the server knows of attempt_id on node_id. RC_ENOTFOUND when the
 * node holds (or held) no allocation of it. */
struct db_attempt_info {
    int64_t job_id;
    int attempt;
    char attempt_state[16]; /* placed | starting | running | ended */
    char job_state[16];
    int cancel_requested;
    int restarts, max_restarts;
    int alloc_released; /* this node's allocation */
    int alloc_started;
    char node_name[64];
};
enum rc db_attempt_info(PGconn *c, int64_t attempt_id, int64_t node_id, int lock,
                        struct db_attempt_info *out, const char *req_id) TY_WUR;

/* Mark this node's part started; *all_started = every node of it started. */
enum rc db_attempt_node_started(PGconn *c, int64_t attempt_id, int64_t node_id, int *all_started,
                                const char *req_id) TY_WUR;

/*
 * Record this node's exit and release its GPUs. *live_left receives the
 * attempt's allocations still held by other nodes; *all_ok whether every
 * node of the attempt has exited with success so far.
 */
enum rc db_attempt_node_exit(PGconn *c, int64_t attempt_id, int64_t node_id,
                             const json_t *exit_info, int *live_left, int *all_ok,
                             const char *req_id) TY_WUR;

/* End an attempt with an outcome (idempotent). */
enum rc db_attempt_end(PGconn *c, int64_t attempt_id, const char *outcome,
                       const char *req_id) TY_WUR;

/* Set the attempt's state (starting/running). */
enum rc db_attempt_state(PGconn *c, int64_t attempt_id, const char *state,
                         const char *req_id) TY_WUR;

/* Count a restart of job_id (restarts + 1). */
enum rc db_job_count_restart(PGconn *c, int64_t job_id, const char *req_id) TY_WUR;

/* Live allocations left for job_id. */
enum rc db_job_live_allocs(PGconn *c, int64_t job_id, int *n, const char *req_id) TY_WUR;

/*
 * Store a batch of logs, metrics and checkpoints of attempt number attempt
 * (row attempt_id) of job_id, and add dropped (lines the node dropped before
 * this batch, >= 0) to the attempt's dropped_lines.
 *
 * A batch whose logs are all stored already is a replay (the worker retries
 * a post whose answer it never got, with the same lines; docs/agent-
 * protocol.md): then nothing is stored and *replayed is 1, so that its
 * metrics, checkpoints and drop count are not counted twice. A batch without
 * logs cannot be told from a new one and is stored (*replayed 0).
 */
enum rc db_output_store(PGconn *c, int64_t job_id, int attempt, int64_t attempt_id,
                        const json_t *logs, const json_t *metrics, const json_t *checkpoints,
                        int64_t dropped, int *replayed, const char *req_id) TY_WUR;

/*
 * Nodes silent for longer than timeout_s are marked down. *lost receives
 * [{node_id, node, allocations:[{attempt_id, job_id}]}] for each such node.
 */
enum rc db_nodes_mark_lost(PGconn *c, int timeout_s, json_t **lost, const char *req_id) TY_WUR;

/* Release one node's allocation of an attempt (node lost). */
enum rc db_alloc_release_node(PGconn *c, int64_t attempt_id, int64_t node_id,
                              const char *req_id) TY_WUR;

/*
 * A rank failure that came just before a node of the same attempt was
 * declared lost was most likely caused by that loss (peers see the
 * connection drop first). If attempt_id ended "failed" within window_s,
 * call it "lost" and give the job its restart back. *refunded = 1 if so.
 */
enum rc db_attempt_refund_recent_failure(PGconn *c, int64_t attempt_id, int window_s, int *refunded,
                                         const char *req_id) TY_WUR;

/* Node ids holding live allocations of job_id (to wake their long-polls). */
enum rc db_job_nodes(PGconn *c, int64_t job_id, json_t **out, const char *req_id) TY_WUR;

#endif
