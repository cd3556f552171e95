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

enum cli_exit {
    CLI_EXIT_OK = 0,    /* success: for audit verify, the export verified */
    CLI_EXIT_FAIL = 1,  /* the check ran and failed (audit verify: tampering found; submit,
                           templates: the server refused the request) */
    CLI_EXIT_USAGE = 2, /* bad usage, I/O error, input that is not what was asked for, a
                           server that cannot be reached */
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

/* trainyard submit --template ID [--param K=V ...] ... (cmd_submit.c). */
int cli_cmd_submit(int argc, char **argv, FILE *out, FILE *err);

/* trainyard queue [--json] [--server URL] (cmd_queue.c). */
int cli_cmd_queue(int argc, char **argv, FILE *out, FILE *err);

/* Why a forecast entry (docs/queue.md) waits, in English, from its reason
 * {code, params}, into buf (always terminated). entry is borrowed. */
void cli_queue_reason(const json_t *entry, char *buf, size_t size);

/* trainyard show JOB [--json] [--server URL]: the job and its forecast (cmd_queue.c). */
int cli_cmd_queue_show(int argc, char **argv, FILE *out, FILE *err);

#endif
