/*
 * main.c - the trainyard command line: finds the command in a table and
 * runs it (cli.h). Commands live in cmd_<name>.c inside ty_cli, so tests run
 * them without a process.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifndef TY_VERSION
#define TY_VERSION "dev"
#endif

static int cmd_version(int argc, char **argv, FILE *out, FILE *err);
static int cmd_help(int argc, char **argv, FILE *out, FILE *err);

static const struct cli_command commands[] = {
    {"audit", "verify signed audit exports offline (audit verify)", cli_cmd_audit},
    {"templates", "list the server's job templates", cli_cmd_templates},
    {"submit", "submit a job from a template (--template ID --param K=V ...)", cli_cmd_submit},
    {"queue", "the queue: estimated starts and why each job waits", cli_cmd_queue},
    {"show", "a job and, while queued, its forecast (show JOB)", cli_cmd_queue_show},
    {"version", "print the version", cmd_version},
    {"help", "print this help", cmd_help},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: trainyard COMMAND [ARGS...]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'trainyard COMMAND --help' describes a command.\n");
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
            /* Once, before any client (cli/client.h); audit needs none. */
            if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                fprintf(stderr, "trainyard: cannot initialise libcurl\n");
                return CLI_EXIT_USAGE;
            }
            code = commands[i].run(argc - 1, argv + 1, stdout, stderr);
            curl_global_cleanup();
            if (fflush(stdout) != 0 && code == CLI_EXIT_OK)
                code = CLI_EXIT_USAGE; /* the verdict did not reach its reader */
            return code;
        }
    }
    fprintf(stderr, "trainyard: unknown command %s\n", argv[1]);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
