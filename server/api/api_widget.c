/*
 * api_widget.c - a deployment's public chat widget (docs/serving.md, "Widget
 * and handoff"): its settings (PUT/GET /api/v1/deployments/{name}/widget,
 * team members; audited deployment.widget, with the widget's public key
 * made or reused in the same transaction), and the public routes a visitor's
 * browser calls, which answer only while the widget is enabled:
 *
 *   GET  /chat/{name}            the page (web/widget/chat.html), frameable
 *                                only by the widget's allowed origins
 *   GET  /chat/{name}/widget.js  the script a site embeds (button + iframe)
 *   GET  /chat/{name}/config     what the page shows and the public key
 *   POST /chat/{name}/handoff    ask for a person: the server checks the
 *                                keyword, bounds the conversation, limits
 *                                each visitor address, queues the webhook
 *                                delivery and audits serve.handoff
 *
 * The public answers name nothing internal: no version, node, job or path.
 */
#include "api.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "audit_target.h"
#include "crypto.h"
#include "db.h"
#include "db_auth.h"
#include "db_gateway.h"
#include "db_widget.h"
#include "jx.h"

#include "api_util.h"

#define WIDGET_MAX_SUGGESTIONS 6
#define WIDGET_MAX_ORIGINS 8
#define WIDGET_MAX_ORIGIN_LEN 60
#define WIDGET_MAX_KEYWORDS 16
#define WIDGET_MAX_FILE (256 * 1024)
#define HANDOFF_MAX_MESSAGES 40
#define HANDOFF_MAX_CONTENT 2000
#define HANDOFF_MAX_TOTAL 16000
#define HANDOFF_WINDOW_S 600
#define HANDOFF_PER_WINDOW 5

/* ------------------------------------------------------------------ */
/* Validation of the settings                                           */

/* Text a person typed: UTF-8 as jansson checked it, no control bytes but
 * newlines in a greeting. */
static int text_ok(const char *s, int newlines)
{
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c < 0x20 && !(newlines && c == '\n')) || c == 0x7f)
            return 0;
    }
    return 1;
}

/* A string member of o in [min, max] bytes, or absent (*out NULL). */
static enum rc opt_text(struct srv_req *req, const json_t *o, const char *key, const char *field,
                        size_t min, size_t max, int newlines, const char **out)
{
    const json_t *v = json_object_get(o, key);

    *out = NULL;
    if (v == NULL)
        return RC_OK;
    if (!json_is_string(v) || json_string_length(v) < min || json_string_length(v) > max ||
        !text_ok(json_string_value(v), newlines))
        return srv_fail(req, RC_EINVAL, field, "%s must be %zu to %zu bytes of text", field, min,
                        max);
    *out = json_string_value(v);
    return RC_OK;
}

/* A list of 0..max strings of 1..len bytes, copied into a new array. */
static enum rc text_list(struct srv_req *req, const json_t *v, const char *field, size_t max,
                         size_t len, json_t **out)
{
    size_t i;
    const json_t *s;

    *out = NULL;
    if (v == NULL) {
        *out = json_array();
        return *out ? RC_OK : RC_ENOMEM;
    }
    if (!json_is_array(v) || json_array_size(v) > max)
        return srv_fail(req, RC_EINVAL, field, "%s must be a list of at most %zu items", field,
                        max);
    json_array_foreach(v, i, s)
    {
        if (!json_is_string(s) || json_string_length(s) < 1 || json_string_length(s) > len ||
            !text_ok(json_string_value(s), 0))
            return srv_fail(req, RC_EINVAL, field, "%s[%zu] must be 1 to %zu bytes of text", field,
                            i, len);
    }
    *out = json_deep_copy(v);
    return *out ? RC_OK : RC_ENOMEM;
}

/* scheme://host[:port] with nothing after: what an Origin header holds. */
static int origin_ok(const char *s)
{
    const char *h;
    size_t n = strlen(s);

    if (n > WIDGET_MAX_ORIGIN_LEN)
        return 0;
    if (strncmp(s, "https://", 8) == 0)
        h = s + 8;
    else if (strncmp(s, "http://", 7) == 0)
        h = s + 7;
    else
        return 0;
    if (*h == '\0' || *h == ':')
        return 0;
    for (; *h != '\0'; h++)
        if (!((*h >= 'a' && *h <= 'z') || (*h >= '0' && *h <= '9') || *h == '.' || *h == '-' ||
              *h == ':'))
            return 0;
    return 1;
}

