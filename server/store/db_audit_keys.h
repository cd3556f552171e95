/*
 * db_audit_keys.h - the ring of audit signing keys (sql/007_audit_keys.sql):
 * every key the server has signed with, so that checkpoints and exports
 * signed before a key rotation stay verifiable (docs/audit-export.md).
 *
 * Thread-safety: any thread, with its own PGconn.
 */
#ifndef TY_SERVER_DB_AUDIT_KEYS_H
#define TY_SERVER_DB_AUDIT_KEYS_H

#include <jansson.h>
#include <libpq-fe.h>

#include "audit_sign.h"
#include "err.h"

/*
 * Record key in audit_keys, in one transaction on the idle conn: insert it
 * when absent; when it is new and another key was current, retire that one
 * (retired_at = now()) and append the audit event audit.key_rotated
 * {"from": old, "to": new}. The table is locked for the transaction, so
 * replicas starting together take turns. *rotated_from (AUDIT_KEY_ID_LEN+1)
 * receives the retired key id, "" when nothing was rotated.
 */
enum rc audit_keys_register(PGconn *conn, const struct audit_key *key,
                            char rotated_from[AUDIT_KEY_ID_LEN + 1]) TY_WUR;

/*
 * Every key ever used, oldest first: a new array of
 * {"key_id","public_key","created_at","retired_at"} (timestamps as
 * db_row_to_json() writes them, retired_at null for the current key).
 */
enum rc audit_keys_list(PGconn *conn, json_t **out, const char *req_id) TY_WUR;

#endif
