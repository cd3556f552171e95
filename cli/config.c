/*
 * config.c - the login file (config.h). The parser takes bytes, not a
 * FILE, so the fuzz target (tests/fuzz/fuzz_cli_config.c) drives exactly
 * what the CLI runs on a file it reads from disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client.h"
#include "config.h"
#include "crypto.h"
#include "table.h"

struct key {
    const char *name;
    size_t off, size;
};

static const struct key keys[] = {
    {"url", offsetof(struct cli_config, url), CLI_CONFIG_URL_MAX},
    {"token", offsetof(struct cli_config, token), CLI_CONFIG_TOKEN_MAX},
    {"token_id", offsetof(struct cli_config, token_id), sizeof(((struct cli_config *)0)->token_id)},
    {"user", offsetof(struct cli_config, user), sizeof(((struct cli_config *)0)->user)},
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static int is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r';
}

enum rc cli_config_parse(const char *text, size_t len, struct cli_config *c, int *line,
                         enum cli_msg *why)
{
    size_t pos = 0;
    int seen[NKEYS] = {0};

    memset(c, 0, sizeof(*c));
    *line = 0;
    *why = M_CFG_SYNTAX;
    if (len > CLI_CONFIG_MAX_BYTES) {
        *why = M_CFG_LONG;
        return RC_ETOOBIG;
    }
    while (pos < len) {
        const char *s = text + pos, *nl = memchr(s, '\n', len - pos), *eq;
        size_t n = nl ? (size_t)(nl - s) : len - pos, kl, vl, k;

        pos += n + (nl ? 1 : 0);
        ++*line;
        if (!cli_utf8_valid(s, n)) {
            *why = M_CFG_TEXT;
            return RC_EINVAL;
        }
        while (n > 0 && is_space(s[0])) {
            s++;
            n--;
        }
        while (n > 0 && is_space(s[n - 1]))
            n--;
        if (n == 0 || s[0] == '#')
            continue;
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)s[i] < 0x20 && s[i] != '\t') {
                *why = M_CFG_TEXT;
                return RC_EINVAL;
            }
        if ((eq = memchr(s, '=', n)) == NULL || eq == s) {
            *why = M_CFG_SYNTAX;
            return RC_EINVAL;
        }
        kl = (size_t)(eq - s);
        while (kl > 0 && is_space(s[kl - 1]))
            kl--;
        for (k = 0; k < NKEYS; k++)
            if (strlen(keys[k].name) == kl && memcmp(keys[k].name, s, kl) == 0)
                break;
        if (k == NKEYS) {
            *why = M_CFG_KEY;
            return RC_EINVAL;
        }
        if (seen[k]++) {
            *why = M_CFG_DUP;
            return RC_EINVAL;
        }
        eq++;
        vl = n - (size_t)(eq - s);
        while (vl > 0 && is_space(eq[0])) {
            eq++;
            vl--;
        }
        if (vl >= keys[k].size) {
            *why = M_CFG_LONG;
            return RC_EINVAL;
        }
        memcpy((char *)c + keys[k].off, eq, vl);
        ((char *)c + keys[k].off)[vl] = '\0';
    }
    *line = 0;
    return RC_OK;
}

enum rc cli_config_format(const struct cli_config *c, char *buf, size_t n)
{
    size_t used = 0;
    int w;

    w = snprintf(buf, n,
                 "# trainyard login: written by 'trainyard login', removed by "
                 "'trainyard logout'. The token is a secret.\n");
    if (w < 0 || (size_t)w >= n)
        return RC_ETOOBIG;
    used = (size_t)w;
    for (size_t k = 0; k < NKEYS; k++) {
        const char *v = (const char *)c + keys[k].off;
        if (v[0] == '\0')
            continue;
        /* What the parser takes back: text, tabs included. */
        for (const char *q = v; *q != '\0'; q++)
            if ((unsigned char)*q < 0x20 && *q != '\t')
                return RC_EINVAL;
        w = snprintf(buf + used, n - used, "%s=%s\n", keys[k].name, v);
        if (w < 0 || (size_t)w >= n - used)
            return RC_ETOOBIG;
        used += (size_t)w;
    }
    return RC_OK;
}

