/*
 * api_agent_join.c - how a node joins: an admin creates a join token
 * (POST /api/v1/nodes/join-tokens), lists them (GET) and revokes one
 * (DELETE /api/v1/nodes/join-tokens/{id}); a worker spends one
 * (POST /api/v1/agent/join) and gets the node's credential.
 *
 * A join takes a new name only. An existing node's name is taken (and its
 * old credential retired) by a token bound to that name ({"node": "gpu-07"}
 * at creation: an admin's deliberate act, for a reinstalled node), or by the
 * same token's own earlier join whose node never registered (a retry whose
 * answer was lost, migration 016). Any other join under an existing name is
 * a takeover: refused 409 node_name_taken, and the node keeps its credential.
 *
 * Only the token's and the credential's SHA-256 are stored; the plain texts
 * are in the answers alone, and the list shows neither. Audited: the
 * token's creation and revocation, each join, each join refused for a token
 * that is unknown, expired, revoked, used up or bound to another name
 * (failure), and each refused takeover (denied).
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_agent_int.h"
#include "api_util.h"
#include "audit_target.h"
#include "auth.h"
#include "crypto.h"
#include "db_agent.h"
#include "db_audit.h"
#include "jx.h"

enum rc api_join_token_create(struct srv_req *req)
{
    static const char *const allowed[] = {"ttl_s", "uses", "node", NULL};
    int64_t ttl = 86400, uses = 1;
    int has;
    const char *node = NULL;
    char tok[80], h[CRYPTO_SHA256_HEX_LEN + 1], target[AUDIT_TARGET_SIZE];
    json_t *row = NULL, *d;
    enum rc rc;

    if (req->body != NULL &&
        ((rc = api_body_object(req, allowed)) != RC_OK ||
         (rc = api_opt_int(req, "ttl_s", 60, 30LL * 86400, &ttl, &has)) != RC_OK ||
         (rc = api_opt_int(req, "uses", 1, 10000, &uses, &has)) != RC_OK ||
         (rc = api_opt_string(req, "node", 1, 63, &node)) != RC_OK))
        return rc;
    if (node != NULL && !agent_valid_name(node))
        return srv_fail(req, RC_EINVAL, "node", "node must be 1 to 63 of a-z, 0-9, '.', '_', '-'");
    if (crypto_random_token("tyj_", 32, tok, sizeof(tok)) != RC_OK)
        return RC_EINTERNAL;
    crypto_sha256_hex(tok, strlen(tok), h);
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = db_join_token_create(req->db, req->who.user_id, ttl, uses, node, h, &row, req->req_id);
    if (rc == RC_OK)
        rc = audit_target_id_text(AUDIT_TARGET_JOIN_TOKEN,
                                  json_string_value(json_object_get(row, "id")), target);
    if (rc == RC_OK) {
        d = json_pack("{s:I,s:I,s:s?}", "ttl_s", (json_int_t)ttl, "uses", (json_int_t)uses, "node",
                      node);
        rc = audit_append_req(req, "node.join_token.create", target, "success", d);
        json_decref(d);
    }
    if ((rc = api_end(req, rc)) != RC_OK) {
        json_decref(row);
        return rc;
    }
    json_object_set_new(row, "token", json_string(tok));
    return srv_reply(req, 201, row);
}

enum rc api_join_token_list(struct srv_req *req)
{
    json_t *rows = NULL;
    enum rc rc = db_join_token_list(req->db, &rows, req->req_id);

    if (rc != RC_OK)
        return rc;
    return srv_reply(req, 200, json_pack("{s:o}", "join_tokens", rows));
}

enum rc api_join_token_revoke(struct srv_req *req)
{
    int64_t id;
    char target[AUDIT_TARGET_SIZE];
    json_t *row = NULL;
    enum rc rc;

    if ((rc = api_param_id(req, 0, &id, "join token")) != RC_OK ||
        (rc = audit_target_id(AUDIT_TARGET_JOIN_TOKEN, id, target)) != RC_OK)
        return rc;
    if ((rc = api_begin(req)) != RC_OK)
        return rc;
    rc = db_join_token_revoke(req->db, id, req->who.user_id, &row, req->req_id);
    if (rc == RC_OK)
        rc = audit_append_req(req, "node.join_token.revoke", target, "success", NULL);
    rc = api_end(req, rc);
    if (rc != RC_OK)
        json_decref(row);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such join token");
    if (rc == RC_ECONFLICT)
        return srv_fail(req, rc, "", "the join token is already revoked");
    if (rc != RC_OK)
        return rc;
    return srv_reply(req, 200, row);
}

/* A join under the name of an existing node that this token may not take:
 * nothing changed (the transaction is rolled back); the attempt is audited
 * as denied on its own, and answered 409 node_name_taken. */
