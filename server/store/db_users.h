/*
 * db_users.h - SQL for users, teams, memberships and API tokens.
 *
 * Functions that change rows run in the caller's open transaction; the
 * caller appends the audit event in the same transaction. Lists return new
 * JSON references. RC_ECONFLICT for duplicates, RC_ENOTFOUND for missing rows.
 *
 * Thread-safety: any thread, with its own connection.
 */
#ifndef TY_SERVER_DB_USERS_H
#define TY_SERVER_DB_USERS_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"

/* Insert a user; *out is the new row as JSON (without the hash). */
enum rc db_user_create(PGconn *c, const char *username, const char *display_name, const char *role,
                       const char *pwhash, json_t **out, const char *req_id) TY_WUR;

/* Update the given fields (NULL = unchanged; disabled -1 = unchanged). */
enum rc db_user_update(PGconn *c, int64_t id, const char *display_name, const char *role,
                       const char *pwhash, int disabled, json_t **out, const char *req_id) TY_WUR;

/* One user, or a page of users with id < cursor (NULL = first page). */
enum rc db_user_get(PGconn *c, int64_t id, json_t **out, const char *req_id) TY_WUR;
enum rc db_user_list(PGconn *c, const char *cursor, int limit, json_t **out,
                     const char *req_id) TY_WUR;

/* Drop every session of a user (after disabling or a password change). */
enum rc db_user_drop_sessions(PGconn *c, int64_t id, const char *req_id) TY_WUR;

/* Drop every session of a user but the one whose token_hash is keep (NULL or
 * "" = none kept): the caller's own sign-in survives its password change. */
enum rc db_user_drop_other_sessions(PGconn *c, int64_t id, const char *keep,
                                    const char *req_id) TY_WUR;

/*
 * Map a user or a team to the Unix account its jobs' ranks run as
 * (account borrowed, already checked; NULL clears the mapping). *out is
 * the updated row. RC_ENOTFOUND when there is no such user or team. In the
 * caller's transaction.
 */
enum rc db_user_set_unix_account(PGconn *c, int64_t id, const char *account, json_t **out,
                                 const char *req_id) TY_WUR;
enum rc db_team_set_unix_account(PGconn *c, int64_t id, const char *account, json_t **out,
                                 const char *req_id) TY_WUR;

enum rc db_team_create(PGconn *c, const char *name, int64_t quota, double weight, json_t **out,
                       const char *req_id) TY_WUR;
/* quota < 0 or weight <= 0 leave the value unchanged. */
enum rc db_team_update(PGconn *c, int64_t id, int64_t quota, double weight, json_t **out,
                       const char *req_id) TY_WUR;
enum rc db_team_get(PGconn *c, int64_t id, json_t **out, const char *req_id) TY_WUR;
/* Resolve a team name to its id; RC_ENOTFOUND when unknown. */
enum rc db_team_id(PGconn *c, const char *name, int64_t *id, const char *req_id) TY_WUR;
/* All teams (member_of = 0) or only those user member_of belongs to. */
enum rc db_team_list(PGconn *c, int64_t member_of, json_t **out, const char *req_id) TY_WUR;

/* Add (1) or remove (0) a membership. Adding twice is RC_ECONFLICT;
 * removing a missing one RC_ENOTFOUND. */
enum rc db_membership_set(PGconn *c, int64_t team_id, int64_t user_id, int add,
                          const char *req_id) TY_WUR;
enum rc db_team_members(PGconn *c, int64_t team_id, json_t **out, const char *req_id) TY_WUR;

/* Create an API token row; the caller generated the secret. */
enum rc db_token_create(PGconn *c, int64_t user_id, const char *name, const char *token_hash,
                        int64_t expires_in_s, json_t **out, const char *req_id) TY_WUR;
/* Tokens of user_id (0 = all users). */
enum rc db_token_list(PGconn *c, int64_t user_id, json_t **out, const char *req_id) TY_WUR;
/* Revoke token id; owner_id 0 means any owner (admins). RC_ENOTFOUND if not
 * visible, RC_ECONFLICT if already revoked. */
enum rc db_token_revoke(PGconn *c, int64_t id, int64_t owner_id, const char *req_id) TY_WUR;

#endif
