/*
 * cmd_login.c - "trainyard login" and "trainyard logout".
 *
 * login signs in with a username and password (POST /api/v1/auth/login,
 * a browser session), uses that session once to create an API token
 * (POST /api/v1/tokens, with the session's CSRF token), ends the session
 * (POST /api/v1/auth/logout) and stores the server's URL and the token in
 * the login file (config.h, mode 0600). The password is read from the
 * terminal without echo, or as the first line of stdin when stdin is not
 * a terminal (pipelines: `printf %s "$PW" | trainyard login URL --user U`);
 * it is never an argument (argv is visible to every user of the machine).
 *
 * Signing in again to the same server revokes the token the old login
 * file held (best effort), so that logins do not pile up tokens.
 *
 * logout revokes the stored token (DELETE /api/v1/tokens/{id}) and
 * removes the file; the file goes even when the server cannot be told.
 *
 *   trainyard login [URL] [--user NAME] [--json]
 *   trainyard logout [--json]
 */
#include <errno.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "client.h"
#include "config.h"
#include "crypto.h"
#include "msg.h"

#define PASSWORD_MAX 1024

static void login_usage(FILE *f)
{
    fprintf(f, "usage: trainyard login [URL] [--user NAME] [--json]\n"
               "Sign in to the server at URL (else $TRAINYARD_URL, else the stored one, else\n"
               "" CLI_DEFAULT_SERVER "), create an API token and store both in\n"
               "~/.config/trainyard/config (mode 0600). The password is asked without echo,\n"
               "or read as the first line of stdin when stdin is not a terminal.\n");
}

static void logout_usage(FILE *f)
{
    fprintf(f, "usage: trainyard logout [--json]\n"
               "Revoke the stored API token on its server and remove the login file.\n");
}

/* One line from fd 0 into buf (size n) without its line end, after
 * prompt (may be NULL) on err. With no_echo on a terminal, echo goes off
 * before the prompt is shown (TCSANOW: what was typed ahead stays), so a
 * password typed as soon as the prompt appears is never echoed nor lost.
 * -1 on EOF before anything, or an error. */
static int read_line(char *buf, size_t n, int no_echo, const char *prompt, FILE *err)
{
    struct termios old, quiet;
    int tty = isatty(STDIN_FILENO), restore = 0;
    size_t len = 0;
    ssize_t r = 0;
    char ch;

    if (tty && no_echo && tcgetattr(STDIN_FILENO, &old) == 0) {
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        restore = tcsetattr(STDIN_FILENO, TCSANOW, &quiet) == 0;
    }
    if (prompt != NULL && tty) {
        fputs(prompt, err);
        fflush(err);
    }
    /* One byte at a time: what follows the line stays unread. */
    while (len + 1 < n && (r = read(STDIN_FILENO, &ch, 1)) == 1 && ch != '\n')
        buf[len++] = ch;
    if (r < 0 && errno == EINTR)
        r = 0;
    if (restore) {
        tcsetattr(STDIN_FILENO, TCSANOW, &old);
        fputc('\n', err);
    }
    while (len > 0 && buf[len - 1] == '\r')
        len--;
    buf[len] = '\0';
    return len == 0 && r <= 0 ? -1 : 0;
}

/* The session of a sign-in: 0, or an exit code after a message. */
static int sign_in(struct cli_client *c, const char *user, const char *password, char *role,
                   size_t rn, FILE *err)
{
    json_t *body = json_pack("{s:s,s:s}", "username", user, "password", password), *resp = NULL;
    const char *csrf, *cookie;
    long status = 0;
    int code = CLI_EXIT_FAIL;
    enum rc rc;

    if (body == NULL) {
        cli_errf(err, M_OOM);
        return CLI_EXIT_FAIL;
    }
    rc = cli_client_request(c, "POST", "/api/v1/auth/login", body, &status, &resp, err);
    /* The body held the password: jansson keeps its own copy. */
    {
        json_t *pw = json_object_get(body, "password");
        if (pw != NULL && json_string_value(pw) != NULL)
            crypto_wipe((char *)json_string_value(pw), json_string_length(pw));
    }
    if (rc != RC_OK) {
        code = cli_exit_for_rc(rc);
        goto out;
    }
    if (status != 200) {
        code = cli_refused(err, M_W_LOGIN, status, resp);
        goto out;
    }
    csrf = json_string_value(json_object_get(resp, "csrf_token"));
    cookie = cli_client_set_cookie(c);
    if (csrf == NULL || cookie == NULL) {
        cli_errf(err, M_BAD_REPLY);
        goto out;
    }
    snprintf(role, rn, "%s",
             json_string_value(json_object_get(json_object_get(resp, "user"), "role"))
                 ? json_string_value(json_object_get(json_object_get(resp, "user"), "role"))
                 : "?");
    if (cli_client_session(c, cookie, csrf) != RC_OK) {
        cli_errf(err, M_OOM);
        goto out;
    }
    code = CLI_EXIT_OK;
out:
    json_decref(body);
    json_decref(resp);
    return code;
}

