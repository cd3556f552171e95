/*
 * client.h - the command line's HTTP client of the trainyard API: one
 * request at a time over libcurl, JSON in and out, a bearer token from
 * TRAINYARD_TOKEN, and the one way the commands show a server's error.
 *
 * Thread-safety: one client per thread; curl_global_init() is main.c's,
 * once, before any client exists.
 */
#ifndef TY_CLI_CLIENT_H
#define TY_CLI_CLIENT_H

#include <jansson.h>
#include <stdio.h>

#include "err.h"

/* Where commands talk to when neither --server nor TRAINYARD_SERVER says. */
#define CLI_DEFAULT_SERVER "http://127.0.0.1:8080"
/* A reply larger than this is refused (the template list is ~60 KiB). */
#define CLI_MAX_REPLY (8 * 1024 * 1024)

struct cli_client;

/* The server to use: flag (may be NULL), else env_server (may be NULL or
 * empty), else CLI_DEFAULT_SERVER. Returns a borrowed pointer to one of them. */
const char *cli_server_url(const char *flag, const char *env_server);

/* A client of base_url (http:// or https://, no trailing path needed) with
 * token (may be NULL: no Authorization header) as "Bearer <token>". Both are
 * copied. RC_EINVAL (message on err) for a URL that is not http(s),
 * RC_ENOMEM. Free with cli_client_free(). */
enum rc cli_client_new(const char *base_url, const char *token, struct cli_client **out, FILE *err);

/* No-op on NULL; wipes the copy of the token. */
void cli_client_free(struct cli_client *c);

/* method "GET" or "POST" of path (starting with "/"), with body (borrowed,
 * may be NULL) as JSON. On RC_OK *status is the HTTP status and *resp the
 * parsed reply (new reference, NULL when the body was empty or not JSON).
 * RC_EUNAVAIL when the server could not be reached (the reason on err),
 * RC_ETOOBIG for a reply over CLI_MAX_REPLY, RC_ENOMEM. */
enum rc cli_client_request(struct cli_client *c, const char *method, const char *path,
                           const json_t *body, long *status /* out */, json_t **resp /* out */,
                           FILE *err);

/* Prints a refused request on err as one line:
 *   trainyard: WHAT: 400 invalid_argument: params.steps: must be from 1 to
 *   1000000 (got 0)
 * from the API's error shape {"error":{code,message,detail,field}}; a reply
 * without it is shown by its status alone. resp is borrowed, may be NULL. */
void cli_print_api_error(FILE *err, const char *what, long status, const json_t *resp);

#endif
