/*
 * join.c - node.json and POST join (see join.h).
 */
#include "join.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crypto.h"
#include "log.h"
#include "state.h"

void wrk_join_guess_addr(char *out, size_t size)
{
    struct ifaddrs *ifa = NULL;
    snprintf(out, size, "127.0.0.1");
    if (getifaddrs(&ifa) != 0)
        return;
    for (struct ifaddrs *i = ifa; i != NULL; i = i->ifa_next) {
        if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET)
            continue;
        const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)i->ifa_addr;
        if ((ntohl(sin->sin_addr.s_addr) >> 24) == 127)
            continue;
        inet_ntop(AF_INET, &sin->sin_addr, out, (socklen_t)size);
        break;
    }
    freeifaddrs(ifa);
}

/* Drop trailing white space of out[0..len) and check what is left. */
static enum rc token_check(char *out, size_t len, const char *from, struct err *e)
{
    while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == '\r' || out[len - 1] == ' ' ||
                       out[len - 1] == '\t'))
        len--;
    out[len] = '\0';
    if (len == 0)
        return err_set(e, RC_EINVAL, NULL, "the join token of %s is empty", from);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)out[i] <= ' ' || (unsigned char)out[i] >= 0x7f)
            return err_set(e, RC_EINVAL, NULL,
                           "the join token of %s holds a space or a control character", from);
    return RC_OK;
}

static enum rc token_from_file(const char *path, char *out, size_t size, struct err *e)
{
    enum rc rc = RC_EPERM;
    struct stat st;
    size_t len = 0;
    ssize_t got;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

    if (fd < 0)
        return err_set(e, errno == ELOOP ? RC_EPERM : RC_EUNAVAIL, NULL,
                       "cannot read join token file %s: %s", path,
                       errno == ELOOP ? "it is a symbolic link" : strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_uid != geteuid() && st.st_uid != 0)) {
        err_set(e, rc, NULL, "join token file %s is not a regular file of this user or root", path);
        goto out;
    }
    if ((st.st_mode & 077) != 0) {
        err_set(e, rc, NULL,
                "join token file %s is open to group or others (mode %03o): the token is a "
                "secret, chmod 600 %s",
                path, (unsigned)(st.st_mode & 0777), path);
        goto out;
    }
    while ((got = read(fd, out + len, size - len)) > 0 && (len += (size_t)got) < size)
        ;
    if (got < 0) {
        rc = err_set(e, RC_EUNAVAIL, NULL, "cannot read join token file %s: %s", path,
                     strerror(errno));
        goto out;
    }
    if (len >= size) {
        rc = err_set(e, RC_EINVAL, NULL, "join token file %s is longer than %zu bytes", path,
                     size - 1);
        goto out;
    }
    rc = token_check(out, len, path, e);
out:
    if (rc != RC_OK)
        crypto_wipe(out, size);
    close(fd);
    return rc;
}

enum rc wrk_join_token_load(const char *path, char *out, size_t size, struct err *e)
{
    char *env = getenv("TRAINYARD_JOIN_TOKEN");
    enum rc rc = RC_ENOTFOUND;

    if (path != NULL)
        rc = token_from_file(path, out, size, e);
    else if (env == NULL || env[0] == '\0')
        rc = RC_ENOTFOUND; /* empty: a compose file's ${TRAINYARD_JOIN_TOKEN:-} once joined */
    else if (strlen(env) >= size)
        rc = err_set(e, RC_EINVAL, NULL, "TRAINYARD_JOIN_TOKEN is longer than %zu bytes", size - 1);
    else {
        memcpy(out, env, strlen(env) + 1);
        rc = token_check(out, strlen(out), "TRAINYARD_JOIN_TOKEN", e);
    }
    /* The environment block at start is what /proc/PID/environ shows:
     * unsetenv() alone would leave the text there. */
    if (env != NULL) {
        crypto_wipe(env, strlen(env));
        unsetenv("TRAINYARD_JOIN_TOKEN");
    }
    return rc;
}

