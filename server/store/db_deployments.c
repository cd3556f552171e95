/*
 * db_deployments.c - see db_deployments.h.
 */
#include "db_deployments.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_agent.h"
#include "db_alloc.h"
#include "db_jobs.h"

void db_serve_version_cleanup(struct db_serve_version *v)
{
    if (v == NULL)
        return;
    free(v->model);
    free(v->team);
    free(v->site);
    free(v->path);
    free(v->manifest);
    free(v->serve_kind);
    free(v->serve_script);
    memset(v, 0, sizeof(*v));
}

#define VERSION_COLS                                                                               \
    "m.id, m.team_id, v.site_id, v.id, v.version, v.lineage_complete, m.name, s.name, v.path, "    \
    "v.manifest::text, v.serve_kind, v.serve_script, t.name"
#define VERSION_FROM                                                                               \
    " FROM model_versions v JOIN models m ON m.id = v.model_id JOIN sites s ON s.id = v.site_id "  \
    "JOIN teams t ON t.id = m.team_id"

static enum rc version_row(PGresult *r, struct db_serve_version *v)
{
    char **s[] = {&v->model,      &v->site,         &v->path, &v->manifest,
                  &v->serve_kind, &v->serve_script, &v->team};
    enum rc rc = db_parse_i64(PQgetvalue(r, 0, 0), &v->model_id);

    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 1), &v->model_team_id);
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 2), &v->site_id);
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 3), &v->version_id);
    v->version = (int)strtol(PQgetvalue(r, 0, 4), NULL, 10);
    v->lineage_complete = PQgetvalue(r, 0, 5)[0] == 't';
    for (size_t i = 0; rc == RC_OK && i < sizeof(s) / sizeof(s[0]); i++)
        if ((*s[i] = strdup(PQgetvalue(r, 0, 6 + (int)i))) == NULL)
            rc = RC_ENOMEM;
    if (rc != RC_OK)
        db_serve_version_cleanup(v);
    return rc;
}

enum rc db_serve_version_find(PGconn *c, const char *model, int version, const char *alias,
                              struct db_serve_version *out, const char **what, const char *req_id)
{
    char vs[16];
    const char *p[] = {model, NULL};
    PGresult *r;
    enum rc rc;

    memset(out, 0, sizeof(*out));
    *what = "model";
    r = db_exec(c, "SELECT 1 FROM models WHERE name = $1", 1, p);
    rc = db_result_rc(r, req_id);
    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    PQclear(r);
    if (rc != RC_OK)
        return rc;
    *what = alias != NULL ? "alias" : "version";
    snprintf(vs, sizeof(vs), "%d", version);
    p[1] = alias != NULL ? alias : vs;
    if (alias != NULL)
        r = db_exec(c,
                    "SELECT " VERSION_COLS VERSION_FROM " JOIN model_aliases a ON a.version_id = "
                    "v.id WHERE m.name = $1 AND a.alias = $2",
                    2, p);
    else
        r = db_exec(c,
                    "SELECT " VERSION_COLS VERSION_FROM " WHERE m.name = $1 AND v.version = CASE "
                    "WHEN $2::int > 0 THEN $2::int ELSE (SELECT max(x.version) FROM "
                    "model_versions x WHERE x.model_id = m.id) END",
                    2, p);
    rc = db_result_rc(r, req_id);
    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = version_row(r, out);
    PQclear(r);
    return rc;
}

enum rc db_serve_version_by_id(PGconn *c, int64_t version_id, struct db_serve_version *out,
                               const char *req_id)
{
    char id[24];
    const char *p[] = {db_i64(version_id, id, sizeof(id))};
    PGresult *r = db_exec(c, "SELECT " VERSION_COLS VERSION_FROM " WHERE v.id = $1", 1, p);
    enum rc rc = db_result_rc(r, req_id);

    memset(out, 0, sizeof(*out));
    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = version_row(r, out);
    PQclear(r);
    return rc;
}

#define DEP_COLS                                                                                   \
    "d.id, d.model_id, d.team_id, d.user_id, d.site_id, coalesce(d.version_id, 0), "               \
    "coalesce(d.canary_version_id, 0), coalesce(d.alias, ''), d.name, d.state, d.replicas, "       \
    "d.min_replicas, d.max_replicas, d.gpus_per_replica, d.priority, d.idle_s, "                   \
    "d.keep_texts_days, d.canary_weight, d.canary_replicas, m.name, t.name FROM deployments d "    \
    "JOIN models m ON m.id = d.model_id JOIN teams t ON t.id = d.team_id WHERE d.name = $1"

