/*
 * args.h - the option parsing that the API commands share: "--opt VALUE"
 * and "--opt=VALUE", the options every API command takes (--json,
 * --server URL, -h/--help), and a bounded integer. Messages go through the
 * catalogue (msg.h).
 *
 * Thread-safety: reentrant; no globals.
 */
#ifndef TY_CLI_ARGS_H
#define TY_CLI_ARGS_H

#include <jansson.h>
#include <stdio.h>

/* What every API command takes. */
struct cli_common {
    const char *server; /* borrowed: --server, NULL when not given */
    int json;           /* --json: the server's JSON as it came */
    int help;           /* -h / --help */
};

/* Whether argv[*i] is option name. Returns 1 with *val (borrowed) its
 * value ("--name VALUE", advancing *i, or "--name=VALUE"), 0 when it is
 * another argument, -1 after a message on err when the value is missing
 * or empty. */
int cli_opt(int argc, char **argv, int *i, const char *name, const char **val, FILE *err);

/* Whether argv[*i] is one of the common options (filling *c): 1 yes, 0
 * no, -1 after a message on err. */
int cli_common_opt(int argc, char **argv, int *i, struct cli_common *c, FILE *err);

/* v as an integer in lo..hi into *out; -1 after a message naming opt. */
int cli_long(const char *opt, const char *v, long lo, long hi, long *out, FILE *err);

/* The usage error's last line ("'trainyard CMD --help' describes the
 * options") on err; returns CLI_EXIT_USAGE. */
int cli_usage_error(FILE *err, const char *cmd);

/* An unexpected argv[i]: "unknown option" or "unexpected argument" on err;
 * returns -1. */
int cli_bad_arg(const char *a, FILE *err);

/* The JSON object in file path ("-": stdin), at most CLI_MAX_INPUT bytes,
 * into *out (new reference). Returns CLI_EXIT_OK, or CLI_EXIT_USAGE after
 * a message on err (unreadable, too big, not a JSON object). */
#define CLI_MAX_INPUT (4 * 1024 * 1024)
int cli_read_json_file(const char *path, json_t **out, FILE *err);

#endif