/* The handoff settings: {keywords, webhook_id}; *out new. */
static enum rc parse_handoff(struct srv_req *req, const json_t *h, int64_t *webhook_id,
                             json_t **out)
{
    const json_t *wid;
    json_t *kw = NULL;
    enum rc rc;
    const char *k;
    json_t *v;

    *out = NULL;
    *webhook_id = 0;
    if (!json_is_object(h))
        return srv_fail(req, RC_EINVAL, "handoff", "handoff must be an object");
    json_object_foreach((json_t *)h, k, v)
    {
        if (strcmp(k, "keywords") != 0 && strcmp(k, "webhook_id") != 0)
            return srv_fail(req, RC_EINVAL, "handoff", "unknown member handoff.%.40s", k);
    }
    if (json_object_get(h, "keywords") == NULL) {
        kw = json_pack("[sss]", "人工", "转人工", "human");
        if (kw == NULL)
            return RC_ENOMEM;
    } else if ((rc = text_list(req, json_object_get(h, "keywords"), "handoff.keywords",
                               WIDGET_MAX_KEYWORDS, 32, &kw)) != RC_OK) {
        return rc;
    }
    if (json_array_size(kw) == 0) {
        json_decref(kw);
        return srv_fail(req, RC_EINVAL, "handoff.keywords", "handoff.keywords must not be empty");
    }
    wid = json_object_get(h, "webhook_id");
    if (json_is_string(wid))
        (void)db_parse_i64(json_string_value(wid), webhook_id);
    else if (json_is_integer(wid))
        *webhook_id = json_integer_value(wid);
    if (*webhook_id < 1) {
        json_decref(kw);
        return srv_fail(req, RC_EINVAL, "handoff.webhook_id",
                        "handoff.webhook_id must name a webhook of the deployment's team");
    }
    *out = json_pack("{s:o,s:I}", "keywords", kw, "webhook_id", (json_int_t)*webhook_id);
    return *out ? RC_OK : RC_ENOMEM;
}

/* The body as the settings to store (without the key), *out new. */
static enum rc parse_settings(struct srv_req *req, int64_t *rate, int64_t *webhook_id, json_t **out)
{
    static const char *const allowed[] = {
        "enabled",         "title",   "greeting",     "suggestions",
        "allowed_origins", "handoff", "rate_per_min", NULL};
    const json_t *en = json_object_get(req->body, "enabled"), *g, *o;
    const char *title = NULL, *zh = NULL, *eng = NULL;
    json_t *sugg = NULL, *origins = NULL, *handoff = NULL;
    int has = 0;
    size_t i;
    enum rc rc;

    *out = NULL;
    *webhook_id = 0;
    *rate = 20;
    if ((rc = api_body_object(req, allowed)) != RC_OK ||
        (rc = api_opt_int(req, "rate_per_min", 1, 600, rate, &has)) != RC_OK ||
        (rc = opt_text(req, req->body, "title", "title", 1, 80, 0, &title)) != RC_OK)
        return rc;
    if (!json_is_boolean(en))
        return srv_fail(req, RC_EINVAL, "enabled", "enabled must be true or false");
    g = json_object_get(req->body, "greeting");
    if (g != NULL && !json_is_object(g))
        return srv_fail(req, RC_EINVAL, "greeting",
                        "greeting must be {\"zh-CN\": ..., \"en\": ...}");
    if (g != NULL && json_object_size(g) != (size_t)(json_object_get(g, "zh-CN") != NULL) +
                                                (size_t)(json_object_get(g, "en") != NULL))
        return srv_fail(req, RC_EINVAL, "greeting", "greeting takes only zh-CN and en");
    if ((rc = opt_text(req, g, "zh-CN", "greeting.zh-CN", 1, 500, 1, &zh)) != RC_OK ||
        (rc = opt_text(req, g, "en", "greeting.en", 1, 500, 1, &eng)) != RC_OK)
        return rc;
    if ((rc = text_list(req, json_object_get(req->body, "suggestions"), "suggestions",
                        WIDGET_MAX_SUGGESTIONS, 200, &sugg)) != RC_OK)
        goto out;
    if ((rc = text_list(req, json_object_get(req->body, "allowed_origins"), "allowed_origins",
                        WIDGET_MAX_ORIGINS, WIDGET_MAX_ORIGIN_LEN, &origins)) != RC_OK)
        goto out;
    json_array_foreach(origins, i, o)
    {
        if (!origin_ok(json_string_value(o))) {
            rc = srv_fail(req, RC_EINVAL, "allowed_origins",
                          "allowed_origins[%zu] must be an origin such as https://example.com "
                          "(lower case, no path)",
                          i);
            goto out;
        }
    }
    if (json_object_get(req->body, "handoff") != NULL &&
        (rc = parse_handoff(req, json_object_get(req->body, "handoff"), webhook_id, &handoff)) !=
            RC_OK)
        goto out;
    *out = json_pack("{s:b,s:s,s:{s:s,s:s},s:O,s:O,s:I}", "enabled", json_is_true(en), "title",
                     title ? title : "", "greeting", "zh-CN", zh ? zh : "您好！有什么可以帮您？",
                     "en", eng ? eng : "Hello! How can we help?", "suggestions", sugg,
                     "allowed_origins", origins, "rate_per_min", (json_int_t)*rate);
    rc = *out ? RC_OK : RC_ENOMEM;
    if (rc == RC_OK && handoff != NULL && json_object_set(*out, "handoff", handoff) != 0)
        rc = RC_ENOMEM;
out:
    json_decref(sugg);
    json_decref(origins);
    json_decref(handoff);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Settings                                                             */

static enum rc check_member(struct srv_req *req, int64_t team_id)
{
    int member = 0;
    enum rc rc;

