/*
 * db_agent.c - see db_agent.h.
 */
#include "db_agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "jobplan.h"
#include "jx.h"
#include "nccl_env.h"
#include "outputs.h"

/* A JSON value as compact text (malloc'ed) or NULL. */
static char *dump(const json_t *j)
{
    return j ? jx_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
}

enum rc db_join_token_create(PGconn *c, int64_t created_by, int64_t ttl_s, int64_t uses,
                             const char *node, const char *token_hash, json_t **out,
                             const char *req_id)
{
    char by[24], ttl[24], u[24];
    const char *p[] = {token_hash, db_i64(created_by, by, sizeof(by)), db_i64(uses, u, sizeof(u)),
                       db_i64(ttl_s, ttl, sizeof(ttl)), node};
    return db_query_json(c,
                         "INSERT INTO join_tokens (token_hash, created_by, uses_left, uses, "
                         "expires_at, node_name) VALUES ($1, $2, $3, $3, now() + "
                         "make_interval(secs => $4::bigint), $5) RETURNING id, uses_left AS uses, "
                         "expires_at, node_name AS node",
                         5, p, 1, out, req_id);
}

/* The columns of a join token t as listed. */
#define JOIN_TOKEN_COLS                                                                            \
    "t.id, t.created_at, (SELECT username FROM users WHERE id = t.created_by) AS created_by, "     \
    "t.expires_at, t.uses, t.uses_left, t.uses - t.uses_left AS used, t.revoked_at, t.node_name "  \
    "AS node, CASE WHEN t.revoked_at IS NOT NULL THEN 'revoked' WHEN t.expires_at <= now() THEN "  \
    "'expired' WHEN t.uses_left = 0 THEN 'used_up' ELSE 'active' END AS state"

enum rc db_join_token_list(PGconn *c, json_t **out, const char *req_id)
{
    return db_query_json(
        c, "SELECT " JOIN_TOKEN_COLS " FROM join_tokens t ORDER BY t.id DESC LIMIT 500", 0, NULL, 0,
        out, req_id);
}

enum rc db_join_token_revoke(PGconn *c, int64_t id, int64_t revoked_by, json_t **out,
                             const char *req_id)
{
    char t[24], b[24];
    const char *p[] = {db_i64(id, t, sizeof(t)), db_i64(revoked_by, b, sizeof(b))};
    json_t *old = NULL;
    enum rc rc =
        db_query_json(c,
                      "UPDATE join_tokens t SET revoked_at = now(), revoked_by = $2 "
                      "WHERE t.id = $1 AND t.revoked_at IS NULL RETURNING " JOIN_TOKEN_COLS,
                      2, p, 1, out, req_id);

    if (rc != RC_ENOTFOUND)
        return rc;
    /* Nothing revoked: no such token, or one revoked before. */
    rc = db_query_json(c, "SELECT id FROM join_tokens WHERE id = $1", 1, p, 1, &old, req_id);
    json_decref(old);
    return rc == RC_OK ? RC_ECONFLICT : rc;
}

enum rc db_join_token_use(PGconn *c, const char *token_hash, const char *name, int64_t *token_id,
                          int *retry, int *bound, const char *req_id)
{
    const char *p[] = {token_hash, name};
    PGresult *r =
        db_exec(c,
                "UPDATE join_tokens SET uses_left = uses_left - 1 WHERE token_hash = $1 "
                "AND uses_left > 0 AND expires_at > now() AND revoked_at IS NULL AND "
                "(node_name IS NULL OR node_name = $2) RETURNING id, node_name IS NOT NULL",
                2, p);
    enum rc rc = db_result_rc(r, req_id);

    *retry = 0;
    *bound = 0;
    if (rc == RC_OK && PQntuples(r) != 1) {
        PQclear(r);
        /* The node's row is locked so that two retries cannot both take it. */
        r = db_exec(c,
                    "SELECT t.id, t.node_name IS NOT NULL FROM join_tokens t JOIN nodes n ON "
                    "n.join_token_id = t.id WHERE t.token_hash = $1 AND n.name = $2 AND NOT "
                    "n.credential_used AND t.expires_at > now() AND t.revoked_at IS NULL FOR "
                    "UPDATE OF n",
                    2, p);
        rc = db_result_rc(r, req_id);
        if (rc == RC_OK && PQntuples(r) != 1)
            rc = RC_EAUTH;
        if (rc == RC_OK)
            *retry = 1;
    }
    if (rc == RC_OK) {
        rc = db_parse_i64(PQgetvalue(r, 0, 0), token_id);
        *bound = PQgetvalue(r, 0, 1)[0] == 't';
    }
    PQclear(r);
    return rc;
}

enum rc db_node_join(PGconn *c, const char *name, const char *hostname, const char *addr,
                     const char *labels, const char *cred_hash, int64_t token_id, int bound,
                     int64_t *node_id, const char *req_id)
{
    char tid[24];
    const char *p[] = {name,
                       hostname,
                       addr,
                       labels,
                       cred_hash,
                       db_i64(token_id, tid, sizeof(tid)),
                       bound ? "true" : "false"};
    /* An existing node is updated only under the WHERE; otherwise no row
     * comes back (the row stays as it was) and the join is a takeover. */
    PGresult *r = db_exec(c,
                          "INSERT INTO nodes (name, hostname, addr, labels, credential_hash, "
                          "join_token_id, credential_used) VALUES ($1, $2, $3, $4::jsonb, $5, $6, "
                          "false) ON CONFLICT (name) DO UPDATE SET hostname = EXCLUDED.hostname, "
                          "addr = EXCLUDED.addr, labels = EXCLUDED.labels, credential_hash = "
                          "EXCLUDED.credential_hash, join_token_id = EXCLUDED.join_token_id, "
                          "credential_used = false WHERE $7::boolean OR (nodes.join_token_id = "
                          "EXCLUDED.join_token_id AND NOT nodes.credential_used) RETURNING id",
                          7, p);
    enum rc rc = db_result_rc(r, req_id);

    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ECONFLICT;
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 0), node_id);
    PQclear(r);
    return rc;
}

