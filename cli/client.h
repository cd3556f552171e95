/*
 * client.h - the command line's HTTP client of the trainyard API: one
 * request at a time over libcurl, JSON in and out (or a stream: logs -f,
 * audit export), a bearer token (config.h says whose), and the one way the
 * commands show a server's error and turn it into an exit code.
 *
 * Thread-safety: one client per thread; curl_global_init() is main.c's,
 * once, before any client exists.
 */
#ifndef TY_CLI_CLIENT_H
#define TY_CLI_CLIENT_H

#include <jansson.h>
#include <stdio.h>

#include "err.h"

/* Where commands talk to when neither --server, TRAINYARD_URL nor the
 * login file says. */
#define CLI_DEFAULT_SERVER "http://127.0.0.1:8080"
/* A reply larger than this is refused (the template list is ~60 KiB). */
#define CLI_MAX_REPLY (8 * 1024 * 1024)

struct cli_client;

/* A client of base_url (http:// or https://, no trailing path needed) with
 * token (may be NULL: no Authorization header) as "Bearer <token>". Both are
 * copied. RC_EINVAL (message on err) for a URL that is not http(s),
 * RC_ENOMEM. Free with cli_client_free(). */
enum rc cli_client_new(const char *base_url, const char *token, struct cli_client **out, FILE *err);

/* No-op on NULL; wipes the copy of the token. */
void cli_client_free(struct cli_client *c);

/* A client of the server and token that cli_config_resolve() picks for
 * flag (--server, may be NULL). Returns CLI_EXIT_OK with *out set (free
 * with cli_client_free()), else an exit code after a message on err. */
int cli_connect(const char *flag, struct cli_client **out, FILE *err);

/* The server's URL (borrowed, valid while c lives). */
const char *cli_client_url(const struct cli_client *c);

/* Sends cookie ("name=value", may be NULL) and csrf (X-CSRF-Token, may be
 * NULL) with later requests: a browser session, for login. Copied. */
enum rc cli_client_session(struct cli_client *c, const char *cookie, const char *csrf) TY_WUR;

/* Sends "Idempotency-Key: key" with later requests (copied; NULL stops it). */
enum rc cli_client_idempotency_key(struct cli_client *c, const char *key) TY_WUR;

/* The "name=value" of the last Set-Cookie the server sent (borrowed,
 * valid until the next request), or NULL. */
const char *cli_client_set_cookie(const struct cli_client *c);

/* method "GET", "POST" or "DELETE" of path (starting with "/"), with body (borrowed,
 * may be NULL) as JSON. On RC_OK *status is the HTTP status and *resp the
 * parsed reply (new reference, NULL when the body was empty or not JSON).
 * RC_EUNAVAIL when the server could not be reached (the reason on err),
 * RC_ETOOBIG for a reply over CLI_MAX_REPLY, RC_ENOMEM. */
enum rc cli_client_request(struct cli_client *c, const char *method, const char *path,
                           const json_t *body, long *status /* out */, json_t **resp /* out */,
                           FILE *err);

/* Called with each piece of a streamed 2xx reply; returns 0 to go on, -1
 * to stop the transfer (the stream then ends with RC_OK). */
typedef int (*cli_stream_fn)(const char *data, size_t n, void *ud);

/* GET path and hand a 2xx body to fn as it arrives, without a total time
 * limit (a transfer idle for idle_s seconds is cut: RC_EUNAVAIL). last_id
 * (may be NULL) is sent as Last-Event-ID. *status is the HTTP status; a
 * reply that is not 2xx is gathered (bounded) and parsed into *resp (new
 * reference or NULL) instead. RC_EUNAVAIL when the server could not be
 * reached or the stream was cut (the reason on err unless quiet),
 * RC_ENOMEM. */
enum rc cli_client_stream(struct cli_client *c, const char *path, const char *last_id, long idle_s,
                          cli_stream_fn fn, void *ud, long *status /* out */,
                          json_t **resp /* out */, FILE *err);

/* As cli_client_stream(), but POST body (borrowed) as JSON: a streamed
 * answer of the inference gateway. */
enum rc cli_client_stream_post(struct cli_client *c, const char *path, const json_t *body,
                               long idle_s, cli_stream_fn fn, void *ud, long *status /* out */,
                               json_t **resp /* out */, FILE *err);

/* The exit code (cli.h) for a request the server refused with status and
 * error body resp (borrowed, may be NULL): 401 and 403 permission_denied
 * CLI_EXIT_AUTH, 404 CLI_EXIT_NOTFOUND, 403 policy_violation and 409
 * CLI_EXIT_REFUSED, 5xx CLI_EXIT_UNAVAIL, others CLI_EXIT_FAIL. */
int cli_exit_for_http(long status, const json_t *resp);

/* The exit code for an enum rc of cli_client_request() and friends:
 * RC_EUNAVAIL CLI_EXIT_UNAVAIL, RC_EINVAL CLI_EXIT_USAGE, others
 * CLI_EXIT_FAIL. */
int cli_exit_for_rc(enum rc rc);

/* cli_print_api_error() with the catalogue's text of what, then returns
 * cli_exit_for_http(). */
int cli_refused(FILE *err, int what /* enum cli_msg */, long status, const json_t *resp);

/* Prints a refused request on err as one line:
 *   trainyard: WHAT: 400 invalid_argument: params.steps: must be from 1 to
 *   1000000 (got 0)
 * from the API's error shape {"error":{code,message,detail,field}}; a reply
 * without it is shown by its status alone. resp is borrowed, may be NULL. */
void cli_print_api_error(FILE *err, const char *what, long status, const json_t *resp);

/* A path with one escaped segment: fmt holds one %s for seg, which is URL
 * escaped. Into buf (size n); RC_ETOOBIG or RC_ENOMEM. */
enum rc cli_path(char *buf, size_t n, const char *fmt, const char *seg) TY_WUR;

/* Prints v as compact JSON and a newline on out; -1 on failure. */
int cli_print_json(FILE *out, const json_t *v);

#endif
