/*
 * db_plan.c - see db_plan.h.
 */
#include "db_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_target.h"
#include "db.h"
#include "db_audit.h"
#include "jx.h"
#include "reason_codes.h"

/* One node in jobplan.h's form; "gpus" is filled by the caller's WHERE. The
 * topology columns (migration 008) are read through to_jsonb(n) so that a
 * database without them plans with capabilities unknown. */
#define NODE_JSON(GPU_FILTER)                                                                      \
    "json_build_object('name', n.name, 'memory_mb', n.memory_mb, 'gpus', (SELECT "                 \
    "coalesce(json_agg(json_build_object('idx', g.idx, 'model', g.model, 'memory_mb', "            \
    "g.memory_mb, 'compute_capability', g.compute_capability, 'fake', g.uuid LIKE 'GPU-fake-%', "  \
    "'nvlink_peers', g.nvlink_peers) ORDER BY g.idx), '[]'::json) FROM gpus g WHERE g.node_id = "  \
    "n.id" GPU_FILTER "), 'capabilities', to_jsonb(n)->'capabilities', 'interconnect', "           \
    "to_jsonb(n)->'interconnect', 'nccl_probe', to_jsonb(n)->'nccl_probe')"

/* The single json column of a one-row, one-column result as a new value. */
static enum rc one_json(PGconn *c, const char *sql, int n, const char *const *p, json_t **out,
                        const char *req_id)
{
    PGresult *r = db_exec(c, sql, n, p);
    enum rc rc = db_result_rc(r, req_id);

    *out = NULL;
    if (rc == RC_OK) {
        if (PQntuples(r) == 0 || PQgetisnull(r, 0, 0))
            *out = json_null();
        else
            *out = jx_loads(PQgetvalue(r, 0, 0), JSON_DECODE_ANY);
        if (*out == NULL)
            rc = RC_ENOMEM;
    }
    PQclear(r);
    return rc;
}

enum rc db_plan_site_nodes(PGconn *c, int64_t site_id, json_t **out, const char *req_id)
{
    char id[24];
    const char *p[] = {db_i64(site_id, id, sizeof(id))};

    return one_json(c,
                    "SELECT coalesce(json_agg(" NODE_JSON("") " ORDER BY n.id), '[]'::json) FROM "
                                                              "nodes n WHERE n.site_id = $1",
                    1, p, out, req_id);
}

enum rc db_plan_attempt_nodes(PGconn *c, int64_t attempt_id, json_t **out, const char *req_id)
{
    char id[24];
    const char *p[] = {db_i64(attempt_id, id, sizeof(id))};

    return one_json(c,
                    "SELECT coalesce(json_agg(" NODE_JSON(
                        " AND g.idx = ANY(a.gpu_indices)") " ORDER BY a.node_rank), '[]'::json) "
                                                           "FROM allocations a JOIN nodes n ON "
                                                           "n.id = a.node_id WHERE a.attempt_id = "
                                                           "$1",
                    1, p, out, req_id);
}

enum rc db_plan_set_submit(PGconn *c, int64_t job_id, const json_t *plan, const char *req_id)
{
    char id[24];
    char *js = jx_dumps(plan, JSON_COMPACT);
    enum rc rc;

    if (js == NULL)
        return RC_ENOMEM;
    {
        const char *p[] = {db_i64(job_id, id, sizeof(id)), js};
        rc = db_exec_ok(c, req_id, "UPDATE jobs SET plan = $2::jsonb WHERE id = $1", 2, p);
    }
    free(js);
    return rc;
}