/* An API token for this machine, through the signed-in session. */
static int make_token(struct cli_client *c, struct cli_config *cfg, FILE *err)
{
    char host[64] = "", name[128];
    json_t *body, *resp = NULL, *ignored = NULL;
    long status = 0;
    int code = CLI_EXIT_FAIL;
    const char *tok, *id;
    enum rc rc;

    if (gethostname(host, sizeof(host) - 1) != 0)
        snprintf(host, sizeof(host), "?");
    snprintf(name, sizeof(name), "trainyard login (%s)", host);
    if ((body = json_pack("{s:s}", "name", name)) == NULL) {
        cli_errf(err, M_OOM);
        return CLI_EXIT_FAIL;
    }
    rc = cli_client_request(c, "POST", "/api/v1/tokens", body, &status, &resp, err);
    if (rc != RC_OK) {
        code = cli_exit_for_rc(rc);
        goto out;
    }
    if (status != 201) {
        code = cli_refused(err, M_W_TOKEN_CREATE, status, resp);
        goto out;
    }
    tok = json_string_value(json_object_get(resp, "token"));
    id = json_string_value(json_object_get(resp, "id"));
    if (tok == NULL || id == NULL || strlen(tok) >= sizeof(cfg->token) ||
        strlen(id) >= sizeof(cfg->token_id)) {
        cli_errf(err, M_BAD_REPLY);
        goto out;
    }
    snprintf(cfg->token, sizeof(cfg->token), "%s", tok);
    snprintf(cfg->token_id, sizeof(cfg->token_id), "%s", id);
    crypto_wipe((char *)tok, strlen(tok));
    /* The session was only the way to the token: end it (best effort). */
    (void)cli_client_request(c, "POST", "/api/v1/auth/logout", NULL, &status, &ignored, err);
    code = CLI_EXIT_OK;
out:
    json_decref(ignored);
    json_decref(body);
    json_decref(resp);
    return code;
}

/* Revokes the token of an earlier login to url, if the login file holds
 * one; nothing is said when it cannot (it may be revoked already). */
static void revoke_previous(const char *url)
{
    struct cli_config old;
    struct cli_client *c = NULL;
    json_t *resp = NULL;
    char path[128];
    long status = 0;
    FILE *quiet = fopen("/dev/null", "w");

    if (quiet == NULL)
        return;
    if (cli_config_load(&old, quiet) == RC_OK && old.token[0] != '\0' && old.token_id[0] != '\0' &&
        strcmp(old.url, url) == 0 && cli_client_new(old.url, old.token, &c, quiet) == RC_OK &&
        cli_path(path, sizeof(path), "/api/v1/tokens/%s", old.token_id) == RC_OK)
        (void)cli_client_request(c, "DELETE", path, NULL, &status, &resp, quiet);
    json_decref(resp);
    cli_client_free(c);
    cli_config_wipe(&old);
    fclose(quiet);
}

