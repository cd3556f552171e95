/*
 * db_jobs.h - SQL for jobs and their state machine.
 *
 * Every state change goes through db_job_transition(), which in the caller's
 * open transaction updates the jobs row, adds a job_events row and appends
 * the "job.state" audit event: the three commit or roll back together.
 *
 * Thread-safety: any thread, with its own connection.
 */
#ifndef TY_SERVER_DB_JOBS_H
#define TY_SERVER_DB_JOBS_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"
#include "job_reason.h"
#include "jobspec.h"

/*
 * A counter that moves after every committed change that a job list could
 * show (api_end, the scheduler and the monitor call db_jobs_changed()).
 * Cached job-list pages (cache.h) are valid only under the generation they
 * were read in. Thread-safe (atomic).
 */
uint64_t db_jobs_generation(void);
void db_jobs_changed(void);

/* Whether s names a job state ("QUEUED", ...). */
int db_job_state_valid(const char *s);

/* Whether the state is final (SUCCEEDED, FAILED, CANCELLED). */
int db_job_state_terminal(const char *s);

/* What the compliance check at submit fixed for a job (jobs_check_submit). */
struct db_job_compliance {
    int64_t site_id;         /* sites.id; 0 = the default site */
    char classification[16]; /* "public" .. "secret"; "" = the column default */
    json_t *paths;           /* owned: normalized local paths (jobs.paths); NULL = {} */
};

/* Free what c owns and zero it; NULL is a no-op. */
void db_job_compliance_cleanup(struct db_job_compliance *c);

/*
 * Insert a QUEUED job and its first job_events row in the open transaction.
 * comp (borrowed, may be NULL for the defaults) sets the job's site,
 * classification and checked paths; spec->service makes a service job (025:
 * time_limit_s 0, restarted without limit, never preempted). *out is the job
 * as JSON (new reference).
 */
enum rc db_job_insert(PGconn *c, const struct jobspec *spec, const json_t *spec_json,
                      int64_t team_id, int64_t user_id, const char *actor,
                      const struct db_job_compliance *comp, json_t **out,
                      const char *req_id) TY_WUR;

/*
 * The job user_id submitted with Idempotency-Key key (migration 017), in the
 * open transaction. The key is locked first, until the transaction ends (an
 * advisory lock), so that two submits with one key run one after the other
 * and the second finds the first's job. *job_id is 0 when there is none;
 * else *same is 1 when that job's request had request_hash.
 */
enum rc db_job_idempotency_find(PGconn *c, int64_t user_id, const char *key,
                                const char *request_hash, int64_t *job_id, int *same,
                                const char *req_id) TY_WUR;

/* Record key and request_hash on job_id (just inserted by the same user). */
enum rc db_job_idempotency_set(PGconn *c, int64_t job_id, const char *key, const char *request_hash,
                               const char *req_id) TY_WUR;

/* One job with its spec, team, user and site names. RC_ENOTFOUND if missing. */
enum rc db_job_get(PGconn *c, int64_t id, json_t **out, const char *req_id) TY_WUR;

/*
 * Lock the rows of the n jobs in ids (any order; repeats and ids without a
 * row are fine) FOR UPDATE, in ascending id order, in the open transaction:
 * step 2 of "Lock order" (db.h) for a transaction that changes several jobs.
 * Call it before the transaction touches any of them or the audit head.
 */
enum rc db_jobs_lock(PGconn *c, const int64_t *ids, size_t n, const char *req_id) TY_WUR;

/* Team id and state of a job (for access checks); lock=1 locks the row. */
enum rc db_job_brief(PGconn *c, int64_t id, int lock, int64_t *team_id, char *state,
                     size_t state_size, const char *req_id) TY_WUR;

/*
 * Set job id's priority to prio (0 low, 1 normal, 2 high) in its row and its
 * spec's "priority", in the open transaction; the caller holds the row lock
 * (db_job_brief lock=1) and has checked its state. *old is the priority it
 * had. RC_ENOTFOUND if missing.
 */
enum rc db_job_set_priority(PGconn *c, int64_t id, int prio, int *old, const char *req_id) TY_WUR;

struct db_job_filter {
    const char *state;  /* or NULL */
    const char *team;   /* team name or NULL */
    const char *user;   /* username or NULL */
    int64_t member_of;  /* only teams this user belongs to; 0 = all */
    const char *cursor; /* id bound (exclusive) or NULL */
    int limit;          /* 1..500 */
};

/* A page of jobs, newest first, without specs. */
enum rc db_job_list(PGconn *c, const struct db_job_filter *f, json_t **out,
                    const char *req_id) TY_WUR;

/* The job's events, oldest first. */
enum rc db_job_events(PGconn *c, int64_t id, json_t **out, const char *req_id) TY_WUR;

/* The job's events with an id above after_id, oldest first, at most limit. */
enum rc db_job_events_after(PGconn *c, int64_t id, int64_t after_id, int limit, json_t **out,
                            const char *req_id) TY_WUR;

/*
 * Move job id to state `to` if its current state is one of from (a
 * NULL-terminated list; NULL = any non-final state), with why (borrowed) as
 * the job's reason: its text, code and params in the jobs row and the job
 * event, its text and code in the audit event (actor, source), all in the
 * open transaction.
 * RC_ECONFLICT when the job is not in an allowed state, RC_ENOTFOUND when
 * missing.
 */
enum rc db_job_transition(PGconn *c, int64_t id, const char *const *from, const char *to,
                          const struct job_reason *why, const char *actor, const char *source,
                          const char *req_id) TY_WUR;

/* Lock job_id and read what the lifecycle decides on: cancel requested,
 * restarts used and allowed, state. */
enum rc db_job_flags(PGconn *c, int64_t job_id, int *cancel, int *restarts, int *max, char *state,
                     size_t state_size, const char *req_id) TY_WUR;

/*
 * For a service job (jobs.service, 025: a deployment's replica) whose
 * attempt attempt_id just failed, in the open transaction with the job's row
 * held: count the failure in its streak of quick failures and hold its next
 * placement back by the wait that streak gives (jobs.not_before: 1 s,
 * doubling, at most 300 s). *service is 1 and *wait_s the wait for a service
 * job; for any other job nothing changes and both are 0.
 */
enum rc db_job_service_backoff(PGconn *c, int64_t job_id, int64_t attempt_id, int *service,
                               int *wait_s, const char *req_id) TY_WUR;

/* *service: 1 when job_id is a service job (jobs.service, 025), else 0. */
enum rc db_job_is_service(PGconn *c, int64_t job_id, int *service, const char *req_id) TY_WUR;

#endif
