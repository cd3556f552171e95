/*
 * db_gateway.c - the inference gateway's SQL (db_gateway.h). The record
 * batch goes in as one JSON parameter expanded by json_to_recordset, so a
 * batch of any size is three statements and one round trip each.
 */
#include "db_gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "jx.h"

enum rc db_gw_key_by_hash(PGconn *c, const char *hash, struct db_gw_key *out, const char *req_id)
{
    const char *p[] = {hash};
    PGresult *res = PQexecParams(
        c,
        "SELECT k.id, k.deployment_id, d.name, k.public, k.revoked_at IS NOT NULL, "
        "k.rate_per_min, k.token_quota, COALESCE((SELECT sum(u.prompt_tokens + "
        "u.completion_tokens) FROM serve_usage u WHERE u.key_id = k.id), 0) "
        "FROM serve_keys k JOIN deployments d ON d.id = k.deployment_id WHERE k.token_hash = $1",
        1, NULL, p, NULL, NULL, 0);
    enum rc rc = db_result_rc(res, req_id);

    memset(out, 0, sizeof(*out));
    if (rc == RC_OK && PQntuples(res) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK) {
        if (db_parse_i64(PQgetvalue(res, 0, 0), &out->id) != RC_OK ||
            db_parse_i64(PQgetvalue(res, 0, 1), &out->deployment_id) != RC_OK ||
            db_parse_i64(PQgetvalue(res, 0, 6), &out->token_quota) != RC_OK ||
            db_parse_i64(PQgetvalue(res, 0, 7), &out->tokens_used) != RC_OK)
            rc = RC_EINTERNAL;
        snprintf(out->deployment, sizeof(out->deployment), "%s", PQgetvalue(res, 0, 2));
        out->is_public = PQgetvalue(res, 0, 3)[0] == 't';
        out->revoked = PQgetvalue(res, 0, 4)[0] == 't';
        out->rate_per_min = (int)strtol(PQgetvalue(res, 0, 5), NULL, 10);
    }
    PQclear(res);
    return rc;
}

enum rc db_gw_view(PGconn *c, json_t **deployments, json_t **replicas, const char *req_id)
{
    enum rc rc;

    *deployments = NULL;
    *replicas = NULL;
    rc = db_query_json(
        c,
        "SELECT d.id, d.name, d.state, COALESCE(d.version_id, a.version_id) AS primary_version_id, "
        "d.canary_version_id, d.canary_weight, d.keep_texts_days, "
        "COALESCE(pv.manifest_sha256, '') AS primary_manifest, "
        "COALESCE(cv.manifest_sha256, '') AS canary_manifest "
        "FROM deployments d "
        "LEFT JOIN model_aliases a ON a.model_id = d.model_id AND a.alias = d.alias "
        "LEFT JOIN model_versions pv ON pv.id = COALESCE(d.version_id, a.version_id) "
        "LEFT JOIN model_versions cv ON cv.id = d.canary_version_id ORDER BY d.id",
        0, NULL, 0, deployments, req_id);
    if (rc != RC_OK)
        return rc;
    rc =
        db_query_json(c,
                      "SELECT r.deployment_id, r.job_id, r.version_id, r.token, "
                      "a.master_addr AS host, a.master_port AS port, v.manifest_sha256 AS manifest "
                      "FROM serve_replicas r JOIN jobs j ON j.id = r.job_id "
                      "JOIN attempts a ON a.job_id = j.id AND a.attempt = j.attempt "
                      "JOIN model_versions v ON v.id = r.version_id "
                      "WHERE r.ready AND NOT r.retired AND j.state = 'RUNNING' "
                      "AND r.attempt = j.attempt AND a.master_port > 0 "
                      "ORDER BY r.deployment_id, r.job_id",
                      0, NULL, 0, replicas, req_id);
    if (rc != RC_OK) {
        json_decref(*deployments);
        *deployments = NULL;
    }
    return rc;
}