enum rc cli_config_path(char *buf, size_t n, char *dir, size_t dirn)
{
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    char d[4096];
    int w;

    if (xdg != NULL && xdg[0] == '/')
        w = snprintf(d, sizeof(d), "%s/trainyard", xdg);
    else if (home != NULL && home[0] != '\0')
        w = snprintf(d, sizeof(d), "%s/.config/trainyard", home);
    else
        return RC_ENOTFOUND;
    if (w < 0 || (size_t)w >= sizeof(d))
        return RC_ETOOBIG;
    w = snprintf(buf, n, "%s/config", d);
    if (w < 0 || (size_t)w >= n)
        return RC_ETOOBIG;
    if (dir != NULL && (size_t)snprintf(dir, dirn, "%s", d) >= dirn)
        return RC_ETOOBIG;
    return RC_OK;
}

void cli_config_wipe(struct cli_config *c)
{
    crypto_wipe(c->token, sizeof(c->token));
}

enum rc cli_config_load(struct cli_config *c, FILE *err)
{
    enum rc rc = RC_EUNAVAIL;
    char path[4200], *text = NULL;
    struct stat st;
    ssize_t got;
    size_t len = 0;
    int fd = -1, line = 0;
    enum cli_msg why;

    memset(c, 0, sizeof(*c));
    if ((rc = cli_config_path(path, sizeof(path), NULL, 0)) != RC_OK)
        return RC_ENOTFOUND; /* nowhere to look: as good as no file */
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
        if (errno == ENOENT)
            return RC_ENOTFOUND;
        cli_errf(err, M_READ_FILE, path, strerror(errno));
        return errno == ELOOP ? RC_EPERM : RC_EUNAVAIL;
    }
    rc = RC_EPERM;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        cli_errf(err, M_READ_FILE, path, "not a regular file of this user");
        goto out;
    }
    if ((st.st_mode & 077) != 0) {
        cli_errf(err, M_CFG_MODE, path, (unsigned)(st.st_mode & 0777), path);
        goto out;
    }
    rc = RC_ENOMEM;
    if ((text = malloc(CLI_CONFIG_MAX_BYTES + 1)) == NULL) {
        cli_errf(err, M_OOM);
        goto out;
    }
    while ((got = read(fd, text + len, CLI_CONFIG_MAX_BYTES + 1 - len)) > 0 &&
           (len += (size_t)got) <= CLI_CONFIG_MAX_BYTES)
        ;
    if (got < 0) {
        cli_errf(err, M_READ_FILE, path, strerror(errno));
        rc = RC_EUNAVAIL;
        goto out;
    }
    if ((rc = cli_config_parse(text, len, c, &line, &why)) != RC_OK) {
        cli_errf(err, M_CFG_LINE, path, line, cli_msg(why));
        cli_config_wipe(c);
        rc = RC_EINVAL;
    }
out:
    if (text != NULL) {
        crypto_wipe(text, CLI_CONFIG_MAX_BYTES + 1);
        free(text);
    }
    close(fd);
    return rc;
}

/* mkdir d with mode 0700 unless it exists; an existing one of ours is
 * narrowed to 0700 (it holds a secret). */
static int make_dir(const char *d)
{
    struct stat st;

    if (mkdir(d, 0700) == 0)
        return 0;
    if (errno != EEXIST || lstat(d, &st) != 0 || !S_ISDIR(st.st_mode))
        return -1;
    if (st.st_uid == geteuid() && (st.st_mode & 077) != 0 && chmod(d, 0700) != 0)
        return -1;
    return 0;
}

enum rc cli_config_save(const struct cli_config *c, char *out_path, size_t on, FILE *err)
{
    enum rc rc;
    char path[4200], dir[4200], parent[4200], tmp[4300], text[4096];
    char *slash;
    size_t len, off = 0;
    int fd = -1;

