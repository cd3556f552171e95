/*
 * auth.h - who is calling: the session cookie, an API token or a node
 * credential, found before any handler runs (http.c), cached for
 * cfg->cache_ttl_ms (cache.h), and the CSRF check of cookie sessions.
 * The SQL behind it is in store/db_auth.h.
 *
 * Secrets (session ids, API tokens, node credentials) are random strings with
 * a type prefix (tys_, tyt_, tyn_, tyj_); only their SHA-256 is stored.
 *
 * Thread-safety: any thread, with the request's own connection.
 */
#ifndef TY_SERVER_AUTH_H
#define TY_SERVER_AUTH_H

#include "err.h"
#include "srv.h"

#define AUTH_SESSION_COOKIE "ty_session"

struct srv_app;

/*
 * Fill req->who from the Authorization header or the session cookie. With
 * agent=1 only node credentials count, otherwise only user credentials.
 * RC_EAUTH with req->err filled when a credential is missing, unknown,
 * expired or revoked. Identities are cached for cfg->cache_ttl_ms (cache.h):
 * a revocation made through another replica takes effect here within that.
 */
enum rc auth_identify(struct srv_req *req, int agent) TY_WUR;

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

#endif
