/*
 * routes.c - the route table. Keep it sorted by path so the API reads like
 * its documentation (README "API overview").
 */
#include "routes.h"

#include "api.h"
#include "api_metrics.h"
#include "api_openapi.h"
#include "gateway.h"
#include "srv.h"

#define R(m, p, a, h)                                                                              \
    {                                                                                              \
        m, p, a, (void *)h                                                                         \
    }

static const struct router_route table[] = {
    R("GET", "/healthz", SRV_AUTH_NONE, api_healthz),
    /* Its own access rule: the metrics token or listener (api_metrics.h). */
    R("GET", "/metrics", SRV_AUTH_NONE, api_metrics),
    R("POST", "/api/v1/advisor", SRV_AUTH_USER, api_advisor),
    R("GET", "/api/v1/agent/assignments", SRV_AUTH_AGENT, api_agent_assignments),
    R("POST", "/api/v1/agent/attempts/{id}/exit", SRV_AUTH_AGENT, api_agent_exit),
    R("POST", "/api/v1/agent/attempts/{id}/output", SRV_AUTH_AGENT, api_agent_output),
    R("POST", "/api/v1/agent/attempts/{id}/started", SRV_AUTH_AGENT, api_agent_started),
    R("POST", "/api/v1/agent/heartbeat", SRV_AUTH_AGENT, api_agent_heartbeat),
    R("POST", "/api/v1/agent/join", SRV_AUTH_NONE, api_agent_join),
    R("POST", "/api/v1/agent/register", SRV_AUTH_AGENT, api_agent_register),
    R("GET", "/readyz", SRV_AUTH_NONE, api_readyz),
    R("GET", "/api/v1/audit/checkpoints", SRV_AUTH_AUDIT, api_audit_checkpoints),
    R("GET", "/api/v1/audit/events", SRV_AUTH_AUDIT, api_audit_events),
    R("GET", "/api/v1/audit/export", SRV_AUTH_AUDIT, api_audit_export),
    R("GET", "/api/v1/audit/public-key", SRV_AUTH_AUDIT, api_audit_public_key),
    R("POST", "/api/v1/audit/retention", SRV_AUTH_ADMIN, api_audit_retention),
    R("GET", "/api/v1/audit/verify", SRV_AUTH_AUDIT, api_audit_verify),
    R("POST", "/api/v1/auth/login", SRV_AUTH_NONE, api_login),
    R("POST", "/api/v1/auth/logout", SRV_AUTH_USER, api_logout),
    R("GET", "/api/v1/datasets", SRV_AUTH_USER, api_dataset_list),
    R("GET", "/api/v1/deployments/{name}/keys", SRV_AUTH_USER, api_serve_key_list),
    R("POST", "/api/v1/deployments/{name}/keys", SRV_AUTH_USER, api_serve_key_create),
    R("DELETE", "/api/v1/deployments/{name}/keys/{id}", SRV_AUTH_USER, api_serve_key_revoke),
    R("GET", "/api/v1/deployments/{name}/usage", SRV_AUTH_ADMIN, api_serve_usage),
    R("GET", "/api/v1/deployments/{name}/widget", SRV_AUTH_USER, api_widget_get),
    R("PUT", "/api/v1/deployments/{name}/widget", SRV_AUTH_USER, api_widget_put),
    /* The public chat widget (docs/serving.md, "Widget and handoff"):
     * visitors, no sign-in; each answers only while the widget is enabled. */
    R("GET", "/chat/{name}", SRV_AUTH_NONE, api_widget_page),
    R("GET", "/chat/{name}/widget.js", SRV_AUTH_NONE, api_widget_script),
    R("GET", "/chat/{name}/config", SRV_AUTH_NONE, api_widget_config),
    R("POST", "/chat/{name}/handoff", SRV_AUTH_NONE, api_widget_handoff),
    R("POST", "/api/v1/datasets", SRV_AUTH_USER, api_dataset_create),
    R("GET", "/api/v1/datasets/{name}", SRV_AUTH_USER, api_dataset_get),
    R("DELETE", "/api/v1/datasets/{name}", SRV_AUTH_USER, api_dataset_delete),
    R("GET", "/api/v1/deployments", SRV_AUTH_USER, api_deployment_list),
    R("POST", "/api/v1/deployments", SRV_AUTH_USER, api_deployment_create),
    R("GET", "/api/v1/deployments/{name}", SRV_AUTH_USER, api_deployment_get),
    R("PATCH", "/api/v1/deployments/{name}", SRV_AUTH_USER, api_deployment_update),
    R("POST", "/api/v1/deployments/{name}/start", SRV_AUTH_USER, api_deployment_start),
    R("GET", "/api/v1/deployments/{name}/stats", SRV_AUTH_USER, api_serve_stats),
    R("POST", "/api/v1/deployments/{name}/stop", SRV_AUTH_USER, api_deployment_stop),
    R("POST", "/api/v1/deployments/{name}/canary", SRV_AUTH_USER, api_deployment_canary),
    R("POST", "/api/v1/deployments/{name}/canary/promote", SRV_AUTH_USER, api_deployment_promote),
    R("POST", "/api/v1/deployments/{name}/rollback", SRV_AUTH_USER, api_deployment_rollback),
    /* The API's description and its reference page (api_openapi.h). */
    R("GET", "/api/v1/docs", SRV_AUTH_NONE, api_docs_page),
    R("GET", "/api/v1/docs/{file}", SRV_AUTH_NONE, api_docs_file),
    /* The token in the path is the credential of a download link. */
    R("GET", "/api/v1/exports/download/{token}", SRV_AUTH_NONE, api_export_download),
    R("GET", "/api/v1/exports", SRV_AUTH_USER, api_export_list),
    R("GET", "/api/v1/exports/{id}", SRV_AUTH_USER, api_export_get),
    R("POST", "/api/v1/exports/{id}/approve", SRV_AUTH_ADMIN, api_export_approve),
    R("POST", "/api/v1/exports/{id}/deny", SRV_AUTH_ADMIN, api_export_deny),
    R("GET", "/api/v1/jobs", SRV_AUTH_USER, api_job_list),
    R("POST", "/api/v1/jobs", SRV_AUTH_USER, api_job_submit),
    R("GET", "/api/v1/jobs/{id}", SRV_AUTH_USER, api_job_get),
    R("PATCH", "/api/v1/jobs/{id}", SRV_AUTH_ADMIN, api_job_update),
    R("POST", "/api/v1/jobs/{id}/cancel", SRV_AUTH_USER, api_job_cancel),
    R("GET", "/api/v1/jobs/{id}/checkpoints", SRV_AUTH_USER, api_job_checkpoints),
    R("GET", "/api/v1/jobs/{id}/events", SRV_AUTH_USER, api_job_events),
    R("POST", "/api/v1/jobs/{id}/exports", SRV_AUTH_USER, api_export_create),
    R("GET", "/api/v1/jobs/{id}/forecast", SRV_AUTH_USER, api_job_forecast),
    R("GET", "/api/v1/jobs/{id}/logs", SRV_AUTH_USER, api_job_logs),
    R("GET", "/api/v1/jobs/{id}/logs/download", SRV_AUTH_USER, api_job_logs_download),
    R("GET", "/api/v1/jobs/{id}/metrics", SRV_AUTH_USER, api_job_metrics),
    R("GET", "/api/v1/jobs/{id}/outputs", SRV_AUTH_USER, api_job_outputs),
    R("GET", "/api/v1/me", SRV_AUTH_USER, api_me),
    R("GET", "/api/v1/models", SRV_AUTH_USER, api_model_list),
    R("GET", "/api/v1/models/{name}", SRV_AUTH_USER, api_model_get),
    R("PUT", "/api/v1/models/{name}/aliases/{alias}", SRV_AUTH_USER, api_model_alias_set),
    R("DELETE", "/api/v1/models/{name}/aliases/{alias}", SRV_AUTH_USER, api_model_alias_delete),
    R("POST", "/api/v1/models/{name}/versions", SRV_AUTH_USER, api_model_register),
    R("GET", "/api/v1/models/{name}/versions/{v}", SRV_AUTH_USER, api_model_version_get),
    R("POST", "/api/v1/me/password", SRV_AUTH_USER, api_me_password),
    R("GET", "/api/v1/nodes", SRV_AUTH_USER, api_node_list),
    R("GET", "/api/v1/overview", SRV_AUTH_USER, api_overview),
    R("GET", "/api/v1/nodes/join-tokens", SRV_AUTH_ADMIN, api_join_token_list),
    R("POST", "/api/v1/nodes/join-tokens", SRV_AUTH_ADMIN, api_join_token_create),
    R("DELETE", "/api/v1/nodes/join-tokens/{id}", SRV_AUTH_ADMIN, api_join_token_revoke),
    R("POST", "/api/v1/nodes/{id}/drain", SRV_AUTH_ADMIN, api_node_drain),
    R("POST", "/api/v1/nodes/{id}/undrain", SRV_AUTH_ADMIN, api_node_undrain),
    R("GET", "/api/v1/openapi.json", SRV_AUTH_NONE, api_openapi),
    R("GET", "/api/v1/policy", SRV_AUTH_AUDIT, api_policy_get),
    R("PATCH", "/api/v1/policy", SRV_AUTH_ADMIN, api_policy_update),
    R("GET", "/api/v1/queue", SRV_AUTH_USER, api_queue_get),
    R("POST", "/api/v1/queue/what-if", SRV_AUTH_USER, api_queue_whatif),
    R("GET", "/api/v1/sites", SRV_AUTH_USER, api_site_list),
    R("POST", "/api/v1/sites", SRV_AUTH_ADMIN, api_site_create),
    R("GET", "/api/v1/sites/{name}", SRV_AUTH_AUDIT, api_site_get),
    R("PATCH", "/api/v1/sites/{name}", SRV_AUTH_ADMIN, api_site_update),
    R("DELETE", "/api/v1/sites/{name}", SRV_AUTH_ADMIN, api_site_delete),
    R("GET", "/api/v1/teams", SRV_AUTH_USER, api_team_list),
    R("POST", "/api/v1/teams", SRV_AUTH_ADMIN, api_team_create),
    R("GET", "/api/v1/teams/{id}", SRV_AUTH_USER, api_team_get),
    R("PATCH", "/api/v1/teams/{id}", SRV_AUTH_ADMIN, api_team_update),
    R("GET", "/api/v1/teams/{id}/members", SRV_AUTH_ADMIN, api_team_members),
    R("PUT", "/api/v1/teams/{id}/members/{user_id}", SRV_AUTH_ADMIN, api_team_member_add),
    R("DELETE", "/api/v1/teams/{id}/members/{user_id}", SRV_AUTH_ADMIN, api_team_member_remove),
    R("GET", "/api/v1/templates", SRV_AUTH_USER, api_template_list),
    R("GET", "/api/v1/templates/{id}", SRV_AUTH_USER, api_template_get),
    R("GET", "/api/v1/tokens", SRV_AUTH_USER, api_token_list),
    R("POST", "/api/v1/tokens", SRV_AUTH_USER, api_token_create),
    R("DELETE", "/api/v1/tokens/{id}", SRV_AUTH_USER, api_token_revoke),
    R("GET", "/api/v1/users", SRV_AUTH_ADMIN, api_user_list),
    R("POST", "/api/v1/users", SRV_AUTH_ADMIN, api_user_create),
    R("GET", "/api/v1/users/{id}", SRV_AUTH_ADMIN, api_user_get),
    R("PATCH", "/api/v1/users/{id}", SRV_AUTH_ADMIN, api_user_update),
    R("GET", "/api/v1/webhooks", SRV_AUTH_USER, api_webhook_list),
    R("POST", "/api/v1/webhooks", SRV_AUTH_USER, api_webhook_create),
    R("DELETE", "/api/v1/webhooks/{id}", SRV_AUTH_USER, api_webhook_delete),
    R("GET", "/api/v1/webhooks/{id}/deliveries", SRV_AUTH_USER, api_webhook_deliveries),
    /* The inference gateway (docs/serving.md): its own keys, no user
     * authentication and so no CSRF; errors in the OpenAI shape. */
    R("POST", "/v1/chat/completions", SRV_AUTH_NONE, serve_gw_chat),
    R("POST", "/v1/completions", SRV_AUTH_NONE, serve_gw_completions),
    R("POST", "/v1/embeddings", SRV_AUTH_NONE, serve_gw_embeddings),
    R("GET", "/v1/models", SRV_AUTH_NONE, serve_gw_models),
    R("POST", "/v1/predict", SRV_AUTH_NONE, serve_gw_predict),
};

const struct router_route *routes_table(size_t *n)
{
    *n = sizeof(table) / sizeof(table[0]);
    return table;
}

void routes_name(size_t i, const char **method, const char **pattern)
{
    *method = table[i].method;
    *pattern = table[i].pattern;
}
