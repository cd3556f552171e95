/*
 * db_auth.h - the SQL behind credentials, sessions, tokens and passwords;
 * who is calling is decided in http/auth.h. Only a secret's SHA-256 hex is
 * ever looked up.
 *
 * Thread-safety: any thread, with the request's own connection.
 */
#ifndef TY_SERVER_DB_AUTH_H
#define TY_SERVER_DB_AUTH_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"

/* A user found by a credential's hash. role is the users.role text. */
struct db_auth_user {
    int64_t user_id;
    char username[64];
    char role[16];
    int64_t token_id; /* api_tokens.id (db_auth_token_user) */
    char csrf[64];    /* the session's CSRF token (db_auth_session_user) */
};

/* The live, not disabled user of an unrevoked, unexpired API token whose
 * SHA-256 hex is token_hash. RC_ENOTFOUND when none; RC_EUNAVAIL,
 * RC_EINTERNAL as db_result_rc. */
enum rc db_auth_token_user(PGconn *conn, const char *token_hash, struct db_auth_user *out /* out */,
                           const char *req_id) TY_WUR;

/* The same for an unexpired session whose id hashes to session_hash. */
enum rc db_auth_session_user(PGconn *conn, const char *session_hash,
                             struct db_auth_user *out /* out */, const char *req_id) TY_WUR;

/* The node whose credential hashes to credential_hash: its id and name
 * (copied into name, truncated to name_size). RC_ENOTFOUND when none. */
enum rc db_auth_node(PGconn *conn, const char *credential_hash, int64_t *node_id /* out */,
                     char *name /* out */, size_t name_size, const char *req_id) TY_WUR;

/*
 * Look up a user for login: id, role (the users.role text, for
 * auth_role_parse), password hash, disabled. RC_ENOTFOUND when no such user.
 */
enum rc auth_user_for_login(PGconn *conn, const char *username, int64_t *user_id, char *role,
                            size_t role_size, char *pwhash, size_t pwhash_size, int *disabled,
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
