/*
 * api.h - every route handler of the REST API, grouped by file:
 *   api_auth.c   login, logout, me, API tokens
 *   api_admin.c  users, teams, memberships
 *   api_jobs.c   jobs
 *   api_misc.c   health, readiness, nodes, job templates, the advisor
 *   api_audit.c  audit events, verification, key, checkpoints, retention, export
 *   api_agent_*.c  the worker protocol and join tokens (api_agent_int.h)
 *   api_node_drain.c  drain/undrain
 *   api_logs.c   logs (paged and SSE), metrics, checkpoints
 *   api_webhooks.c webhooks
 *   api_policy.c sites, the compliance policy, datasets
 *   api_exports.c  job outputs and their approved export
 *   api_models.c   the model registry: versions, their manifests and lineage, aliases
 *   api_queue.c  the queue forecast: the queue, one job's forecast, what-if
 *   api_deployments.c  deployments and their replica jobs (docs/serving.md)
 * Each is a srv_handler_fn (see srv.h); routes.c maps paths to them.
 */
#ifndef TY_SERVER_API_H
#define TY_SERVER_API_H

#include "srv.h"

enum rc api_healthz(struct srv_req *req);
enum rc api_readyz(struct srv_req *req);

enum rc api_login(struct srv_req *req);
enum rc api_logout(struct srv_req *req);
enum rc api_me(struct srv_req *req);
/* POST {"current_password", "new_password"}: the caller changes their own password. */
enum rc api_me_password(struct srv_req *req);
enum rc api_token_create(struct srv_req *req);
enum rc api_token_list(struct srv_req *req);
enum rc api_token_revoke(struct srv_req *req);

enum rc api_user_create(struct srv_req *req);
enum rc api_user_list(struct srv_req *req);
enum rc api_user_get(struct srv_req *req);
enum rc api_user_update(struct srv_req *req);
enum rc api_team_create(struct srv_req *req);
enum rc api_team_list(struct srv_req *req);
enum rc api_team_get(struct srv_req *req);
enum rc api_team_update(struct srv_req *req);
enum rc api_team_members(struct srv_req *req);
enum rc api_team_member_add(struct srv_req *req);
enum rc api_team_member_remove(struct srv_req *req);

enum rc api_job_submit(struct srv_req *req);
enum rc api_job_list(struct srv_req *req);
enum rc api_job_get(struct srv_req *req);
/* PATCH {"priority"}: an admin reorders a waiting (QUEUED, RESTARTING) job. */
enum rc api_job_update(struct srv_req *req);
enum rc api_job_events(struct srv_req *req);
enum rc api_job_cancel(struct srv_req *req);

enum rc api_node_list(struct srv_req *req);
enum rc api_overview(struct srv_req *req);
enum rc api_template_list(struct srv_req *req);
enum rc api_advisor(struct srv_req *req);
enum rc api_template_get(struct srv_req *req);
enum rc api_node_drain(struct srv_req *req);
enum rc api_node_undrain(struct srv_req *req);
enum rc api_join_token_create(struct srv_req *req);
enum rc api_join_token_list(struct srv_req *req);
enum rc api_join_token_revoke(struct srv_req *req);

/* api_agent_*.c: the worker protocol (docs/agent-protocol.md) */
enum rc api_agent_join(struct srv_req *req);
enum rc api_agent_register(struct srv_req *req);
enum rc api_agent_heartbeat(struct srv_req *req);
enum rc api_agent_assignments(struct srv_req *req);
enum rc api_agent_started(struct srv_req *req);
enum rc api_agent_output(struct srv_req *req);
enum rc api_agent_exit(struct srv_req *req);

/* api_logs.c */
enum rc api_job_logs(struct srv_req *req);
enum rc api_job_logs_download(struct srv_req *req);
enum rc api_job_metrics(struct srv_req *req);
enum rc api_job_checkpoints(struct srv_req *req);