/* The one row of an UPDATE ... RETURNING o.state, n.state: the node's state
 * before and after. Clears r. */
static enum rc node_states(PGresult *r, char *old_state, char *new_state, size_t state_size,
                           const char *req_id)
{
    enum rc rc = db_result_rc(r, req_id);

    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK) {
        snprintf(old_state, state_size, "%s", PQgetvalue(r, 0, 0));
        snprintf(new_state, state_size, "%s", PQgetvalue(r, 0, 1));
    }
    PQclear(r);
    return rc;
}

enum rc db_node_register(PGconn *c, int64_t node_id, const json_t *body, const char *addr,
                         int64_t site_id, char *old_state, char *new_state, size_t state_size,
                         const char *req_id)
{
    char id[24], cpus[24], mem[24], site[24];
    const json_t *gpus = json_object_get(body, "gpus"), *g;
    char *labels = dump(json_object_get(body, "labels"));
    /* Replaced at every register like the GPUs: what a worker no longer
     * reports is unknown now, not what an older worker once said. */
    char *caps = dump(json_object_get(body, "capabilities"));
    char *ic = dump(json_object_get(body, "interconnect"));
    char *probe = dump(json_object_get(body, "nccl_probe"));
    const char *host = json_string_value(json_object_get(body, "hostname"));
    const char *ver = json_string_value(json_object_get(body, "version"));
    PGresult *r;
    enum rc rc;
    size_t i;

    db_i64(node_id, id, sizeof(id));
    db_i64(json_integer_value(json_object_get(body, "cpus")), cpus, sizeof(cpus));
    db_i64(json_integer_value(json_object_get(body, "memory_mb")), mem, sizeof(mem));
    {
        const char *p[] = {id,
                           host ? host : "",
                           addr,
                           labels,
                           cpus,
                           mem,
                           ver ? ver : "",
                           site_id > 0 ? db_i64(site_id, site, sizeof(site)) : NULL,
                           caps ? caps : "{}",
                           ic ? ic : "{}",
                           probe};
        r = db_exec(c,
                    "UPDATE nodes n SET hostname = $2, addr = $3, labels = coalesce($4::jsonb, "
                    "n.labels), cpus = $5, memory_mb = $6, version = $7, last_seen_at = now(), "
                    "credential_used = true, "
                    "generation = n.generation + 1, site_id = coalesce($8::bigint, n.site_id), "
                    "state = CASE WHEN n.admin_drained THEN 'draining' ELSE 'ready' END, "
                    "capabilities = $9::jsonb, interconnect = $10::jsonb, nccl_probe = "
                    "nullif($11::jsonb, 'null'::jsonb) FROM nodes o WHERE n.id = $1 AND o.id = "
                    "n.id RETURNING o.state, n.state",
                    11, p);
    }
    free(labels);
    free(caps);
    free(ic);
    free(probe);
    rc = node_states(r, old_state, new_state, state_size, req_id);
    if (rc == RC_OK) {
        const char *p[] = {id};
        rc = db_exec_ok(c, req_id, "DELETE FROM gpus WHERE node_id = $1", 1, p);
    }
    json_array_foreach(gpus, i, g)
    {
        char idx[16], mb[24];
        char *peers = dump(json_object_get(g, "nvlink_peers"));
        const char *uuid = json_string_value(json_object_get(g, "uuid"));
        const char *model = json_string_value(json_object_get(g, "model"));
        const char *cc = json_string_value(json_object_get(g, "compute_capability"));
        const char *p[] = {
            id,
            db_i64(json_integer_value(json_object_get(g, "index")), idx, sizeof(idx)),
            uuid ? uuid : "",
            model ? model : "",
            db_i64(json_integer_value(json_object_get(g, "memory_mb")), mb, sizeof(mb)),
            cc ? cc : "",
            peers ? peers : "[]"};
        if (rc == RC_OK)
            rc = db_exec_ok(c, req_id,
                            "INSERT INTO gpus (node_id, idx, uuid, model, memory_mb, "
                            "compute_capability, nvlink_peers) VALUES ($1, $2, $3, $4, $5, $6, "
                            "ARRAY(SELECT jsonb_array_elements_text($7::jsonb)::integer))",
                            7, p);
        free(peers);
    }
    return rc;
}

enum rc db_node_heartbeat(PGconn *c, int64_t node_id, const json_t *gpu_stats, int idle_util_pct,
                          int draining, char *old_state, char *new_state, size_t state_size,
                          const char *req_id)
{
    char id[24], pct[16];
    char *stats = dump(gpu_stats);
    const char *p[] = {id, stats ? stats : "[]", draining ? "true" : "false"};
    PGresult *r;
    enum rc rc;

    db_i64(node_id, id, sizeof(id));
    snprintf(pct, sizeof(pct), "%d", idle_util_pct);
    r = db_exec(c,
                "UPDATE nodes n SET last_seen_at = now(), gpu_stats = $2::jsonb, state = CASE "
                "WHEN $3::boolean AND n.state <> 'down' THEN 'draining' WHEN n.state = 'down' "
                "THEN 'ready' ELSE n.state END FROM nodes o WHERE n.id = $1 AND o.id = n.id "
                "RETURNING o.state, n.state",
                3, p);
    rc = node_states(r, old_state, new_state, state_size, req_id);
    /* The samples, and how long each allocated GPU has been below the idle
     * line (GET /api/v1/overview, "idle_allocated"). A sample that is not
     * numbers is skipped, never an error: the heartbeat matters more. */
    if (rc == RC_OK) {
        const char *q[] = {id, p[1], pct};
        rc = db_exec_ok(
            c, req_id,
            "UPDATE gpus g SET util_pct = s.util, mem_used_mb = s.mem, low_util_since = CASE "
            "WHEN s.util < $3::int AND a.attempt_id IS NOT NULL THEN CASE WHEN "
            "g.low_util_attempt = a.attempt_id THEN coalesce(g.low_util_since, now()) ELSE now() "
            "END END, low_util_attempt = CASE WHEN s.util < $3::int THEN a.attempt_id END FROM "
            "(SELECT (e->>'index')::numeric AS idx, least(greatest((e->>'util_pct')::numeric, "
            "0), 100)::int AS util, CASE WHEN jsonb_typeof(e->'mem_used_mb') = 'number' AND "
            "abs((e->>'mem_used_mb')::numeric) < 1e15 THEN (e->>'mem_used_mb')::numeric::bigint "
            "END AS mem FROM jsonb_array_elements(CASE WHEN jsonb_typeof($2::jsonb) = 'array' "
            "THEN $2::jsonb ELSE '[]' END) e WHERE jsonb_typeof(e) = 'object' AND "
            "jsonb_typeof(e->'index') = 'number' AND jsonb_typeof(e->'util_pct') = 'number') s "
            "LEFT JOIN allocations a ON a.node_id = $1 AND a.released_at IS NULL AND s.idx = "
            "ANY(a.gpu_indices) WHERE g.node_id = $1 AND g.idx = s.idx",
            3, q);
    }
    free(stats);
    return rc;
}

