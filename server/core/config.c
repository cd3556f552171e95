/*
 * config.c - one table of options drives the file, environment and flag
 * parsers, so a new key is added in exactly one place.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

enum opt_type { OPT_STR, OPT_INT, OPT_BOOL };

struct opt {
    const char *key;
    enum opt_type type;
    size_t offset;
    size_t size; /* for strings */
    long min, max;
    int secret;
    const char *help;
};

#define S(k, h)                                                                                    \
    {                                                                                              \
#k, OPT_STR, offsetof(struct srv_config, k), sizeof(((struct srv_config *)0)->k), 0, 0, 0, \
            h                                                                                      \
    }
#define I(k, lo, hi, h)                                                                            \
    {                                                                                              \
#k, OPT_INT, offsetof(struct srv_config, k), 0, lo, hi, 0, h                               \
    }
#define B(k, h)                                                                                    \
    {                                                                                              \
#k, OPT_BOOL, offsetof(struct srv_config, k), 0, 0, 1, 0, h                                \
    }

static const struct opt opts[] = {
    S(listen, "address and port to listen on"),
    {"database_url", OPT_STR, offsetof(struct srv_config, database_url),
     sizeof(((struct srv_config *)0)->database_url), 0, 0, 1, "PostgreSQL URL"},
    S(data_dir, "directory for keys and local state"),
    S(web_dir, "directory of the dashboard's static files"),
    S(public_url, "dashboard address printed for users"),
    S(log_level, "error, warn, info or debug"),
    S(log_debug, "components with debug logging, comma separated"),
    S(sched_policy, "scheduler policy"),
    S(storage_root, "shared storage for job working dirs and checkpoints"),
    S(templates_dir, "directory of job template files (*.json); none = no templates"),
    S(examples_dir, "absolute directory of the templates' scripts, the same on every node"),
    S(create_admin, "create an admin user with this name and exit"),
    I(http_threads, 1, 256, "HTTP worker threads"),
    I(db_pool_size, 1, 512, "PostgreSQL connections"),
    I(body_limit_bytes, 1024, 64 << 20, "largest request body in bytes"),
    B(gateway_records, "benchmark switch: 0 writes no per-request serving records (keep 1)"),
    I(gateway_upstream_timeout_s, 1, 3600, "longest a model replica may take to answer, seconds"),
    I(session_ttl_s, 60, 30 * 86400, "browser session lifetime in seconds"),
    I(node_timeout_s, 2, 3600, "seconds without heartbeat before a node is down"),
    I(sched_interval_ms, 10, 60000, "longest interval between scheduler passes"),
    I(leader_lease_ms, 1000, 600000,
      "scheduling leader's lease in ms: a leader silent this long is replaced"),
    B(access_log, "log one line per request (true/false)"),
    I(login_max_failures, 1, 1000, "failed logins per user or address per window"),
    I(login_window_s, 1, 86400, "login rate-limit window in seconds"),
    I(pbkdf2_iterations, 600000, 100000000, "PBKDF2 iterations for new passwords"),
    I(cache_ttl_ms, 0, 60000, "how long identities and job lists may be served from memory"),
    I(rendezvous_port_min, 1024, 65535, "lowest MASTER_PORT handed to a job"),
    I(rendezvous_port_max, 1024, 65535, "highest MASTER_PORT handed to a job"),
    S(audit_key_path, "audit signing key (default <data_dir>/audit-signing.pem)"),
    I(audit_checkpoint_interval_s, 1, 7 * 86400, "seconds between signed audit checkpoints"),
    I(audit_retention_days, 0, 36500,
      "days audit events are kept, at least 180 (MLPS 2.0); 0 = forever (the default)"),
    I(export_link_ttl_s, 60, 30 * 86400, "seconds an approved export's download link works"),
    I(webhook_timeout_ms, 100, 60000, "longest wait for one webhook receiver, in ms"),
    S(tls_cert, "PEM certificate chain: serve HTTPS (with tls_key)"),
    S(tls_key, "PEM private key of tls_cert (unencrypted, mode 0600)"),
    I(forecast_interval_ms, 0, 600000,
      "shortest time between stored queue forecasts; 0 = each pass"),
    I(forecast_horizon_s, 0, 365 * 86400, "how far ahead the queue forecast looks; 0 = 30 days"),
    I(forecast_max_events, 0, 100000000, "bound on the forecast's simulated events; 0 = automatic"),
    I(forecast_default_run_s, 0, 365 * 86400,
      "forecast run time of a job with no prediction and no time limit; 0 = 1 hour"),
    I(gpu_idle_util_pct, 1, 100, "an allocated GPU below this utilization (%) counts as idle"),
    I(gpu_idle_min_s, 1, 7 * 86400, "seconds an allocated GPU must stay idle to be flagged"),
    {"metrics_token", OPT_STR, offsetof(struct srv_config, metrics_token),
     sizeof(((struct srv_config *)0)->metrics_token), 0, 0, 1,
     "bearer token that GET /metrics requires (docs/metrics.md)"},
    S(metrics_listen, "IPv4 address:port that alone serves /metrics; none = the API's"),
    I(metrics_cache_ms, 0, 600000, "how long /metrics reuses the cluster's state read, in ms"),
    S(api_docs_dir, "directory of the API reference page (docs/api after npm ci); none = off"),
    I(forecast_resolution_ms, 0, 3600000,
      "forecast ends taken together up to multiples of this (cheaper, starts later by at most it); "
      "0 = exact"),
    I(stream_max_per_user, 1, 4096, "open log follows, exports and parked requests per user"),
    I(stream_max_per_address, 1, 4096,
      "open log follows, exports and parked requests of users per source address"),
    I(stream_max_total, 1, 3072,
      "open log follows, exports and parked requests of all users together"),
    I(stream_max_per_node, 1, 64, "parked assignment long-polls per node credential"),
    I(retain_sessions_days, 0, 36500, "days an expired session is kept; 0 = forever"),
    I(retain_webhook_deliveries_days, 0, 36500,
      "days a delivered or failed webhook delivery is kept; 0 = forever"),
    I(retain_job_logs_days, 0, 36500,
      "days a finished job's output lines are kept after it finished; 0 = forever"),
    I(retain_job_metrics_days, 0, 36500,
      "days a finished job's metric points are kept after it finished; 0 = forever"),
    I(retain_job_events_days, 0, 36500,
      "days a finished job's events are kept after it finished; 0 = forever"),
    I(retention_interval_s, 1, 7 * 86400, "seconds between two retention passes"),
    I(retention_batch_rows, 10, 100000, "rows one retention transaction removes at most"),
};
#define NOPTS (sizeof(opts) / sizeof(opts[0]))

