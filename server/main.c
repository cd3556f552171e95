/*
 * main.c - trainyard-server: configuration, migrations, the HTTP server and
 * the background threads; graceful stop on SIGTERM/SIGINT.
 *
 * Threads: main blocks SIGTERM/SIGINT before any thread starts and waits for
 * them with sigwait(), so no thread ever runs a signal handler. Then it stops
 * the background threads and lets in-flight requests finish.
 */
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_metrics.h"
#include "app.h"
#include "audit_keeper.h"
#include "cache.h"
#include "crypto.h"
#include "db.h"
#include "db_audit.h"
#include "db_policy.h"
#include "db_users.h"
#include "gateway.h"
#include "http.h"
#include "jx.h"
#include "log.h"
#include "metrics.h"
#include "monitor.h"
#include "notify.h"
#include "ratelimit.h"
#include "retention.h"
#include "routes.h"
#include "sched_loop.h"
#include "serve_canary.h"
#include "serve_health.h"
#include "serve_seal.h"
#include "srv.h"
#include "streams.h"
#include "templates.h"
#include "tls.h"
#include "waiters.h"
#include "webhooks.h"

/* Exit codes of --create-admin, for scripts. */
#define EXIT_ADMIN_EXISTS 3

static int create_admin(struct srv_app *app, const char *name)
{
    const char *pw = getenv("TRAINYARD_ADMIN_PASSWORD");
    char generated[48], pwhash[CRYPTO_PWHASH_MAX], target[AUDIT_TARGET_SIZE];
    PGconn *c;
    json_t *row = NULL, *d = NULL;
    struct audit_event ev;
    enum rc rc;

    /* The API's rule for usernames, which is also what an audit target needs. */
    if (audit_target_name(AUDIT_TARGET_USER, name, target) != RC_OK) {
        fprintf(stderr, "trainyard-server: the admin name must be 1 to 64 of a-z, 0-9, '.', '_', "
                        "'-', starting with a letter or digit\n");
        return 1;
    }
    if ((c = db_acquire(app->db, 5000)) == NULL)
        return 1;
    if (pw == NULL || *pw == '\0') {
        if (crypto_random_token("", 18, generated, sizeof(generated)) != RC_OK) {
            db_release(app->db, c);
            return 1;
        }
        pw = generated;
    } else {
        generated[0] = '\0';
    }
    if (strlen(pw) < 12) {
        fprintf(stderr, "trainyard-server: the admin password must have at least 12 characters\n");
        db_release(app->db, c);
        return 1;
    }
    if (crypto_password_hash(pw, (unsigned)app->cfg->pbkdf2_iterations, pwhash) != RC_OK) {
        db_release(app->db, c);
        return 1;
    }
    rc = db_begin(c);
    if (rc == RC_OK)
        rc = db_user_create(c, name, "Administrator", "admin", pwhash, &row, NULL);
    if (rc == RC_OK) {
        d = json_pack("{s:s,s:s}", "username", name, "role", "admin");
        ev = (struct audit_event){"system", "", "user.create", target, "success", d};
        rc = audit_append(c, &ev, NULL);
    }
    if (rc == RC_OK)
        rc = db_commit(c);
    else
        db_rollback(c);
    json_decref(row);
    json_decref(d);
    db_release(app->db, c);
    if (rc == RC_ECONFLICT) {
        fprintf(stderr, "trainyard-server: a user named \"%s\" exists already\n", name);
        return EXIT_ADMIN_EXISTS;
    }
    if (rc != RC_OK) {
        fprintf(stderr, "trainyard-server: cannot create the admin: %s\n", rc_str(rc));
        return 1;
    }
    if (generated[0] != '\0')
        printf("admin user: %s\npassword:   %s\n(shown once; change it after signing in)\n", name,
               generated);
    else
        printf("admin user: %s (password from TRAINYARD_ADMIN_PASSWORD)\n", name);
    return 0;
}

/* A bad template file stops the start: a dashboard offering a job that
 * cannot run is worse than a server that says which file to fix. */
static enum rc load_templates(const struct srv_config *cfg, struct tpl_set **out)
{
    struct err e;
    enum rc rc;

    err_init(&e);
    if (cfg->examples_dir[0] != '\0' && cfg->examples_dir[0] != '/') {
        LOG_ERROR("main", "examples_dir must be an absolute directory", "examples_dir=\"%s\"",
                  cfg->examples_dir);
        return RC_EINVAL;
    }
    rc = tpl_set_load(cfg->templates_dir, cfg->examples_dir, out, &e);
    if (rc != RC_OK) {
        LOG_ERROR("main", "cannot load the job templates",
                  "field=\"%s\" reason=\"%s\" detail=\"%s\"", e.field, e.message, e.detail);
        return rc;
    }
    if (cfg->templates_dir[0] == '\0')
        LOG_INFO("main", "no templates_dir set: the dashboard offers no job templates", "");
    else
        LOG_INFO("main", "job templates loaded", "count=%zu templates_dir=\"%s\"",
                 tpl_set_count(*out), cfg->templates_dir);
    return RC_OK;
}

