/*
 * main.c - the trainyard command line: finds the command in a table and
 * runs it (cli.h). Commands live in cmd_<name>.c inside ty_cli, so tests run
 * them without a process. `trainyard help` lists them with the exit codes
 * (cli.h enum cli_exit), in the user's language (msg.h).
 */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "msg.h"

#ifndef TY_VERSION
#define TY_VERSION "dev"
#endif

struct main_command {
    const char *name;
    enum cli_msg summary;
    cli_command_fn run;
};

static int cmd_version(int argc, char **argv, FILE *out, FILE *err);
static int cmd_help(int argc, char **argv, FILE *out, FILE *err);

/* In the order `trainyard help` shows them. */
static const struct main_command commands[] = {
    {"login", S_LOGIN, cli_cmd_login},
    {"logout", S_LOGOUT, cli_cmd_logout},
    {"submit", S_SUBMIT, cli_cmd_submit},
    {"ls", S_LS, cli_cmd_ls},
    {"show", S_SHOW, cli_cmd_show},
    {"logs", S_LOGS, cli_cmd_logs},
    {"cancel", S_CANCEL, cli_cmd_cancel},
    {"queue", S_QUEUE, cli_cmd_queue},
    {"nodes", S_NODES, cli_cmd_nodes},
    {"drain", S_DRAIN, cli_cmd_drain},
    {"undrain", S_UNDRAIN, cli_cmd_undrain},
    {"templates", S_TEMPLATES, cli_cmd_templates},
    {"advisor", S_ADVISOR, cli_cmd_advisor},
    {"deploy", S_DEPLOY, cli_cmd_deploy},
    {"deployments", S_DEPLOYMENTS, cli_cmd_deployments},
    {"canary", S_CANARY, cli_cmd_canary},
    {"rollback", S_ROLLBACK, cli_cmd_rollback},
    {"chat", S_CHAT, cli_cmd_chat},
    {"tokens", S_TOKENS, cli_cmd_tokens},
    {"models", S_MODELS, cli_cmd_models},
    {"audit", S_AUDIT, cli_cmd_audit},
    {"version", S_VERSION, cmd_version},
    {"help", S_HELP, cmd_help},
};

static void usage(FILE *f)
{
    static const enum cli_msg exits[] = {HELP_EXIT_0, HELP_EXIT_1, HELP_EXIT_2, HELP_EXIT_3,
                                         HELP_EXIT_4, HELP_EXIT_5, HELP_EXIT_6};

    fprintf(f, "%s\n\n%s\n", cli_msg(HELP_USAGE), cli_msg(HELP_COMMANDS));
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, cli_msg(commands[i].summary));
    fprintf(f, "\n%s\n%s\n\n%s\n", cli_msg(HELP_MORE), cli_msg(HELP_ENV), cli_msg(HELP_EXIT));
    for (size_t i = 0; i < sizeof(exits) / sizeof(exits[0]); i++)
        fprintf(f, "  %zu  %s\n", i, cli_msg(exits[i]));
}

static int cmd_version(int argc, char **argv, FILE *out, FILE *err)
{
    (void)argc;
    (void)argv;
    (void)err;
    fprintf(out, "trainyard %s\n", TY_VERSION);
    return CLI_EXIT_OK;
}

static int cmd_help(int argc, char **argv, FILE *out, FILE *err)
{
    (void)argc;
    (void)argv;
    (void)err;
    usage(out);
    return CLI_EXIT_OK;
}

int main(int argc, char **argv)
{
    int code;

    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
        return cmd_help(argc - 1, argv + 1, stdout, stderr);
    if (strcmp(argv[1], "--version") == 0)
        return cmd_version(argc - 1, argv + 1, stdout, stderr);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(argv[1], commands[i].name) == 0) {
            /* Once, before any client (cli/client.h); audit verify needs none. */
            if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                cli_errf(stderr, M_OOM);
                return CLI_EXIT_FAIL;
            }
            code = commands[i].run(argc - 1, argv + 1, stdout, stderr);
            curl_global_cleanup();
            if (fflush(stdout) != 0 && code == CLI_EXIT_OK)
                code = CLI_EXIT_USAGE; /* the verdict did not reach its reader */
            return code;
        }
    }
    cli_errf(stderr, M_UNKNOWN_COMMAND, argv[1]);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