    if (req->who.role == SRV_ROLE_ADMIN)
        return RC_OK;
    rc = auth_is_member(req->db, req->who.user_id, team_id, &member, req->req_id);
    if (rc == RC_OK && !member)
        return srv_fail(req, RC_ENOTFOUND, "", "no such deployment");
    return rc;
}

/* The settings as their owners see them: never the key's secret. */
static json_t *settings_view(const char *name, const json_t *w)
{
    json_t *v = json_deep_copy(w);

    if (v == NULL)
        return NULL;
    json_object_del(v, "key_secret");
    json_object_set_new(v, "deployment", json_string(name));
    if (json_object_size(w) > 0)
        json_object_set_new(v, "page_path", json_sprintf("/chat/%s", name));
    return v;
}

/* Make the widget's public key, or reuse the one it has (its rate set to
 * rate); fills key_id and key_secret of w. */
static enum rc widget_key(struct srv_req *req, const struct db_widget_dep *d, int64_t rate,
                          json_t *w, int *created)
{
    const json_t *old_id = json_object_get(d->widget, "key_id");
    const char *old_secret = json_string_value(json_object_get(d->widget, "key_secret"));
    char secret[64], hash[CRYPTO_SHA256_HEX_LEN + 1], prefix[16], actor[96];
    char target[AUDIT_TARGET_SIZE];
    int64_t kid = 0;
    int live = 0;
    json_t *row = NULL, *det;
    enum rc rc;

    *created = 0;
    if (json_is_string(old_id) && old_secret != NULL &&
        db_parse_i64(json_string_value(old_id), &kid) == RC_OK) {
        if ((rc = db_widget_key_reuse(req->db, d->id, kid, (int)rate, &live, req->req_id)) != RC_OK)
            return rc;
        if (live) {
            json_object_set(w, "key_id", (json_t *)old_id);
            json_object_set_new(w, "key_secret", json_string(old_secret));
            return RC_OK;
        }
    }
    if (crypto_random_token("tysk_", 24, secret, sizeof(secret)) != RC_OK)
        return RC_EINTERNAL;
    crypto_sha256_hex(secret, strlen(secret), hash);
    snprintf(prefix, sizeof(prefix), "%.12s", secret);
    srv_actor(req, actor, sizeof(actor));
    rc = db_gw_key_create(req->db, d->id, "widget", hash, prefix, 1, (int)rate, 0, actor, &row,
                          req->req_id);
    if (rc == RC_OK)
        rc = audit_target_id_text(AUDIT_TARGET_SERVE_KEY,
                                  json_string_value(json_object_get(row, "id")), target);
    if (rc == RC_OK) {
        det =
            json_pack("{s:s,s:s,s:b,s:I,s:I}", "deployment", req->params[0], "name", "widget",
                      "public", 1, "rate_per_min", (json_int_t)rate, "token_quota", (json_int_t)0);
        rc = det ? audit_append_req(req, "serve.key.create", target, "success", det) : RC_ENOMEM;
        json_decref(det);
    }
    if (rc == RC_OK) {
        json_object_set(w, "key_id", json_object_get(row, "id"));
        json_object_set_new(w, "key_secret", json_string(secret));
        *created = 1;
    }
    memset(secret, 0, sizeof(secret));
    json_decref(row);
    return rc;
}

enum rc api_widget_put(struct srv_req *req)
{
    struct db_widget_dep d = {0};
    char target[AUDIT_TARGET_SIZE], format[16];
    int64_t rate = 20, webhook_id = 0;
    int created = 0;
    json_t *w = NULL, *det = NULL;
    enum rc rc;

