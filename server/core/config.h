/*
 * config.h - trainyard-server settings from a file, the environment and flags.
 *
 * Precedence: flags > environment (TRAINYARD_<KEY>) > file (--config FILE,
 * "key = value" lines, '#' comments) > defaults. Every key has all three
 * spellings: database_url / TRAINYARD_DATABASE_URL / --database-url.
 *
 * Thread-safety: loaded once at start-up on the main thread, then read-only.
 */
#ifndef TY_SERVER_CONFIG_H
#define TY_SERVER_CONFIG_H

#include "err.h"

#define SRV_CFG_STR 256

struct srv_config {
    char listen[SRV_CFG_STR];       /* "0.0.0.0:8080" */
    char database_url[1024];        /* libpq URI or conninfo; secret */
    char data_dir[SRV_CFG_STR];     /* keys and local state */
    char web_dir[SRV_CFG_STR];      /* static dashboard files; "" = none */
    char public_url[SRV_CFG_STR];   /* how users reach the dashboard */
    char log_level[16];             /* error|warn|info|debug */
    char log_debug[128];            /* components with debug on */
    char sched_policy[32];          /* scheduler policy name */
    char storage_root[SRV_CFG_STR]; /* shared storage for job dirs and checkpoints */
    char create_admin[64];          /* --create-admin NAME: create and exit */
    char config_file[SRV_CFG_STR];  /* the file read, if any */
    int http_threads;               /* libmicrohttpd thread pool size */
    int db_pool_size;               /* PostgreSQL connections */
    int body_limit_bytes;           /* largest accepted request body */
    int session_ttl_s;              /* browser session lifetime */
    int node_timeout_s;             /* heartbeat silence before a node is down */
    int sched_interval_ms;          /* longest time between scheduler passes */
    int leader_lease_ms;            /* scheduling lease; renewed every fifth of it (lease.h) */
    int access_log;                 /* 1 = one logfmt line per request */
    int gateway_records;            /* 1 = a serve_requests row per gateway request; 0 only for
                                       bench/serving/gateway.py's "records off" line */
    int gateway_upstream_timeout_s; /* longest a replica may take to answer one request */
    int login_max_failures;         /* per user and per address, per window */
    int login_window_s;             /* the rate-limit window */
    int pbkdf2_iterations;          /* for new password hashes (>= 600000) */
    int cache_ttl_ms;               /* identity and job-list cache lifetime; 0 = off */
    int rendezvous_port_min;        /* MASTER_PORT range, inclusive */
    int rendezvous_port_max;
    char audit_key_path[SRV_CFG_STR]; /* Ed25519 audit signing key (default in data_dir) */
    int audit_checkpoint_interval_s;  /* seconds between signed checkpoints of the audit chain */
    int audit_retention_days;         /* audit events older are removed (also the policy's age when
                                         longer); 0 = kept forever; otherwise >= AUDIT_RETENTION_MIN_DAYS */
    int export_link_ttl_s;            /* lifetime of a one-time export download link */
    int gpu_idle_util_pct;            /* GET /overview: idle below this utilization, % */
    int gpu_idle_min_s;               /* ... for at least this long, seconds */
    int webhook_timeout_ms;           /* one webhook request, all of it; its lease follows */
    char templates_dir[SRV_CFG_STR];  /* job template files (templates.h); "" = none */
    char examples_dir[SRV_CFG_STR];   /* the templates' scripts, same path on every node */
    char tls_cert[SRV_CFG_STR];       /* PEM certificate chain for HTTPS (tls.h); "" = HTTP */
    char tls_key[SRV_CFG_STR];        /* PEM private key for tls_cert; "" = HTTP */
    int forecast_interval_ms;   /* shortest time between two stored forecasts; 0 = every pass */
    int forecast_horizon_s;     /* simulate the queue this far ahead; 0 = 30 days */
    int forecast_max_events;    /* bound on simulated events; 0 = 4 x (queued + running) */
    int forecast_default_run_s; /* run time of a job with no prediction and no limit; 0 = 1 h */
    char metrics_token[SRV_CFG_STR];  /* bearer token for GET /metrics; secret; "" = none */
    char metrics_listen[SRV_CFG_STR]; /* "127.0.0.1:9464": /metrics only there; "" = API's */
    int metrics_cache_ms;             /* how long /metrics reuses the cluster's state */
    char api_docs_dir[SRV_CFG_STR];   /* the API reference page (docs/api); "" = not served */
    int forecast_resolution_ms; /* simulated ends taken together up to multiples of it; 0 = exact */
    int stream_max_per_user;    /* open follows, exports and parked requests of one user */
    int stream_max_per_address; /* ... of every user request from one source address */
    int stream_max_total;       /* ... of all users together (http.h HTTP_CONNECTION_LIMIT) */
    int stream_max_per_node;    /* parked long-polls of one node credential */
    /* Retention (loops/retention.h): each in days, 0 = keep forever. */
    int retain_sessions_days;           /* an expired session, counted from its expiry */
    int retain_webhook_deliveries_days; /* a delivered or failed delivery, from its creation */
    int retain_job_logs_days;           /* a job's output lines, from the job's finish */
    int retain_job_metrics_days;        /* a job's metric points, from the job's finish */
    int retain_job_events_days;         /* a job's events, from the job's finish */
    int retention_interval_s;           /* seconds between two retention passes */
    int retention_batch_rows;           /* rows one retention transaction removes at most */
};

/* The shortest audit retention: MLPS 2.0 asks for at least 6 months of audit records. */
#define AUDIT_RETENTION_MIN_DAYS 180

/* Fill cfg with the defaults. */
void srv_config_defaults(struct srv_config *cfg);

/*
 * Load from argv (and --config FILE), the environment and the defaults.
 * RC_EINVAL with e filled for an unknown flag, a bad value or an unreadable
 * file. "--help" returns RC_ECONFLICT after printing usage to stdout.
 */
enum rc srv_config_load(struct srv_config *cfg, int argc, char **argv, struct err *e) TY_WUR;

/* Log the effective configuration at info level, secrets masked. */
void srv_config_log(const struct srv_config *cfg);

/* Split cfg->listen into host and port; RC_EINVAL when malformed. */
enum rc srv_config_listen(const struct srv_config *cfg, char *host, int host_size,
                          int *port) TY_WUR;

#endif
