/*
 * db_models.c - see db_models.h.
 */
#include "db_models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "jx.h"

/* Aliases of a model as {alias: version}, for the model mv.model_id. */
#define ALIASES_OF(model)                                                                          \
    "(SELECT coalesce(jsonb_object_agg(a.alias, av.version ORDER BY a.alias), '{}') FROM "         \
    "model_aliases a JOIN model_versions av ON av.id = a.version_id WHERE a.model_id = " model ")"

#define VERSION_BRIEF_COLS                                                                         \
    "v.id, v.version, v.source_kind, v.source_job_id, v.source_attempt, v.source_step, "           \
    "v.path, v.template, v.serve_kind, v.serve_script, v.manifest_sha256, "                        \
    "jsonb_array_length(v.manifest) AS files, (SELECT coalesce(sum((f->>'size')::bigint), 0) "     \
    "FROM jsonb_array_elements(v.manifest) f)::bigint AS bytes, v.lineage_complete, "              \
    "v.description, "                                                                              \
    "v.created_by, v.created_at"

enum rc db_model_job_get(PGconn *c, int64_t job_id, struct db_model_job *out, const char *req_id)
{
    char id[24];
    const char *p[] = {db_i64(job_id, id, sizeof(id))};
    PGresult *r;
    enum rc rc;
    int64_t attempt = 0;

    memset(out, 0, sizeof(*out));
    r = db_exec(c,
                "SELECT j.team_id, j.site_id, j.attempt, j.state, s.name, "
                "coalesce(j.spec->>'template', ''), CASE WHEN jsonb_typeof(j.spec->'params') = "
                "'object' THEN j.spec->'params' ELSE '{}' END, "
                "(SELECT coalesce(jsonb_agg(jsonb_build_object('name', d.name, 'uri', "
                "coalesce(d.uri, e.v)) ORDER BY e.i), '[]') FROM jsonb_array_elements_text("
                "CASE WHEN jsonb_typeof(j.spec->'datasets') = 'array' THEN j.spec->'datasets' "
                "ELSE '[]' END) WITH ORDINALITY e(v, i) LEFT JOIN datasets d ON d.name = e.v), "
                "j.paths, jsonb_build_object('output_dir', j.spec->'output_dir'), "
                "array_to_json(s.storage_roots) FROM jobs j JOIN sites s ON s.id = j.site_id "
                "WHERE j.id = $1",
                1, p);
    rc = db_result_rc(r, req_id);
    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 0), &out->team_id);
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 1), &out->site_id);
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 2), &attempt);
    if (rc == RC_OK) {
        out->attempt = (int)attempt;
        snprintf(out->state, sizeof(out->state), "%s", PQgetvalue(r, 0, 3));
        snprintf(out->site, sizeof(out->site), "%s", PQgetvalue(r, 0, 4));
        snprintf(out->template_id, sizeof(out->template_id), "%s", PQgetvalue(r, 0, 5));
        out->params = jx_loads(PQgetvalue(r, 0, 6), 0);
        out->datasets = jx_loads(PQgetvalue(r, 0, 7), 0);
        out->paths = jx_loads(PQgetvalue(r, 0, 8), 0);
        out->spec_out = jx_loads(PQgetvalue(r, 0, 9), 0);
        out->roots = jx_loads(PQgetvalue(r, 0, 10), 0);
        if (!json_is_object(out->params) || !json_is_array(out->datasets) ||
            !json_is_object(out->paths) || !json_is_object(out->spec_out) ||
            !json_is_array(out->roots))
            rc = RC_EINTERNAL;
    }
    PQclear(r);
    if (rc != RC_OK)
        db_model_job_cleanup(out);
    return rc;
}

void db_model_job_cleanup(struct db_model_job *j)
{
    json_decref(j->params);
    json_decref(j->datasets);
    json_decref(j->paths);
    json_decref(j->spec_out);
    json_decref(j->roots);
    j->params = j->datasets = j->paths = j->spec_out = j->roots = NULL;
}

enum rc db_model_checkpoint(PGconn *c, int64_t job_id, int64_t step, int *attempt,
                            int64_t *step_out, char *path, size_t path_size, const char *req_id)
{
    char id[24], st[24];
    const char *p[] = {db_i64(job_id, id, sizeof(id)),
                       step >= 0 ? db_i64(step, st, sizeof(st)) : NULL};
    PGresult *r = db_exec(c,
                          "SELECT attempt, step, path FROM checkpoints WHERE job_id = $1 AND "
                          "($2::bigint IS NULL OR step = $2) ORDER BY step DESC, id DESC LIMIT 1",
                          2, p);
    enum rc rc = db_result_rc(r, req_id);
    int64_t a = 0;

    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 0), &a);
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 1), step_out);
    if (rc == RC_OK) {
        *attempt = (int)a;
        snprintf(path, path_size, "%s", PQgetvalue(r, 0, 2));
    }
    PQclear(r);
    return rc;
}