    if ((rc = parse_settings(req, &rate, &webhook_id, &w)) != RC_OK)
        return rc;
    if (srv_db(req) == NULL) {
        json_decref(w);
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    }
    if ((rc = api_begin(req)) != RC_OK) {
        json_decref(w);
        return rc;
    }
    rc = db_widget_load(req->db, req->params[0], 1, &d, req->req_id);
    if (rc == RC_ENOTFOUND)
        rc = srv_fail(req, rc, "", "no such deployment");
    if (rc == RC_OK)
        rc = check_member(req, d.team_id);
    if (rc == RC_OK && webhook_id > 0) {
        rc = db_widget_webhook(req->db, webhook_id, d.team_id, format, sizeof(format), req->req_id);
        if (rc == RC_ENOTFOUND)
            rc = srv_fail(req, RC_EINVAL, "handoff.webhook_id",
                          "webhook %lld is not a webhook of the deployment's team",
                          (long long)webhook_id);
    }
    if (rc == RC_OK)
        rc = widget_key(req, &d, rate, w, &created);
    if (rc == RC_OK)
        rc = db_widget_store(req->db, d.id, w, req->req_id);
    if (rc == RC_OK)
        rc = audit_target_name(AUDIT_TARGET_DEPLOYMENT, req->params[0], target);
    if (rc == RC_OK) {
        det = json_pack("{s:O,s:O,s:I,s:O,s:b}", "enabled", json_object_get(w, "enabled"),
                        "allowed_origins", json_object_get(w, "allowed_origins"), "rate_per_min",
                        (json_int_t)rate, "key_id", json_object_get(w, "key_id"), "key_created",
                        created);
        if (det != NULL && webhook_id > 0)
            json_object_set_new(det, "handoff_webhook_id",
                                json_sprintf("%lld", (long long)webhook_id));
        rc = det ? audit_append_req(req, "deployment.widget", target, "success", det) : RC_ENOMEM;
    }
    rc = api_end(req, rc);
    if (rc == RC_OK)
        rc = srv_reply(req, 200, settings_view(req->params[0], w));
    json_decref(det);
    json_decref(w);
    json_decref(d.widget);
    return rc;
}

enum rc api_widget_get(struct srv_req *req)
{
    struct db_widget_dep d = {0};
    enum rc rc;

    if (srv_db(req) == NULL)
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    rc = db_widget_load(req->db, req->params[0], 0, &d, req->req_id);
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such deployment");
    if (rc == RC_OK)
        rc = check_member(req, d.team_id);
    if (rc == RC_OK)
        rc = srv_reply(req, 200, settings_view(req->params[0], d.widget));
    json_decref(d.widget);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Public routes                                                        */

/* The enabled widget of route capture 0 (*out new), else 404 (the same
 * answer for a deployment that does not exist: a visitor learns nothing). */
static enum rc enabled_widget(struct srv_req *req, struct db_widget_dep *d)
{
    enum rc rc;

    if (srv_db(req) == NULL)
        return srv_fail(req, RC_EUNAVAIL, "", "the database is unavailable");
    rc = db_widget_load(req->db, req->params[0], 0, d, req->req_id);
    if (rc == RC_OK && !json_is_true(json_object_get(d->widget, "enabled"))) {
        json_decref(d->widget);
        d->widget = NULL;
        rc = RC_ENOTFOUND;
    }
    if (rc == RC_ENOTFOUND)
        return srv_fail(req, rc, "", "no such chat");
    return rc;
}

/* web/widget/<file> as the answer, of type ctype. */
static enum rc reply_file(struct srv_req *req, const char *file, const char *ctype)
{
    char path[4200];
    struct stat st;
    char *buf = NULL;
    ssize_t n;
    int fd;

