/*
 * cmd_chat.c - a conversation with a deployment through the inference
 * gateway (docs/serving.md, "The gateway"):
 *
 *   trainyard chat DEPLOYMENT [-m MESSAGE] [--key KEY] [--server URL]
 *
 * The key is a gateway key of the deployment (--key, else the environment's
 * TRAINYARD_API_KEY), not the user's API token. Each turn is one streamed
 * POST /v1/chat/completions with the conversation so far; the answer is
 * printed as its pieces arrive, read with the CLI's SSE reader (sse.h).
 * With -m: that one message, its answer, and exit. Without: a line read
 * from stdin is a message, until end of input. Exit codes: cli.h.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "client.h"
#include "config.h"
#include "crypto.h"
#include "msg.h"
#include "sse.h"

#define CHAT_IDLE_S 120       /* a replica silent this long mid-answer is given up */
#define CHAT_KEEP_MESSAGES 40 /* the conversation sent: its last messages */
#define CHAT_MAX_ANSWER (1024 * 1024)

struct chat_ctx {
    struct cli_sse sse;
    FILE *out;
    char *answer; /* owned: the answer so far */
    size_t len, cap;
    int done; /* [DONE] came */
    int bad;  /* a piece that is not an answer's chunk, or an error event */
};

static void chat_usage(FILE *f)
{
    fprintf(f, "usage: trainyard chat DEPLOYMENT [-m MESSAGE] [--key KEY] [--server URL]\n"
               "Chat with a deployment through the gateway, the answer streamed as it comes.\n"
               "The key is one of the deployment's gateway keys (else TRAINYARD_API_KEY).\n"
               "With -m, one message and its answer; else one message per line of input.\n");
}

static int append(struct chat_ctx *x, const char *s, size_t n)
{
    if (x->len + n + 1 > x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 256;
        char *p;
        while (cap < x->len + n + 1)
            cap *= 2;
        if (cap > CHAT_MAX_ANSWER || (p = realloc(x->answer, cap)) == NULL)
            return -1;
        x->answer = p;
        x->cap = cap;
    }
    memcpy(x->answer + x->len, s, n);
    x->len += n;
    x->answer[x->len] = '\0';
    return 0;
}

static int on_event(const char *event, const char *id, const char *data, void *ud)
{
    struct chat_ctx *x = ud;
    json_t *chunk, *choice;
    const char *piece;

    (void)event;
    (void)id;
    if (strcmp(data, "[DONE]") == 0) {
        x->done = 1;
        return -1;
    }
    if ((chunk = json_loads(data, 0, NULL)) == NULL || json_object_get(chunk, "error") != NULL) {
        json_decref(chunk);
        x->bad = 1;
        return -1;
    }
    choice = json_array_get(json_object_get(chunk, "choices"), 0);
    piece = json_string_value(json_object_get(json_object_get(choice, "delta"), "content"));
    if (piece != NULL && piece[0] != '\0') {
        fputs(piece, x->out);
        fflush(x->out);
        if (append(x, piece, strlen(piece)) != 0)
            x->bad = 1;
    }
    json_decref(chunk);
    return x->bad ? -1 : 0;
}

static int on_bytes(const char *data, size_t n, void *ud)
{
    struct chat_ctx *x = ud;
    enum rc rc = cli_sse_feed(&x->sse, data, n, on_event, x);

    if (rc == RC_ETOOBIG || rc == RC_ENOMEM)
        x->bad = 1;
    return rc == RC_OK ? 0 : -1;
}

/* One turn: messages (borrowed) to deployment name; the answer printed and
 * appended to messages. Returns an exit code. */