void srv_config_defaults(struct srv_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->listen, sizeof(cfg->listen), "0.0.0.0:8080");
    snprintf(cfg->data_dir, sizeof(cfg->data_dir), "var/server");
    snprintf(cfg->log_level, sizeof(cfg->log_level), "info");
    /* Shortest predicted first inside a team, with aging: the best average
     * and p99 JCT of the trainyard variants on both traces (bench/RESULTS.md,
     * "The default order inside a team"); "trainyard" keeps submit order. */
    snprintf(cfg->sched_policy, sizeof(cfg->sched_policy), "trainyard-qspf");
    snprintf(cfg->storage_root, sizeof(cfg->storage_root), "/var/lib/trainyard");
    cfg->http_threads = 8;
    cfg->db_pool_size = 16;
    cfg->body_limit_bytes = 1 << 20;
    cfg->session_ttl_s = 12 * 3600;
    cfg->node_timeout_s = 10;
    cfg->sched_interval_ms = 1000;
    /* A hung leader is replaced 10 to 12 s after its last renewal, as a
     * vanished host is (about 11 s, db.c's keepalives); renewed every 2 s,
     * so four lost renewals in a row, or a pass of 8 s, are tolerated. */
    cfg->leader_lease_ms = 10000;
    cfg->access_log = 1;
    cfg->gateway_records = 1;
    cfg->gateway_upstream_timeout_s = 300;
    cfg->login_max_failures = 10;
    cfg->login_window_s = 300;
    cfg->pbkdf2_iterations = 600000;
    cfg->cache_ttl_ms = 1000;
    cfg->rendezvous_port_min = 20000;
    cfg->rendezvous_port_max = 31999;
    cfg->audit_checkpoint_interval_s = 3600;
    cfg->export_link_ttl_s = 86400;
    cfg->webhook_timeout_ms = 5000;
    cfg->forecast_interval_ms = 1000;
    cfg->gpu_idle_util_pct = 80;
    cfg->gpu_idle_min_s = 3600;
    cfg->metrics_cache_ms = 5000;
    /* Of the 4096 connections libmicrohttpd takes (http.h), users' streams
     * hold at most half: the rest stay for nodes' long-polls (counted
     * apart, per node) and short requests. */
    cfg->stream_max_per_user = 64;
    cfg->stream_max_per_address = 256;
    cfg->stream_max_total = 2048;
    cfg->stream_max_per_node = 8;
    /* Retention defaults (docs/operations.md, "Retention", says why). */
    cfg->retain_sessions_days = 1;
    cfg->retain_webhook_deliveries_days = 30;
    cfg->retain_job_logs_days = 90;
    cfg->retain_job_metrics_days = 180;
    cfg->retain_job_events_days = 400;
    cfg->retention_interval_s = 3600;
    cfg->retention_batch_rows = 1000;
}