    if (req->app->cfg->web_dir[0] == '\0')
        return srv_fail(req, RC_ENOTFOUND, "", "no such file");
    snprintf(path, sizeof(path), "%s/widget/%s", req->app->cfg->web_dir, file);
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return srv_fail(req, RC_ENOTFOUND, "", "no such file");
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > WIDGET_MAX_FILE ||
        (buf = malloc((size_t)st.st_size + 1)) == NULL) {
        close(fd);
        return RC_EINTERNAL;
    }
    n = read(fd, buf, (size_t)st.st_size);
    close(fd);
    if (n != st.st_size) {
        free(buf);
        return RC_EINTERNAL;
    }
    req->resp_raw = buf;
    req->resp_raw_len = (size_t)n;
    req->resp_ctype = ctype;
    req->status = 200;
    return RC_OK;
}

enum rc api_widget_page(struct srv_req *req)
{
    struct db_widget_dep d = {0};
    char csp[SRV_RESP_HEADER_VALUE];
    size_t i, len;
    const json_t *o;
    enum rc rc;

    if ((rc = enabled_widget(req, &d)) != RC_OK)
        return rc;
    /* Framed only by the sites the team named (none: by no site). */
    len = (size_t)snprintf(csp, sizeof(csp),
                           "default-src 'self'; img-src 'self' data:; frame-ancestors");
    json_array_foreach(json_object_get(d.widget, "allowed_origins"), i, o)
    {
        len += (size_t)snprintf(csp + len, sizeof(csp) - len, " %s", json_string_value(o));
    }
    if (json_array_size(json_object_get(d.widget, "allowed_origins")) == 0)
        snprintf(csp + len, sizeof(csp) - len, " 'none'");
    json_decref(d.widget);
    if ((rc = srv_add_header(req, "Content-Security-Policy", csp)) != RC_OK)
        return RC_EINTERNAL;
    return reply_file(req, "chat.html", "text/html; charset=utf-8");
}

enum rc api_widget_script(struct srv_req *req)
{
    struct db_widget_dep d = {0};
    enum rc rc;

    if ((rc = enabled_widget(req, &d)) != RC_OK)
        return rc;
    json_decref(d.widget);
    return reply_file(req, "widget.js", "text/javascript; charset=utf-8");
}

enum rc api_widget_config(struct srv_req *req)
{
    struct db_widget_dep d = {0};
    const json_t *w;
    json_t *out;
    enum rc rc;

    if ((rc = enabled_widget(req, &d)) != RC_OK)
        return rc;
    w = d.widget;
    out = json_pack("{s:s,s:O,s:O,s:O,s:O,s:b}", "deployment", req->params[0], "title",
                    json_object_get(w, "title"), "greeting", json_object_get(w, "greeting"),
                    "suggestions", json_object_get(w, "suggestions"), "key",
                    json_object_get(w, "key_secret"), "handoff",
                    json_object_get(w, "handoff") != NULL);
    if (out != NULL && json_object_get(w, "handoff") != NULL)
        json_object_set(out, "handoff_keywords",
                        json_object_get(json_object_get(w, "handoff"), "keywords"));
    json_decref(d.widget);
    return out ? srv_reply(req, 200, out) : RC_ENOMEM;
}

/* Whether text holds one of keywords (ASCII letters compared without case). */
static int has_keyword(const char *text, const json_t *keywords)
{
    size_t i;
    const json_t *k;

    json_array_foreach(keywords, i, k)
    {
        if (strcasestr(text, json_string_value(k)) != NULL)
            return 1;
    }
    return 0;
}

/* The conversation of the body, checked and bounded: a new array of
 * {role, content}; *last_user the last visitor message (borrowed). */
static enum rc handoff_messages(struct srv_req *req, json_t **out, const char **last_user)
{
    static const char *const allowed[] = {"messages", "lang", NULL};
    const json_t *msgs = json_object_get(req->body, "messages"), *m;
    size_t i, total = 0;
    json_t *conv = NULL;
    enum rc rc;

