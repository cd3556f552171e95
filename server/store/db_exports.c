/*
 * db_exports.c - see db_exports.h.
 */
#include "db_exports.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "jx.h"

/* The state a reader sees: an approved link past its expiry is expired. */
#define EXPORT_STATE                                                                               \
    "CASE WHEN e.state = 'approved' AND e.link_expires_at <= now() THEN 'expired' ELSE e.state "   \
    "END"

#define EXPORT_COLS                                                                                \
    "e.id, e.job_id, j.name AS job_name, e.path, e.reason, " EXPORT_STATE " AS state, "            \
    "e.classification, e.requested_by AS requested_by_id, ru.username AS requested_by, "           \
    "e.decided_by AS decided_by_id, CASE WHEN e.decided_at IS NULL THEN NULL ELSE "                \
    "coalesce(du.username, 'system') END AS decided_by, e.decided_at, e.note, "                    \
    "e.link_expires_at, e.downloaded_at, e.created_at"
#define EXPORT_FROM                                                                                \
    " FROM export_requests e JOIN jobs j ON j.id = e.job_id JOIN users ru ON ru.id = "             \
    "e.requested_by LEFT JOIN users du ON du.id = e.decided_by"

#define BRIEF_COLS                                                                                 \
    "e.id, e.job_id, e.requested_by, u.username, " EXPORT_STATE ", e.classification, e.path"

enum rc db_export_job_get(PGconn *c, int64_t job_id, struct db_export_job *out, const char *req_id)
{
    char id[24];
    const char *p[] = {db_i64(job_id, id, sizeof(id))};
    PGresult *r;
    enum rc rc;

    memset(out, 0, sizeof(*out));
    r = db_exec(c,
                "SELECT j.team_id, j.classification, j.paths, jsonb_build_object('output_dir', "
                "j.spec->'output_dir'), array_to_json(s.storage_roots) FROM jobs j JOIN sites s "
                "ON s.id = j.site_id WHERE j.id = $1",
                1, p);
    rc = db_result_rc(r, req_id);
    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 0), &out->team_id);
    if (rc == RC_OK) {
        snprintf(out->classification, sizeof(out->classification), "%s", PQgetvalue(r, 0, 1));
        out->paths = jx_loads(PQgetvalue(r, 0, 2), 0);
        out->spec_out = jx_loads(PQgetvalue(r, 0, 3), 0);
        out->roots = jx_loads(PQgetvalue(r, 0, 4), 0);
        if (!json_is_object(out->paths) || !json_is_object(out->spec_out) ||
            !json_is_array(out->roots))
            rc = RC_EINTERNAL;
    }
    PQclear(r);
    if (rc != RC_OK)
        db_export_job_cleanup(out);
    return rc;
}

void db_export_job_cleanup(struct db_export_job *j)
{
    json_decref(j->paths);
    json_decref(j->spec_out);
    json_decref(j->roots);
    j->paths = j->spec_out = j->roots = NULL;
}

enum rc db_export_insert(PGconn *c, int64_t job_id, const char *path, const char *reason,
                         const char *classification, int64_t requested_by, int64_t *id,
                         const char *req_id)
{
    char job[24], user[24];
    const char *p[] = {db_i64(job_id, job, sizeof(job)), path, reason ? reason : "", classification,
                       db_i64(requested_by, user, sizeof(user))};
    PGresult *r = db_exec(c,
                          "INSERT INTO export_requests (job_id, path, reason, classification, "
                          "requested_by) VALUES ($1, $2, $3, $4, $5) RETURNING id",
                          5, p);
    enum rc rc = db_result_rc(r, req_id);

    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 0), id);
    PQclear(r);
    return rc;
}

/* Fill out from a row of BRIEF_COLS. */
static enum rc brief_from_row(const PGresult *r, struct db_export_brief *out)
{
    enum rc rc = db_parse_i64(PQgetvalue(r, 0, 0), &out->id);

    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 1), &out->job_id);
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 2), &out->requested_by);
    snprintf(out->requester, sizeof(out->requester), "%s", PQgetvalue(r, 0, 3));
    snprintf(out->state, sizeof(out->state), "%s", PQgetvalue(r, 0, 4));
    snprintf(out->classification, sizeof(out->classification), "%s", PQgetvalue(r, 0, 5));
    snprintf(out->path, sizeof(out->path), "%s", PQgetvalue(r, 0, 6));
    return rc;
}

enum rc db_export_brief(PGconn *c, int64_t id, int lock, struct db_export_brief *out,
                        const char *req_id)
{
    char ids[24];
    const char *p[] = {db_i64(id, ids, sizeof(ids))};
    PGresult *r = db_exec(c,
                          lock ? "SELECT " BRIEF_COLS " FROM export_requests e JOIN users u ON "
                                 "u.id = e.requested_by WHERE e.id = $1 FOR UPDATE OF e"
                               : "SELECT " BRIEF_COLS " FROM export_requests e JOIN users u ON "
                                 "u.id = e.requested_by WHERE e.id = $1",
                          1, p);
    enum rc rc = db_result_rc(r, req_id);

    memset(out, 0, sizeof(*out));
    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = brief_from_row(r, out);
    PQclear(r);
    return rc;
}