enum rc db_node_set_state(PGconn *c, int64_t node_id, const char *state, char *old_state,
                          size_t state_size, char *name, size_t name_size, const char *req_id)
{
    char id[24];
    const char *p[] = {db_i64(node_id, id, sizeof(id)), state};
    PGresult *r = db_exec(c,
                          "UPDATE nodes n SET state = $2, admin_drained = ($2 = 'draining') FROM "
                          "nodes o WHERE n.id = $1 AND o.id = n.id RETURNING o.state, n.name",
                          2, p);
    enum rc rc = db_result_rc(r, req_id);

    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK) {
        snprintf(old_state, state_size, "%s", PQgetvalue(r, 0, 0));
        snprintf(name, name_size, "%s", PQgetvalue(r, 0, 1));
    }
    PQclear(r);
    return rc;
}

enum rc db_node_jobs_lock(PGconn *c, int64_t node_id, const char *req_id)
{
    char id[24];
    const char *p[] = {db_i64(node_id, id, sizeof(id))};

    return db_exec_ok(c, req_id,
                      "SELECT j.id FROM jobs j WHERE j.id IN (SELECT a.job_id FROM allocations a "
                      "WHERE a.node_id = $1 AND a.released_at IS NULL AND a.delivered) ORDER BY "
                      "j.id FOR UPDATE OF j",
                      1, p);
}

/* The attempt ids of a "running" array as a PostgreSQL bigint[] literal. */
static char *running_ids(const json_t *running)
{
    size_t i, cap = 2 + json_array_size(running) * 21, off = 0;
    char *s = malloc(cap + 1);
    json_t *e;

    if (s == NULL)
        return NULL;
    s[off++] = '{';
    json_array_foreach(running, i, e)
    {
        const char *id = json_string_value(json_object_get(e, "attempt_id"));
        char *end = NULL;
        long long v;
        if (id == NULL)
            continue;
        v = strtoll(id, &end, 10);
        if (end == id || *end != '\0' || v <= 0)
            continue;
        off += (size_t)snprintf(s + off, cap + 1 - off, "%s%lld", off > 1 ? "," : "", v);
    }
    s[off++] = '}';
    s[off] = '\0';
    return s;
}

enum rc db_attempts_to_stop(PGconn *c, int64_t node_id, const json_t *running, json_t **out,
                            const char *req_id)
{
    char id[24];
    char *ids = running_ids(running);
    enum rc rc;
    json_t *rows = NULL;
    size_t i;
    json_t *row;

    *out = json_array();
    if (ids == NULL || *out == NULL) {
        free(ids);
        return RC_ENOMEM;
    }
    {
        const char *p[] = {db_i64(node_id, id, sizeof(id)), ids};
        /* Unknown ids are stopped too: nothing should run that the server
         * does not account for. */
        rc = db_query_json(
            c,
            "SELECT x::text AS a FROM unnest($2::bigint[]) x WHERE NOT EXISTS (SELECT "
            "1 FROM allocations a JOIN attempts t ON t.id = a.attempt_id JOIN jobs j "
            "ON j.id = a.job_id WHERE a.attempt_id = x AND a.node_id = $1 AND "
            "a.released_at IS NULL AND t.state <> 'ended' AND NOT j.cancel_requested)",
            2, p, 0, &rows, req_id);
    }
    free(ids);
    json_array_foreach(rows, i, row)
    {
        json_array_append(*out, json_object_get(row, "a"));
    }
    json_decref(rows);
    return rc;
}

enum rc db_attempts_lost_on_node(PGconn *c, int64_t node_id, const json_t *running, json_t **out,
                                 const char *req_id)
{
    char id[24];
    char *ids = running_ids(running);
    enum rc rc;
    json_t *rows = NULL, *row;
    size_t i;

    *out = json_array();
    if (ids == NULL || *out == NULL) {
        free(ids);
        return RC_ENOMEM;
    }
    {
        const char *p[] = {db_i64(node_id, id, sizeof(id)), ids};
        rc = db_query_json(c,
                           "SELECT a.attempt_id::text AS a FROM allocations a WHERE a.node_id = $1 "
                           "AND a.released_at IS NULL AND a.delivered AND NOT (a.attempt_id = "
                           "ANY($2::bigint[]))",
                           2, p, 0, &rows, req_id);
    }
    free(ids);
    json_array_foreach(rows, i, row)
    {
        json_array_append(*out, json_object_get(row, "a"));
    }
    json_decref(rows);
    return rc;
}

/* "plan_env" and "deepspeed_config" of assignment a from the attempt's plan
 * (JSON text, or NULL when the job has none). */
static enum rc plan_into(json_t *a, const json_t *spec, const char *plan_text)
{
    json_t *plan = plan_text ? jx_loads(plan_text, 0) : NULL;
    json_t *env = NULL, *ds = NULL;
    enum rc rc;

