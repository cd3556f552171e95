/*
 * submit.h - "trainyard submit" and "trainyard templates" without the
 * network: their options, and the POST /api/v1/jobs body that a submit by
 * template sends (docs: cli/README.md). cmd_submit.c and cmd_templates.c
 * add the HTTP; the unit tests (tests/unit/test_cli_submit.c) call these.
 *
 * Thread-safety: none needed (main thread only); no globals.
 */
#ifndef TY_CLI_SUBMIT_H
#define TY_CLI_SUBMIT_H

#include <jansson.h>
#include <stdio.h>

#include "err.h"

#define CLI_MAX_PARAMS 64
#define CLI_MAX_DATASETS 32
#define CLI_MAX_PARAM_NAME 64 /* with the NUL; the server's names are shorter */
#define CLI_MAX_GPUS 4096

struct cli_param {
    char name[CLI_MAX_PARAM_NAME];
    const char *value; /* borrowed from argv: the text after '=' */
};

struct cli_submit_opts {
    const char *server;          /* borrowed: --server, NULL when not given */
    const char *template_id;     /* borrowed: --template (this or file) */
    const char *file;            /* borrowed: a job spec file, "-" for stdin (this or template) */
    const char *team;            /* borrowed: --team (or the user's only team), NULL: none */
    const char *name;            /* borrowed: --name, NULL: the template's id */
    const char *idempotency_key; /* borrowed: --idempotency-key, NULL: none */
    long gpus;                   /* --gpus, 0: the template's default */
    int json;                    /* --json: print the created job as JSON */
    size_t n_params;
    struct cli_param params[CLI_MAX_PARAMS]; /* in the order given */
    size_t n_datasets;
    const char *datasets[CLI_MAX_DATASETS]; /* borrowed: paths or registered names */
};

struct cli_templates_opts {
    const char *server; /* borrowed: --server, NULL when not given */
    int json;           /* --json: the server's list as it came */
};

/* Parses "submit" options (argv[0] is "submit"): FILE (a job spec; "-"
 * stdin) or --template ID, one of them,
 * --param NAME=VALUE (repeatable; a name of [A-Za-z0-9_] given once),
 * --dataset PATH_OR_NAME (repeatable), --gpus N (1..CLI_MAX_GPUS),
 * --team T, --name N, --server URL, --json; each "--opt VALUE" also as
 * "--opt=VALUE". Returns 0 parsed, 1 when --help was asked, -1 after a
 * message on err (a usage error: exit 2). o is filled (caller storage). */
int cli_submit_parse(int argc, char **argv, struct cli_submit_opts *o, FILE *err);

/* Parses "templates" options: --json, --server URL. Same returns. */
int cli_templates_parse(int argc, char **argv, struct cli_templates_opts *o, FILE *err);

/* The body of POST /api/v1/jobs for o: {"template","params"[, "datasets",
 * "resources":{"gpus"}, "team", "name"]}. Each parameter's value is typed
 * by schema, the template's "params" object from GET /api/v1/templates/{id}
 * (borrowed, may be NULL): int and float as numbers, bool as true/false
 * (true/false/1/0/yes/no/on/off), enum and string as text. A value that
 * does not read as its type, or a name the schema lacks, is sent as text,
 * so that the server's check names it (params.<name>) in its own words.
 * *out is a new reference. RC_ENOMEM only. */
enum rc cli_submit_body(const struct cli_submit_opts *o, const json_t *schema,
                        json_t **out /* out */);

/* The language of names and descriptions for the user: "en" when the
 * first set of LC_ALL, LC_MESSAGES, LANG (each may be NULL) starts with
 * "en", else "zh-CN" (the product's first language; C and POSIX too).
 * Returns a static string. */
const char *cli_user_lang(const char *lc_all, const char *lc_messages, const char *lang);

/* The text of an {"zh-CN": ..., "en": ...} object (borrowed) in lang, else
 * in the other language, else "". Borrowed from the object. */
const char *cli_localized(const json_t *texts, const char *lang);

#endif
