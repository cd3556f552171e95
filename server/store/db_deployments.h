/*
 * db_deployments.h - SQL for deployments and their replicas (sql/023_serving.sql,
 * docs/serving.md "Deployments"): the version a deployment serves, its row,
 * the serve_replicas rows that tie replica jobs to it, and what the health
 * loop reads and writes.
 *
 * A replica is a job (jobs.service, 025); the jobs rows themselves are
 * written by db_job_insert() and changed by the job state machine.
 *
 * Lock order (db.h): a deployment's row is taken (db_deployment_load lock=1)
 * before any of its replica jobs' rows, which come before the audit head.
 *
 * Thread-safety: any thread, with its own connection.
 */
#ifndef TY_SERVER_DB_DEPLOYMENTS_H
#define TY_SERVER_DB_DEPLOYMENTS_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"

/* A model version as a deployment needs it. Strings are owned (cleanup). */
struct db_serve_version {
    int64_t model_id, model_team_id, site_id, version_id;
    int version;          /* 1, 2, ... per model */
    int lineage_complete; /* 0: deployable only with an admin's override */
    char *model;          /* the model's name */
    char *team;           /* the model's team's name */
    char *site;           /* the site's name */
    char *path;           /* the version's files */
    char *manifest;       /* the manifest as compact JSON text */
    char *serve_kind;     /* chat, classify, embed, image, echo */
    char *serve_script;   /* relative to examples_dir */
};

/* Free what v owns and zero it; NULL is a no-op. */
void db_serve_version_cleanup(struct db_serve_version *v);

/*
 * The version of model that version (>= 1) names, or alias names when alias
 * is not NULL, or the newest when version is 0 and alias NULL, into *out. RC_ENOTFOUND with *what
 * "model" (no such model), "version" or "alias" (the model has none such).
 */
enum rc db_serve_version_find(PGconn *c, const char *model, int version, const char *alias,
                              struct db_serve_version *out, const char **what,
                              const char *req_id) TY_WUR;

/* The same by model_versions.id. RC_ENOTFOUND when missing. */
enum rc db_serve_version_by_id(PGconn *c, int64_t version_id, struct db_serve_version *out,
                               const char *req_id) TY_WUR;

/* A deployment's row as the API changes it. */
struct db_deployment {
    int64_t id, model_id, team_id, user_id, site_id;
    int64_t version_id;        /* 0 when alias is set */
    int64_t canary_version_id; /* 0: none */
    char alias[64];            /* "" when version_id is set */
    char name[64];
    char model[64]; /* the model's name (read by db_deployment_load) */
    char team[64];  /* the team's name (read by db_deployment_load) */
    char state[16]; /* active, stopped */
    int replicas, min_replicas, max_replicas, gpus_per_replica, priority;
    int idle_s, keep_texts_days, canary_weight;
    int canary_replicas; /* replicas of the canary version while its weight is above 0 */
};

/*
 * The deployment named name into *out; lock=1 locks its row FOR UPDATE (the
 * first lock of a deployment's change, "Lock order" above). RC_ENOTFOUND.
 */
enum rc db_deployment_load(PGconn *c, const char *name, int lock, struct db_deployment *out,
                           const char *req_id) TY_WUR;

/*
 * Insert d (its id ignored) with lineage_override; d->id is set. A name in
 * use is RC_ECONFLICT.
 */
enum rc db_deployment_insert(PGconn *c, struct db_deployment *d, int lineage_override,
                             const char *req_id) TY_WUR;

/* Write d's changeable fields (version_id, alias, canary, replicas, min,
 * max, idle_s, keep_texts_days, state) and updated_at; canary_started_at
 * becomes now() when the canary's version changes to one, or its weight
 * rises from 0 (sql/028_canary.sql). */
enum rc db_deployment_update(PGconn *c, const struct db_deployment *d, const char *req_id) TY_WUR;

/* Set the deployment's canary_bound to bound (a JSON object; {} for none). */
enum rc db_deployment_set_bound(PGconn *c, int64_t id, const json_t *bound,
                                const char *req_id) TY_WUR;