    if (plan_text != NULL && plan == NULL)
        return RC_ENOMEM;
    rc = jobplan_launch(plan, spec, &env, &ds);
    json_decref(plan);
    if (rc != RC_OK)
        return rc;
    if (json_object_set_new(a, "plan_env", env) != 0) {
        json_decref(ds);
        return RC_ENOMEM;
    }
    if (ds != NULL && json_object_set_new(a, "deepspeed_config", ds) != 0)
        return RC_ENOMEM;
    return RC_OK;
}

/*
 * A replica's model-server env into assignment a's "plan_env", the one place
 * the worker takes TRAINYARD_* names from (worker/assign.c): the spec's own
 * TRAINYARD_* entries (the version served, written at the replica's
 * creation and shown with the job), and this attempt's address, port and
 * the replica's token, which are in no stored spec, so that only the
 * assignment (the node's own channel) carries the token.
 */
static enum rc serve_env_into(json_t *a, const json_t *spec, const char *host, const char *port,
                              const char *token)
{
    json_t *env = json_object_get(a, "plan_env"), *v;
    const char *k;

    if (!json_is_object(env))
        return RC_EINTERNAL;
    json_object_foreach((json_t *)json_object_get(spec, "env"), k, v)
    {
        if (strncmp(k, "TRAINYARD_", 10) == 0 && json_object_set(env, k, v) != 0)
            return RC_ENOMEM;
    }
    if (json_object_set_new(env, "TRAINYARD_SERVE_HOST", json_string(host)) != 0 ||
        json_object_set_new(env, "TRAINYARD_SERVE_PORT", json_string(port)) != 0 ||
        json_object_set_new(env, "TRAINYARD_SERVE_TOKEN", json_string(token)) != 0)
        return RC_ENOMEM;
    return RC_OK;
}

/*
 * The NCCL/gloo settings of row i's node (nccl_env.h), from the attempt's
 * nodes (column 17) and the job's env. *env: what the assignment carries;
 * *stored: {"env","variables"} for allocations.nccl. RC_OK or RC_ENOMEM; a
 * row whose node list does not parse gets no settings (RC_OK, empty env).
 */
static enum rc nccl_settings(PGresult *r, int i, const json_t *spec, json_t **env, json_t **stored)
{
    json_t *nodes = jx_loads(PQgetvalue(r, i, 17), 0), *n, *shown = NULL;
    long node_rank = strtol(PQgetvalue(r, i, 4), NULL, 10);
    size_t k, self = (size_t)-1;
    enum rc rc = RC_OK;

    *env = *stored = NULL;
    json_array_foreach(nodes, k, n)
    {
        if (json_integer_value(json_object_get(n, "node_rank")) == node_rank)
            self = k;
    }
    if (self != (size_t)-1)
        rc = nccl_env_derive(PQgetvalue(r, i, 9), json_object_get(spec, "env"), nodes, self, env,
                             &shown);
    if (rc == RC_OK && *env == NULL && (*env = json_object()) == NULL)
        rc = RC_ENOMEM;
    if (rc == RC_OK && shown != NULL &&
        (*stored = json_pack("{s:O,s:o}", "env", *env, "variables", shown)) == NULL)
        rc = RC_ENOMEM;
    shown = NULL; /* stolen by the pack, even when it failed */
    if (rc != RC_OK) {
        json_decref(*env);
        *env = NULL;
    }
    json_decref(nodes);
    return rc;
}

/* One assignment of the protocol from a joined allocation row; *nccl (may
 * stay NULL) receives the NCCL settings to record with the allocation. */
