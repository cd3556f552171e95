/*
 * db_exports.h - SQL for export requests (sql/006_exports.sql): asking to
 * download a file of a job's outputs, the admin's decision and the
 * one-time download link.
 *
 * States: pending -> approved | denied; approved -> downloaded | expired.
 * An approved row whose link_expires_at has passed reads as "expired" in
 * every query here even before a use of the link writes that state.
 * Functions that change rows run in the caller's open transaction; the
 * caller appends the audit event in the same one.
 *
 * Thread-safety: any thread, with its own connection.
 */
#ifndef TY_SERVER_DB_EXPORTS_H
#define TY_SERVER_DB_EXPORTS_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"
#include "pathpol.h"

/* What an export needs to know of a job. Caller storage: init with
 * db_export_job_get(), release with db_export_job_cleanup(). */
struct db_export_job {
    int64_t team_id;
    char classification[16]; /* public | internal | confidential | secret */
    json_t *paths;           /* owned; jobs.paths (the normalized output_dir, ...) */
    json_t *spec_out;        /* owned; {"output_dir": the spec's, or null} */
    json_t *roots;           /* owned; the site's storage roots (strings) */
};

/* Fill *out for job_id. RC_ENOTFOUND when there is no such job. */
enum rc db_export_job_get(PGconn *c, int64_t job_id, struct db_export_job *out,
                          const char *req_id) TY_WUR;

/* Release what db_export_job_get() filled; safe on a zeroed struct. */
void db_export_job_cleanup(struct db_export_job *j);

/* Insert a pending request; *id receives its id. Strings borrowed. */
enum rc db_export_insert(PGconn *c, int64_t job_id, const char *path, const char *reason,
                         const char *classification, int64_t requested_by, int64_t *id,
                         const char *req_id) TY_WUR;

/* One request, for checks and audit records. */
struct db_export_brief {
    int64_t id;
    int64_t job_id;
    int64_t requested_by;        /* users.id */
    char requester[64];          /* username */
    char state[16];              /* the effective state (see above) */
    char classification[16];     /* copied from the job at request time */
    char path[PATHPOL_BUF_SIZE]; /* relative to the job's output directory */
};

/* Read request id; lock=1 locks the row. RC_ENOTFOUND when missing. */
enum rc db_export_brief(PGconn *c, int64_t id, int lock, struct db_export_brief *out,
                        const char *req_id) TY_WUR;

/*
 * Approve a pending request and store the link's hash, valid ttl_s seconds.
 * decided_by 0 means the server (public and internal jobs). *expires_at
 * (at least 40 bytes) receives the link's expiry as ISO-8601 UTC.
 * RC_ECONFLICT when the request is not pending.
 */
enum rc db_export_approve(PGconn *c, int64_t id, int64_t decided_by, const char *note,
                          const char *link_hash, int64_t ttl_s, char *expires_at,
                          size_t expires_size, const char *req_id) TY_WUR;

/* Deny a pending request. RC_ECONFLICT when it is not pending. */
enum rc db_export_deny(PGconn *c, int64_t id, int64_t decided_by, const char *note,
                       const char *req_id) TY_WUR;

/* One request as JSON (new reference). RC_ENOTFOUND when missing. */
enum rc db_export_get(PGconn *c, int64_t id, json_t **out, const char *req_id) TY_WUR;

struct db_export_filter {
    const char *state;    /* effective state or NULL */
    int64_t requested_by; /* only this user's requests; 0 = everyone's */
    int64_t job_id;       /* only this job's; 0 = every job's */
    const char *cursor;   /* id bound (exclusive) or NULL */
    int limit;            /* 1..500 */
};

/* A page of requests, newest first, as a JSON array (new reference). */
enum rc db_export_list(PGconn *c, const struct db_export_filter *f, json_t **out,
                       const char *req_id) TY_WUR;

/*
 * Use a one-time link by its hash. RC_OK when this call took it: the row is
 * now "downloaded" and *out describes it. Otherwise *out describes the row
 * when there is one and the rc says why: RC_EGONE when the link was used
 * already (out->state "downloaded") or has expired (out->state "expired";
 * *newly_expired = 1 when this call wrote that state), RC_ENOTFOUND when no
 * request has that link.
 */
enum rc db_export_take_link(PGconn *c, const char *link_hash, struct db_export_brief *out,
                            int *newly_expired, const char *req_id) TY_WUR;

#endif