/* The batch as a relation: every column serve_requests takes from the gateway. */
#define GW_RECORDS_FROM                                                                            \
    "json_to_recordset($1::json) AS x(request_id text, ts timestamptz, ts_text text, key_id "      \
    "bigint, deployment_id bigint, version_id bigint, replica_job_id bigint, manifest_sha256 "     \
    "text, route text, status integer, error_code text, prompt_sha256 text, answer_sha256 text, "  \
    "prompt_tokens integer, completion_tokens integer, latency_us bigint, ttft_us bigint, "        \
    "client_addr text, record_sha256 text, prompt_text text, answer_text text)"

struct records_tx {
    PGconn *c;
    const char *rows; /* the batch as JSON text */
    const char *req_id;
};

static enum rc records_body(void *arg)
{
    const struct records_tx *t = arg;
    PGconn *c = t->c;
    const char *p[] = {t->rows};
    enum rc rc;

    rc = db_exec_ok(c, t->req_id,
                    "INSERT INTO serve_requests (request_id, ts, ts_text, key_id, deployment_id, "
                    "version_id, replica_job_id, manifest_sha256, route, status, error_code, "
                    "prompt_sha256, answer_sha256, prompt_tokens, completion_tokens, latency_us, "
                    "ttft_us, client_addr, record_sha256, prompt_text, answer_text) "
                    "SELECT request_id, ts, ts_text, key_id, deployment_id, version_id, "
                    "replica_job_id, manifest_sha256, route, status, error_code, prompt_sha256, "
                    "answer_sha256, prompt_tokens, completion_tokens, latency_us, ttft_us, "
                    "client_addr, record_sha256, prompt_text, answer_text FROM " GW_RECORDS_FROM,
                    1, p);
    if (rc != RC_OK)
        return rc;
    /* Keys in id order, the one order every batch takes their rows in. */
    rc = db_exec_ok(c, t->req_id,
                    "INSERT INTO serve_usage AS u (key_id, day, requests, errors, prompt_tokens, "
                    "completion_tokens) SELECT key_id, (ts AT TIME ZONE 'UTC')::date, count(*), "
                    "count(*) FILTER (WHERE status >= 400), sum(prompt_tokens), "
                    "sum(completion_tokens) FROM " GW_RECORDS_FROM
                    " WHERE key_id IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2 "
                    "ON CONFLICT (key_id, day) DO UPDATE SET requests = u.requests + "
                    "EXCLUDED.requests, errors = u.errors + EXCLUDED.errors, prompt_tokens = "
                    "u.prompt_tokens + EXCLUDED.prompt_tokens, completion_tokens = "
                    "u.completion_tokens + EXCLUDED.completion_tokens",
                    1, p);
    if (rc != RC_OK)
        return rc;
    return db_exec_ok(c, t->req_id,
                      "UPDATE deployments d SET last_request_at = m.ts FROM (SELECT "
                      "deployment_id, max(ts) AS ts FROM " GW_RECORDS_FROM
                      " WHERE deployment_id IS NOT NULL GROUP BY 1) m WHERE d.id = "
                      "m.deployment_id AND (d.last_request_at IS NULL OR d.last_request_at < "
                      "m.ts - interval '1 second')",
                      1, p);
}

enum rc db_gw_records_write(PGconn *c, const json_t *rows, const char *req_id)
{
    char *text = jx_dumps(rows, JSON_COMPACT);
    struct records_tx t = {c, text, req_id};
    enum rc rc;

    if (text == NULL)
        return RC_ENOMEM;
    rc = db_tx(c, records_body, &t, req_id);
    free(text);
    return rc;
}

enum rc db_gw_deployment_team(PGconn *c, const char *name, int64_t *id, int64_t *team_id,
                              const char *req_id)
{
    const char *p[] = {name};
    PGresult *res = PQexecParams(c, "SELECT id, team_id FROM deployments WHERE name = $1", 1, NULL,
                                 p, NULL, NULL, 0);
    enum rc rc = db_result_rc(res, req_id);

    if (rc == RC_OK && PQntuples(res) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK && (db_parse_i64(PQgetvalue(res, 0, 0), id) != RC_OK ||
                        db_parse_i64(PQgetvalue(res, 0, 1), team_id) != RC_OK))
        rc = RC_EINTERNAL;
    PQclear(res);
    return rc;
}