static json_t *assignment_json(PGresult *r, int i, const char *storage_root_cfg, json_t **nccl)
{
    json_t *spec = jx_loads(PQgetvalue(r, i, 3), 0);
    json_t *gpus = jx_loads(PQgetvalue(r, i, 7), 0);
    json_t *a = NULL, *ranks = json_array();
    /* The site's roots and the paths the submit check normalized (jobs.paths;
     * '{}' for jobs from before sites: then the spec's own). */
    json_t *site_roots = jx_loads(PQgetvalue(r, i, 15), 0);
    json_t *paths = jx_loads(PQgetvalue(r, i, 16), 0);
    const char *storage_root = outputs_base(site_roots, storage_root_cfg);
    const char *job = PQgetvalue(r, i, 1);
    const char *wd = json_string_value(json_object_get(paths, "working_dir"));
    const char *od = json_string_value(json_object_get(paths, "output_dir"));
    char work_dir[4200], ckpt[4200], out_dir[4200];
    int rank_start = (int)strtol(PQgetvalue(r, i, 8), NULL, 10);
    int nranks = (int)json_array_size(gpus);
    size_t k;
    json_t *g, *nccl_env = NULL;

    *nccl = NULL;
    if (spec == NULL || gpus == NULL || ranks == NULL || !json_is_array(site_roots) ||
        !json_is_object(paths))
        goto out;
    if (nccl_settings(r, i, spec, &nccl_env, nccl) != RC_OK)
        goto out;
    if (wd == NULL && json_object_get(paths, "datasets") == NULL)
        wd = json_string_value(json_object_get(spec, "working_dir"));
    if (od == NULL && json_object_get(paths, "datasets") == NULL)
        od = json_string_value(json_object_get(spec, "output_dir"));
    /* One rank per GPU; each rank sees exactly its own GPU. */
    json_array_foreach(gpus, k, g)
    {
        json_array_append_new(ranks, json_pack("{s:i,s:i,s:[O]}", "rank", rank_start + (int)k,
                                               "local_rank", (int)k, "gpu_indices", g));
    }
    if (wd != NULL)
        snprintf(work_dir, sizeof(work_dir), "%s", wd);
    else
        snprintf(work_dir, sizeof(work_dir), "%s/jobs/%s", storage_root, job);
    /* Checkpoints go below the outputs (outputs.h), which exports read. */
    if (outputs_dir(od, storage_root, job, out_dir, sizeof(out_dir)) != RC_OK)
        goto out;
    snprintf(ckpt, sizeof(ckpt), "%s/checkpoints", out_dir);
    a = json_pack(
        "{s:s,s:s,s:i,s:O,s:O,s:O,s:i,s:i,s:i,s:i,s:s,s:i,s:O,s:s,s:s,s:s,s:I,s:i,"
        "s:O}",
        "attempt_id", PQgetvalue(r, i, 0), "job_id", job, "attempt",
        (int)strtol(PQgetvalue(r, i, 2), NULL, 10), "launcher", json_object_get(spec, "launcher"),
        "command", json_object_get(spec, "command"), "env", json_object_get(spec, "env"),
        "node_rank", (int)strtol(PQgetvalue(r, i, 4), NULL, 10), "nnodes",
        (int)strtol(PQgetvalue(r, i, 5), NULL, 10), "world_size",
        (int)strtol(PQgetvalue(r, i, 6), NULL, 10), "local_world_size", nranks, "master_addr",
        PQgetvalue(r, i, 9), "master_port", (int)strtol(PQgetvalue(r, i, 10), NULL, 10), "ranks",
        ranks, "work_dir", work_dir, "checkpoint_dir", ckpt, "resume_from", PQgetvalue(r, i, 11),
        "time_limit_s", (json_int_t)strtoll(PQgetvalue(r, i, 12), NULL, 10), "grace_s", 30,
        "nccl_env", nccl_env);
    /* The job's outputs (TRAINYARD_OUTPUT_DIR): the worker checks and
     * creates it like checkpoint_dir, which lies below it. */
    if (a != NULL && json_object_set_new(a, "output_dir", json_string(out_dir)) != 0) {
        json_decref(a);
        a = NULL;
    }
    /* The site's networks: all that ranks of a multi-node attempt may reach
     * under the worker's --isolate-network. */
    if (a != NULL) {
        json_t *nets = jx_loads(PQgetvalue(r, i, 14), 0);
        if (json_object_set_new(a, "allowed_networks", json_is_array(nets) ? nets : json_array()) !=
            0) {
            json_decref(a);
            a = NULL;
        }
        if (!json_is_array(nets))
            json_decref(nets);
    }
    /* The advisor's plan (jobplan.h; column 18, attempts.plan): its
     * TRAINYARD_* env for every rank and, for a DeepSpeed plan, the
     * ds_config.json the worker writes. */
    if (a != NULL &&
        plan_into(a, spec, PQgetisnull(r, i, 18) ? NULL : PQgetvalue(r, i, 18)) != RC_OK) {
        json_decref(a);
        a = NULL;
    }
    /* A deployment's replica (column 20, its serve_replicas.token): the
     * model server's env (docs/serving.md, "The model server"). */
    if (a != NULL && !PQgetisnull(r, i, 20) &&
        serve_env_into(a, spec, PQgetvalue(r, i, 9), PQgetvalue(r, i, 10), PQgetvalue(r, i, 20)) !=
            RC_OK) {
        json_decref(a);
        a = NULL;
    }
    /* The Unix account the ranks run as (column 19): the submitter's
     * mapping, else the team's (022); absent: the node's --job-user. The
     * node accepts it only if its own --job-users allows it. */
    if (a != NULL && !PQgetisnull(r, i, 19) &&
        json_object_set_new(a, "unix_account", json_string(PQgetvalue(r, i, 19))) != 0) {
        json_decref(a);
        a = NULL;
    }
    /* The worker checks every path again with realpath, inside its own
     * --allowed-root dirs and inside these roots of the job's site; the
     * datasets are the local paths the submit check accepted. */
    if (a != NULL) {
        json_t *ds = json_object_get(paths, "datasets");
        if (json_object_set(a, "allowed_roots", site_roots) != 0 ||
            json_object_set_new(a, "datasets",
                                json_is_array(ds) ? json_incref(ds) : json_array()) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
out:
    if (a == NULL) {
        json_decref(*nccl);
        *nccl = NULL;
    }
    json_decref(nccl_env);
    json_decref(site_roots);
    json_decref(paths);
    json_decref(spec);
    json_decref(gpus);
    json_decref(ranks);
    return a;
}

enum rc db_node_generation(PGconn *c, int64_t node_id, int64_t *generation, const char *req_id)
{
    char id[24];
    const char *p[] = {db_i64(node_id, id, sizeof(id))};
    PGresult *r = db_exec(c, "SELECT generation FROM nodes WHERE id = $1", 1, p);
    enum rc rc = db_result_rc(r, req_id);

    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 0), generation);
    PQclear(r);
    return rc;
}

enum rc db_allocs_redeliver(PGconn *c, int64_t node_id, const char *req_id)
{
    char id[24];
    const char *p[] = {db_i64(node_id, id, sizeof(id))};
    return db_exec_ok(c, req_id,
                      "UPDATE allocations SET delivered = false WHERE node_id = $1 AND "
                      "released_at IS NULL AND delivered AND NOT started",
                      1, p);
}

/*
 * Lock order (db.h): the jobs whose allocations on this node a poll is about
 * to change (undelivered ones to take, delivered ones to cancel), in id order,
 * before the allocations themselves and before mark_starting's transitions
 * take the audit head. *ids receives them as a bigint[] literal (caller
 * frees); the poll's UPDATEs change only these jobs' rows, so a job placed
 * meanwhile waits for the next poll instead of being locked out of order.
 */
static enum rc lock_poll_jobs(PGconn *c, const char *const *p, char **ids, const char *req_id)
{
    PGresult *r = db_exec(
        c,
        "WITH l AS (SELECT j.id FROM jobs j WHERE j.id IN (SELECT a.job_id FROM allocations a "
        "JOIN attempts t ON t.id = a.attempt_id JOIN jobs x ON x.id = a.job_id WHERE a.node_id = "
        "$1 AND a.released_at IS NULL AND (NOT a.delivered OR ($2::boolean AND NOT a.started) OR "
        "(NOT a.cancel_sent AND (t.state = 'ended' OR x.cancel_requested)))) ORDER BY j.id FOR "
        "UPDATE OF j) SELECT coalesce(array_agg(id), '{}')::text FROM l",
        2, p);
    enum rc rc = db_result_rc(r, req_id);