enum rc db_model_last_step(PGconn *c, int64_t job_id, int64_t *step, int *found, const char *req_id)
{
    char id[24];
    const char *p[] = {db_i64(job_id, id, sizeof(id))};
    PGresult *r = db_exec(c,
                          "SELECT greatest((SELECT max(step) FROM metrics WHERE job_id = $1), "
                          "(SELECT max(step) FROM checkpoints WHERE job_id = $1))",
                          1, p);
    enum rc rc = db_result_rc(r, req_id);

    *found = 0;
    *step = 0;
    if (rc == RC_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0)) {
        rc = db_parse_i64(PQgetvalue(r, 0, 0), step);
        *found = rc == RC_OK;
    }
    PQclear(r);
    return rc;
}

enum rc db_model_metrics_at(PGconn *c, int64_t job_id, int64_t step, json_t **out,
                            const char *req_id)
{
    char id[24], st[24];
    const char *p[] = {db_i64(job_id, id, sizeof(id)), db_i64(step, st, sizeof(st))};
    json_t *row = NULL;
    enum rc rc = db_query_json(
        c,
        "SELECT coalesce(jsonb_object_agg(k, v), '{}') AS metrics FROM (SELECT DISTINCT ON "
        "(e.key) e.key AS k, e.value AS v FROM metrics m, jsonb_each(m.vals) e WHERE m.job_id = "
        "$1 AND m.step <= $2 AND e.key <> 'step' ORDER BY e.key, m.step DESC, m.id DESC) x",
        2, p, 1, &row, req_id);

    *out = NULL;
    if (rc == RC_OK) {
        *out = json_incref(json_object_get(row, "metrics"));
        if (!json_is_object(*out))
            rc = RC_EINTERNAL;
    }
    json_decref(row);
    return rc;
}

enum rc db_model_job_lock(PGconn *c, int64_t job_id, char *state, const char *req_id)
{
    char id[24];
    const char *p[] = {db_i64(job_id, id, sizeof(id))};
    PGresult *r = db_exec(c, "SELECT state FROM jobs WHERE id = $1 FOR KEY SHARE", 1, p);
    enum rc rc = db_result_rc(r, req_id);

    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        snprintf(state, 16, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return rc;
}

/* Fill out from a row of (id, team_id, site_id, team, site). */
static enum rc model_from_row(const PGresult *r, struct db_model *out)
{
    enum rc rc = db_parse_i64(PQgetvalue(r, 0, 0), &out->id);

    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 1), &out->team_id);
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 2), &out->site_id);
    snprintf(out->team, sizeof(out->team), "%s", PQgetvalue(r, 0, 3));
    snprintf(out->site, sizeof(out->site), "%s", PQgetvalue(r, 0, 4));
    return rc;
}

enum rc db_model_get_row(PGconn *c, const char *name, int lock, struct db_model *out,
                         const char *req_id)
{
    const char *p[] = {name};
    PGresult *r = db_exec(c,
                          lock ? "SELECT m.id, m.team_id, m.site_id, t.name, s.name FROM models m "
                                 "JOIN teams t ON t.id = m.team_id JOIN sites s ON s.id = "
                                 "m.site_id WHERE m.name = $1 FOR UPDATE OF m"
                               : "SELECT m.id, m.team_id, m.site_id, t.name, s.name FROM models m "
                                 "JOIN teams t ON t.id = m.team_id JOIN sites s ON s.id = "
                                 "m.site_id WHERE m.name = $1",
                          1, p);
    enum rc rc = db_result_rc(r, req_id);

    memset(out, 0, sizeof(*out));
    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = model_from_row(r, out);
    PQclear(r);
    return rc;
}

enum rc db_model_ensure(PGconn *c, const char *name, int64_t team_id, int64_t site_id,
                        const char *description, const char *created_by, struct db_model *out,
                        int *created, const char *req_id)
{
    char team[24], site[24];
    const char *p[] = {name, db_i64(team_id, team, sizeof(team)),
                       db_i64(site_id, site, sizeof(site)), description ? description : "",
                       created_by};
    /* ON CONFLICT DO NOTHING: a concurrent creator's insert is waited for,
     * and its row is then locked below like any existing model. */
    PGresult *r = db_exec(c,
                          "INSERT INTO models (name, team_id, site_id, description, created_by) "
                          "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO NOTHING RETURNING id",
                          5, p);
    enum rc rc = db_result_rc(r, req_id);

    *created = rc == RC_OK && PQntuples(r) == 1;
    PQclear(r);
    if (rc != RC_OK)
        return rc;
    return db_model_get_row(c, name, 1, out, req_id);
}