enum rc db_deployment_load(PGconn *c, const char *name, int lock, struct db_deployment *out,
                           const char *req_id)
{
    const char *p[] = {name};
    PGresult *r =
        db_exec(c, lock ? "SELECT " DEP_COLS " FOR UPDATE OF d" : "SELECT " DEP_COLS, 1, p);
    enum rc rc = db_result_rc(r, req_id);
    int64_t *ids[] = {&out->id,      &out->model_id,   &out->team_id,          &out->user_id,
                      &out->site_id, &out->version_id, &out->canary_version_id};
    int *ints[] = {&out->replicas,         &out->min_replicas,  &out->max_replicas,
                   &out->gpus_per_replica, &out->priority,      &out->idle_s,
                   &out->keep_texts_days,  &out->canary_weight, &out->canary_replicas};

    memset(out, 0, sizeof(*out));
    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    for (size_t i = 0; rc == RC_OK && i < sizeof(ids) / sizeof(ids[0]); i++)
        rc = db_parse_i64(PQgetvalue(r, 0, (int)i), ids[i]);
    if (rc == RC_OK) {
        snprintf(out->alias, sizeof(out->alias), "%s", PQgetvalue(r, 0, 7));
        snprintf(out->name, sizeof(out->name), "%s", PQgetvalue(r, 0, 8));
        snprintf(out->state, sizeof(out->state), "%s", PQgetvalue(r, 0, 9));
        snprintf(out->model, sizeof(out->model), "%s", PQgetvalue(r, 0, 19));
        snprintf(out->team, sizeof(out->team), "%s", PQgetvalue(r, 0, 20));
        for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
            *ints[i] = (int)strtol(PQgetvalue(r, 0, 10 + (int)i), NULL, 10);
    }
    PQclear(r);
    return rc;
}

/* The text parameters of d's changeable fields, $1..$12 of both statements. */
struct dep_params {
    char id[24], version[24], canary[24], replicas[16], min[16], max[16], idle[16], keep[16],
        weight[16], canary_n[16];
    const char *p[16];
};

static void dep_params(const struct db_deployment *d, struct dep_params *x)
{
    snprintf(x->replicas, sizeof(x->replicas), "%d", d->replicas);
    snprintf(x->min, sizeof(x->min), "%d", d->min_replicas);
    snprintf(x->max, sizeof(x->max), "%d", d->max_replicas);
    snprintf(x->idle, sizeof(x->idle), "%d", d->idle_s);
    snprintf(x->keep, sizeof(x->keep), "%d", d->keep_texts_days);
    snprintf(x->weight, sizeof(x->weight), "%d", d->canary_weight);
    x->p[0] = db_i64(d->id, x->id, sizeof(x->id));
    x->p[1] = d->version_id > 0 ? db_i64(d->version_id, x->version, sizeof(x->version)) : NULL;
    x->p[2] = d->alias[0] ? d->alias : NULL;
    x->p[3] = d->canary_version_id > 0 ? db_i64(d->canary_version_id, x->canary, sizeof(x->canary))
                                       : NULL;
    x->p[4] = x->weight;
    x->p[5] = x->replicas;
    x->p[6] = x->min;
    x->p[7] = x->max;
    x->p[8] = x->idle;
    x->p[9] = x->keep;
    x->p[10] = d->state;
    snprintf(x->canary_n, sizeof(x->canary_n), "%d",
             d->canary_replicas > 0 ? d->canary_replicas : 1);
}