    *ids = NULL;
    if (rc == RC_OK && (*ids = strdup(PQgetvalue(r, 0, 0))) == NULL)
        rc = RC_ENOMEM;
    PQclear(r);
    return rc;
}

enum rc db_assignments_take(PGconn *c, int64_t node_id, int64_t generation, int resend,
                            const char *storage_root, json_t **assignments, json_t **jobs_started,
                            json_t **cancels, const char *req_id)
{
    char id[24], gen[24], *jobs = NULL;
    const char *again = resend ? "true" : "false";
    const char *lp[] = {db_i64(node_id, id, sizeof(id)), again};
    const char *p[] = {lp[0], db_i64(generation, gen, sizeof(gen)), NULL, again};
    PGresult *r;
    enum rc rc;
    json_t *rows = NULL, *row;
    size_t i;

    *assignments = json_array();
    *jobs_started = json_array();
    *cancels = json_array();
    if (*assignments == NULL || *jobs_started == NULL || *cancels == NULL)
        return RC_ENOMEM;
    if ((rc = lock_poll_jobs(c, lp, &jobs, req_id)) != RC_OK)
        return rc;
    p[2] = jobs;
    r = db_exec(
        c,
        "UPDATE allocations a SET delivered = true FROM attempts t, jobs j WHERE "
        "t.id = a.attempt_id AND j.id = a.job_id AND a.node_id = $1 AND a.released_at IS "
        "NULL AND (NOT a.delivered OR ($4::boolean AND NOT a.started)) AND t.state <> "
        "'ended' AND NOT j.cancel_requested "
        "AND EXISTS (SELECT 1 FROM nodes n WHERE n.id = $1 AND n.generation = $2) "
        "AND a.job_id = ANY($3::bigint[]) "
        "RETURNING a.attempt_id, a.job_id, t.attempt, j.spec, a.node_rank, (SELECT "
        "count(*) FROM allocations x WHERE x.attempt_id = a.attempt_id), j.gpus, "
        "array_to_json(a.gpu_indices), a.rank_start, t.master_addr, t.master_port, "
        "t.resume_from, j.time_limit_s, j.state, (SELECT array_to_json(s.networks) FROM "
        "sites s WHERE s.id = j.site_id), (SELECT array_to_json(s.storage_roots) FROM "
        "sites s WHERE s.id = j.site_id), j.paths, (SELECT json_agg(json_build_object("
        "'node_rank', x.node_rank, 'name', n.name, 'addr', n.addr, 'gpus', "
        "array_to_json(x.gpu_indices), 'interconnect', n.interconnect, 'nccl_probe', "
        "n.nccl_probe) ORDER BY x.node_rank) FROM allocations x JOIN nodes n ON n.id = "
        "x.node_id WHERE x.attempt_id = a.attempt_id), t.plan, (SELECT "
        "coalesce(u.unix_account, tm.unix_account) FROM users u, teams tm WHERE "
        "u.id = j.user_id AND tm.id = j.team_id), (SELECT r.token FROM serve_replicas r WHERE "
        "r.job_id = j.id)",
        4, p);
    rc = db_result_rc(r, req_id);
    for (int k = 0; rc == RC_OK && k < PQntuples(r); k++) {
        json_t *nccl = NULL;
        json_t *a = assignment_json(r, k, storage_root, &nccl);
        if (a == NULL) {
            rc = RC_ENOMEM;
            break;
        }
        json_array_append_new(*assignments, a);
        /* What this node was given, with the reasons, for GET /api/v1/jobs/{id}. */
        if (nccl != NULL) {
            char *text = dump(nccl);
            const char *pp[] = {PQgetvalue(r, k, 0), p[0], text};
            rc = text == NULL ? RC_ENOMEM
                              : db_exec_ok(c, req_id,
                                           "UPDATE allocations SET nccl = $3::jsonb WHERE "
                                           "attempt_id = $1 AND node_id = $2",
                                           3, pp);
            free(text);
            json_decref(nccl);
        }
        if (strcmp(PQgetvalue(r, k, 13), "PLACED") == 0)
            json_array_append_new(*jobs_started, json_string(PQgetvalue(r, k, 1)));
    }
    PQclear(r);
    if (rc != RC_OK)
        goto out;
    rc =
        db_query_json(c,
                      "UPDATE allocations a SET cancel_sent = true FROM attempts t, jobs j WHERE "
                      "t.id = a.attempt_id AND j.id = a.job_id AND a.node_id = $1 AND "
                      "a.released_at IS NULL AND a.delivered AND NOT a.cancel_sent AND (t.state = "
                      "'ended' OR j.cancel_requested) AND EXISTS (SELECT 1 FROM nodes n WHERE n.id "
                      "= $1 AND n.generation = $2) AND a.job_id = ANY($3::bigint[]) RETURNING "
                      "a.attempt_id::text AS a",
                      3, p, 0, &rows, req_id);
    json_array_foreach(rows, i, row)
    {
        json_array_append(*cancels, json_object_get(row, "a"));
    }
    json_decref(rows);
out:
    free(jobs);
    return rc;
}