int cli_cmd_login(int argc, char **argv, FILE *out, FILE *err)
{
    struct cli_common co = {0};
    const char *user = NULL, *url_arg = NULL;
    char url[CLI_CONFIG_URL_MAX], ignored[CLI_CONFIG_TOKEN_MAX], ubuf[128], password[PASSWORD_MAX],
        role[32] = "", path[4200], line[5000];
    struct cli_config cfg;
    struct cli_client *c = NULL;
    int code = CLI_EXIT_USAGE, r;

    memset(&cfg, 0, sizeof(cfg));
    password[0] = '\0';
    for (int i = 1; i < argc; i++) {
        if ((r = cli_common_opt(argc, argv, &i, &co, err)) != 0 ||
            (r = cli_opt(argc, argv, &i, "--user", &user, err)) != 0) {
            if (r < 0)
                return cli_usage_error(err, "login");
        } else if (argv[i][0] != '-' && url_arg == NULL) {
            url_arg = argv[i];
        } else {
            cli_bad_arg(argv[i], err);
            return cli_usage_error(err, "login");
        }
    }
    if (co.help) {
        login_usage(out);
        return CLI_EXIT_OK;
    }
    if (url_arg == NULL)
        url_arg = co.server;
    /* The URL as every other command would pick it; a stored login that
     * does not parse must not block signing in again. */
    if (cli_config_resolve(url_arg, url, sizeof(url), ignored, sizeof(ignored), err) != RC_OK)
        snprintf(url, sizeof(url), "%s", url_arg ? url_arg : CLI_DEFAULT_SERVER);
    crypto_wipe(ignored, sizeof(ignored));
    if (strchr(url, '\n') != NULL || strchr(url, '\r') != NULL) {
        cli_errf(err, M_BAD_URL, url);
        goto out;
    }
    if ((r = cli_client_new(url, NULL, &c, err)) != RC_OK) {
        code = cli_exit_for_rc(r);
        goto out;
    }
    if (user == NULL) {
        if (!isatty(STDIN_FILENO)) {
            cli_errf(err, M_REQUIRED, "--user NAME");
            goto out;
        }
        if (read_line(ubuf, sizeof(ubuf), 0, cli_msg(M_PROMPT_USER), err) != 0 || ubuf[0] == '\0') {
            cli_errf(err, M_REQUIRED, "--user NAME");
            goto out;
        }
        user = ubuf;
    }
    cli_msgf(line, sizeof(line), M_PROMPT_PASSWORD, user, url);
    if (read_line(password, sizeof(password), 1, line, err) != 0 || password[0] == '\0') {
        cli_errf(err, M_NO_PASSWORD);
        goto out;
    }
    if ((code = sign_in(c, user, password, role, sizeof(role), err)) != CLI_EXIT_OK ||
        (code = make_token(c, &cfg, err)) != CLI_EXIT_OK)
        goto out;
    snprintf(cfg.url, sizeof(cfg.url), "%s", cli_client_url(c));
    snprintf(cfg.user, sizeof(cfg.user), "%s", user);
    revoke_previous(cfg.url);
    if (cli_config_save(&cfg, path, sizeof(path), err) != RC_OK) {
        code = CLI_EXIT_FAIL;
        goto out;
    }
    if (co.json) {
        json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s}", "url", cfg.url, "user", cfg.user, "role",
                              role, "token_id", cfg.token_id, "config", path);
        code = o != NULL && cli_print_json(out, o) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
        json_decref(o);
    } else {
        cli_msgf(line, sizeof(line), M_LOGIN_OK, cfg.url, cfg.user, role, path);
        fprintf(out, "%s\n", line);
        code = CLI_EXIT_OK;
    }
out:
    crypto_wipe(password, sizeof(password));
    cli_config_wipe(&cfg);
    cli_client_free(c);
    return code;
}

int cli_cmd_logout(int argc, char **argv, FILE *out, FILE *err)
{
    struct cli_common co = {0};
    struct cli_config cfg;
    struct cli_client *c = NULL;
    json_t *resp = NULL;
    char path[4200], rpath[128], line[5000];
    long status = 0;
    int code = CLI_EXIT_OK, r;
    enum rc rc;

    for (int i = 1; i < argc; i++)
        if ((r = cli_common_opt(argc, argv, &i, &co, err)) <= 0 || co.server != NULL) {
            if (r == 0 || co.server != NULL)
                cli_bad_arg(argv[i], err);
            return cli_usage_error(err, "logout");
        }
    if (co.help) {
        logout_usage(out);
        return CLI_EXIT_OK;
    }
    if (cli_config_path(path, sizeof(path), NULL, 0) != RC_OK)
        snprintf(path, sizeof(path), "~/.config/trainyard/config");
    rc = cli_config_load(&cfg, err);
    if (rc == RC_ENOTFOUND) {
        cli_errf(err, M_NOT_LOGGED_IN, path);
        return CLI_EXIT_OK;
    }
    /* A file that others could read is removed all the same: the token in
     * it is no secret any more, and logging out is what the user asked. */
    if (rc == RC_OK && cfg.token[0] != '\0' && cfg.token_id[0] != '\0' &&
        cli_client_new(cfg.url, cfg.token, &c, err) == RC_OK &&
        cli_path(rpath, sizeof(rpath), "/api/v1/tokens/%s", cfg.token_id) == RC_OK) {
        rc = cli_client_request(c, "DELETE", rpath, NULL, &status, &resp, err);
        if (rc != RC_OK)
            code = cli_exit_for_rc(rc);
        else if (status != 200 && status != 401) /* 401: revoked already */
            code = cli_refused(err, M_W_TOKEN_REVOKE, status, resp);
    } else {
        code = rc == RC_OK ? CLI_EXIT_FAIL : rc == RC_EPERM ? CLI_EXIT_AUTH : CLI_EXIT_FAIL;
    }
    if (cli_config_remove(err) == RC_EUNAVAIL)
        code = CLI_EXIT_FAIL;
    if (co.json) {
        json_t *o = json_pack("{s:s,s:b,s:s}", "url", cfg.url, "revoked", code == CLI_EXIT_OK,
                              "config", path);
        if (o == NULL || cli_print_json(out, o) != 0)
            code = CLI_EXIT_FAIL;
        json_decref(o);
    } else if (code == CLI_EXIT_OK) {
        cli_msgf(line, sizeof(line), M_LOGOUT_OK, cfg.url, path);
        fprintf(out, "%s\n", line);
    } else {
        cli_errf(err, M_LOGOUT_LOCAL, path);
    }
    cli_config_wipe(&cfg);
    json_decref(resp);
    cli_client_free(c);
    return code;
}
