/*
 * app.h - server-wide state shared by every request and background thread.
 *
 * Created by main.c before any thread starts; immutable afterwards except
 * through the thread-safe objects it points to (db pool, rate limiter,
 * waiters, scheduler wake-up).
 */
#ifndef TY_SERVER_APP_H
#define TY_SERVER_APP_H

#include <pthread.h>
#include <stdatomic.h>

#include "config.h"

struct db;
struct ratelimit;
struct MHD_Daemon;
struct waiters;
struct streams;
struct cache;
struct audit_key;
struct tpl_set;
struct router_route;
struct serve_gw;

struct srv_app {
    const struct srv_config *cfg;      /* borrowed from main */
    struct db *db;                     /* owned by main */
    struct ratelimit *login_limit;     /* per username; owned by main */
    struct ratelimit *addr_limit;      /* per source address (5x looser: NAT); owned by main */
    struct waiters *waiters;           /* long-poll waiters; owned by main */
    struct streams *streams;           /* long-lived requests per caller (streams.h); main's */
    struct cache *auth_cache;          /* caller identities (cache.h); owned by main */
    struct cache *page_cache;          /* job-list answers (cache.h); owned by main */
    struct MHD_Daemon *daemon;         /* owned by http.c */
    const struct srv_tls *tls;         /* HTTPS material (tls.h); owned by main; NULL = HTTP */
    struct audit_key *audit_key;       /* Ed25519 audit signing key (audit_sign.h); owned by main */
    struct tpl_set *templates;         /* job templates (templates.h), immutable; owned by main */
    const struct router_route *routes; /* the API's route table (api/routes.h); set by main */
    size_t nroutes;
    struct serve_gw *gateway; /* the inference gateway (serve/gateway.h); owned by main */
    char replica_id[16];      /* random tag of this process in NOTIFY payloads (notify.h) */
    /* Scheduler wake-up: set by handlers when the queue or cluster changes. */
    pthread_mutex_t wake_lock;
    pthread_cond_t wake_cond;
    int wake_pending;
    /* 0, then 1 once at shutdown: app_stop() writes it, every background
     * thread and long poll reads it through app_stopping(). An atomic, not a
     * volatile: volatile orders nothing between threads, and a plain read
     * racing the write is undefined behaviour. */
    atomic_int stopping;
};

/* Ask the scheduler thread for a pass soon. Thread-safe. */
void app_wake_scheduler(struct srv_app *app);

/* Begin shutdown: from now on app_stopping() is true on every thread; each
 * background loop notices at its next poll (at most about a second), and
 * its *_stop() then joins it. Idempotent. Thread-safe. */
void app_stop(struct srv_app *app);

/* Nonzero once app_stop() has been called. Thread-safe. */
int app_stopping(const struct srv_app *app);

#endif