enum rc db_model_version_insert(PGconn *c, const struct db_model_version_new *v, int *version,
                                int64_t *id, const char *req_id)
{
    char model[24], site[24], job[24], att[24], step[24];
    char *params = NULL, *datasets = NULL, *metrics = NULL, *manifest = NULL;
    PGresult *r = NULL;
    int64_t n = 0;
    enum rc rc = RC_ENOMEM;

    params = json_dumps(v->params, JSON_COMPACT);
    datasets = json_dumps(v->datasets, JSON_COMPACT);
    metrics = json_dumps(v->metrics, JSON_COMPACT);
    manifest = json_dumps(v->manifest, JSON_COMPACT);
    if (params == NULL || datasets == NULL || metrics == NULL || manifest == NULL)
        goto out;
    {
        const char *p[] = {db_i64(v->model_id, model, sizeof(model)),
                           db_i64(v->site_id, site, sizeof(site)),
                           v->source_kind,
                           db_i64(v->job_id, job, sizeof(job)),
                           db_i64(v->attempt, att, sizeof(att)),
                           v->step >= 0 ? db_i64(v->step, step, sizeof(step)) : NULL,
                           v->path,
                           v->template_id && v->template_id[0] ? v->template_id : NULL,
                           v->serve_kind,
                           v->serve_script,
                           params,
                           datasets,
                           metrics,
                           manifest,
                           v->manifest_sha256,
                           v->lineage_complete ? "true" : "false",
                           v->description ? v->description : "",
                           v->created_by};
        /* The number is max + 1 under the model's row lock (the caller's). */
        r = db_exec(c,
                    "INSERT INTO model_versions (model_id, version, site_id, source_kind, "
                    "source_job_id, source_attempt, source_step, path, template, serve_kind, "
                    "serve_script, params, datasets, metrics, manifest, manifest_sha256, "
                    "lineage_complete, description, created_by) SELECT $1, coalesce(max(version), "
                    "0) + 1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, "
                    "$17, $18 FROM model_versions WHERE model_id = $1 RETURNING id, version",
                    18, p);
    }
    rc = db_result_rc(r, req_id);
    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_EINTERNAL;
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 0), id);
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 1), &n);
    if (rc == RC_OK)
        *version = (int)n;
out:
    PQclear(r);
    free(params);
    free(datasets);
    free(metrics);
    free(manifest);
    return rc;
}

enum rc db_model_version_id(PGconn *c, int64_t model_id, int64_t version, int64_t *id,
                            const char *req_id)
{
    char m[24], v[24];
    const char *p[] = {db_i64(model_id, m, sizeof(m)), db_i64(version, v, sizeof(v))};
    PGresult *r =
        db_exec(c, "SELECT id FROM model_versions WHERE model_id = $1 AND version = $2", 2, p);
    enum rc rc = db_result_rc(r, req_id);

    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 0), id);
    PQclear(r);
    return rc;
}

enum rc db_model_version_get(PGconn *c, int64_t model_id, int64_t version, json_t **out,
                             const char *req_id)
{
    char m[24], v[24];
    const char *p[] = {db_i64(model_id, m, sizeof(m)), db_i64(version, v, sizeof(v))};

    return db_query_json(
        c,
        "SELECT " VERSION_BRIEF_COLS ", md.name AS model, s.name AS site, v.params, v.datasets, "
        "v.metrics, v.manifest, (SELECT coalesce(jsonb_agg(a.alias ORDER BY a.alias), '[]') FROM "
        "model_aliases a WHERE a.version_id = v.id) AS aliases FROM model_versions v JOIN models "
        "md ON md.id = v.model_id JOIN sites s ON s.id = v.site_id WHERE v.model_id = $1 AND "
        "v.version = $2",
        2, p, 1, out, req_id);
}