enum rc db_attempt_info(PGconn *c, int64_t attempt_id, int64_t node_id, int lock,
                        struct db_attempt_info *out, const char *req_id)
{
    char a[24], n[24];
    const char *p[] = {db_i64(attempt_id, a, sizeof(a)), db_i64(node_id, n, sizeof(n))};
    PGresult *r = db_exec(c,
                          lock ? "SELECT j.id, t.attempt, t.state, j.state, j.cancel_requested, "
                                 "j.restarts, j.max_restarts, al.released_at IS NOT NULL, "
                                 "al.started, nd.name FROM attempts t JOIN jobs j ON j.id = "
                                 "t.job_id JOIN allocations al ON al.attempt_id = t.id AND "
                                 "al.node_id = $2 JOIN nodes nd ON nd.id = al.node_id WHERE t.id "
                                 "= $1 FOR UPDATE OF j, t"
                               : "SELECT j.id, t.attempt, t.state, j.state, j.cancel_requested, "
                                 "j.restarts, j.max_restarts, al.released_at IS NOT NULL, "
                                 "al.started, nd.name FROM attempts t JOIN jobs j ON j.id = "
                                 "t.job_id JOIN allocations al ON al.attempt_id = t.id AND "
                                 "al.node_id = $2 JOIN nodes nd ON nd.id = al.node_id WHERE t.id "
                                 "= $1",
                          2, p);
    enum rc rc = db_result_rc(r, req_id);

    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK) {
        memset(out, 0, sizeof(*out));
        out->job_id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        out->attempt = (int)strtol(PQgetvalue(r, 0, 1), NULL, 10);
        snprintf(out->attempt_state, sizeof(out->attempt_state), "%s", PQgetvalue(r, 0, 2));
        snprintf(out->job_state, sizeof(out->job_state), "%s", PQgetvalue(r, 0, 3));
        out->cancel_requested = PQgetvalue(r, 0, 4)[0] == 't';
        out->restarts = (int)strtol(PQgetvalue(r, 0, 5), NULL, 10);
        out->max_restarts = (int)strtol(PQgetvalue(r, 0, 6), NULL, 10);
        out->alloc_released = PQgetvalue(r, 0, 7)[0] == 't';
        out->alloc_started = PQgetvalue(r, 0, 8)[0] == 't';
        snprintf(out->node_name, sizeof(out->node_name), "%s", PQgetvalue(r, 0, 9));
    }
    PQclear(r);
    return rc;
}

enum rc db_attempt_node_started(PGconn *c, int64_t attempt_id, int64_t node_id, int *all_started,
                                const char *req_id)
{
    char a[24], n[24];
    const char *p[] = {db_i64(attempt_id, a, sizeof(a)), db_i64(node_id, n, sizeof(n))};
    PGresult *r;
    enum rc rc = db_exec_ok(c, req_id,
                            "UPDATE allocations SET started = true WHERE attempt_id = $1 AND "
                            "node_id = $2",
                            2, p);

    if (rc != RC_OK)
        return rc;
    r = db_exec(c, "SELECT bool_and(started) FROM allocations WHERE attempt_id = $1", 1, p);
    rc = db_result_rc(r, req_id);
    *all_started = rc == RC_OK && PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    return rc;
}

enum rc db_attempt_node_exit(PGconn *c, int64_t attempt_id, int64_t node_id,
                             const json_t *exit_info, int *live_left, int *all_ok,
                             const char *req_id)
{
    char a[24], n[24];
    char *info = dump(exit_info);
    const char *p[] = {db_i64(attempt_id, a, sizeof(a)), db_i64(node_id, n, sizeof(n)),
                       info ? info : "{}"};
    PGresult *r;
    enum rc rc = db_exec_ok(c, req_id,
                            "UPDATE allocations SET exited = true, exit_info = $3::jsonb, "
                            "released_at = coalesce(released_at, now()) WHERE attempt_id = $1 AND "
                            "node_id = $2",
                            3, p);

    free(info);
    if (rc != RC_OK)
        return rc;
    r = db_exec(c,
                "SELECT count(*) FILTER (WHERE released_at IS NULL), bool_and(exited AND NOT "
                "EXISTS (SELECT 1 FROM jsonb_array_elements(exit_info->'ranks') x WHERE "
                "(x->>'exit_code')::int <> 0)) FROM allocations WHERE attempt_id = $1",
                1, p);
    rc = db_result_rc(r, req_id);
    if (rc == RC_OK) {
        *live_left = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
        *all_ok = PQgetvalue(r, 0, 1)[0] == 't';
    }
    PQclear(r);
    return rc;
}

enum rc db_attempt_end(PGconn *c, int64_t attempt_id, const char *outcome, const char *req_id)
{
    char a[24];
    const char *p[] = {db_i64(attempt_id, a, sizeof(a)), outcome};
    return db_exec_ok(c, req_id,
                      "UPDATE attempts SET state = 'ended', outcome = $2, ended_at = now() WHERE "
                      "id = $1 AND state <> 'ended'",
                      2, p);
}

enum rc db_attempt_state(PGconn *c, int64_t attempt_id, const char *state, const char *req_id)
{
    char a[24];
    const char *p[] = {db_i64(attempt_id, a, sizeof(a)), state};
    return db_exec_ok(c, req_id,
                      "UPDATE attempts SET state = $2 WHERE id = $1 AND state <> 'ended'", 2, p);
}

enum rc db_job_count_restart(PGconn *c, int64_t job_id, const char *req_id)
{
    char j[24];
    const char *p[] = {db_i64(job_id, j, sizeof(j))};
    return db_exec_ok(c, req_id, "UPDATE jobs SET restarts = restarts + 1 WHERE id = $1", 1, p);
}

enum rc db_job_live_allocs(PGconn *c, int64_t job_id, int *n, const char *req_id)
{
    char j[24];
    const char *p[] = {db_i64(job_id, j, sizeof(j))};
    PGresult *r = db_exec(c,
                          "SELECT count(*) FROM allocations WHERE job_id = $1 AND released_at IS "
                          "NULL",
                          1, p);
    enum rc rc = db_result_rc(r, req_id);

    if (rc == RC_OK)
        *n = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return rc;
}

