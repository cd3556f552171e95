/*
 * db_models.h - SQL of the model registry (sql/023_serving.sql: models,
 * model_versions, model_aliases; docs/serving.md, "Registry").
 *
 * A model is created by its first version's registration and owned by that
 * job's team and site. model_versions rows are immutable (a trigger refuses
 * UPDATE and DELETE); version numbers count 1, 2, ... per model, each taken
 * as max + 1 while the model's row is locked, so two registrations of one
 * model never pick the same number.
 *
 * Lock order (db.h): a registration's transaction takes the source job's
 * row FOR KEY SHARE first (place 2 of db.h's order; the version's foreign
 * key takes that same lock anyway, and it is the weakest mode, so a job's
 * transition, FOR UPDATE, simply waits), then the model's row FOR UPDATE,
 * then the audit head last. An alias change takes the model's row FOR
 * UPDATE, then the alias row, then the audit head. No transaction here
 * locks two models, and none takes a job's row after a model's.
 *
 * Functions that change rows run in the caller's open transaction; the
 * caller appends the audit event in the same one. Read functions need no
 * transaction.
 *
 * Thread-safety: any thread, with its own connection.
 */
#ifndef TY_SERVER_DB_MODELS_H
#define TY_SERVER_DB_MODELS_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"

/* What a registration needs to know of its source job. Caller storage: filled
 * by db_model_job_get(), released with db_model_job_cleanup(). */
struct db_model_job {
    int64_t team_id;
    int64_t site_id;
    int attempt;          /* the job's latest attempt (jobs.attempt) */
    char state[16];       /* jobs.state */
    char site[64];        /* the site's name */
    char template_id[72]; /* the spec's "template", "" when none */
    json_t *params;       /* owned; the spec's "params" ({} when none) */
    json_t *datasets;     /* owned; [{"name": registered name or null, "uri"}] in the
                             spec's order, a registered name replaced by its uri */
    json_t *paths;        /* owned; jobs.paths (normalized output_dir, local datasets) */
    json_t *spec_out;     /* owned; {"output_dir": the spec's, or null} */
    json_t *roots;        /* owned; the site's storage roots (strings) */
};

/* Fill *out for job_id. RC_ENOTFOUND when there is no such job. */
enum rc db_model_job_get(PGconn *c, int64_t job_id, struct db_model_job *out,
                         const char *req_id) TY_WUR;

/* Release what db_model_job_get() filled; safe on a zeroed struct. */
void db_model_job_cleanup(struct db_model_job *j);

/*
 * A recorded checkpoint of job_id: the one at step, or the newest when step
 * < 0. *attempt, *step_out and path (path_size bytes) are filled.
 * RC_ENOTFOUND when there is none.
 */
enum rc db_model_checkpoint(PGconn *c, int64_t job_id, int64_t step, int *attempt,
                            int64_t *step_out, char *path, size_t path_size,
                            const char *req_id) TY_WUR;

/* The job's last recorded step (the highest of its metrics and
 * checkpoints); *found 0 when it recorded none. */
enum rc db_model_last_step(PGconn *c, int64_t job_id, int64_t *step, int *found,
                           const char *req_id) TY_WUR;

/* Each metric's last value at or before step, as a new JSON object {name:
 * value} (the "step" key of a metric line left out). */
enum rc db_model_metrics_at(PGconn *c, int64_t job_id, int64_t step, json_t **out,
                            const char *req_id) TY_WUR;

/* Inside a registration's transaction: lock the job's row FOR KEY SHARE
 * (Lock order above) and read its state into state (16 bytes).
 * RC_ENOTFOUND when the job is gone. */
enum rc db_model_job_lock(PGconn *c, int64_t job_id, char *state, const char *req_id) TY_WUR;

/* A model's row. */
struct db_model {
    int64_t id;
    int64_t team_id;
    int64_t site_id;
    char team[64]; /* the owning team's name */
    char site[64]; /* its site's name */
};

/*
 * Model name, locked FOR UPDATE when lock is 1. RC_ENOTFOUND when there is
 * none.
 */
enum rc db_model_get_row(PGconn *c, const char *name, int lock, struct db_model *out,
                         const char *req_id) TY_WUR;

/*
 * Create model name (team_id, site_id, description, created_by borrowed)
 * unless it exists, then lock its row FOR UPDATE and fill *out; *created is 1
 * when this call made it. A concurrent creator's row is waited for and
 * taken as it is.
 */
enum rc db_model_ensure(PGconn *c, const char *name, int64_t team_id, int64_t site_id,
                        const char *description, const char *created_by, struct db_model *out,
                        int *created, const char *req_id) TY_WUR;

/* A new version's fields (borrowed). */
struct db_model_version_new {
    int64_t model_id;
    int64_t site_id;
    const char *source_kind; /* "output" | "checkpoint" */
    int64_t job_id;
    int attempt;
    int64_t step; /* < 0: none recorded (NULL) */
    const char *path;
    const char *template_id; /* "" or NULL: NULL */
    const char *serve_kind, *serve_script;
    const json_t *params, *datasets, *metrics, *manifest;
    const char *manifest_sha256;
    int lineage_complete;
    const char *description;
    const char *created_by;
};

/*
 * Insert the next version of v->model_id (whose row the caller holds
 * locked): *version receives its number, *id its row id.
 */
enum rc db_model_version_insert(PGconn *c, const struct db_model_version_new *v, int *version,
                                int64_t *id, const char *req_id) TY_WUR;

/* Version number version of model_id: its row id into *id. RC_ENOTFOUND. */
enum rc db_model_version_id(PGconn *c, int64_t model_id, int64_t version, int64_t *id,
                            const char *req_id) TY_WUR;

/* One version as JSON (new reference): every column, the model's name, the
 * site's name, and the aliases that point at it. RC_ENOTFOUND. */
enum rc db_model_version_get(PGconn *c, int64_t model_id, int64_t version, json_t **out,
                             const char *req_id) TY_WUR;

/*
 * The model as JSON (new reference): name, team, site, description,
 * created_by, created_at, "aliases" {alias: version}, "latest_version", and
 * "versions": a page of its versions newest first (below version `before`
 * when > 0, at most limit), each without manifest, params and metrics.
 * RC_ENOTFOUND.
 */
enum rc db_model_show(PGconn *c, int64_t model_id, int64_t before, int limit, json_t **out,
                      const char *req_id) TY_WUR;

/*
 * A page of models by name (after cursor when not NULL, at most limit):
 * only those of member_of's teams when member_of > 0. Each: name, team,
 * site, description, created_by, created_at, latest_version, versions
 * (count), aliases {alias: version}. New reference in *out.
 */
enum rc db_model_list(PGconn *c, int64_t member_of, const char *cursor, int limit, json_t **out,
                      const char *req_id) TY_WUR;

/*
 * Point alias of model_id at version_id (the model's row locked by the
 * caller), by updated_by. *from receives the version it pointed at before,
 * 0 when it is new.
 */
enum rc db_model_alias_set(PGconn *c, int64_t model_id, const char *alias, int64_t version_id,
                           const char *updated_by, int64_t *from, const char *req_id) TY_WUR;

/* Remove alias of model_id; *from receives the version it pointed at.
 * RC_ENOTFOUND when there is no such alias. */
enum rc db_model_alias_delete(PGconn *c, int64_t model_id, const char *alias, int64_t *from,
                              const char *req_id) TY_WUR;

#endif
