/*
 * cli.h - what the trainyard command line's commands share: exit codes and
 * the shape of a command, so that main.c dispatches through one table and
 * new commands (jobs, submit, ...) add an entry and a cmd_<name>.c.
 *
 * Commands write their normal output to out and diagnostics to err (both
 * borrowed), so tests can run them on memory streams. They never exit().
 *
 * Thread-safety: commands are called from the main thread only.
 */
#ifndef TY_CLI_CLI_H
#define TY_CLI_CLI_H

#include <jansson.h>
#include <stdio.h>

/* Exit codes: stable, documented in cli/README.md and `trainyard help`.
 * Append only; scripts test these numbers. cli_exit_for_http() (client.h)
 * maps a refused request to one of them. */
enum cli_exit {
    CLI_EXIT_OK = 0,       /* success: for audit verify, the export verified */
    CLI_EXIT_FAIL = 1,     /* anything else: audit verify found tampering, the server refused
                              the input (400, 413, 429), a reply that is not what was asked for */
    CLI_EXIT_USAGE = 2,    /* bad usage, a local file that cannot be read or is not what was
                              asked for */
    CLI_EXIT_AUTH = 3,     /* not signed in, a wrong or revoked token, a role that may not (401,
                              403 permission_denied), a login file others can read */
    CLI_EXIT_NOTFOUND = 4, /* no such job, node, token, template (404) */
    CLI_EXIT_REFUSED = 5,  /* refused by policy or by the thing's state (403 policy_violation,
                              409) */
    CLI_EXIT_UNAVAIL = 6,  /* the server cannot be reached, or answers 5xx */
};

/* A command: argv[0] is the command's own name. Returns an enum cli_exit. */
typedef int (*cli_command_fn)(int argc, char **argv, FILE *out, FILE *err);

struct cli_command {
    const char *name;    /* as typed: "audit" */
    const char *summary; /* one line for --help */
    cli_command_fn run;
};

/* trainyard audit SUBCOMMAND ...: "verify" (cmd_audit.c). */
int cli_cmd_audit(int argc, char **argv, FILE *out, FILE *err);

/* trainyard templates [--json] [--server URL] (cmd_templates.c). */
int cli_cmd_templates(int argc, char **argv, FILE *out, FILE *err);

/* trainyard submit FILE | --template ID [--param K=V ...] ... (cmd_submit.c). */
int cli_cmd_submit(int argc, char **argv, FILE *out, FILE *err);

/* trainyard login / logout (cmd_login.c). */
int cli_cmd_login(int argc, char **argv, FILE *out, FILE *err);
int cli_cmd_logout(int argc, char **argv, FILE *out, FILE *err);

/* trainyard ls / show JOB / logs JOB / cancel JOB (cmd_jobs.c). */
int cli_cmd_ls(int argc, char **argv, FILE *out, FILE *err);
int cli_cmd_show(int argc, char **argv, FILE *out, FILE *err);
int cli_cmd_logs(int argc, char **argv, FILE *out, FILE *err);
int cli_cmd_cancel(int argc, char **argv, FILE *out, FILE *err);

/* trainyard nodes / drain NODE / undrain NODE (cmd_nodes.c). */
int cli_cmd_nodes(int argc, char **argv, FILE *out, FILE *err);
/* trainyard nodes join-tokens [list|create|revoke ID] (cmd_join_tokens.c);
 * argv[0] is "join-tokens". */
int cli_cmd_join_tokens(int argc, char **argv, FILE *out, FILE *err);
int cli_cmd_drain(int argc, char **argv, FILE *out, FILE *err);
int cli_cmd_undrain(int argc, char **argv, FILE *out, FILE *err);

/* trainyard tokens [list | create NAME | revoke ID] (cmd_tokens.c). */
int cli_cmd_tokens(int argc, char **argv, FILE *out, FILE *err);

/* trainyard models [list | show NAME | register NAME --job ID | alias NAME ALIAS
 * VERSION|--delete] (cmd_models.c). */
int cli_cmd_models(int argc, char **argv, FILE *out, FILE *err);

/* trainyard advisor FILE (cmd_advisor.c). */
int cli_cmd_advisor(int argc, char **argv, FILE *out, FILE *err);

/* trainyard queue [--json] [--server URL] (cmd_queue.c). */
int cli_cmd_queue(int argc, char **argv, FILE *out, FILE *err);

/* trainyard deploy MODEL[:VERSION|@ALIAS] --name N ... and trainyard
 * deployments [list | show | scale | stop | start NAME] (cmd_deploy.c). */
int cli_cmd_deploy(int argc, char **argv, FILE *out, FILE *err);
int cli_cmd_deployments(int argc, char **argv, FILE *out, FILE *err);
/* trainyard canary DEPLOYMENT VERSION|@ALIAS --weight N [--bound JSON]
 * [--replicas K], trainyard canary promote DEPLOYMENT, trainyard rollback
 * DEPLOYMENT (cmd_deploy.c). */
int cli_cmd_canary(int argc, char **argv, FILE *out, FILE *err);
int cli_cmd_rollback(int argc, char **argv, FILE *out, FILE *err);

/* trainyard chat DEPLOYMENT [-m MESSAGE] [--key KEY] [--server URL]
 * (cmd_chat.c). */
int cli_cmd_chat(int argc, char **argv, FILE *out, FILE *err);

/* Why a forecast entry (docs/queue.md) waits, in English, from its reason
 * {code, params}, into buf (always terminated). entry is borrowed. */
void cli_queue_reason(const json_t *entry, char *buf, size_t size);

struct cli_client;
/* The forecast lines of "trainyard show" for a waiting job (cmd_queue.c):
 * GET /api/v1/jobs/JOB/forecast on c, printed on out; a job that is not
 * queued, or a failed request, gets one line saying so. */
void cli_queue_print_job_forecast(struct cli_client *c, const char *job_id, FILE *out, FILE *err);

#endif