enum rc db_model_show(PGconn *c, int64_t model_id, int64_t before, int limit, json_t **out,
                      const char *req_id)
{
    char m[24], b[24], l[24];
    const char *p[] = {db_i64(model_id, m, sizeof(m)),
                       before > 0 ? db_i64(before, b, sizeof(b)) : NULL,
                       db_i64(limit, l, sizeof(l))};
    json_t *model = NULL, *versions = NULL;
    enum rc rc = db_query_json(
        c,
        "SELECT m.name, t.name AS team, s.name AS site, m.description, m.created_by, "
        "m.created_at, " ALIASES_OF(
            "m.id") " AS aliases, (SELECT max(version) FROM "
                    "model_versions WHERE model_id = m.id) AS latest_version FROM models m JOIN "
                    "teams t ON "
                    "t.id = m.team_id JOIN sites s ON s.id = m.site_id WHERE m.id = $1",
        1, p, 1, &model, req_id);

    *out = NULL;
    if (rc == RC_OK)
        rc = db_query_json(c,
                           "SELECT " VERSION_BRIEF_COLS " FROM model_versions v WHERE v.model_id = "
                           "$1 AND ($2::bigint IS NULL OR v.version < $2) ORDER BY v.version DESC "
                           "LIMIT $3",
                           3, p, 0, &versions, req_id);
    if (rc == RC_OK && json_object_set_new(model, "versions", versions) != 0)
        rc = RC_ENOMEM;
    versions = NULL;
    if (rc == RC_OK) {
        *out = model;
        model = NULL;
    }
    json_decref(model);
    return rc;
}

enum rc db_model_list(PGconn *c, int64_t member_of, const char *cursor, int limit, json_t **out,
                      const char *req_id)
{
    char u[24], l[24];
    const char *p[] = {member_of > 0 ? db_i64(member_of, u, sizeof(u)) : NULL, cursor,
                       db_i64(limit, l, sizeof(l))};

    return db_query_json(
        c,
        "SELECT m.name, t.name AS team, s.name AS site, m.description, m.created_by, "
        "m.created_at, (SELECT max(version) FROM model_versions WHERE model_id = m.id) AS "
        "latest_version, (SELECT count(*) FROM model_versions WHERE model_id = m.id) AS "
        "versions, " ALIASES_OF("m.id") " AS aliases FROM models m JOIN teams t ON t.id = "
                                        "m.team_id JOIN sites s ON s.id = m.site_id WHERE "
                                        "($1::bigint IS NULL OR m.team_id IN "
                                        "(SELECT team_id FROM memberships WHERE user_id = $1)) AND "
                                        "($2::text IS NULL OR m.name "
                                        "> $2) ORDER BY m.name LIMIT $3",
        3, p, 0, out, req_id);
}

enum rc db_model_alias_set(PGconn *c, int64_t model_id, const char *alias, int64_t version_id,
                           const char *updated_by, int64_t *from, const char *req_id)
{
    char m[24], v[24];
    const char *p[] = {db_i64(model_id, m, sizeof(m)), alias, db_i64(version_id, v, sizeof(v)),
                       updated_by};
    /* The old version is read in the same statement, under the alias row's
     * lock the upsert takes. */
    PGresult *r = db_exec(
        c,
        "WITH old AS (SELECT ov.version FROM model_aliases a JOIN model_versions ov ON ov.id = "
        "a.version_id WHERE a.model_id = $1 AND a.alias = $2 FOR UPDATE OF a), up AS (INSERT "
        "INTO model_aliases (model_id, alias, version_id, updated_by) VALUES ($1, $2, $3, $4) ON "
        "CONFLICT (model_id, alias) DO UPDATE SET version_id = EXCLUDED.version_id, updated_by = "
        "EXCLUDED.updated_by, updated_at = now() RETURNING 1) SELECT (SELECT version FROM old), "
        "(SELECT count(*) FROM up)",
        4, p);
    enum rc rc = db_result_rc(r, req_id);

    *from = 0;
    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_EINTERNAL;
    if (rc == RC_OK && !PQgetisnull(r, 0, 0))
        rc = db_parse_i64(PQgetvalue(r, 0, 0), from);
    PQclear(r);
    return rc;
}

enum rc db_model_alias_delete(PGconn *c, int64_t model_id, const char *alias, int64_t *from,
                              const char *req_id)
{
    char m[24];
    const char *p[] = {db_i64(model_id, m, sizeof(m)), alias};
    PGresult *r = db_exec(c,
                          "WITH d AS (DELETE FROM model_aliases WHERE model_id = $1 AND alias = $2 "
                          "RETURNING version_id) SELECT v.version FROM d JOIN model_versions v ON "
                          "v.id = d.version_id",
                          2, p);
    enum rc rc = db_result_rc(r, req_id);

    *from = 0;
    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 0), from);
    PQclear(r);
    return rc;
}