enum rc db_export_approve(PGconn *c, int64_t id, int64_t decided_by, const char *note,
                          const char *link_hash, int64_t ttl_s, char *expires_at,
                          size_t expires_size, const char *req_id)
{
    char ids[24], by[24], ttl[24];
    const char *p[] = {db_i64(id, ids, sizeof(ids)),
                       decided_by > 0 ? db_i64(decided_by, by, sizeof(by)) : NULL, note ? note : "",
                       link_hash, db_i64(ttl_s, ttl, sizeof(ttl))};
    PGresult *r = db_exec(c,
                          "UPDATE export_requests SET state = 'approved', decided_by = $2, "
                          "decided_at = now(), note = $3, link_hash = $4, link_expires_at = now() "
                          "+ make_interval(secs => $5::bigint) WHERE id = $1 AND state = "
                          "'pending' RETURNING to_char(link_expires_at AT TIME ZONE 'UTC', "
                          "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')",
                          5, p);
    enum rc rc = db_result_rc(r, req_id);

    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ECONFLICT;
    if (rc == RC_OK)
        snprintf(expires_at, expires_size, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return rc;
}

enum rc db_export_deny(PGconn *c, int64_t id, int64_t decided_by, const char *note,
                       const char *req_id)
{
    char ids[24], by[24];
    const char *p[] = {db_i64(id, ids, sizeof(ids)), db_i64(decided_by, by, sizeof(by)),
                       note ? note : ""};
    PGresult *r = db_exec(c,
                          "UPDATE export_requests SET state = 'denied', decided_by = $2, "
                          "decided_at = now(), note = $3 WHERE id = $1 AND state = 'pending' "
                          "RETURNING id",
                          3, p);
    enum rc rc = db_result_rc(r, req_id);

    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ECONFLICT;
    PQclear(r);
    return rc;
}

enum rc db_export_get(PGconn *c, int64_t id, json_t **out, const char *req_id)
{
    char ids[24];
    const char *p[] = {db_i64(id, ids, sizeof(ids))};
    return db_query_json(c, "SELECT " EXPORT_COLS EXPORT_FROM " WHERE e.id = $1", 1, p, 1, out,
                         req_id);
}

enum rc db_export_list(PGconn *c, const struct db_export_filter *f, json_t **out,
                       const char *req_id)
{
    char by[24], job[24], lim[16];
    const char *p[] = {f->state,
                       f->requested_by > 0 ? db_i64(f->requested_by, by, sizeof(by)) : NULL,
                       f->job_id > 0 ? db_i64(f->job_id, job, sizeof(job)) : NULL, f->cursor,
                       db_i64(f->limit, lim, sizeof(lim))};
    return db_query_json(c,
                         "SELECT " EXPORT_COLS EXPORT_FROM
                         " WHERE ($1::text IS NULL OR " EXPORT_STATE " = $1) AND ($2::bigint IS "
                         "NULL OR e.requested_by = $2) AND ($3::bigint IS NULL OR e.job_id = $3) "
                         "AND ($4::bigint IS NULL OR e.id < $4) ORDER BY e.id DESC LIMIT $5",
                         5, p, 0, out, req_id);
}

enum rc db_export_take_link(PGconn *c, const char *link_hash, struct db_export_brief *out,
                            int *newly_expired, const char *req_id)
{
    const char *p[] = {link_hash};
    PGresult *r;
    enum rc rc;

    memset(out, 0, sizeof(*out));
    *newly_expired = 0;
    /* One statement decides who gets the link: a concurrent second use
     * waits for the row lock and then finds the state changed. */
    r = db_exec(c,
                "WITH t AS (UPDATE export_requests SET state = 'downloaded', downloaded_at = now() "
                "WHERE link_hash = $1 AND state = 'approved' AND link_expires_at > now() "
                "RETURNING *) SELECT e.id, e.job_id, e.requested_by, u.username, e.state, "
                "e.classification, e.path FROM t e JOIN users u ON u.id = e.requested_by",
                1, p);
    rc = db_result_rc(r, req_id);
    if (rc == RC_OK && PQntuples(r) == 1) {
        rc = brief_from_row(r, out);
        PQclear(r);
        return rc;
    }
    PQclear(r);
    if (rc != RC_OK)
        return rc;
    /* Not taken: say why. */
    r = db_exec(c,
                "SELECT " BRIEF_COLS ", e.state FROM export_requests e JOIN users u ON u.id = "
                "e.requested_by WHERE e.link_hash = $1 FOR UPDATE OF e",
                1, p);
    rc = db_result_rc(r, req_id);
    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = brief_from_row(r, out);
    if (rc == RC_OK && strcmp(out->state, "expired") == 0 &&
        strcmp(PQgetvalue(r, 0, 7), "approved") == 0) {
        char ids[24];
        const char *q[] = {db_i64(out->id, ids, sizeof(ids))};
        rc = db_exec_ok(c, req_id, "UPDATE export_requests SET state = 'expired' WHERE id = $1", 1,
                        q);
        if (rc == RC_OK)
            *newly_expired = 1;
    }
    if (rc == RC_OK)
        rc = (strcmp(out->state, "downloaded") == 0 || strcmp(out->state, "expired") == 0)
                 ? RC_EGONE
                 : RC_ENOTFOUND;
    PQclear(r);
    return rc;
}
