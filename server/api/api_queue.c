/*
 * api_queue.c - the queue forecast (docs/queue.md):
 * GET /api/v1/queue, GET /api/v1/jobs/{id}/forecast and
 * POST /api/v1/queue/what-if.
 *
 * The first two read what the scheduling leader stored after its latest
 * pass (db_forecast.h), so every replica answers the same. A what-if reads
 * a fresh snapshot on the request's own connection with the stored
 * predictions, appends the hypothetical job and simulates (sched_forecast):
 * nothing is written, and it works on any replica.
 *
 * Visibility, as for the job list: admins and auditors see every queued
 * job; members see the jobs of their teams, with their places in the whole
 * queue (a gap is someone else's job), and the job in the way
 * (reason.params.other_job_id) only when they may see it, else null.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "api_util.h"
#include "app.h"
#include "db.h"
#include "db_auth.h"
#include "db_forecast.h"
#include "db_jobs.h"
#include "db_policy.h"
#include "db_sched.h"
#include "db_users.h"
#include "forecast.h"
#include "jobspec.h"
#include "sched_forecast.h"

/* The id a what-if's job gets in the simulation: above every real one, so
 * that among equals it is the newest, as a job submitted now would be. */
#define WHATIF_JOB_ID (INT64_MAX / 2)

/* GET /queue's page size: default and largest, as the job list's. */
#define QUEUE_PAGE_DEFAULT 50
#define QUEUE_PAGE_MAX 500

static int64_t member_scope(const struct srv_req *req)
{
    return req->who.role == SRV_ROLE_MEMBER ? req->who.user_id : 0;
}

/*
 * The queue's cursor: "GEN.POS", the forecast's time (ms) and the stored
 * position of the page's last entry. Both numbers, so that a next page is
 * read from the forecast the first one came from or not at all (a refresh
 * between two pages answers 409 forecast_changed).
 */
static bool parse_cursor(const char *s, int64_t *gen_ms, int64_t *pos)
{
    char *end = NULL;
    long long g, p;

    if (s == NULL || strlen(s) > 40 || *s < '1' || *s > '9')
        return false;
    errno = 0;
    g = strtoll(s, &end, 10);
    if (errno != 0 || g <= 0 || *end != '.' || end[1] < '0' || end[1] > '9')
        return false;
    p = strtoll(end + 1, &end, 10);
    if (errno != 0 || *end != '\0' || p < 0 || p > INT32_MAX)
        return false;
    *gen_ms = g;
    *pos = p;
    return true;
}

/* The queue's filters and page from the query string into q; a 400 naming
 * the parameter when one is bad. */
static enum rc queue_query(struct srv_req *req, struct db_forecast_query *q)
{
    const char *cursor = srv_query(req, "cursor"), *mine = srv_query(req, "mine");
    enum rc rc = api_limit(req, QUEUE_PAGE_DEFAULT, QUEUE_PAGE_MAX, &q->limit);

    if (rc != RC_OK)
        return rc;
    if (cursor != NULL && *cursor != '\0' &&
        !parse_cursor(cursor, &q->after_gen_ms, &q->after_pos)) {
        srv_fail(req, RC_EINVAL, "cursor", "cursor is not one this server issued");
        err_detail(&req->err, "got \"%.48s\"", cursor);
        return RC_EINVAL;
    }
    q->team = srv_query(req, "team");
    q->user = srv_query(req, "user");
    if ((q->team && strlen(q->team) > 64) || (q->user && strlen(q->user) > 64))
        return srv_fail(req, RC_EINVAL, q->team && strlen(q->team) > 64 ? "team" : "user",
                        "filter value is too long");
    if (mine != NULL && strcmp(mine, "0") != 0 && strcmp(mine, "1") != 0) {
        srv_fail(req, RC_EINVAL, "mine", "mine must be 0 or 1");
        err_detail(&req->err, "got \"%.32s\"", mine);
        return RC_EINVAL;
    }
    if (mine != NULL && strcmp(mine, "1") == 0) {
        if (q->user != NULL)
            return srv_fail(req, RC_EINVAL, "mine", "give mine=1 or user, not both");
        q->user_id = req->who.user_id;
    }
    q->member_of = member_scope(req);
    /* The running jobs' ends come with the first page only: they are one
     * list, not paged, and a client paging on has them already. */
    q->with_running = q->after_gen_ms == 0;
    return RC_OK;
}