enum rc db_deployment_insert(PGconn *c, struct db_deployment *d, int lineage_override,
                             const char *req_id)
{
    struct dep_params x;
    char model[24], team[24], user[24], site[24], gpus[16], prio[16];
    PGresult *r;
    enum rc rc;

    dep_params(d, &x);
    snprintf(gpus, sizeof(gpus), "%d", d->gpus_per_replica);
    snprintf(prio, sizeof(prio), "%d", d->priority);
    x.p[0] = d->name;
    x.p[11] = db_i64(d->model_id, model, sizeof(model));
    x.p[12] = db_i64(d->team_id, team, sizeof(team));
    x.p[13] = db_i64(d->user_id, user, sizeof(user));
    x.p[14] = db_i64(d->site_id, site, sizeof(site));
    x.p[15] = lineage_override ? "true" : "false";
    {
        const char *p[18];
        memcpy(p, x.p, sizeof(x.p));
        p[16] = gpus;
        p[17] = prio;
        r = db_exec(c,
                    "INSERT INTO deployments (name, version_id, alias, canary_version_id, "
                    "canary_weight, replicas, min_replicas, max_replicas, idle_s, "
                    "keep_texts_days, state, model_id, team_id, user_id, site_id, "
                    "lineage_override, gpus_per_replica, priority) VALUES ($1, $2, $3, $4, $5, "
                    "$6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) RETURNING id",
                    18, p);
    }
    rc = db_result_rc(r, req_id);
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 0), &d->id);
    PQclear(r);
    return rc;
}

enum rc db_deployment_update(PGconn *c, const struct db_deployment *d, const char *req_id)
{
    struct dep_params x;

    dep_params(d, &x);
    x.p[11] = x.canary_n;
    return db_exec_ok(c, req_id,
                      "UPDATE deployments SET version_id = $2, alias = $3, canary_version_id = "
                      "$4, canary_weight = $5, replicas = $6, min_replicas = $7, max_replicas = "
                      "$8, idle_s = $9, keep_texts_days = $10, state = $11, canary_replicas = "
                      "$12, canary_started_at = CASE WHEN $4::bigint IS NOT NULL AND $5::int > 0 "
                      "AND ($4::bigint IS DISTINCT FROM canary_version_id OR canary_weight = 0) "
                      "THEN now() ELSE canary_started_at END, updated_at = now() WHERE id = $1",
                      12, x.p);
}

enum rc db_deployment_set_bound(PGconn *c, int64_t id, const json_t *bound, const char *req_id)
{
    char ids[24], *text = json_dumps(bound, JSON_COMPACT);
    const char *p[] = {db_i64(id, ids, sizeof(ids)), text};
    enum rc rc;

    if (text == NULL)
        return RC_ENOMEM;
    rc = db_exec_ok(c, req_id, "UPDATE deployments SET canary_bound = $2::jsonb WHERE id = $1", 2,
                    p);
    free(text);
    return rc;
}

enum rc db_canary_figures(PGconn *c, json_t **out, const char *req_id)
{
    return db_query_json(
        c,
        "SELECT d.id, d.name, d.canary_version_id, d.canary_weight, d.canary_bound AS bound, "
        "s.requests, s.errors, s.p99_ms FROM deployments d CROSS JOIN LATERAL (SELECT "
        "count(*)::int AS requests, (count(*) FILTER (WHERE r.status >= 500))::int AS errors, "
        "round((percentile_cont(0.99) WITHIN GROUP (ORDER BY r.latency_us) / 1000.0)::numeric, "
        "3)::float8 AS p99_ms FROM serve_requests r WHERE r.version_id = d.canary_version_id AND "
        "r.deployment_id = d.id AND r.ts > greatest(coalesce(d.canary_started_at, now()), now() - "
        "make_interval(secs => coalesce((d.canary_bound->>'window_s')::int, 60)))) s WHERE "
        "d.state = 'active' AND d.canary_version_id IS NOT NULL AND d.canary_weight > 0 AND "
        "d.canary_bound <> '{}'::jsonb ORDER BY d.id",
        0, NULL, 0, out, req_id);
}

enum rc db_serve_replica_cancel(PGconn *c, int64_t job_id, const char *actor, const char *source,
                                int *cancelled, json_t **nodes, const char *req_id)
{
    int64_t team_id;
    char state[16];
    enum rc rc = db_job_brief(c, job_id, 1, &team_id, state, sizeof(state), req_id);

    *cancelled = 0;
    *nodes = NULL;
    if (rc == RC_OK)
        rc = db_serve_replica_retire(c, job_id, req_id);
    if (rc != RC_OK || db_job_state_terminal(state))
        return rc;
    rc = db_job_cancel(c, job_id, state, actor, source, req_id);
    if (rc == RC_OK)
        rc = db_job_nodes(c, job_id, nodes, req_id);
    *cancelled = rc == RC_OK;
    return rc;
}

enum rc db_deployment_next_k(PGconn *c, int64_t id, int *k, const char *req_id)
{
    char ids[24];
    const char *p[] = {db_i64(id, ids, sizeof(ids))};
    PGresult *r =
        db_exec(c, "SELECT count(*) + 1 FROM serve_replicas WHERE deployment_id = $1", 1, p);
    enum rc rc = db_result_rc(r, req_id);