/* api_webhooks.c */
enum rc api_webhook_create(struct srv_req *req);
enum rc api_webhook_list(struct srv_req *req);
enum rc api_webhook_delete(struct srv_req *req);
enum rc api_webhook_deliveries(struct srv_req *req);

/* api_serve_keys.c: a deployment's gateway keys and usage (docs/serving.md) */
enum rc api_serve_key_create(struct srv_req *req);
enum rc api_serve_key_list(struct srv_req *req);
enum rc api_serve_key_revoke(struct srv_req *req);

/* api_widget.c: a deployment's public chat widget and its handoff */
enum rc api_widget_get(struct srv_req *req);
enum rc api_widget_put(struct srv_req *req);
enum rc api_widget_page(struct srv_req *req);
enum rc api_widget_script(struct srv_req *req);
enum rc api_widget_config(struct srv_req *req);
enum rc api_widget_handoff(struct srv_req *req);
enum rc api_serve_usage(struct srv_req *req);

/* api_audit.c */
/* api_policy.c */
enum rc api_site_list(struct srv_req *req);
enum rc api_site_create(struct srv_req *req);
enum rc api_site_get(struct srv_req *req);
enum rc api_site_update(struct srv_req *req);
enum rc api_site_delete(struct srv_req *req);
enum rc api_policy_get(struct srv_req *req);
enum rc api_policy_update(struct srv_req *req);
enum rc api_dataset_list(struct srv_req *req);
enum rc api_dataset_create(struct srv_req *req);
enum rc api_dataset_get(struct srv_req *req);
enum rc api_dataset_delete(struct srv_req *req);

/* Deployments (docs/serving.md "Deployments"): POST body as documented;
 * PATCH {replicas, min_replicas, max_replicas, version | alias,
 * canary_weight, canary_version, idle_s, keep_texts_days}. */
/*
 * The id of deployment params[0] when the caller may see it (admins and
 * auditors every one, members their teams'); otherwise the request is
 * failed with 404 "no such deployment" (as a job the caller may not see).
 * For the routes of other files that hang under a deployment.
 */
enum rc api_deployment_find(struct srv_req *req, int64_t *id) TY_WUR;
enum rc api_deployment_create(struct srv_req *req);
enum rc api_deployment_list(struct srv_req *req);
enum rc api_deployment_get(struct srv_req *req);
enum rc api_deployment_update(struct srv_req *req);
enum rc api_deployment_stop(struct srv_req *req);
enum rc api_deployment_start(struct srv_req *req);
enum rc api_deployment_canary(struct srv_req *req);
enum rc api_deployment_promote(struct srv_req *req);
enum rc api_deployment_rollback(struct srv_req *req);

enum rc api_audit_events(struct srv_req *req);
enum rc api_audit_verify(struct srv_req *req);
enum rc api_audit_public_key(struct srv_req *req);
enum rc api_audit_checkpoints(struct srv_req *req);
enum rc api_audit_export(struct srv_req *req);
enum rc api_audit_retention(struct srv_req *req);

/* api_models.c (docs/serving.md, "Registry") */
enum rc api_model_list(struct srv_req *req);
enum rc api_model_get(struct srv_req *req);
enum rc api_model_register(struct srv_req *req);
enum rc api_model_version_get(struct srv_req *req);
enum rc api_model_alias_set(struct srv_req *req);
enum rc api_model_alias_delete(struct srv_req *req);

/* api_exports.c (docs/exports.md) */
enum rc api_job_outputs(struct srv_req *req);

enum rc api_queue_get(struct srv_req *req);
enum rc api_job_forecast(struct srv_req *req);
enum rc api_queue_whatif(struct srv_req *req);
enum rc api_export_create(struct srv_req *req);
enum rc api_export_list(struct srv_req *req);
enum rc api_export_get(struct srv_req *req);
enum rc api_export_approve(struct srv_req *req);
enum rc api_export_deny(struct srv_req *req);
enum rc api_export_download(struct srv_req *req);

/* api_serve_stats.c: a deployment's gateway traffic per minute (docs/serving.md) */
enum rc api_serve_stats(struct srv_req *req);

#endif