enum rc api_queue_get(struct srv_req *req)
{
    struct db_forecast_query q = {0};
    struct db_forecast_page page = {0};
    json_t *out = NULL, *next = NULL;
    enum rc rc;

    page.next_pos = -1;
    if ((rc = queue_query(req, &q)) != RC_OK)
        goto out;
    if (srv_db(req) == NULL) {
        rc = RC_EUNAVAIL;
        goto out;
    }
    if ((rc = db_forecast_page(req->db, &q, &page, req->req_id)) != RC_OK)
        goto out;
    if (page.changed) {
        srv_fail(req, RC_ECONFLICT, "cursor",
                 "the forecast was refreshed after this cursor's page; start again from the first "
                 "page");
        err_code(&req->err, "forecast_changed");
        rc = srv_fail_params(req, RC_ECONFLICT, json_pack("{s:O}", "generated_at", page.generated));
        goto out;
    }
    next = page.next_pos >= 0
               ? json_sprintf("%lld.%lld", (long long)page.generated_ms, (long long)page.next_pos)
               : json_null();
    out = json_pack("{s:O,s:O,s:I,s:o}", "generated_at", page.generated, "jobs", page.jobs, "total",
                    (json_int_t)page.total, "next_cursor", next);
    next = NULL; /* the pack took it, or failed and freed it */
    if (out != NULL && page.running != NULL && json_object_set(out, "running", page.running) != 0) {
        json_decref(out);
        out = NULL;
    }
    rc = out ? srv_reply(req, 200, out) : RC_ENOMEM;
out:
    db_forecast_page_cleanup(&page);
    return rc;
}

enum rc api_job_forecast(struct srv_req *req)
{
    int64_t id, team_id;
    int member = 1;
    char state[16];
    struct db_forecast_query q = {0};
    struct db_forecast_page page = {0};
    json_t *entry;
    enum rc rc = api_param_id(req, 0, &id, "job");

    if (rc != RC_OK)
        return rc;
    if (srv_db(req) == NULL)
        return RC_EUNAVAIL;
    rc = db_job_brief(req->db, id, 0, &team_id, state, sizeof(state), req->req_id);
    if (rc == RC_OK && req->who.role == SRV_ROLE_MEMBER)
        rc = auth_is_member(req->db, req->who.user_id, team_id, &member, req->req_id);
    if (rc == RC_ENOTFOUND || (rc == RC_OK && !member))
        return srv_fail(req, RC_ENOTFOUND, "", "no such job");
    if (rc != RC_OK)
        return rc;
    if (strcmp(state, "QUEUED") != 0 && strcmp(state, "RESTARTING") != 0) {
        srv_fail(req, RC_ECONFLICT, "", "the job is not waiting in the queue (%s)", state);
        err_code(&req->err, "not_queued");
        return srv_fail_params(req, RC_ECONFLICT, json_pack("{s:s}", "state", state));
    }
    q.member_of = member_scope(req);
    q.job_id = id;
    rc = db_forecast_page(req->db, &q, &page, req->req_id);
    if (rc != RC_OK)
        return rc;
    entry = json_array_get(page.jobs, 0);
    if (entry == NULL) {
        /* Submitted (or put back) after the leader's latest forecast. */
        db_forecast_page_cleanup(&page);
        srv_fail(req, RC_ECONFLICT, "",
                 "the job has no forecast yet: it was queued after the latest one; ask again in "
                 "a moment");
        err_code(&req->err, "forecast_pending");
        return srv_fail_params(req, RC_ECONFLICT, json_pack("{s:s}", "state", state));
    }
    json_incref(entry);
    if (json_object_set(entry, "generated_at", page.generated) != 0) {
        json_decref(entry);
        db_forecast_page_cleanup(&page);
        return RC_ENOMEM;
    }
    db_forecast_page_cleanup(&page);
    return srv_reply(req, 200, entry);
}