    *out = NULL;
    *last_user = NULL;
    if ((rc = api_body_object(req, allowed)) != RC_OK)
        return rc;
    if (!json_is_array(msgs) || json_array_size(msgs) < 1 ||
        json_array_size(msgs) > HANDOFF_MAX_MESSAGES)
        return srv_fail(req, RC_EINVAL, "messages", "messages must be a list of 1 to %d messages",
                        HANDOFF_MAX_MESSAGES);
    if ((conv = json_array()) == NULL)
        return RC_ENOMEM;
    json_array_foreach(msgs, i, m)
    {
        const char *role = json_string_value(json_object_get(m, "role"));
        const json_t *c = json_object_get(m, "content");
        if (role == NULL || (strcmp(role, "user") != 0 && strcmp(role, "assistant") != 0) ||
            !json_is_string(c) || json_string_length(c) > HANDOFF_MAX_CONTENT) {
            json_decref(conv);
            return srv_fail(req, RC_EINVAL, "messages",
                            "messages[%zu] must be {role: user or assistant, content: at most %d "
                            "bytes}",
                            i, HANDOFF_MAX_CONTENT);
        }
        total += json_string_length(c);
        if (strcmp(role, "user") == 0)
            *last_user = json_string_value(c);
        json_array_append_new(conv, json_pack("{s:s,s:O}", "role", role, "content", c));
    }
    if (total > HANDOFF_MAX_TOTAL) {
        json_decref(conv);
        return srv_fail(req, RC_ETOOBIG, "messages", "the conversation is over %d bytes",
                        HANDOFF_MAX_TOTAL);
    }
    *out = conv;
    return RC_OK;
}

/* The delivery's payload: the generic shape of a webhook event, with the
 * deployment and the conversation. */
static char *handoff_payload(struct srv_req *req, const json_t *conv)
{
    char ts[32];
    time_t now = time(NULL);
    struct tm tm;
    json_t *p;
    char *s;

    if (gmtime_r(&now, &tm) == NULL || strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(ts, sizeof(ts), "1970-01-01T00:00:00Z");
    p = json_pack("{s:s,s:s,s:s,s:s,s:O,s:s}", "event", "serve.handoff", "message",
                  "a visitor asked for a person", "ts", ts, "deployment", req->params[0],
                  "conversation", conv, "visitor", req->client_addr);
    s = p ? jx_dumps(p, JSON_COMPACT) : NULL;
    json_decref(p);
    return s;
}

enum rc api_widget_handoff(struct srv_req *req)
{
    struct db_widget_dep d = {0};
    char target[AUDIT_TARGET_SIZE];
    const char *last = NULL, *lang = json_string_value(json_object_get(req->body, "lang"));
    const json_t *handoff;
    json_t *conv = NULL, *det = NULL;
    char *payload = NULL;
    int64_t webhook_id = 0;
    int n = 0, en = lang != NULL && strncmp(lang, "en", 2) == 0;
    enum rc rc;

    if ((rc = handoff_messages(req, &conv, &last)) != RC_OK)
        return rc;
    if ((rc = enabled_widget(req, &d)) != RC_OK)
        goto out;
    handoff = json_object_get(d.widget, "handoff");
    if (handoff == NULL) {
        rc = srv_fail(req, RC_ENOTFOUND, "", "this chat has no handoff");
        goto out;
    }
    /* The page checks the keyword too, but only this check counts. */
    if (last == NULL || !has_keyword(last, json_object_get(handoff, "keywords"))) {
        rc = srv_fail(req, RC_EINVAL, "messages", "the last message does not ask for a person");
        err_code(&req->err, "handoff_not_requested");
        goto out;
    }
    webhook_id = json_integer_value(json_object_get(handoff, "webhook_id"));
    if ((rc = audit_target_name(AUDIT_TARGET_DEPLOYMENT, req->params[0], target)) != RC_OK)
        goto out;
    if ((payload = handoff_payload(req, conv)) == NULL) {
        rc = RC_ENOMEM;
        goto out;
    }
    if ((rc = api_begin(req)) != RC_OK)
        goto out;
    rc = db_widget_handoffs_since(req->db, target, req->client_addr, HANDOFF_WINDOW_S, &n,
                                  req->req_id);
    if (rc == RC_OK && n >= HANDOFF_PER_WINDOW) {
        req->retry_after_s = 60;
        rc = srv_fail(req, RC_ERATE, "", "too many handoffs from this address; try later");
    }
    if (rc == RC_OK)
        rc = db_widget_enqueue(req->db, webhook_id, "serve.handoff", payload, req->req_id);
    if (rc == RC_OK) {
        det = json_pack("{s:I,s:i}", "webhook_id", (json_int_t)webhook_id, "messages",
                        (int)json_array_size(conv));
        rc = det ? audit_append_req(req, "serve.handoff", target, "success", det) : RC_ENOMEM;
    }
    if ((rc = api_end(req, rc)) != RC_OK)
        goto out;
    rc = srv_reply(req, 202,
                   json_pack("{s:s,s:s}", "status", "queued", "message",
                             en ? "Thanks. A person from our team will follow up with you soon."
                                : "已为您转接人工客服，工作人员会尽快与您联系。"));
out:
    free(payload);
    json_decref(det);
    json_decref(conv);
    json_decref(d.widget);
    return rc;
}