static int load_node(struct wrk_agent *a)
{
    json_error_t jerr;
    json_t *o = json_load_file(a->node_path, JSON_REJECT_DUPLICATES, &jerr);
    const char *id = json_string_value(json_object_get(o, "node_id"));
    const char *cred = json_string_value(json_object_get(o, "credential"));
    const char *srv = json_string_value(json_object_get(o, "server"));
    int ok = 0;

    if (id != NULL && cred != NULL && strlen(id) < sizeof(a->node_id) && cred[0] != '\0') {
        snprintf(a->node_id, sizeof(a->node_id), "%s", id);
        a->credential = strdup(cred);
        ok = a->credential != NULL;
        if (srv != NULL && strcmp(srv, a->cfg->server) != 0)
            LOG_WARN("agent", "node.json was written for another server", "server=%s", srv);
    }
    json_decref(o);
    return ok;
}

int wrk_join(struct wrk_agent *a)
{
    json_t *body, *resp = NULL;
    long status = 0;
    int ret = -1;
    const char *id, *cred;
    char *text = NULL;

    body = json_pack("{s:s, s:s, s:s, s:s, s:O}", "join_token", a->cfg->join_token, "name",
                     a->cfg->name ? a->cfg->name : a->hostname, "hostname", a->hostname, "addr",
                     a->addr, "labels", a->labels);
    if (body == NULL)
        return -1;
    if (wrk_http_request(a->http, "POST", "/api/v1/agent/join", body, WRK_REQ_TIMEOUT_MS, &status,
                         &resp) != RC_OK)
        goto out;
    if (status != 200 && status != 201) {
        const char *m =
            json_string_value(json_object_get(json_object_get(resp, "error"), "message"));
        LOG_ERROR("agent", "join refused", "status=%ld error=\"%.200s\"", status, m ? m : "");
        ret = status >= 500 ? -1 : 0;
        goto out;
    }
    id = json_string_value(json_object_get(resp, "node_id"));
    cred = json_string_value(json_object_get(resp, "credential"));
    if (id == NULL || cred == NULL || strlen(id) >= sizeof(a->node_id) || cred[0] == '\0') {
        LOG_ERROR("agent", "join answer without node_id or credential", "");
        ret = 0;
        goto out;
    }
    json_decref(body);
    body =
        json_pack("{s:s, s:s, s:s}", "server", a->cfg->server, "node_id", id, "credential", cred);
    text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (text == NULL || wrk_file_write_atomic(a->node_path, text, 0600) != RC_OK) {
        LOG_ERROR("agent", "cannot write node.json", "path=%s", a->node_path);
        ret = 0;
        goto out;
    }
    snprintf(a->node_id, sizeof(a->node_id), "%s", id);
    crypto_free_secret(a->credential); /* a re-join replaces a refused credential */
    a->credential = strdup(cred);
    ret = a->credential != NULL ? 1 : 0;
    LOG_INFO("agent", "joined", "node_id=%s", a->node_id);
out:
    crypto_free_secret(text); /* node.json's text: the credential */
    json_decref(body);
    json_decref(resp);
    return ret;
}

int wrk_join_node(struct wrk_agent *a)
{
    if (load_node(a))
        return 0;
    for (;;) {
        int r;
        if (a->cfg->join_token == NULL) {
            LOG_ERROR("agent",
                      "no node.json and no join token (--join-token-file or TRAINYARD_JOIN_TOKEN)",
                      "path=%s", a->node_path);
            return -1;
        }
        r = wrk_join(a);
        if (r == 0)
            return -1;
        if (r == 1)
            return 0;
        for (int t = 0; t < 2000; t += 100) {
            if (wrk_agent_stopping(a))
                return -1;
            wrk_sleep_ms(100);
        }
    }
}
