/*
 * jobs.c - the scheduling side of the jobs API (see jobs_hooks.h).
 */
#include <string.h>

#include "db_alloc.h"
#include "db_jobs.h"
#include "jobs_hooks.h"

enum rc jobs_check_submit(struct srv_req *req, const struct jobspec *spec)
{
    (void)req;
    (void)spec;
    return RC_OK;
}

enum rc jobs_decorate(struct srv_req *req, int64_t job_id, json_t *row)
{
    json_t *alloc = NULL;
    enum rc rc = db_alloc_of_job(req->db, job_id, &alloc, req->req_id);

    if (rc == RC_OK)
        json_object_set_new(row, "allocations", alloc);
    return rc;
}

enum rc jobs_cancel(struct srv_req *req, int64_t job_id, const char *state)
{
    char actor[96];
    enum rc rc;

    srv_actor(req, actor, sizeof(actor));
    if (strcmp(state, "STARTING") == 0 || strcmp(state, "RUNNING") == 0) {
        /* Ranks are running: the workers stop them and the job ends when
         * they report (see agent.c). */
        return db_job_mark_cancel(req->db, job_id, req->req_id);
    }
    rc = db_alloc_release_job(req->db, job_id, "cancelled", req->req_id);
    if (rc == RC_OK)
        rc = db_job_transition(req->db, job_id, NULL, "CANCELLED", "cancelled by user", actor,
                               req->client_addr, req->req_id);
    return rc;
}