/* ms since the epoch as ISO 8601 UTC with milliseconds (new), null when unknown. */
static json_t *iso_ms(int64_t ms)
{
    char buf[40];
    struct tm tm;
    time_t t;

    if (ms <= 0 || ms == SCHED_TIME_UNKNOWN)
        return json_null();
    t = (time_t)(ms / 1000);
    if (gmtime_r(&t, &tm) == NULL || strftime(buf, 24, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        return json_null();
    snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ".%03dZ", (int)(ms % 1000));
    return json_string(buf);
}

/*
 * The what-if's job as a job spec: the body's fields with a placeholder name
 * and command, through jobspec_parse, so that resources, priority and site
 * are checked exactly as a submit checks them (same fields, same messages).
 */
static enum rc whatif_spec(struct srv_req *req, struct jobspec **spec)
{
    static const char *const allowed[] = {"team", "resources",    "priority",
                                          "site", "time_limit_s", NULL};
    json_t *in = NULL;
    const char *k;
    json_t *v;
    enum rc rc = api_body_object(req, allowed);

    *spec = NULL;
    if (rc != RC_OK)
        return rc;
    if (json_object_get(req->body, "team") == NULL)
        return srv_fail(req, RC_EINVAL, "team", "team is required");
    if (json_object_get(req->body, "resources") == NULL)
        return srv_fail(req, RC_EINVAL, "resources", "resources is required ({\"gpus\": N})");
    in = json_pack("{s:s,s:[s]}", "name", "what-if", "command", "what-if");
    if (in == NULL)
        return RC_ENOMEM;
    json_object_foreach(req->body, k, v)
    {
        if (json_object_set(in, k, v) != 0) {
            json_decref(in);
            return RC_ENOMEM;
        }
    }
    rc = jobspec_parse(in, spec, &req->err);
    json_decref(in);
    return rc;
}

/* Whether the caller may see job id (for other_job_id). */
static int may_see(struct srv_req *req, int64_t id)
{
    int64_t team_id;
    int member = 0;
    char state[16];

    if (req->who.role != SRV_ROLE_MEMBER)
        return 1;
    return db_job_brief(req->db, id, 0, &team_id, state, sizeof(state), req->req_id) == RC_OK &&
           auth_is_member(req->db, req->who.user_id, team_id, &member, req->req_id) == RC_OK &&
           member;
}

enum rc api_queue_whatif(struct srv_req *req)
{
    struct jobspec *spec = NULL;
    struct db_sched_snapshot snap;
    struct sched_forecast fc;
    struct sched_forecast_opts opts;
    struct sched_job *jobs = NULL;
    struct sched_queue queue;
    const struct sched_forecast_job *mine = NULL;
    const struct sched_policy *policy = sched_policy_find(req->app->cfg->sched_policy);
    int64_t team_id = 0, site_id = 0, *ids = NULL, *run_ms = NULL, *end_ms = NULL;
    size_t nq, nr, nid;
    int member = 1;
    json_t *params = NULL, *out = NULL;
    enum rc rc;

    memset(&snap, 0, sizeof(snap));
    sched_forecast_init(&fc);
    if ((rc = whatif_spec(req, &spec)) != RC_OK)
        goto out;
    if (srv_db(req) == NULL) {
        rc = RC_EUNAVAIL;
        goto out;
    }
    rc = db_team_id(req->db, spec->team, &team_id, req->req_id);
    if (rc == RC_ENOTFOUND) {
        rc = srv_fail(req, RC_EINVAL, "team", "no team named \"%s\"", spec->team);
        goto out;
    }
    if (rc == RC_OK && req->who.role == SRV_ROLE_MEMBER)
        rc = auth_is_member(req->db, req->who.user_id, team_id, &member, req->req_id);
    if (rc == RC_OK && !member)
        rc = srv_fail(req, RC_EPERM, "team", "you are not a member of team \"%s\"", spec->team);
    if (rc == RC_OK &&
        (rc = db_site_id(req->db, spec->site, &site_id, req->req_id)) == RC_ENOTFOUND)
        rc = srv_fail(req, RC_EINVAL, "site", "no site named \"%s\"", spec->site);
    if (rc != RC_OK)
        goto out;
    /* The latest state, read here; the predictions the leader stored for it. */
    if ((rc = db_sched_snapshot(req->db, &snap)) != RC_OK)
        goto out;
    nq = snap.queue.njobs;
    nr = snap.cluster.nrunning;
    nid = nq + nr;
    jobs = calloc(nq + 1, sizeof(*jobs));
    ids = calloc(nid + 1, sizeof(*ids));
    run_ms = calloc(nid + 1, sizeof(*run_ms));
    end_ms = calloc(nid + 1, sizeof(*end_ms));
    if (jobs == NULL || ids == NULL || run_ms == NULL || end_ms == NULL) {
        rc = RC_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < nq; i++)
        ids[i] = snap.jobs[i].id;
    for (size_t i = 0; i < nr; i++)
        ids[nq + i] = snap.running[i].job_id;
    if (nid > 0 &&
        (rc = db_forecast_predictions(req->db, ids, nid, run_ms, end_ms, req->req_id)) != RC_OK)
        goto out;
    for (size_t i = 0; i < nq; i++) {
        jobs[i] = snap.jobs[i];
        jobs[i].predicted_ms = run_ms[i];
    }
    for (size_t i = 0; i < nr; i++)
        snap.running[i].expected_end_ms = end_ms[nq + i] > snap.now_ms ? end_ms[nq + i] : 0;
    jobs[nq] = (struct sched_job){.id = WHATIF_JOB_ID,
                                  .team_id = team_id,
                                  .prio = (enum sched_prio)spec->priority,
                                  .gpus = spec->gpus,
                                  .gpus_per_node = spec->gpus_per_node,
                                  .submit_ms = snap.now_ms,
                                  .time_limit_ms = (int64_t)spec->time_limit_s * 1000,
                                  .true_duration_ms = 0,
                                  .attained_gpu_ms = 0,
                                  .site = site_id};
    queue = snap.queue;
    queue.jobs = jobs;
    queue.njobs = nq + 1;
    queue.in_submit_order = false; /* the appended job may be out of that order */
    forecast_opts(req->app->cfg, &opts);
    rc = sched_forecast(policy, &snap.cluster, &queue, snap.now_ms, &opts, &fc);
    for (size_t i = 0; rc == RC_OK && i < fc.njobs; i++)
        if (fc.jobs[i].job_id == WHATIF_JOB_ID)
            mine = &fc.jobs[i];
    if (rc == RC_OK && mine == NULL)
        rc = RC_EINTERNAL; /* the library drops no valid job; jobspec_parse made it valid */
    if (rc != RC_OK)
        goto out;
    params = json_pack("{s:i,s:i,s:o}", "need_gpus", mine->need_gpus, "free_gpus", mine->free_gpus,
                       "other_job_id",
                       mine->other_job_id > 0 && may_see(req, mine->other_job_id)
                           ? json_sprintf("%lld", (long long)mine->other_job_id)
                           : json_null());
    out = params ? json_pack("{s:n,s:n,s:s,s:s,s:s,s:i,s:i,s:n,s:I,s:o,s:o,s:{s:s,s:o},s:{s:I,s:s},"
                             "s:o,s:b}",
                             "id", "name", "team", spec->team, "user", req->who.username,
                             "priority", jobspec_prio_str(spec->priority), "gpus", spec->gpus,
                             "gpus_per_node", spec->gpus_per_node, "state", "position",
                             (json_int_t)mine->position, "submitted_at", iso_ms(snap.now_ms),
                             "estimated_start", iso_ms(mine->start_ms), "reason", "code",
                             sched_wait_code(mine->reason), "params", params, "prediction", "run_s",
                             (json_int_t)spec->time_limit_s, "source", "time_limit", "generated_at",
                             iso_ms(snap.now_ms), "truncated", fc.truncated)
                 : NULL;
    params = NULL; /* the pack took it, or failed and freed it */
    rc = out ? srv_reply(req, 200, out) : RC_ENOMEM;
out:
    json_decref(params);
    free(jobs);
    free(ids);
    free(run_ms);
    free(end_ms);
    sched_forecast_cleanup(&fc);
    db_sched_snapshot_free(&snap);
    jobspec_free(spec);
    return rc;
}