    if (rc == RC_OK)
        *k = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return rc;
}

enum rc db_serve_replica_insert(PGconn *c, int64_t job_id, int64_t dep, int64_t version_id,
                                const char *token, const char *req_id)
{
    char j[24], d[24], v[24];
    const char *p[] = {db_i64(job_id, j, sizeof(j)), db_i64(dep, d, sizeof(d)),
                       db_i64(version_id, v, sizeof(v)), token};
    return db_exec_ok(c, req_id,
                      "INSERT INTO serve_replicas (job_id, deployment_id, version_id, token) "
                      "VALUES ($1, $2, $3, $4)",
                      4, p);
}

enum rc db_serve_replicas_live(PGconn *c, int64_t dep, json_t **out, const char *req_id)
{
    char d[24];
    const char *p[] = {db_i64(dep, d, sizeof(d))};
    return db_query_json(c,
                         "SELECT r.job_id, j.state, r.version_id, r.ready FROM serve_replicas r "
                         "JOIN jobs j ON j.id = r.job_id WHERE r.deployment_id = $1 AND NOT "
                         "r.retired AND j.state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED') "
                         "ORDER BY r.job_id DESC",
                         1, p, 0, out, req_id);
}

enum rc db_serve_replica_retire(PGconn *c, int64_t job_id, const char *req_id)
{
    char j[24];
    const char *p[] = {db_i64(job_id, j, sizeof(j))};
    return db_exec_ok(c, req_id,
                      "UPDATE serve_replicas SET retired = true, ready = false WHERE job_id = $1",
                      1, p);
}

enum rc db_serve_replica_of(PGconn *c, int64_t job_id, char *name, size_t size, const char *req_id)
{
    char j[24];
    const char *p[] = {db_i64(job_id, j, sizeof(j))};
    PGresult *r = db_exec(c,
                          "SELECT d.name FROM serve_replicas r JOIN deployments d ON d.id = "
                          "r.deployment_id WHERE r.job_id = $1",
                          1, p);
    enum rc rc = db_result_rc(r, req_id);

    name[0] = '\0';
    if (rc == RC_OK && PQntuples(r) == 1)
        snprintf(name, size, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return rc;
}

#define DEP_SHOW_COLS                                                                              \
    "d.id, d.name, m.name AS model, t.name AS team, s.name AS site, d.state, d.replicas, "         \
    "d.min_replicas, d.max_replicas, d.gpus_per_replica, CASE d.priority WHEN 0 THEN 'low' WHEN "  \
    "2 THEN 'high' ELSE 'normal' END AS priority, d.engine, d.idle_s, d.keep_texts_days, "         \
    "d.alias, d.version_id, (SELECT v.version FROM model_versions v WHERE v.id = "                 \
    "coalesce(d.version_id, (SELECT a.version_id FROM model_aliases a WHERE a.model_id = "         \
    "d.model_id AND a.alias = d.alias))) AS version, d.canary_version_id, (SELECT v.version FROM " \
    "model_versions v WHERE v.id = d.canary_version_id) AS canary_version, d.canary_weight, "      \
    "d.canary_replicas, d.canary_bound, "                                                          \
    "d.lineage_override, d.created_at, d.updated_at, (SELECT count(*) FROM serve_replicas r JOIN " \
    "jobs j ON j.id = r.job_id WHERE r.deployment_id = d.id AND NOT r.retired AND r.ready AND "    \
    "j.state = 'RUNNING')::int AS ready_replicas"
#define DEP_SHOW_FROM                                                                              \
    " FROM deployments d JOIN models m ON m.id = d.model_id JOIN teams t ON t.id = d.team_id "     \
    "JOIN sites s ON s.id = d.site_id"

enum rc db_deployment_get(PGconn *c, int64_t id, json_t **out, const char *req_id)
{
    char ids[24];
    const char *p[] = {db_i64(id, ids, sizeof(ids))};
    json_t *reps = NULL;
    enum rc rc = db_query_json(c, "SELECT " DEP_SHOW_COLS DEP_SHOW_FROM " WHERE d.id = $1", 1, p, 1,
                               out, req_id);

