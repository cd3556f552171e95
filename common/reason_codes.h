/*
 * reason_codes.h - the codes of job event and failure reasons: what the
 * server stores as job_events.reason_code / jobs.reason_code next to the
 * English text, and what a worker sends as "reason_code" in an exit report
 * (docs/agent-protocol.md). The dashboard translates each code with its
 * parameters; docs/job-reasons.md (and its zh-CN sibling) lists every code
 * and every parameter, and tests/lint_codes.py checks that the table and
 * this header name the same codes.
 *
 * Codes are append-only: never rename or reuse one (stored rows keep them).
 * Every code used in C must be one of these macros, never a literal, so the
 * lint sees it; reason_code_known() is the same list at run time.
 *
 * Thread-safety: constants and a pure function.
 */
#ifndef TY_COMMON_REASON_CODES_H
#define TY_COMMON_REASON_CODES_H

/* ---- a job's own transitions (the server) ---- */
#define RSN_SUBMITTED "submitted"
#define RSN_PLACED "placed"
#define RSN_PLAN "plan"
#define RSN_ASSIGNMENT_TAKEN "assignment_taken"
#define RSN_ATTEMPT_RUNNING "attempt_running"
#define RSN_SUCCEEDED "succeeded"
#define RSN_CANCELLED_BY_USER "cancelled_by_user"
#define RSN_CANCELLED "cancelled"
#define RSN_PREEMPTED "preempted"
#define RSN_RESTARTING "restarting"
#define RSN_FAILED_NO_RESTARTS "failed_no_restarts"
#define RSN_FAILED_FOR_GOOD "failed_for_good"

/* ---- causes: why an attempt ended (params.cause of the above) ---- */
#define RSN_RANK_EXITED "rank_exited"
#define RSN_RANK_SIGNALLED "rank_signalled"
#define RSN_NODE_FAILED "node_failed"
#define RSN_NODE_LOST "node_lost"
#define RSN_NODE_RANKS_LOST "node_ranks_lost"

/* ---- causes a worker reports (exit report "reason_code") ---- */
#define RSN_EXEC_FAILED "exec_failed"
#define RSN_PATH_REFUSED "path_refused"
#define RSN_SCRIPT_NOT_FOUND "script_not_found"
#define RSN_PREPARE_FAILED "prepare_failed"
#define RSN_RENDEZVOUS_PORT_BUSY "rendezvous_port_busy"
#define RSN_SPAWN_FAILED "spawn_failed"
#define RSN_ASSIGNMENT_INVALID "assignment_invalid"
#define RSN_NODE_OUT_OF_MEMORY "node_out_of_memory"
#define RSN_TIME_LIMIT_EXCEEDED "time_limit_exceeded"
#define RSN_STOPPED_BY_SERVER "stopped_by_server"
#define RSN_WORKER_SHUTDOWN "worker_shutdown"
#define RSN_EXIT_STATUS_UNKNOWN "exit_status_unknown"
#define RSN_NODE_DRAINING "node_draining"
#define RSN_ISOLATION_FAILED "isolation_failed"

/* Longest code, without the NUL. */
#define RSN_CODE_MAX 31

/* Whether code (may be NULL) is one of the codes above. */
int reason_code_known(const char *code);

/* The constant above equal to code (may be NULL; static), or NULL. */
const char *reason_code_find(const char *code);

#endif