/* What main starts besides the HTTP server; NULL until started. */
struct server_threads {
    struct sched_loop *sched;
    struct metrics_listener *metrics;
    struct monitor *monitor;
    struct webhooks *hooks;
    struct audit_keeper *keeper;
    struct retention *retention;
    struct serve_health *health;
    struct serve_seal *seal;
    struct serve_canary *canary;
    struct notify_listener *listener;
};

/*
 * Read the configuration (cfg: the caller's) and set up logging. Returns -1
 * to go on, else main's exit status: 0 after --help, 2 on a bad option.
 */
static int configure(struct srv_config *cfg, int argc, char **argv)
{
    struct err e;
    enum log_level lvl;
    enum rc rc;

    err_init(&e);
    rc = srv_config_load(cfg, argc, argv, &e);
    if (rc == RC_ECONFLICT)
        return 0; /* --help */
    if (rc != RC_OK) {
        fprintf(stderr, "trainyard-server: %s\n", e.message);
        return 2;
    }
    if (log_parse_level(cfg->log_level, &lvl) != RC_OK) {
        fprintf(stderr, "trainyard-server: log_level must be error, warn, info or debug\n");
        return 2;
    }
    log_set_level(lvl);
    log_set_debug(cfg->log_debug);
#ifdef TY_BENCH_NO_AUDIT
    LOG_WARN("main", "BENCHMARK BUILD: THIS SERVER WRITES NO AUDIT TRAIL",
             "cmake_option=TRAINYARD_BENCH_NO_AUDIT use=\"bench/api/audit_cost_http.sh only, "
             "never in production\"");
#endif
    return -1;
}

/*
 * What the process needs before any thread starts: SIGTERM and SIGINT
 * blocked, so that threads inherit the mask and only sigwait() on the main
 * thread takes them (sigs: the caller's, filled for it); no SIGPIPE from a
 * closed socket; libcurl and jansson set up once.
 */