/*
 * The canaries the automatic rollback checks: every active deployment with
 * a canary version, a weight above 0 and a bound, each with the figures of
 * its canary version's records of the bound's window since the canary began
 * (serve_requests_version_ts, sql/028), as a new array of {"id", "name",
 * "canary_version_id", "canary_weight", "bound" (object), "requests",
 * "errors" (status 500 and above), "p99_ms" (null without records)} in *out.
 */
enum rc db_canary_figures(PGconn *c, json_t **out, const char *req_id) TY_WUR;

/*
 * Cancel replica job_id inside the open transaction (its row locked by the
 * caller): retire it, then end it through the jobs' cancel path
 * (db_job_cancel). *cancelled is 0 when its job had already ended; *nodes
 * (new array, or NULL) the nodes holding it, to wake after the commit.
 */
enum rc db_serve_replica_cancel(PGconn *c, int64_t job_id, const char *actor, const char *source,
                                int *cancelled, json_t **nodes, const char *req_id) TY_WUR;

/*
 * The next replica number of deployment id: 1 + the replicas it ever had, so
 * that a name <deployment>-r<k> is never used twice.
 */
enum rc db_deployment_next_k(PGconn *c, int64_t id, int *k, const char *req_id) TY_WUR;

/* Tie job_id to deployment dep serving version_id, with token. */
enum rc db_serve_replica_insert(PGconn *c, int64_t job_id, int64_t dep, int64_t version_id,
                                const char *token, const char *req_id) TY_WUR;

/*
 * The deployment's replicas not yet retired whose jobs have not ended, newest
 * (highest job id) first, as a new array of {"job_id", "state", "version_id",
 * "ready"} in *out.
 */
enum rc db_serve_replicas_live(PGconn *c, int64_t dep, json_t **out, const char *req_id) TY_WUR;

/* Mark job_id's replica retired (it is being cancelled or has ended). */
enum rc db_serve_replica_retire(PGconn *c, int64_t job_id, const char *req_id) TY_WUR;

/* The name of the deployment job_id is a replica of into name (size bytes),
 * "" when it is none. */
enum rc db_serve_replica_of(PGconn *c, int64_t job_id, char *name, size_t size,
                            const char *req_id) TY_WUR;

/*
 * One deployment as the API shows it (new object in *out): its fields
 * (canary_replicas and canary_bound among them), model, team, site, version
 * numbers, and "replicas_detail": every replica not
 * retired with job_id, name, state, node, ready, ready_at, attempt, version.
 */
enum rc db_deployment_get(PGconn *c, int64_t id, json_t **out, const char *req_id) TY_WUR;

/* A page of deployments by id (cursor: above this id, 0 = from the start),
 * member_of > 0: only those of that user's teams. New array in *out. */
enum rc db_deployment_list(PGconn *c, int64_t member_of, int64_t cursor, int limit, json_t **out,
                           const char *req_id) TY_WUR;

/*
 * What the health loop probes: every replica not retired whose job is
 * RUNNING, as a new array of {"job_id", "attempt", "host", "port", "ready",
 * "replica_attempt"} in *out (the attempt's master address and port).
 */
enum rc db_serve_probe_targets(PGconn *c, json_t **out, const char *req_id) TY_WUR;

/*
 * Record a probe's outcome for job_id's replica at attempt: ready sets
 * ready_at on the change to ready; a replica whose job is on another attempt
 * or no longer RUNNING is set not ready. *changed is 1 when the row changed.
 * Written only by the health loop that holds its leader lock (serve_health.h).
 */
enum rc db_serve_set_ready(PGconn *c, int64_t job_id, int attempt, int ready, int *changed,
                           const char *req_id) TY_WUR;

/* Clear ready on every replica whose job is not RUNNING or whose recorded
 * attempt is not its job's current one; *n how many changed. */
enum rc db_serve_unready_stale(PGconn *c, int *n, const char *req_id) TY_WUR;

#endif
