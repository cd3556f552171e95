/*
 * config.h - the login file of the command line: where `trainyard login`
 * keeps the server's URL and an API token, and how the other commands find
 * the server and the token (flag, environment, login file, default).
 *
 * The file is $XDG_CONFIG_HOME/trainyard/config, else
 * $HOME/.config/trainyard/config: its directory mode 0700, the file 0600,
 * written whole to a temporary file and renamed, so a crash leaves the old
 * login or the new one. A file that others can read, or that is not the
 * user's own regular file, is refused (the token is a password): exit 3.
 *
 * Format: UTF-8 lines "key=value" (spaces around either trimmed), "#"
 * comments and blank lines; keys url, token, token_id, user, each once.
 * Unknown keys are refused, so a typo is not silently ignored.
 *
 * Thread-safety: main thread only (reads the environment); no globals.
 */
#ifndef TY_CLI_CONFIG_H
#define TY_CLI_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "err.h"
#include "msg.h"

#define CLI_CONFIG_MAX_BYTES (64 * 1024)
#define CLI_CONFIG_URL_MAX 2048
#define CLI_CONFIG_TOKEN_MAX 256

struct cli_config {
    char url[CLI_CONFIG_URL_MAX];     /* "" when absent */
    char token[CLI_CONFIG_TOKEN_MAX]; /* a secret; "" when absent */
    char token_id[32];                /* the token's id on the server, for logout */
    char user[128];                   /* who signed in, for messages */
};

/* Parses len bytes of text (need not be terminated) into *c (caller
 * storage, cleared first). RC_OK, or RC_EINVAL with *line (1-based) and
 * *why (M_CFG_SYNTAX, M_CFG_KEY, M_CFG_LONG, M_CFG_DUP, M_CFG_TEXT) set;
 * RC_ETOOBIG over CLI_CONFIG_MAX_BYTES. No allocation. */
enum rc cli_config_parse(const char *text, size_t len, struct cli_config *c, int *line /* out */,
                         enum cli_msg *why /* out */) TY_WUR;

/* The text of c as the file holds it into buf (size n); RC_ETOOBIG when it
 * does not fit, RC_EINVAL when a value holds a control character other than a tab. */
enum rc cli_config_format(const struct cli_config *c, char *buf, size_t n) TY_WUR;

/* The login file's path into buf (size n) and, when dir is not NULL, its
 * directory into dir (size n). RC_ENOTFOUND when neither XDG_CONFIG_HOME
 * nor HOME is set, RC_ETOOBIG when a path does not fit. */
enum rc cli_config_path(char *buf, size_t n, char *dir, size_t dirn) TY_WUR;

/* Reads the login file into *c. RC_ENOTFOUND when there is none (c is
 * cleared; not an error for callers that can do without). Otherwise
 * RC_OK, or a message on err and RC_EPERM (a file others can read, or not
 * the user's regular file), RC_EINVAL (it does not parse), RC_EUNAVAIL
 * (I/O). */
enum rc cli_config_load(struct cli_config *c, FILE *err) TY_WUR;

/* Writes c as the login file (creating the directory 0700, the file 0600).
 * RC_OK or a message on err and an error code. path (size n, may be NULL)
 * receives the file's path. */
enum rc cli_config_save(const struct cli_config *c, char *path, size_t n, FILE *err) TY_WUR;

/* Removes the login file. RC_OK, RC_ENOTFOUND when there was none, else a
 * message on err and RC_EUNAVAIL. */
enum rc cli_config_remove(FILE *err) TY_WUR;

/* Wipes the token in c. */
void cli_config_wipe(struct cli_config *c);

/* Where a command connects: the server is flag (may be NULL), else
 * TRAINYARD_URL, else TRAINYARD_SERVER (the older name), else the login
 * file's url, else CLI_DEFAULT_SERVER; the token is TRAINYARD_TOKEN, else
 * the login file's token, but the stored token only when the server is the
 * one it was issued by (a TRAINYARD_URL elsewhere does not receive it).
 * The file is read only when the server or the token is not given
 * otherwise. url and token (sizes un and tn) receive copies; token "" for
 * none.
 * RC_OK, or the login file's error (message on err, see
 * cli_config_load()). */
enum rc cli_config_resolve(const char *flag, char *url, size_t un, char *token, size_t tn,
                           FILE *err) TY_WUR;

#endif
