/*
 * api_agent_util.c - what the worker protocol's handlers share
 * (api_agent_int.h): the checks of a node's name, address, labels and site,
 * the actor a node's changes are recorded under, the audit of a node's state
 * change and the attempt named in a report's path.
 *
 * Thread-safety: reentrant; each works on its own request.
 */
#include "api_agent_int.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "api_util.h"
#include "audit_target.h"
#include "db_agent.h"
#include "db_policy.h"

int agent_valid_name(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 63 || !(islower((unsigned char)*s) || isdigit((unsigned char)*s)))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '.' ||
              s[i] == '-' || s[i] == '_'))
            return 0;
    return 1;
}

int agent_valid_ip(const char *s)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

enum rc agent_check_labels(struct srv_req *req, const json_t *labels)
{
    const char *k;
    json_t *v;

    if (labels == NULL)
        return RC_OK;
    if (!json_is_object(labels) || json_object_size(labels) > 16)
        return srv_fail(req, RC_EINVAL, "labels", "labels must be an object of at most 16 strings");
    json_object_foreach((json_t *)labels, k, v)
    {
        if (!agent_valid_name(k) || !json_is_string(v) || json_string_length(v) > 128)
            return srv_fail(req, RC_EINVAL, "labels",
                            "label \"%.32s\" must be a-z0-9._- with a "
                            "string value of at most 128 bytes",
                            k);
    }
    return RC_OK;
}

enum rc agent_label_site(struct srv_req *req, const json_t *labels, int64_t *site_id)
{
    const char *name = json_string_value(json_object_get(labels, "site"));
    enum rc rc;

    *site_id = labels != NULL ? DB_SITE_DEFAULT_ID : 0;
    if (name == NULL)
        return RC_OK;
    if (srv_db(req) == NULL)
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    rc = db_site_id(req->db, name, site_id, req->req_id);
    if (rc == RC_ENOTFOUND) {
        srv_fail(req, RC_EINVAL, "labels.site",
                 "no site named \"%.64s\"; an admin must create the site before its nodes "
                 "register",
                 name);
        return RC_EINVAL;
    }
    return rc;
}

void agent_node_actor(struct srv_req *req, char *out, size_t n)
{
    snprintf(out, n, "node:%s", req->who.node_name);
}

enum rc agent_audit_node_state(struct srv_req *req, const char *from, const char *to,
                               const char *why)
{
    char target[AUDIT_TARGET_SIZE];
    json_t *d;
    enum rc rc;

    if (strcmp(from, to) == 0)
        return RC_OK;
    if ((rc = audit_target_name(AUDIT_TARGET_NODE, req->who.node_name, target)) != RC_OK)
        return rc;
    d = json_pack("{s:s,s:s,s:s}", "from", from, "to", to, "reason", why);
    rc = audit_append_req(req, "node.state", target, "success", d);
    json_decref(d);
    return rc;
}

enum rc agent_load_attempt(struct srv_req *req, int64_t *attempt_id, struct db_attempt_info *info)
{
    enum rc rc = api_param_id(req, 0, attempt_id, "attempt");

    if (rc != RC_OK)
        return rc;
    rc = db_attempt_info(req->db, *attempt_id, req->who.node_id, 1, info, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "this node holds no part of that attempt");
    return rc;
}