static int turn(struct cli_client *c, const char *name, json_t *messages, FILE *out, FILE *err)
{
    struct chat_ctx x = {.out = out};
    json_t *body, *resp = NULL, *sent;
    long status = 0;
    size_t n = json_array_size(messages);
    int code = CLI_EXIT_FAIL;
    enum rc rc;

    sent = n > CHAT_KEEP_MESSAGES ? json_array() : json_incref(messages);
    for (size_t i = n - CHAT_KEEP_MESSAGES; sent != NULL && n > CHAT_KEEP_MESSAGES && i < n; i++)
        json_array_append(sent, json_array_get(messages, i));
    body = json_pack("{s:s,s:o,s:b}", "model", name, "messages", sent, "stream", 1);
    if (body == NULL) {
        cli_errf(err, M_OOM);
        return CLI_EXIT_FAIL;
    }
    cli_sse_init(&x.sse);
    rc = cli_client_stream_post(c, "/v1/chat/completions", body, CHAT_IDLE_S, on_bytes, &x, &status,
                                &resp, err);
    if (rc == RC_OK && (status < 200 || status >= 300)) {
        code = cli_refused(err, M_W_CHAT, status, resp);
    } else if (x.bad) {
        fputc('\n', out);
        cli_errf(err, M_BAD_REPLY);
    } else if (rc != RC_OK || !x.done) {
        fputc('\n', out);
        cli_errf(err, M_CHAT_CUT);
        code = rc != RC_OK ? cli_exit_for_rc(rc) : CLI_EXIT_UNAVAIL;
    } else {
        fputc('\n', out);
        json_array_append_new(messages, json_pack("{s:s,s:s}", "role", "assistant", "content",
                                                  x.answer ? x.answer : ""));
        code = CLI_EXIT_OK;
    }
    fflush(out);
    cli_sse_cleanup(&x.sse);
    free(x.answer);
    json_decref(resp);
    json_decref(body);
    return code;
}

/* Lines of stdin, each a message, until end of input. */
static int interactive(struct cli_client *c, const char *name, json_t *messages, FILE *out,
                       FILE *err)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int tty = isatty(STDIN_FILENO), code = CLI_EXIT_OK;

    for (;;) {
        if (tty) {
            fputs("> ", out);
            fflush(out);
        }
        if ((n = getline(&line, &cap, stdin)) < 0)
            break;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n == 0)
            continue;
        json_array_append_new(messages,
                              json_pack("{s:s,s:s%}", "role", "user", "content", line, (size_t)n));
        code = turn(c, name, messages, out, err);
        if (code != CLI_EXIT_OK && !tty)
            break;
    }
    free(line);
    return code;
}

int cli_cmd_chat(int argc, char **argv, FILE *out, FILE *err)
{
    struct cli_common co = {0};
    const char *name = NULL, *message = NULL, *key = NULL;
    char url[CLI_CONFIG_URL_MAX], token[CLI_CONFIG_TOKEN_MAX];
    struct cli_client *c = NULL;
    json_t *messages = NULL;
    int r, code;

    for (int i = 1; i < argc; i++) {
        if ((r = cli_common_opt(argc, argv, &i, &co, err)) != 0 ||
            (r = cli_opt(argc, argv, &i, "-m", &message, err)) != 0 ||
            (r = cli_opt(argc, argv, &i, "--message", &message, err)) != 0 ||
            (r = cli_opt(argc, argv, &i, "--key", &key, err)) != 0) {
            if (r < 0)
                return cli_usage_error(err, "chat");
        } else if (argv[i][0] != '-' && name == NULL) {
            name = argv[i];
        } else {
            cli_bad_arg(argv[i], err);
            return cli_usage_error(err, "chat");
        }
    }
    if (co.help) {
        chat_usage(out);
        return CLI_EXIT_OK;
    }
    if (name == NULL) {
        chat_usage(err);
        return CLI_EXIT_USAGE;
    }
    if (key == NULL)
        key = getenv("TRAINYARD_API_KEY");
    if (key == NULL || key[0] == '\0') {
        cli_errf(err, M_CHAT_NO_KEY);
        return CLI_EXIT_USAGE;
    }
    /* The server as every command finds it; the user's token stays home. */
    if (cli_config_resolve(co.server, url, sizeof(url), token, sizeof(token), err) != RC_OK) {
        crypto_wipe(token, sizeof(token));
        return CLI_EXIT_FAIL;
    }
    crypto_wipe(token, sizeof(token));
    if (cli_client_new(url, key, &c, err) != RC_OK)
        return CLI_EXIT_USAGE;
    if ((messages = json_array()) == NULL) {
        cli_client_free(c);
        cli_errf(err, M_OOM);
        return CLI_EXIT_FAIL;
    }
    if (message != NULL) {
        json_array_append_new(messages, json_pack("{s:s,s:s}", "role", "user", "content", message));
        code = turn(c, name, messages, out, err);
    } else {
        code = interactive(c, name, messages, out, err);
    }
    json_decref(messages);
    cli_client_free(c);
    return code;
}