/* A key as the keys API shows it: never its hash. */
#define GW_KEY_COLS                                                                                \
    "k.id, k.name, k.prefix, k.public, k.rate_per_min, k.token_quota, k.created_by, "              \
    "k.created_at, k.revoked_at"

enum rc db_gw_key_create(PGconn *c, int64_t deployment_id, const char *name, const char *hash,
                         const char *prefix, int is_public, int rate_per_min, int64_t token_quota,
                         const char *created_by, json_t **out, const char *req_id)
{
    char d[24], r[24], q[24];
    const char *p[] = {db_i64(deployment_id, d, sizeof(d)),
                       name,
                       hash,
                       prefix,
                       is_public ? "true" : "false",
                       db_i64(rate_per_min, r, sizeof(r)),
                       db_i64(token_quota, q, sizeof(q)),
                       created_by};

    return db_query_json(c,
                         "INSERT INTO serve_keys AS k (deployment_id, name, token_hash, prefix, "
                         "public, rate_per_min, token_quota, created_by) VALUES ($1, $2, $3, $4, "
                         "$5, $6, $7, $8) RETURNING " GW_KEY_COLS,
                         8, p, 1, out, req_id);
}

enum rc db_gw_key_list(PGconn *c, int64_t deployment_id, json_t **out, const char *req_id)
{
    char d[24];
    const char *p[] = {db_i64(deployment_id, d, sizeof(d))};

    return db_query_json(
        c,
        "SELECT " GW_KEY_COLS ", COALESCE(u.requests, 0) AS requests, COALESCE(u.errors, 0) AS "
        "errors, COALESCE(u.prompt_tokens, 0) AS prompt_tokens, COALESCE(u.completion_tokens, 0) "
        "AS completion_tokens FROM serve_keys k LEFT JOIN (SELECT key_id, sum(requests)::bigint "
        "AS requests, sum(errors)::bigint AS errors, sum(prompt_tokens)::bigint AS prompt_tokens, "
        "sum(completion_tokens)::bigint AS completion_tokens FROM serve_usage GROUP BY key_id) u "
        "ON u.key_id = k.id WHERE k.deployment_id = $1 ORDER BY k.id DESC",
        1, p, 0, out, req_id);
}

enum rc db_gw_key_revoke(PGconn *c, int64_t deployment_id, int64_t id, const char *req_id)
{
    char d[24], k[24];
    const char *p[] = {db_i64(deployment_id, d, sizeof(d)), db_i64(id, k, sizeof(k))};
    PGresult *res = PQexecParams(c,
                                 "UPDATE serve_keys SET revoked_at = COALESCE(revoked_at, now()) "
                                 "WHERE deployment_id = $1 AND id = $2",
                                 2, NULL, p, NULL, NULL, 0);
    enum rc rc = db_result_rc(res, req_id);

    if (rc == RC_OK && strcmp(PQcmdTuples(res), "1") != 0)
        rc = RC_ENOTFOUND;
    PQclear(res);
    return rc;
}

enum rc db_gw_usage(PGconn *c, int64_t deployment_id, json_t **out, const char *req_id)
{
    char d[24];
    const char *p[] = {db_i64(deployment_id, d, sizeof(d))};

    return db_query_json(c,
                         "SELECT u.key_id, k.name AS key_name, u.day::text AS day, u.requests, "
                         "u.errors, u.prompt_tokens, u.completion_tokens FROM serve_usage u JOIN "
                         "serve_keys k ON k.id = u.key_id WHERE k.deployment_id = $1 "
                         "ORDER BY u.day, u.key_id",
                         1, p, 0, out, req_id);
}
