/*
 * gw_view.h - the gateway's routing view: every deployment with its
 * versions and canary weight, and its ready replicas with their addresses
 * and tokens (store/db_gateway.h db_gw_view), read again by a thread of its
 * own every GW_VIEW_REFRESH_MS. A replica found ready, or one stopped, is
 * seen by the next request at most that long after the row changed.
 *
 * A pick chooses the version by the canary weight (canary_weight percent of
 * picks go to replicas of canary_version_id; when it has none, to the
 * primary's), then a replica of that version round-robin.
 *
 * Threads: gw_view_pick() is thread-safe (a reader lock over the current
 * snapshot, which the refresh thread replaces whole under the writer lock;
 * no lock is held across SQL).
 */
#ifndef TY_SERVER_GW_VIEW_H
#define TY_SERVER_GW_VIEW_H

#include <stdint.h>

#include "err.h"

#define GW_VIEW_REFRESH_MS 250

struct srv_app;
struct gw_view;

/* Where one request goes. */
struct gw_target {
    int64_t deployment_id;
    int64_t version_id;     /* the version picked; 0 when the deployment has none */
    int64_t replica_job_id; /* 0 when no replica is ready */
    int keep_texts_days;    /* the deployment's text retention; 0 = hashes only */
    char manifest[65];      /* the version's manifest_sha256 */
    char url_base[96];      /* "http://host:port" */
    char token[160];        /* the replica's bearer token */
};

/* Start the refresh thread (one first read happens before it returns, so
 * the first requests see the deployments). NULL when out of memory or the
 * thread cannot start. app borrowed for the view's life. */
struct gw_view *gw_view_new(struct srv_app *app);

/*
 * The target for a request to deployment name, avoiding replica avoid_job
 * (0: none; the retry after a failed connection). RC_OK: a replica is in
 * *out. RC_ENOTFOUND: no such deployment. RC_EUNAVAIL: it has no ready
 * replica (or it is stopped); *out holds the deployment and version. The
 * cold-start hook: a scale-to-zero start belongs here, before RC_EUNAVAIL.
 */
enum rc gw_view_pick(struct gw_view *v, const char *name, int64_t avoid_job,
                     struct gw_target *out /* out */) TY_WUR;

/* 1 when a deployment named name exists in the view. */
int gw_view_has(struct gw_view *v, const char *name);

/* Stop the thread and free. NULL is a no-op. */
void gw_view_free(struct gw_view *v);

#endif