static void process_init(sigset_t *sigs)
{
    sigemptyset(sigs);
    sigaddset(sigs, SIGTERM);
    sigaddset(sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    jx_init(); /* before any JSON value exists */
}

/* Connect the pool and bring the schema up to date; logs why it cannot. */
static enum rc open_database(struct srv_app *app)
{
    enum rc rc;

    if ((rc = db_open(app->cfg->database_url, app->cfg->db_pool_size, &app->db)) != RC_OK) {
        LOG_ERROR("main", "cannot connect to the database", "");
        return rc;
    }
    if ((rc = db_migrate(app->db)) != RC_OK) {
        LOG_ERROR("main", "cannot migrate the database", "rc=%s", rc_str(rc));
        return rc;
    }
    return RC_OK;
}

/*
 * What must hold before the first request: the default site's storage root,
 * the audit signing key, the job templates, the rate limits, waiters and
 * caches, the replica's id. A failure is logged where it happens.
 */
static enum rc prepare_state(struct srv_app *app)
{
    const struct srv_config *cfg = app->cfg;
    enum rc rc;

    /* A database made before sites existed has a default site without
     * storage roots: it gets storage_root, so such a set-up keeps working. */
    if ((rc = db_policy_startup(app->db, cfg->storage_root)) != RC_OK) {
        LOG_ERROR("main", "cannot prepare the default site", "rc=%s", rc_str(rc));
        return rc;
    }
    /* Without a usable signing key the audit trail cannot be exported or
     * checkpointed: refuse to start rather than run unsigned. */
    if ((rc = audit_keeper_load_key(cfg, &app->audit_key)) != RC_OK ||
        (rc = audit_keeper_register_key(app)) != RC_OK)
        return rc;
    if ((rc = load_templates(cfg, &app->templates)) != RC_OK)
        return rc;
    app->login_limit = ratelimit_new(cfg->login_max_failures, cfg->login_window_s);
    app->addr_limit = ratelimit_new(cfg->login_max_failures * 5, cfg->login_window_s);
    app->waiters = waiters_new(app);
    app->streams = streams_new(&(struct streams_limits){
        .per_user = cfg->stream_max_per_user,
        .per_addr = cfg->stream_max_per_address,
        .total_user = cfg->stream_max_total,
        .per_node = cfg->stream_max_per_node,
    });
    app->auth_cache = cache_new(4096, sizeof(struct srv_principal));
    app->page_cache = cache_new(1024, 256 * 1024);
    if (app->login_limit == NULL || app->addr_limit == NULL || app->waiters == NULL ||
        app->streams == NULL || app->auth_cache == NULL || app->page_cache == NULL)
        return RC_ENOMEM;
    if ((rc = serve_gw_new(app, &app->gateway)) != RC_OK) {
        LOG_ERROR("main", "cannot start the inference gateway", "rc=%s", rc_str(rc));
        return rc;
    }
    /* Tags this process's NOTIFY payloads so its listener skips them. */
    return crypto_random_token("", 9, app->replica_id, sizeof(app->replica_id));
}

/* Load TLS (tls: the caller's, freed by it), start the HTTP server, the
 * metrics listener and every background thread into *t. */
static enum rc start_serving(struct srv_app *app, struct srv_tls *tls, struct server_threads *t)
{
    struct err e;

    err_init(&e);
    /* Read before the listener starts, so a bad certificate path stops the
     * start with the option's name instead of serving plain HTTP. */
    if (srv_tls_load(app->cfg, tls, &e) != RC_OK) {
        LOG_ERROR("main", "cannot load the TLS certificate or key", "field=%s error=\"%s\"",
                  e.field, e.message);
        return RC_EINVAL;
    }
    app->tls = tls;
    metrics_mark_start();
    if (http_start(app) != RC_OK || metrics_listener_start(app, &t->metrics) != RC_OK)
        return RC_EINTERNAL;
    if (sched_loop_start(app, &t->sched) != RC_OK || monitor_start(app, &t->monitor) != RC_OK ||
        webhooks_start(app, &t->hooks) != RC_OK || audit_keeper_start(app, &t->keeper) != RC_OK ||
        retention_start(app, &t->retention) != RC_OK ||
        serve_health_start(app, &t->health) != RC_OK || serve_seal_start(app, &t->seal) != RC_OK ||
        serve_canary_start(app, &t->canary) != RC_OK ||
        notify_listener_start(app, &t->listener) != RC_OK)
        return RC_EINTERNAL;
    return RC_OK;
}

/* Stop what started, in reverse order, and free the rest; safe after a
 * start that stopped half-way (every field NULL or set). */
static void stop_all(struct srv_app *app, struct server_threads *t, struct srv_tls *tls)
{
    app_stop(app);
    sched_loop_stop(t->sched);
    monitor_stop(t->monitor);
    webhooks_stop(t->hooks);
    audit_keeper_stop(t->keeper);
    retention_stop(t->retention);
    serve_health_stop(t->health);
    serve_seal_stop(t->seal);
    serve_canary_stop(t->canary);
    notify_listener_stop(t->listener); /* it calls into the waiters */
    if (app->waiters != NULL)
        waiters_stop(app->waiters);
    http_stop(app, 10000);
    serve_gw_free(app->gateway); /* after http_stop: its requests have ended */
    app->gateway = NULL;
    metrics_listener_stop(t->metrics);
    srv_tls_free(tls);
    waiters_free(app->waiters);
    streams_free(app->streams); /* after http_stop: every request gave its slot back */
    ratelimit_free(app->login_limit);
    cache_free(app->auth_cache);
    cache_free(app->page_cache);
    ratelimit_free(app->addr_limit);
    db_free(app->db);
    audit_key_free(app->audit_key);
    tpl_set_free(app->templates);
    pthread_mutex_destroy(&app->wake_lock);
    pthread_cond_destroy(&app->wake_cond);
    curl_global_cleanup();
}

int main(int argc, char **argv)
{
    struct srv_config cfg;
    struct srv_app app;
    struct srv_tls tls = {0};
    struct server_threads threads = {0};
    sigset_t sigs;
    int sig = 0, status;

    memset(&app, 0, sizeof(app));
    if ((status = configure(&cfg, argc, argv)) >= 0)
        return status;
    status = 1;
    process_init(&sigs);
    app.cfg = &cfg;
    app.routes = routes_table(&app.nroutes);
    pthread_mutex_init(&app.wake_lock, NULL);
    pthread_cond_init(&app.wake_cond, NULL);
    if (cfg.create_admin[0] == '\0')
        srv_config_log(&cfg);
    if (open_database(&app) != RC_OK)
        goto out;
    if (cfg.create_admin[0] != '\0') {
        status = create_admin(&app, cfg.create_admin);
        goto out;
    }
    if (prepare_state(&app) != RC_OK || start_serving(&app, &tls, &threads) != RC_OK)
        goto out;
    LOG_INFO("main", "trainyard-server ready", "port=%d schema=%d replica=%s", http_port(&app),
             db_schema_version_known(), app.replica_id);
    sigwait(&sigs, &sig);
    LOG_INFO("main", "stopping", "signal=%d", sig);
    status = 0;
out:
    stop_all(&app, &threads, &tls);
    if (status == 0 && cfg.create_admin[0] == '\0')
        LOG_INFO("main", "stopped", "");
    return status;
}