static const struct opt *find_opt(const char *key, size_t len)
{
    for (size_t i = 0; i < NOPTS; i++) {
        if (strlen(opts[i].key) != len)
            continue;
        size_t j = 0;
        /* Accept '-' for '_' so flags read naturally (--database-url). */
        while (j < len && (key[j] == opts[i].key[j] || (key[j] == '-' && opts[i].key[j] == '_')))
            j++;
        if (j == len)
            return &opts[i];
    }
    return NULL;
}

static enum rc set_opt(struct srv_config *cfg, const struct opt *o, const char *val,
                       const char *origin, struct err *e)
{
    char *base = (char *)cfg + o->offset;

    if (o->type == OPT_STR) {
        if (strlen(val) >= o->size)
            return err_set(e, RC_EINVAL, o->key, "%s is too long (from %s)", o->key, origin);
        memcpy(base, val, strlen(val) + 1);
        return RC_OK;
    }
    if (o->type == OPT_BOOL) {
        int v;
        if (strcmp(val, "true") == 0 || strcmp(val, "1") == 0 || strcmp(val, "yes") == 0)
            v = 1;
        else if (strcmp(val, "false") == 0 || strcmp(val, "0") == 0 || strcmp(val, "no") == 0)
            v = 0;
        else
            return err_set(e, RC_EINVAL, o->key, "%s must be true or false, got \"%s\" (from %s)",
                           o->key, val, origin);
        memcpy(base, &v, sizeof(v));
        return RC_OK;
    }
    {
        char *end = NULL;
        long v;
        errno = 0;
        v = strtol(val, &end, 10);
        if (errno != 0 || end == val || *end != '\0' || v < o->min || v > o->max)
            return err_set(e, RC_EINVAL, o->key,
                           "%s must be an integer from %ld to %ld, got \"%s\" (from %s)", o->key,
                           o->min, o->max, val, origin);
        int iv = (int)v;
        memcpy(base, &iv, sizeof(iv));
    }
    return RC_OK;
}

