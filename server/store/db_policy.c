/*
 * db_policy.c - see db_policy.h.
 *
 * Arrays travel as JSON text both ways: parameters are JSON arrays turned
 * into text[] with jsonb_array_elements_text (in order), results are
 * array_to_json(), so no array literal is ever built by hand.
 */
#include "db_policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_target.h"
#include "db_audit.h"
#include "jx.h"
#include "log.h"
#include "pathpol.h"

const char *const db_classifications[] = {"public", "internal", "confidential", "secret", NULL};

int db_class_level(const char *name)
{
    for (int i = 0; name != NULL && db_classifications[i] != NULL; i++)
        if (strcmp(name, db_classifications[i]) == 0)
            return i;
    return -1;
}

/* A JSON array of strings (text) as a malloc'ed vector; RC_EINTERNAL when malformed. */
static enum rc strv_from_json(const char *text, char ***out, size_t *n)
{
    json_t *a = jx_loads(text, 0), *v;
    size_t i;
    enum rc rc = RC_OK;

    *out = NULL;
    *n = 0;
    if (a == NULL || !json_is_array(a)) {
        json_decref(a);
        return RC_EINTERNAL;
    }
    *out = calloc(json_array_size(a) + 1, sizeof(char *));
    if (*out == NULL)
        rc = RC_ENOMEM;
    json_array_foreach(a, i, v)
    {
        if (rc != RC_OK)
            break;
        if (!json_is_string(v)) {
            rc = RC_EINTERNAL;
            break;
        }
        (*out)[i] = strdup(json_string_value(v));
        if ((*out)[i] == NULL)
            rc = RC_ENOMEM;
        else
            (*n)++;
    }
    json_decref(a);
    return rc;
}

static void strv_free(char **v, size_t n)
{
    for (size_t i = 0; v != NULL && i < n; i++)
        free(v[i]);
    free(v);
}

void db_site_cleanup(struct db_site *s)
{
    if (s == NULL)
        return;
    strv_free(s->roots, s->nroots);
    strv_free(s->nets, s->nnets);
    memset(s, 0, sizeof(*s));
}

enum rc db_site_load(PGconn *c, const char *name, struct db_site *out, const char *req_id)
{
    const char *p[] = {name};
    PGresult *r;
    enum rc rc;

    memset(out, 0, sizeof(*out));
    r = db_exec(c,
                "SELECT id, array_to_json(storage_roots)::text, array_to_json(networks)::text "
                "FROM sites WHERE name = $1",
                1, p);
    rc = db_result_rc(r, req_id);
    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 0), &out->id);
    if (rc == RC_OK)
        rc = strv_from_json(PQgetvalue(r, 0, 1), &out->roots, &out->nroots);
    if (rc == RC_OK)
        rc = strv_from_json(PQgetvalue(r, 0, 2), &out->nets, &out->nnets);
    PQclear(r);
    if (rc != RC_OK)
        db_site_cleanup(out);
    return rc;
}

enum rc db_site_id(PGconn *c, const char *name, int64_t *id, const char *req_id)
{
    const char *p[] = {name};
    PGresult *r = db_exec(c, "SELECT id FROM sites WHERE name = $1", 1, p);
    enum rc rc = db_result_rc(r, req_id);

    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 0), id);
    PQclear(r);
    return rc;
}

#define SITE_COLS                                                                                  \
    "id, name, array_to_json(storage_roots) AS storage_roots, array_to_json(networks) AS "         \
    "networks, created_at, updated_at"
/* $n (JSON text) as text[], in array order. */
#define TEXT_ARRAY(n)                                                                              \
    "ARRAY(SELECT x FROM jsonb_array_elements_text(" n "::jsonb) WITH ORDINALITY t(x, i) "         \
    "ORDER BY i)"
#define ARRAY_2 TEXT_ARRAY("$2")
#define ARRAY_3 TEXT_ARRAY("$3")

enum rc db_site_list(PGconn *c, int names_only, json_t **out, const char *req_id)
{
    return db_query_json(c,
                         names_only ? "SELECT name FROM sites ORDER BY name"
                                    : "SELECT " SITE_COLS " FROM sites ORDER BY name",
                         0, NULL, 0, out, req_id);
}

enum rc db_site_get(PGconn *c, const char *name, json_t **out, const char *req_id)
{
    const char *p[] = {name};
    return db_query_json(c, "SELECT " SITE_COLS " FROM sites WHERE name = $1", 1, p, 1, out,
                         req_id);
}

enum rc db_site_create(PGconn *c, const char *name, const char *roots_json, const char *nets_json,
                       json_t **out, const char *req_id)
{
    const char *p[] = {name, roots_json, nets_json};
    return db_query_json(c,
                         "INSERT INTO sites (name, storage_roots, networks) VALUES ($1, " ARRAY_2
                         ", " ARRAY_3 ") RETURNING " SITE_COLS,
                         3, p, 1, out, req_id);
}

