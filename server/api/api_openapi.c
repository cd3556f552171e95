/*
 * api_openapi.c - see api_openapi.h.
 */
#include "api_openapi.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app.h"
#include "log.h"

/* cmake/embed.cmake's output for docs/openapi.json (server/CMakeLists.txt). */
struct ty_embedded {
    const char *name;
    const unsigned char *data;
    size_t len;
};
extern const struct ty_embedded ty_openapi[];

/* The reference page's largest file (swagger-ui-bundle.js) is about 1.5 MB. */
#define DOCS_MAX_FILE (16u << 20)

/* The page's files: the name in the URL, where it is under api_docs_dir. */
static const struct {
    const char *name, *path, *ctype;
} docs_files[] = {
    {"index.html", "index.html", "text/html; charset=utf-8"},
    {"init.js", "init.js", "text/javascript; charset=utf-8"},
    {"swagger-ui.css", "node_modules/swagger-ui-dist/swagger-ui.css", "text/css; charset=utf-8"},
    {"swagger-ui-bundle.js", "node_modules/swagger-ui-dist/swagger-ui-bundle.js",
     "text/javascript; charset=utf-8"},
};

const char *api_openapi_document(size_t *len)
{
    *len = ty_openapi[0].len;
    return (const char *)ty_openapi[0].data;
}

enum rc api_openapi(struct srv_req *req)
{
    size_t len;
    const char *doc = api_openapi_document(&len);
    char *copy = malloc(len + 1);

    if (copy == NULL)
        return srv_fail(req, RC_ENOMEM, "", "out of memory");
    memcpy(copy, doc, len);
    copy[len] = '\0';
    req->resp_raw = copy;
    req->resp_raw_len = len;
    req->resp_ctype = "application/json; charset=utf-8";
    req->status = 200;
    return RC_OK;
}

/* Answer with the file rel under api_docs_dir. */
static enum rc send_docs_file(struct srv_req *req, const char *rel, const char *ctype)
{
    const char *dir = req->app->cfg->api_docs_dir;
    char full[4096];
    struct stat st;
    char *buf = NULL;
    size_t got = 0;
    enum rc rc = RC_ENOTFOUND;
    int fd = -1;

    if (dir[0] == '\0')
        return srv_fail(req, RC_ENOTFOUND, "",
                        "the API reference page is not served here (api_docs_dir is not set)");
    snprintf(full, sizeof(full), "%s/%s", dir, rel);
    fd = open(full, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size > DOCS_MAX_FILE) {
        LOG_WARN("http", "API reference file missing", "req_id=%s path=\"%s\"", req->req_id, full);
        rc = srv_fail(req, RC_ENOTFOUND, "",
                      "the API reference page is not installed (npm ci in docs/api)");
        goto out;
    }
    if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
        rc = srv_fail(req, RC_ENOMEM, "", "out of memory");
        goto out;
    }
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n <= 0) {
            rc = srv_fail(req, RC_EINTERNAL, "", "cannot read %s", rel);
            goto out;
        }
        got += (size_t)n;
    }
    req->resp_raw = buf;
    req->resp_raw_len = got;
    req->resp_ctype = ctype;
    req->status = 200;
    buf = NULL;
    rc = RC_OK;
out:
    free(buf);
    if (fd >= 0)
        close(fd);
    return rc;
}

enum rc api_docs_page(struct srv_req *req)
{
    return send_docs_file(req, docs_files[0].path, docs_files[0].ctype);
}

enum rc api_docs_file(struct srv_req *req)
{
    for (size_t i = 0; i < sizeof(docs_files) / sizeof(docs_files[0]); i++)
        if (strcmp(req->params[0], docs_files[i].name) == 0)
            return send_docs_file(req, docs_files[i].path, docs_files[i].ctype);
    return srv_fail(req, RC_ENOTFOUND, "", "no such file of the API reference page");
}