    if ((rc = cli_config_path(path, sizeof(path), dir, sizeof(dir))) != RC_OK) {
        cli_errf(err, M_NO_HOME);
        return rc;
    }
    if ((rc = cli_config_format(c, text, sizeof(text))) != RC_OK) {
        cli_errf(err, M_WRITE_FILE, path, "a value is too long or holds a control character");
        return rc;
    }
    len = strlen(text);
    /* ~/.config may not exist yet: make it (only it, not $HOME). */
    snprintf(parent, sizeof(parent), "%s", dir);
    if ((slash = strrchr(parent, '/')) != NULL && slash != parent) {
        *slash = '\0';
        (void)make_dir(parent);
    }
    rc = RC_EUNAVAIL;
    if (make_dir(dir) != 0) {
        cli_errf(err, M_WRITE_FILE, dir, strerror(errno));
        goto out;
    }
    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0) {
        cli_errf(err, M_WRITE_FILE, tmp, strerror(errno));
        goto out;
    }
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    if (off < len || fchmod(fd, 0600) != 0 || fsync(fd) != 0) {
        cli_errf(err, M_WRITE_FILE, tmp, strerror(errno));
        unlink(tmp);
        goto out;
    }
    if (rename(tmp, path) != 0) {
        cli_errf(err, M_WRITE_FILE, path, strerror(errno));
        unlink(tmp);
        goto out;
    }
    if (out_path != NULL)
        snprintf(out_path, on, "%s", path);
    rc = RC_OK;
out:
    crypto_wipe(text, sizeof(text));
    if (fd >= 0)
        close(fd);
    return rc;
}

enum rc cli_config_remove(FILE *err)
{
    char path[4200];

    if (cli_config_path(path, sizeof(path), NULL, 0) != RC_OK)
        return RC_ENOTFOUND;
    if (unlink(path) == 0)
        return RC_OK;
    if (errno == ENOENT)
        return RC_ENOTFOUND;
    cli_errf(err, M_WRITE_FILE, path, strerror(errno));
    return RC_EUNAVAIL;
}

/* The two URLs name the same server (trailing slashes aside). */
static int same_server(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);

    while (na > 0 && a[na - 1] == '/')
        na--;
    while (nb > 0 && b[nb - 1] == '/')
        nb--;
    return na == nb && strncmp(a, b, na) == 0;
}

enum rc cli_config_resolve(const char *flag, char *url, size_t un, char *token, size_t tn,
                           FILE *err)
{
    const char *env_url = getenv("TRAINYARD_URL"), *env_old = getenv("TRAINYARD_SERVER");
    const char *env_tok = getenv("TRAINYARD_TOKEN"), *u;
    struct cli_config c;
    enum rc rc = RC_OK;
    int have = 0;

    int url_given = (flag != NULL && flag[0] != '\0') || (env_url != NULL && env_url[0] != '\0') ||
                    (env_old != NULL && env_old[0] != '\0');
    int tok_given = env_tok != NULL && env_tok[0] != '\0';

    token[0] = '\0';
    memset(&c, 0, sizeof(c));
    /* The file only when it has something to give: with both from the
     * environment, a broken login file does not stop a pipeline. */
    if (!url_given || !tok_given) {
        rc = cli_config_load(&c, err);
        if (rc != RC_OK && rc != RC_ENOTFOUND)
            return rc;
        have = rc == RC_OK;
        rc = RC_OK;
    }
    if (flag != NULL && flag[0] != '\0')
        u = flag;
    else if (env_url != NULL && env_url[0] != '\0')
        u = env_url;
    else if (env_old != NULL && env_old[0] != '\0')
        u = env_old;
    else if (have && c.url[0] != '\0')
        u = c.url;
    else
        u = CLI_DEFAULT_SERVER;
    snprintf(url, un, "%s", u);
    if (tok_given)
        snprintf(token, tn, "%s", env_tok);
    else if (have && c.token[0] != '\0' && same_server(c.url, url))
        snprintf(token, tn, "%s", c.token);
    cli_config_wipe(&c);
    return rc;
}
