/*
 * db_policy.h - SQL for the data-residency policy (sql/004_compliance.sql):
 * sites (storage roots and internal networks), the one compliance_policy
 * row, and registered datasets. Also the data classifications and the
 * start-up step that gives the default site the server's storage root.
 *
 * Values are validated by the caller (api_policy.c with common/pathpol.h);
 * these functions only read and write. Mutations run in the caller's open
 * transaction, so the audit event commits with them.
 *
 * Thread-safety: any thread, with its own connection.
 */
#ifndef TY_SERVER_DB_POLICY_H
#define TY_SERVER_DB_POLICY_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "err.h"

/* The site every node and job belongs to unless told otherwise (sites.id 1). */
#define DB_SITE_DEFAULT_ID 1

/* The classifications, lowest first, NULL-terminated; static. */
extern const char *const db_classifications[];

/* The rank of a classification (public 0 .. secret 3), -1 when unknown. */
int db_class_level(const char *name);

/* A site's policy as C arrays, for checks. Fill with db_site_load(). */
struct db_site {
    int64_t id;    /* sites.id */
    char **roots;  /* owned; nroots normalized absolute paths */
    size_t nroots; /* 0: no path is allowed */
    char **nets;   /* owned; nnets CIDR strings */
    size_t nnets;  /* 0: no remote URI is allowed */
};

/*
 * Load the site named name into out (caller storage; release with
 * db_site_cleanup() on every return). RC_ENOTFOUND when there is none.
 */
enum rc db_site_load(PGconn *c, const char *name, struct db_site *out, const char *req_id) TY_WUR;

/* Free what out owns and zero it; NULL is a no-op. */
void db_site_cleanup(struct db_site *s);

/* The id of the site named name; RC_ENOTFOUND when there is none. */
enum rc db_site_id(PGconn *c, const char *name, int64_t *id, const char *req_id) TY_WUR;

/*
 * Every site by name as a JSON array (new reference): id, name,
 * storage_roots, networks, created_at, updated_at; with names_only just name.
 */
enum rc db_site_list(PGconn *c, int names_only, json_t **out, const char *req_id) TY_WUR;

/* One site as JSON (new reference); RC_ENOTFOUND when missing. */
enum rc db_site_get(PGconn *c, const char *name, json_t **out, const char *req_id) TY_WUR;

/*
 * Insert a site. roots_json and nets_json are JSON arrays of strings as
 * text (already validated). RC_ECONFLICT when the name is taken. *out: the
 * row as db_site_get() returns it.
 */
enum rc db_site_create(PGconn *c, const char *name, const char *roots_json, const char *nets_json,
                       json_t **out, const char *req_id) TY_WUR;

/* Replace a site's roots and/or networks (NULL keeps that one). RC_ENOTFOUND when missing. */
enum rc db_site_update(PGconn *c, const char *name, const char *roots_json, const char *nets_json,
                       json_t **out, const char *req_id) TY_WUR;

/*
 * Delete a site that nothing uses. RC_ENOTFOUND when missing; RC_ECONFLICT
 * when it is the default site (*used_by = "default") or nodes, jobs or
 * datasets refer to it (*used_by = "nodes", "jobs" or "datasets"; static).
 * *id receives the deleted site's id.
 */
enum rc db_site_delete(PGconn *c, const char *name, int64_t *id, const char **used_by,
                       const char *req_id) TY_WUR;

/* The policy row as JSON (new reference): audit_retention_days,
 * default_classification, classifications, updated_at. */
enum rc db_policy_get(PGconn *c, json_t **out, const char *req_id) TY_WUR;

/* Change the policy: retention_days < 0 and default_class NULL keep theirs. */
enum rc db_policy_update(PGconn *c, int64_t retention_days, const char *default_class, json_t **out,
                         const char *req_id) TY_WUR;

/* compliance_policy.default_classification into out. */
enum rc db_policy_default_class(PGconn *c, char *out, size_t out_size, const char *req_id) TY_WUR;

/* A registered dataset, for the submit check. Fill with db_dataset_load(). */
struct db_dataset {
    int64_t id;
    int64_t site_id;
    int64_t team_id;
    char classification[16];
    char site[65]; /* the site's name */
    char *uri;     /* owned */
};

/* Load the dataset named name (release with db_dataset_cleanup()); RC_ENOTFOUND. */
enum rc db_dataset_load(PGconn *c, const char *name, struct db_dataset *out,
                        const char *req_id) TY_WUR;

/* Free what d owns; NULL is a no-op. */
void db_dataset_cleanup(struct db_dataset *d);

/*
 * A page of datasets, newest first, as a JSON array (new reference). With
 * member_of > 0 only the datasets of that user's teams and public ones.
 * cursor: an id bound (exclusive) or NULL; limit 1..500.
 */
enum rc db_dataset_list(PGconn *c, int64_t member_of, const char *cursor, int limit, json_t **out,
                        const char *req_id) TY_WUR;

/* One dataset as JSON (new reference) with team_id; RC_ENOTFOUND when missing. */
enum rc db_dataset_get(PGconn *c, const char *name, json_t **out, const char *req_id) TY_WUR;

/* Insert a dataset. RC_ECONFLICT when the name is taken. *out as db_dataset_get(). */
enum rc db_dataset_create(PGconn *c, const char *name, const char *uri, int64_t site_id,
                          const char *classification, int64_t team_id, const char *description,
                          const char *created_by, json_t **out, const char *req_id) TY_WUR;

/* Delete the dataset named name; RC_ENOTFOUND when missing. */
enum rc db_dataset_delete(PGconn *c, const char *name, const char *req_id) TY_WUR;

/*
 * At server start: while the default site has no storage roots, give it
 * storage_root (normalized; skipped with a warning when it does not
 * normalize), audited as "system" in the same transaction, so set-ups from
 * before sites keep working. Safe when replicas start together. Main thread.
 */
enum rc db_policy_startup(struct db *db, const char *storage_root) TY_WUR;

#endif
