/*
 * db_alloc.c - see db_alloc.h.
 */
#include "db_alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_jobs.h"
#include "reason_codes.h"

enum rc db_alloc_of_job(PGconn *c, int64_t job_id, json_t **out, const char *req_id)
{
    char id[24];
    const char *p[] = {id};
    PGresult *res;
    enum rc rc;

    snprintf(id, sizeof(id), "%lld", (long long)job_id);
    res = db_exec(c,
                  "SELECT a.node_id, n.name AS node, a.node_rank, array_to_json(a.gpu_indices) "
                  "AS gpu_indices, a.rank_start, t.attempt FROM allocations a JOIN nodes n ON "
                  "n.id = a.node_id JOIN attempts t ON t.id = a.attempt_id WHERE a.job_id = $1 "
                  "AND a.released_at IS NULL ORDER BY a.node_rank",
                  1, p);
    rc = db_result_rc(res, req_id);
    *out = NULL;
    if (rc == RC_OK) {
        *out = json_array();
        for (int i = 0; *out != NULL && i < PQntuples(res); i++)
            json_array_append_new(*out, db_row_to_json(res, i));
    }
    PQclear(res);
    return rc;
}

enum rc db_nccl_of_job(PGconn *c, int64_t job_id, json_t **out, const char *req_id)
{
    char id[24];
    const char *p[] = {db_i64(job_id, id, sizeof(id))};
    json_t *rows = NULL, *nodes = NULL, *row;
    json_int_t attempt = 0;
    size_t i;
    enum rc rc;

    *out = NULL;
    rc = db_query_json(c,
                       "SELECT n.name AS node, a.node_rank, a.nccl->'variables' AS variables, "
                       "t.attempt FROM allocations a JOIN nodes n ON n.id = a.node_id JOIN "
                       "attempts t ON t.id = a.attempt_id WHERE a.job_id = $1 AND a.nccl IS NOT "
                       "NULL AND a.attempt_id = (SELECT max(x.attempt_id) FROM allocations x "
                       "WHERE x.job_id = $1 AND x.nccl IS NOT NULL) ORDER BY a.node_rank",
                       1, p, 0, &rows, req_id);
    if (rc != RC_OK)
        return rc;
    if (json_array_size(rows) == 0) {
        json_decref(rows);
        *out = json_null();
        return RC_OK;
    }
    nodes = json_array();
    json_array_foreach(rows, i, row)
    {
        attempt = json_integer_value(json_object_get(row, "attempt"));
        json_object_del(row, "attempt");
        if (nodes != NULL && json_array_append(nodes, row) != 0) {
            json_decref(nodes);
            nodes = NULL;
        }
    }
    json_decref(rows);
    if (nodes == NULL)
        return RC_ENOMEM;
    *out = json_pack("{s:I,s:o}", "attempt", attempt, "nodes", nodes);
    return *out != NULL ? RC_OK : RC_ENOMEM;
}

enum rc db_alloc_ranks(PGconn *c, int64_t attempt_id, int64_t node_id, int *rank_start, int *nranks,
                       const char *req_id)
{
    char a[24], n[24];
    const char *p[] = {db_i64(attempt_id, a, sizeof(a)), db_i64(node_id, n, sizeof(n))};
    /* One rank per GPU (db_agent.c, the assignment's "ranks"), released or not:
     * a node may still send the last lines of its ranks after its exit. */
    PGresult *res = db_exec(c,
                            "SELECT rank_start, cardinality(gpu_indices) FROM allocations WHERE "
                            "attempt_id = $1 AND node_id = $2",
                            2, p);
    enum rc rc = db_result_rc(res, req_id);

    if (rc == RC_OK && PQntuples(res) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK) {
        *rank_start = (int)strtol(PQgetvalue(res, 0, 0), NULL, 10);
        *nranks = (int)strtol(PQgetvalue(res, 0, 1), NULL, 10);
    }
    PQclear(res);
    return rc;
}

enum rc db_alloc_release_job(PGconn *c, int64_t job_id, const char *outcome, const char *req_id)
{
    char id[24];
    const char *p[] = {id, outcome};
    enum rc rc;

    snprintf(id, sizeof(id), "%lld", (long long)job_id);
    rc = db_exec_ok(c, req_id,
                    "UPDATE allocations SET released_at = now() WHERE job_id = $1 AND "
                    "released_at IS NULL",
                    1, p);
    if (rc == RC_OK)
        rc = db_exec_ok(c, req_id,
                        "UPDATE attempts SET state = 'ended', outcome = $2, ended_at = now() "
                        "WHERE job_id = $1 AND state <> 'ended'",
                        2, p);
    return rc;
}

enum rc db_job_mark_cancel(PGconn *c, int64_t job_id, const char *req_id)
{
    char id[24];
    const char *p[] = {id};

    snprintf(id, sizeof(id), "%lld", (long long)job_id);
    return db_exec_ok(c, req_id, "UPDATE jobs SET cancel_requested = true WHERE id = $1", 1, p);
}

enum rc db_job_cancel(PGconn *c, int64_t job_id, const char *state, const char *actor,
                      const char *source, const char *req_id)
{
    struct job_reason why;
    enum rc rc;

    if (strcmp(state, "STARTING") == 0 || strcmp(state, "RUNNING") == 0)
        return db_job_mark_cancel(c, job_id, req_id);
    rc = db_alloc_release_job(c, job_id, "cancelled", req_id);
    if (rc != RC_OK)
        return rc;
    job_reason_init(&why, RSN_CANCELLED_BY_USER, NULL, "cancelled by user");
    rc = db_job_transition(c, job_id, NULL, "CANCELLED", &why, actor, source, req_id);
    job_reason_cleanup(&why);
    return rc;
}