    /* ready counts only for the job's current attempt and while it runs. */
    if (rc == RC_OK)
        rc = db_query_json(
            c,
            "SELECT r.job_id, j.name, j.state, j.attempt, r.attempt AS ready_attempt, r.ready AND "
            "j.state = 'RUNNING' AND r.attempt = j.attempt AS ready, r.ready_at, v.version, "
            "r.version_id, j.restarts, (SELECT n.name FROM allocations a JOIN nodes n ON n.id = "
            "a.node_id WHERE a.job_id = j.id AND a.released_at IS NULL ORDER BY a.node_rank "
            "LIMIT 1) AS node FROM serve_replicas r JOIN jobs j ON j.id = r.job_id JOIN "
            "model_versions v ON v.id = r.version_id WHERE r.deployment_id = $1 AND NOT "
            "r.retired ORDER BY r.job_id",
            1, p, 0, &reps, req_id);
    if (rc == RC_OK && json_object_set_new(*out, "replicas_detail", reps) != 0)
        rc = RC_ENOMEM;
    if (rc != RC_OK && *out != NULL) {
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

enum rc db_deployment_list(PGconn *c, int64_t member_of, int64_t cursor, int limit, json_t **out,
                           const char *req_id)
{
    char m[24], cur[24], lim[16];
    const char *p[] = {db_i64(member_of, m, sizeof(m)), db_i64(cursor, cur, sizeof(cur)), lim};

    snprintf(lim, sizeof(lim), "%d", limit);
    return db_query_json(c,
                         "SELECT " DEP_SHOW_COLS DEP_SHOW_FROM
                         " WHERE d.id > $2 AND ($1::bigint = 0 OR d.team_id IN (SELECT team_id "
                         "FROM memberships WHERE user_id = $1)) ORDER BY d.id LIMIT $3",
                         3, p, 0, out, req_id);
}

enum rc db_serve_probe_targets(PGconn *c, json_t **out, const char *req_id)
{
    return db_query_json(c,
                         "SELECT r.job_id, j.attempt, t.master_addr AS host, t.master_port AS "
                         "port, r.ready, r.attempt AS replica_attempt FROM serve_replicas r JOIN "
                         "jobs j ON j.id = r.job_id JOIN attempts t ON t.job_id = j.id AND "
                         "t.attempt = j.attempt WHERE NOT r.retired AND j.state = 'RUNNING' "
                         "ORDER BY r.job_id",
                         0, NULL, 0, out, req_id);
}

/* Run an UPDATE and count the rows it changed into *n. */
static enum rc exec_count(PGconn *c, const char *sql, int np, const char *const *p, int *n,
                          const char *req_id)
{
    PGresult *r = db_exec(c, sql, np, p);
    enum rc rc = db_result_rc(r, req_id);

    *n = rc == RC_OK ? (int)strtol(PQcmdTuples(r), NULL, 10) : 0;
    PQclear(r);
    return rc;
}

enum rc db_serve_set_ready(PGconn *c, int64_t job_id, int attempt, int ready, int *changed,
                           const char *req_id)
{
    char j[24], a[16];
    const char *p[] = {db_i64(job_id, j, sizeof(j)), a, ready ? "true" : "false"};

    snprintf(a, sizeof(a), "%d", attempt);
    /* Only while the job is still on that attempt and running: a probe that
     * answered for an attempt since replaced says nothing of the new one. */
    return exec_count(c,
                      "UPDATE serve_replicas r SET ready = $3::boolean AND j.state = 'RUNNING' "
                      "AND j.attempt = $2::int, attempt = $2::int, ready_at = CASE WHEN "
                      "$3::boolean AND NOT (r.ready AND r.attempt = $2::int) THEN now() ELSE "
                      "r.ready_at END FROM jobs j WHERE j.id = r.job_id AND r.job_id = $1 AND NOT "
                      "r.retired AND (r.ready <> ($3::boolean AND j.state = 'RUNNING' AND "
                      "j.attempt = $2::int) OR r.attempt <> $2::int)",
                      3, p, changed, req_id);
}

enum rc db_serve_unready_stale(PGconn *c, int *n, const char *req_id)
{
    return exec_count(c,
                      "UPDATE serve_replicas r SET ready = false FROM jobs j WHERE j.id = "
                      "r.job_id AND r.ready AND (j.state <> 'RUNNING' OR j.attempt <> r.attempt "
                      "OR r.retired)",
                      0, NULL, n, req_id);
}