enum rc db_output_store(PGconn *c, int64_t job_id, int attempt, int64_t attempt_id,
                        const json_t *logs, const json_t *metrics, const json_t *checkpoints,
                        int64_t dropped, int *replayed, const char *req_id)
{
    char j[24], at[16], aid[24], dr[24];
    char *l = dump(logs), *m = dump(metrics), *k = dump(checkpoints);
    const char *p[] = {db_i64(job_id, j, sizeof(j)), at, l ? l : "[]"};
    const char *pm[] = {j, at, m ? m : "[]"};
    const char *pk[] = {j, at, k ? k : "[]"};
    const char *pd[] = {db_i64(attempt_id, aid, sizeof(aid)), db_i64(dropped, dr, sizeof(dr))};
    PGresult *res;
    enum rc rc = RC_ENOMEM;

    *replayed = 0;
    snprintf(at, sizeof(at), "%d", attempt);
    if ((logs != NULL && l == NULL) || (metrics != NULL && m == NULL) ||
        (checkpoints != NULL && k == NULL))
        goto out;
    /* Set-based inserts: one statement per kind whatever the batch size.
     * The logs go first: the rows they add tell a replay from a new batch
     * (a batch is stored whole or not at all, so a replay adds none). */
    res =
        db_exec(c,
                "WITH ins AS (INSERT INTO job_logs (job_id, attempt, rank, stream, seq, ts, text) "
                "SELECT $1, $2, (x->>'rank')::int, x->>'stream', (x->>'seq')::bigint, "
                "to_timestamp((x->>'ts_ms')::double precision / 1000), x->>'text' FROM "
                "jsonb_array_elements($3::jsonb) x ON CONFLICT DO NOTHING RETURNING 1) "
                "SELECT count(*) FROM ins",
                3, p);
    rc = db_result_rc(res, req_id);
    if (rc == RC_OK && json_array_size(logs) > 0 && strcmp(PQgetvalue(res, 0, 0), "0") == 0)
        *replayed = 1;
    PQclear(res);
    if (rc != RC_OK || *replayed)
        goto out;
    rc = db_exec_ok(c, req_id,
                    "INSERT INTO metrics (job_id, attempt, rank, step, ts, vals) SELECT $1, "
                    "$2, (x->>'rank')::int, (x->>'step')::bigint, to_timestamp((x->>'ts_ms')"
                    "::double precision / 1000), x->'values' FROM "
                    "jsonb_array_elements($3::jsonb) x",
                    3, pm);
    if (rc == RC_OK)
        rc = db_exec_ok(c, req_id,
                        "INSERT INTO checkpoints (job_id, attempt, step, path) SELECT $1, $2, "
                        "(x->>'step')::bigint, x->>'path' FROM jsonb_array_elements($3::jsonb) x",
                        3, pk);
    if (rc == RC_OK && dropped > 0)
        rc = db_exec_ok(
            c, req_id,
            "UPDATE attempts SET dropped_lines = dropped_lines + $2::bigint WHERE id = $1", 2, pd);
out:
    free(l);
    free(m);
    free(k);
    return rc;
}

enum rc db_nodes_mark_lost(PGconn *c, int timeout_s, json_t **lost, const char *req_id)
{
    char t[16];
    const char *p[] = {t};

    snprintf(t, sizeof(t), "%d", timeout_s);
    /* The UPDATE claims each node once, so concurrent replicas do not both
     * handle the same loss. Lock order (db.h): the node rows in id order
     * first, as two replicas' monitors may claim the same nodes at once; NO
     * KEY, like the UPDATE's own lock, so that the scheduler inserting an
     * allocation (a key-share lock on its node) never waits for it. */
    return db_query_json(
        c,
        "WITH c AS (SELECT id FROM nodes WHERE state <> 'down' AND last_seen_at < now() - "
        "make_interval(secs => $1::int) ORDER BY id FOR NO KEY UPDATE), gone AS (UPDATE nodes n "
        "SET state = 'down' FROM c WHERE n.id = c.id AND n.state <> 'down' RETURNING n.id, "
        "n.name) "
        "SELECT g.id AS node_id, g.name AS node, coalesce((SELECT json_agg("
        "json_build_object('attempt_id', a.attempt_id::text, 'job_id', "
        "a.job_id::text)) FROM allocations a WHERE a.node_id = g.id AND "
        "a.released_at IS NULL), '[]'::json) AS allocations FROM gone g",
        1, p, 0, lost, req_id);
}

enum rc db_alloc_release_node(PGconn *c, int64_t attempt_id, int64_t node_id, const char *req_id)
{
    char a[24], n[24];
    const char *p[] = {db_i64(attempt_id, a, sizeof(a)), db_i64(node_id, n, sizeof(n))};
    return db_exec_ok(c, req_id,
                      "UPDATE allocations SET released_at = now() WHERE attempt_id = $1 AND "
                      "node_id = $2 AND released_at IS NULL",
                      2, p);
}

enum rc db_job_nodes(PGconn *c, int64_t job_id, json_t **out, const char *req_id)
{
    char j[24];
    const char *p[] = {db_i64(job_id, j, sizeof(j))};
    return db_query_json(
        c,
        "SELECT DISTINCT node_id FROM allocations WHERE job_id = $1 AND released_at "
        "IS NULL",
        1, p, 0, out, req_id);
}

enum rc db_attempt_refund_recent_failure(PGconn *c, int64_t attempt_id, int window_s, int *refunded,
                                         const char *req_id)
{
    char a[24], w[16];
    const char *p[] = {db_i64(attempt_id, a, sizeof(a)), w};
    PGresult *r;
    enum rc rc;

    snprintf(w, sizeof(w), "%d", window_s);
    r = db_exec(c,
                "WITH a AS (UPDATE attempts SET outcome = 'lost' WHERE id = $1 AND outcome = "
                "'failed' AND ended_at > now() - make_interval(secs => $2::int) RETURNING job_id) "
                "UPDATE jobs j SET restarts = greatest(j.restarts - 1, 0) FROM a WHERE j.id = "
                "a.job_id AND j.state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED') RETURNING j.id",
                2, p);
    rc = db_result_rc(r, req_id);
    *refunded = rc == RC_OK && PQntuples(r) == 1;
    PQclear(r);
    return rc;
}