static char *trim(char *s)
{
    char *end;

    while (isspace((unsigned char)*s))
        s++;
    end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

static enum rc load_file(struct srv_config *cfg, const char *path, struct err *e)
{
    FILE *f = fopen(path, "r");
    char line[2048];
    int lineno = 0;
    enum rc rc = RC_OK;

    if (f == NULL)
        return err_set(e, RC_EINVAL, "config", "cannot read the config file: %s", strerror(errno));
    while (rc == RC_OK && fgets(line, sizeof(line), f) != NULL) {
        char *s = trim(line), *eq, *key, *val;
        char origin[64];
        const struct opt *o;
        lineno++;
        if (*s == '\0' || *s == '#')
            continue;
        eq = strchr(s, '=');
        if (eq == NULL) {
            rc = err_set(e, RC_EINVAL, "config", "config line %d is not \"key = value\"", lineno);
            break;
        }
        *eq = '\0';
        key = trim(s);
        val = trim(eq + 1);
        o = find_opt(key, strlen(key));
        if (o == NULL) {
            rc = err_set(e, RC_EINVAL, "config", "config line %d: unknown key \"%s\"", lineno, key);
            break;
        }
        snprintf(origin, sizeof(origin), "config line %d", lineno);
        rc = set_opt(cfg, o, val, origin, e);
    }
    fclose(f);
    return rc;
}

static void usage(void)
{
    printf("usage: trainyard-server [--config FILE] [--KEY VALUE ...]\n\n"
           "Every key may also be set as TRAINYARD_KEY in the environment or as\n"
           "\"key = value\" in the config file; flags win over the environment,\n"
           "the environment over the file.\n\n");
    for (size_t i = 0; i < NOPTS; i++) {
        char flag[64];
        snprintf(flag, sizeof(flag), "%s", opts[i].key);
        for (char *p = flag; *p; p++)
            if (*p == '_')
                *p = '-';
        printf("  --%-22s %s\n", flag, opts[i].help);
    }
}

enum rc srv_config_load(struct srv_config *cfg, int argc, char **argv, struct err *e)
{
    const char *file = getenv("TRAINYARD_CONFIG");
    enum rc rc;

    srv_config_defaults(cfg);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage();
            return RC_ECONFLICT;
        }
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            file = argv[i + 1];
        else if (strncmp(argv[i], "--config=", 9) == 0)
            file = argv[i] + 9;
    }
    if (file != NULL && *file != '\0') {
        snprintf(cfg->config_file, sizeof(cfg->config_file), "%s", file);
        if ((rc = load_file(cfg, file, e)) != RC_OK)
            return rc;
    }
    for (size_t i = 0; i < NOPTS; i++) {
        char name[96];
        const char *v;
        snprintf(name, sizeof(name), "TRAINYARD_%s", opts[i].key);
        for (char *p = name; *p; p++)
            *p = (char)toupper((unsigned char)*p);
        v = getenv(name);
        if (v != NULL && (rc = set_opt(cfg, &opts[i], v, name, e)) != RC_OK)
            return rc;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val, *eq;
        const struct opt *o;
        size_t klen;
        if (strncmp(a, "--", 2) != 0)
            return err_set(e, RC_EINVAL, "", "unexpected argument \"%s\"", a);
        a += 2;
        eq = strchr(a, '=');
        klen = eq ? (size_t)(eq - a) : strlen(a);
        if (klen == 6 && strncmp(a, "config", 6) == 0) {
            if (eq == NULL)
                i++;
            continue;
        }
        o = find_opt(a, klen);
        if (o == NULL)
            return err_set(e, RC_EINVAL, "", "unknown flag \"--%.*s\"", (int)klen, a);
        if (eq != NULL)
            val = eq + 1;
        else if (o->type == OPT_BOOL && (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0))
            val = "true";
        else if (i + 1 < argc)
            val = argv[++i];
        else
            return err_set(e, RC_EINVAL, o->key, "flag --%.*s needs a value", (int)klen, a);
        if ((rc = set_opt(cfg, o, val, "flag", e)) != RC_OK)
            return rc;
    }
    if (cfg->audit_retention_days > 0 && cfg->audit_retention_days < AUDIT_RETENTION_MIN_DAYS)
        return err_set(e, RC_EINVAL, "audit_retention_days",
                       "audit_retention_days must be 0 (keep forever) or at least %d: audit "
                       "records are kept at least %d days (MLPS 2.0), got %d",
                       AUDIT_RETENTION_MIN_DAYS, AUDIT_RETENTION_MIN_DAYS,
                       cfg->audit_retention_days);
    if (cfg->rendezvous_port_max < cfg->rendezvous_port_min)
        return err_set(e, RC_EINVAL, "rendezvous_port_max",
                       "rendezvous_port_max must not be below rendezvous_port_min");
    if (cfg->audit_key_path[0] == '\0' &&
        (size_t)snprintf(cfg->audit_key_path, sizeof(cfg->audit_key_path), "%s/audit-signing.pem",
                         cfg->data_dir) >= sizeof(cfg->audit_key_path))
        return err_set(e, RC_EINVAL, "data_dir", "data_dir is too long for the audit key path");
    if (cfg->database_url[0] == '\0')
        return err_set(e, RC_EINVAL, "database_url",
                       "no database: set --database-url or TRAINYARD_DATABASE_URL");
    return RC_OK;
}

void srv_config_log(const struct srv_config *cfg)
{
    for (size_t i = 0; i < NOPTS; i++) {
        const char *base = (const char *)cfg + opts[i].offset;
        if (opts[i].secret) {
            LOG_INFO("config", "setting", "key=%s value=\"***\"", opts[i].key);
        } else if (opts[i].type == OPT_STR) {
            LOG_INFO("config", "setting", "key=%s value=\"%s\"", opts[i].key, base);
        } else {
            int v;
            memcpy(&v, base, sizeof(v));
            LOG_INFO("config", "setting", "key=%s value=%d", opts[i].key, v);
        }
    }
}

enum rc srv_config_listen(const struct srv_config *cfg, char *host, int host_size, int *port)
{
    const char *colon = strrchr(cfg->listen, ':');
    char *end = NULL;
    long p;

    if (colon == NULL || colon == cfg->listen || colon - cfg->listen >= host_size)
        return RC_EINVAL;
    p = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || *end != '\0' || p < 0 || p > 65535)
        return RC_EINVAL;
    memcpy(host, cfg->listen, (size_t)(colon - cfg->listen));
    host[colon - cfg->listen] = '\0';
    *port = (int)p;
    return RC_OK;
}
