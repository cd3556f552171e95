/*
 * db_auth.h - who is calling: session cookies, API tokens, node credentials;
 * and the SQL behind sessions, tokens and passwords.
 *
 * Secrets (session ids, API tokens, node credentials) are random strings with
 * a type prefix (tys_, tyt_, tyn_, tyj_); only their SHA-256 is stored.
 *
 * Thread-safety: any thread, with the request's own connection.
 */
#ifndef TY_SERVER_DB_AUTH_H
#define TY_SERVER_DB_AUTH_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"
#include "srv.h"

#define AUTH_SESSION_COOKIE "ty_session"

/*
 * Fill req->who from the Authorization header or the session cookie. With
 * agent=1 only node credentials count, otherwise only user credentials.
 * RC_EAUTH with req->err filled when a credential is missing, unknown,
 * expired or revoked. Identities are cached for cfg->cache_ttl_ms (cache.h):
 * a revocation made through another replica takes effect here within that.
 */
enum rc auth_identify(struct srv_req *req, int agent) TY_WUR;

struct srv_app;

/*
 * Forget every cached identity (after a logout, a revocation, a user change
 * or a node re-join), so this replica honours it at once.
 */
void auth_forget_all(struct srv_app *app);

/* Constant-time check of the request's CSRF header against the session's. */
int auth_csrf_ok(const struct srv_req *req, const char *csrf);

/* Parse "admin" | "auditor" | "member"; SRV_ROLE_NONE for anything else. */
enum srv_role auth_role_parse(const char *s);
const char *auth_role_name(enum srv_role role);

/*
 * Look up a user for login: id, role, password hash, disabled.
 * RC_ENOTFOUND when no such user.
 */
enum rc auth_user_for_login(PGconn *conn, const char *username, int64_t *user_id,
                            enum srv_role *role, char *pwhash, size_t pwhash_size, int *disabled,
                            const char *req_id) TY_WUR;

/* Insert a session in the open transaction. */
enum rc auth_session_create(PGconn *conn, int64_t user_id, const char *token_hash, const char *csrf,
                            int ttl_s, const char *req_id) TY_WUR;

/* Delete a session by hash in the open transaction. */
enum rc auth_session_delete(PGconn *conn, const char *token_hash, const char *req_id) TY_WUR;

/* The user's teams as a JSON array of {id, name} (new reference). */
enum rc auth_user_teams(PGconn *conn, int64_t user_id, json_t **out, const char *req_id) TY_WUR;

/* Whether user_id is a member of team_id (1/0); RC_OK on success. */
enum rc auth_is_member(PGconn *conn, int64_t user_id, int64_t team_id, int *member,
                       const char *req_id) TY_WUR;

#endif