enum rc db_site_update(PGconn *c, const char *name, const char *roots_json, const char *nets_json,
                       json_t **out, const char *req_id)
{
    const char *p[] = {name, roots_json, nets_json};
    return db_query_json(c,
                         "UPDATE sites SET storage_roots = CASE WHEN $2::jsonb IS NULL THEN "
                         "storage_roots ELSE " ARRAY_2 " END, networks = CASE WHEN $3::jsonb IS "
                         "NULL THEN networks ELSE " ARRAY_3 " END, updated_at = now() WHERE "
                         "name = $1 RETURNING " SITE_COLS,
                         3, p, 1, out, req_id);
}

enum rc db_site_delete(PGconn *c, const char *name, int64_t *id, const char **used_by,
                       const char *req_id)
{
    const char *p[] = {name};
    PGresult *r;
    enum rc rc;

    *used_by = "";
    /* The row lock keeps nodes, jobs and datasets from taking the site
     * meanwhile: their foreign keys wait for it and then fail. */
    r = db_exec(c,
                "SELECT id, EXISTS (SELECT 1 FROM nodes n WHERE n.site_id = s.id), EXISTS "
                "(SELECT 1 FROM jobs j WHERE j.site_id = s.id), EXISTS (SELECT 1 FROM datasets d "
                "WHERE d.site_id = s.id) FROM sites s WHERE name = $1 FOR UPDATE",
                1, p);
    rc = db_result_rc(r, req_id);
    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 0), id);
    if (rc == RC_OK) {
        if (*id == DB_SITE_DEFAULT_ID)
            *used_by = "default";
        else if (PQgetvalue(r, 0, 1)[0] == 't')
            *used_by = "nodes";
        else if (PQgetvalue(r, 0, 2)[0] == 't')
            *used_by = "jobs";
        else if (PQgetvalue(r, 0, 3)[0] == 't')
            *used_by = "datasets";
        if ((*used_by)[0] != '\0')
            rc = RC_ECONFLICT;
    }
    PQclear(r);
    if (rc == RC_OK)
        rc = db_exec_ok(c, req_id, "DELETE FROM sites WHERE name = $1", 1, p);
    return rc;
}

#define POLICY_COLS                                                                                \
    "audit_retention_days, default_classification, json_build_array('public', 'internal', "        \
    "'confidential', 'secret') AS classifications, updated_at"

enum rc db_policy_get(PGconn *c, json_t **out, const char *req_id)
{
    return db_query_json(c, "SELECT " POLICY_COLS " FROM compliance_policy", 0, NULL, 1, out,
                         req_id);
}

enum rc db_policy_update(PGconn *c, int64_t retention_days, const char *default_class, json_t **out,
                         const char *req_id)
{
    char days[24];
    const char *p[] = {retention_days >= 0 ? db_i64(retention_days, days, sizeof(days)) : NULL,
                       default_class};
    return db_query_json(c,
                         "UPDATE compliance_policy SET audit_retention_days = coalesce($1::int, "
                         "audit_retention_days), default_classification = coalesce($2::text, "
                         "default_classification), updated_at = now() RETURNING " POLICY_COLS,
                         2, p, 1, out, req_id);
}

enum rc db_policy_default_class(PGconn *c, char *out, size_t out_size, const char *req_id)
{
    PGresult *r = db_exec(c, "SELECT default_classification FROM compliance_policy", 0, NULL);
    enum rc rc = db_result_rc(r, req_id);

    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_EINTERNAL;
    if (rc == RC_OK)
        snprintf(out, out_size, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return rc;
}

void db_dataset_cleanup(struct db_dataset *d)
{
    if (d == NULL)
        return;
    free(d->uri);
    memset(d, 0, sizeof(*d));
}

enum rc db_dataset_load(PGconn *c, const char *name, struct db_dataset *out, const char *req_id)
{
    const char *p[] = {name};
    PGresult *r;
    enum rc rc;

    memset(out, 0, sizeof(*out));
    r = db_exec(c,
                "SELECT d.id, d.site_id, d.team_id, d.classification, s.name, d.uri FROM datasets "
                "d JOIN sites s ON s.id = d.site_id WHERE d.name = $1",
                1, p);
    rc = db_result_rc(r, req_id);
    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 0), &out->id);
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 1), &out->site_id);
    if (rc == RC_OK)
        rc = db_parse_i64(PQgetvalue(r, 0, 2), &out->team_id);
    if (rc == RC_OK) {
        snprintf(out->classification, sizeof(out->classification), "%s", PQgetvalue(r, 0, 3));
        snprintf(out->site, sizeof(out->site), "%s", PQgetvalue(r, 0, 4));
        out->uri = strdup(PQgetvalue(r, 0, 5));
        if (out->uri == NULL)
            rc = RC_ENOMEM;
    }
    PQclear(r);
    if (rc != RC_OK)
        db_dataset_cleanup(out);
    return rc;
}

#define DATASET_COLS                                                                               \
    "d.id, d.name, d.uri, s.name AS site, d.classification, t.name AS team, d.team_id, "           \
    "d.description, d.created_by, d.created_at"
