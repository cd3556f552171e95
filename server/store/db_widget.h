/*
 * db_widget.h - a deployment's public chat widget (docs/serving.md, "Widget
 * and handoff"): its settings (deployments.widget), the liveness of its
 * public key, the handoffs a visitor asked for recently, and queueing a
 * handoff's webhook delivery.
 *
 * Thread-safety: any thread, with its own connection.
 */
#ifndef TY_SERVER_DB_WIDGET_H
#define TY_SERVER_DB_WIDGET_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"

/* A deployment as the widget needs it. */
struct db_widget_dep {
    int64_t id;
    int64_t team_id;
    json_t *widget; /* owned: the settings, {} when none (json_decref) */
};

/*
 * Load deployment name; lock = 1 takes its row FOR UPDATE (in the caller's
 * transaction). RC_OK, RC_ENOTFOUND, or the database's rc. On RC_OK the
 * caller frees out->widget.
 */
enum rc db_widget_load(PGconn *c, const char *name, int lock, struct db_widget_dep *out /* out */,
                       const char *req_id) TY_WUR;

/* Store the settings (borrowed) of deployment id. */
enum rc db_widget_store(PGconn *c, int64_t id, const json_t *widget, const char *req_id) TY_WUR;

/* *live 1 when key_id is a key of deployment id, public and not revoked;
 * its rate_per_min is then set to rate_per_min. */
enum rc db_widget_key_reuse(PGconn *c, int64_t id, int64_t key_id, int rate_per_min,
                            int *live /* out */, const char *req_id) TY_WUR;

/* How many serve.handoff events of target (borrowed) from visitor address
 * addr were written in the last window_s seconds. */
enum rc db_widget_handoffs_since(PGconn *c, const char *target, const char *addr, int window_s,
                                 int *n /* out */, const char *req_id) TY_WUR;

/* The format of webhook webhook_id when it belongs to team_id (directly);
 * RC_ENOTFOUND otherwise. format is at least 16 bytes. */
enum rc db_widget_webhook(PGconn *c, int64_t webhook_id, int64_t team_id, char *format,
                          size_t format_size, const char *req_id) TY_WUR;

/* Queue one delivery of event with payload (borrowed JSON text) to
 * webhook_id, in the caller's transaction; the webhooks loop sends it with
 * its retries. */
enum rc db_widget_enqueue(PGconn *c, int64_t webhook_id, const char *event, const char *payload,
                          const char *req_id) TY_WUR;

#endif