enum rc db_plan_placed(PGconn *c, int64_t job_id, int64_t attempt_id, const char *state,
                       const json_t *plan, const char *reason, const char *actor,
                       const char *req_id)
{
    char jid[24], aid[24], target[AUDIT_TARGET_SIZE];
    char *js = jx_dumps(plan, JSON_COMPACT);
    json_t *d = NULL;
    enum rc rc;

    if (js == NULL)
        return RC_ENOMEM;
    db_i64(job_id, jid, sizeof(jid));
    db_i64(attempt_id, aid, sizeof(aid));
    {
        const char *p[] = {aid, js};
        rc = db_exec_ok(c, req_id, "UPDATE attempts SET plan = $2::jsonb WHERE id = $1", 2, p);
    }
    free(js);
    js = NULL;
    if (rc == RC_OK) {
        /* The summary's figures, for a translated line (docs/job-reasons.md "plan"). */
        const json_t *st = json_object_get(plan, "status"), *w;
        json_t *codes = json_array(), *params;
        size_t i;

        json_array_foreach(json_object_get(plan, "warnings"), i, w)
        {
            json_array_append(codes, json_object_get(w, "code"));
        }
        params = json_pack(
            "{s:O?,s:O?,s:O?,s:O?,s:O?,s:O?,s:O?,s:O?,s:b,s:o?}", "strategy",
            json_object_get(plan, "strategy"), "engine", json_object_get(plan, "engine"),
            "micro_batch", json_object_get(plan, "micro_batch"), "grad_accum",
            json_object_get(plan, "grad_accum"), "ranks", json_object_get(plan, "dp_degree"),
            "global_batch", json_object_get(json_object_get(plan, "global_batch"), "reached"),
            "precision", json_object_get(plan, "precision"), "activation_checkpointing",
            json_object_get(plan, "activation_checkpointing"), "fits",
            !json_is_string(st) || strcmp(json_string_value(st), "ok") == 0, "warnings", codes);
        js = params != NULL ? jx_dumps(params, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(params);
        if (js == NULL)
            return RC_ENOMEM;
        {
            const char *p[] = {jid, state, reason, actor, RSN_PLAN, js};
            rc = db_exec_ok(c, req_id,
                            "INSERT INTO job_events (job_id, from_state, to_state, reason, actor, "
                            "kind, reason_code, reason_params) VALUES ($1, $2, $2, $3, $4, "
                            "'plan', $5, $6::jsonb)",
                            6, p);
        }
        free(js);
    }
    if (rc == RC_OK)
        rc = audit_target_id(AUDIT_TARGET_JOB, job_id, target);
    if (rc == RC_OK) {
        struct audit_event ev;
        json_t *warn = json_array();
        size_t i;
        json_t *w;

        json_array_foreach(json_object_get(plan, "warnings"), i, w)
        {
            json_array_append(warn, json_object_get(w, "code"));
        }
        d = json_pack("{s:s,s:O?,s:O?,s:O?,s:O?,s:O?,s:O?,s:o?}", "attempt_id", aid, "status",
                      json_object_get(plan, "status"), "strategy",
                      json_object_get(plan, "strategy"), "engine", json_object_get(plan, "engine"),
                      "precision", json_object_get(plan, "precision"), "micro_batch",
                      json_object_get(plan, "micro_batch"), "grad_accum",
                      json_object_get(plan, "grad_accum"), "warnings", warn);
        if (d == NULL)
            return RC_ENOMEM;
        ev = (struct audit_event){actor, "", "job.plan", target, "success", d};
        rc = audit_append(c, &ev, req_id);
    }
    json_decref(d);
    return rc;
}

enum rc db_plan_measured(PGconn *c, int64_t job_id, json_t **placed, json_t **metrics,
                         json_t **ranks, const char *req_id)
{
    char id[24];
    const char *p[] = {db_i64(job_id, id, sizeof(id))};
    enum rc rc;

    *metrics = NULL;
    *ranks = NULL;
    rc = one_json(c,
                  "SELECT plan FROM attempts WHERE job_id = $1 AND plan IS NOT NULL ORDER BY "
                  "attempt DESC LIMIT 1",
                  1, p, placed, req_id);
    if (rc == RC_OK)
        rc = one_json(c,
                      "SELECT vals FROM metrics WHERE job_id = $1 AND vals ? 'param_bytes' ORDER "
                      "BY attempt DESC, step DESC, id DESC LIMIT 1",
                      1, p, metrics, req_id);
    if (rc == RC_OK)
        rc = one_json(c,
                      "SELECT coalesce(json_agg(r ORDER BY (r->>'rank')::int), '[]'::json) FROM "
                      "allocations a, jsonb_array_elements(coalesce(a.exit_info->'ranks', "
                      "'[]'::jsonb)) r WHERE a.attempt_id = (SELECT id FROM attempts WHERE "
                      "job_id = $1 AND plan IS NOT NULL ORDER BY attempt DESC LIMIT 1)",
                      1, p, ranks, req_id);
    if (rc != RC_OK) {
        json_decref(*placed);
        json_decref(*metrics);
        json_decref(*ranks);
        *placed = *metrics = *ranks = NULL;
    }
    return rc;
}