#define DATASET_FROM                                                                               \
    " FROM datasets d JOIN sites s ON s.id = d.site_id JOIN teams t ON t.id = d.team_id"

enum rc db_dataset_list(PGconn *c, int64_t member_of, const char *cursor, int limit, json_t **out,
                        const char *req_id)
{
    char mem[24], lim[16];
    const char *p[] = {member_of > 0 ? db_i64(member_of, mem, sizeof(mem)) : NULL, cursor,
                       db_i64(limit, lim, sizeof(lim))};
    return db_query_json(c,
                         "SELECT " DATASET_COLS DATASET_FROM
                         " WHERE ($1::bigint IS NULL OR d.classification = 'public' OR d.team_id "
                         "IN (SELECT team_id FROM memberships WHERE user_id = $1)) AND ($2::bigint "
                         "IS NULL OR d.id < $2) ORDER BY d.id DESC LIMIT $3",
                         3, p, 0, out, req_id);
}

enum rc db_dataset_get(PGconn *c, const char *name, json_t **out, const char *req_id)
{
    const char *p[] = {name};
    return db_query_json(c, "SELECT " DATASET_COLS DATASET_FROM " WHERE d.name = $1", 1, p, 1, out,
                         req_id);
}

enum rc db_dataset_create(PGconn *c, const char *name, const char *uri, int64_t site_id,
                          const char *classification, int64_t team_id, const char *description,
                          const char *created_by, json_t **out, const char *req_id)
{
    char s[24], t[24];
    const char *p[] = {name,
                       uri,
                       db_i64(site_id, s, sizeof(s)),
                       classification,
                       db_i64(team_id, t, sizeof(t)),
                       description ? description : "",
                       created_by};
    enum rc rc = db_exec_ok(c, req_id,
                            "INSERT INTO datasets (name, uri, site_id, classification, team_id, "
                            "description, created_by) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                            7, p);

    *out = NULL;
    if (rc == RC_OK)
        rc = db_dataset_get(c, name, out, req_id);
    return rc;
}

enum rc db_dataset_delete(PGconn *c, const char *name, const char *req_id)
{
    const char *p[] = {name};
    PGresult *r = db_exec(c, "DELETE FROM datasets WHERE name = $1 RETURNING id", 1, p);
    enum rc rc = db_result_rc(r, req_id);

    if (rc == RC_OK && PQntuples(r) != 1)
        rc = RC_ENOTFOUND;
    PQclear(r);
    return rc;
}

enum rc db_policy_startup(struct db *db, const char *storage_root)
{
    char norm[PATHPOL_BUF_SIZE], target[AUDIT_TARGET_SIZE];
    struct err e;
    PGconn *c;
    PGresult *r = NULL;
    json_t *roots = NULL, *d = NULL;
    char *roots_text = NULL;
    enum rc rc;

    err_init(&e);
    if (pathpol_normalize(storage_root, strlen(storage_root), norm, sizeof(norm), &e) != RC_OK) {
        LOG_WARN("policy",
                 "storage_root is not a clean absolute path; the default site keeps no "
                 "storage roots",
                 "error=\"%s\"", e.message);
        return RC_OK;
    }
    roots = json_pack("[s]", norm);
    roots_text = roots ? jx_dumps(roots, JSON_COMPACT) : NULL;
    if (roots_text == NULL) {
        json_decref(roots);
        return RC_ENOMEM;
    }
    c = db_acquire(db, 5000);
    if (c == NULL) {
        json_decref(roots);
        free(roots_text);
        return RC_EUNAVAIL;
    }
    rc = db_begin(c);
    if (rc == RC_OK) {
        char id[24];
        const char *p[] = {db_i64(DB_SITE_DEFAULT_ID, id, sizeof(id)), roots_text};
        r = db_exec(c,
                    "UPDATE sites SET storage_roots = " ARRAY_2 ", updated_at = now() WHERE id = "
                    "$1 AND cardinality(storage_roots) = 0 RETURNING name",
                    2, p);
        rc = db_result_rc(r, "startup");
    }
    if (rc == RC_OK && PQntuples(r) == 1) {
        struct audit_event ev;
        d = json_pack("{s:s,s:O,s:s}", "name", PQgetvalue(r, 0, 0), "storage_roots", roots,
                      "reason", "the default site had no storage roots: the server's storage_root");
        ev = (struct audit_event){"system", "", "site.update", target, "success", d};
        rc = audit_target_name(AUDIT_TARGET_SITE, PQgetvalue(r, 0, 0), target);
        if (rc == RC_OK)
            rc = d ? audit_append(c, &ev, "startup") : RC_ENOMEM;
        if (rc == RC_OK)
            LOG_INFO("policy", "default site storage root set", "root=%s", norm);
    }
    if (rc == RC_OK)
        rc = db_commit(c);
    else
        db_rollback(c);
    PQclear(r);
    db_release(db, c);
    json_decref(d);
    json_decref(roots);
    free(roots_text);
    return rc;
}