static enum rc refuse_takeover(struct srv_req *req, const char *name, const char *target,
                               const char *addr)
{
    json_t *d = json_pack("{s:s,s:s}", "addr", addr, "reason", "node_name_taken");

    (void)audit_append_alone(req, "node.join", target, "denied", d);
    json_decref(d);
    err_set(&req->err, RC_ECONFLICT, "name",
            "a node named %s already exists; only a join token bound to that name may join "
            "as it",
            name);
    err_code(&req->err, "node_name_taken");
    return RC_ECONFLICT;
}

enum rc api_agent_join(struct srv_req *req)
{
    static const char *const allowed[] = {"join_token", "name", "hostname", "addr", "labels", NULL};
    const char *token, *name, *host, *addr;
    char h[CRYPTO_SHA256_HEX_LEN + 1], cred[80], ch[CRYPTO_SHA256_HEX_LEN + 1],
        target[AUDIT_TARGET_SIZE], id[24];
    char *labels = NULL;
    int64_t node_id = 0, token_id = 0;
    int retry = 0, bound = 0;
    enum rc rc;

    if ((rc = api_body_object(req, allowed)) != RC_OK ||
        (rc = api_opt_string(req, "join_token", 1, 128, &token)) != RC_OK ||
        (rc = api_opt_string(req, "name", 1, 63, &name)) != RC_OK ||
        (rc = api_opt_string(req, "hostname", 0, 255, &host)) != RC_OK ||
        (rc = api_opt_string(req, "addr", 0, 64, &addr)) != RC_OK ||
        (rc = agent_check_labels(req, json_object_get(req->body, "labels"))) != RC_OK)
        return rc;
    if (token == NULL)
        return srv_fail(req, RC_EINVAL, "join_token", "join_token is required");
    {
        int64_t site_id;
        if ((rc = agent_label_site(req, json_object_get(req->body, "labels"), &site_id)) != RC_OK)
            return rc;
    }
    if (name == NULL || !agent_valid_name(name))
        return srv_fail(req, RC_EINVAL, "name", "name must be 1 to 63 of a-z, 0-9, '.', '_', '-'");
    if (addr != NULL && addr[0] != '\0' && !agent_valid_ip(addr))
        return srv_fail(req, RC_EINVAL, "addr", "addr must be an IP address");
    if (addr == NULL || addr[0] == '\0')
        addr = req->client_addr;
    crypto_sha256_hex(token, strlen(token), h);
    if (audit_target_name(AUDIT_TARGET_NODE, name, target) != RC_OK) /* agent_valid_name() holds */
        return RC_EINTERNAL;
    if (crypto_random_token("tyn_", 32, cred, sizeof(cred)) != RC_OK)
        return RC_EINTERNAL;
    crypto_sha256_hex(cred, strlen(cred), ch);
    labels = json_object_get(req->body, "labels") != NULL
                 ? jx_dumps(json_object_get(req->body, "labels"), JSON_COMPACT)
                 : strdup("{}");
    if (labels == NULL)
        return RC_ENOMEM;
    if ((rc = api_begin(req)) != RC_OK)
        goto out;
    /* A retry whose first answer was lost spends no use (db_agent.h). */
    rc = db_join_token_use(req->db, h, name, &token_id, &retry, &bound, req->req_id);
    if (rc == RC_EAUTH) {
        api_end(req, RC_EAUTH);
        (void)audit_append_alone(req, "node.join", target, "failure", NULL);
        rc = srv_fail(
            req, RC_EAUTH, "join_token",
            "the join token is unknown, expired, revoked, used up or bound to another node name");
        goto out;
    }
    if (rc == RC_OK)
        rc = db_node_join(req->db, name, host ? host : "", addr, labels, ch, token_id, bound,
                          &node_id, req->req_id);
    if (rc == RC_ECONFLICT) {
        api_end(req, RC_ECONFLICT);
        rc = refuse_takeover(req, name, target, addr);
        goto out;
    }
    if (rc == RC_OK) {
        json_t *d = json_pack("{s:s,s:b,s:b}", "addr", addr, "retry", retry, "bound", bound);
        rc = audit_append_req(req, "node.join", target, "success", d);
        json_decref(d);
    }
    if ((rc = api_end(req, rc)) != RC_OK)
        goto out;
    auth_forget_all(req->app); /* a re-join retires the node's old credential */
    rc = srv_reply(
        req, 201,
        json_pack("{s:s,s:s}", "node_id", api_i64(node_id, id, sizeof(id)), "credential", cred));
out:
    free(labels);
    return rc;
}
