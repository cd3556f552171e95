/*
 * gw_metrics.h - the gateway's Prometheus series, by deployment and version
 * (docs/metrics.md, "Gateway"): requests, errors, latency and time to first
 * token histograms, completion tokens, requests in flight. Label values are
 * deployment names and version ids the gateway routed to (not what a
 * caller wrote), and the table holds at most GW_METRICS_SERIES pairs
 * (further pairs are counted under deployment="_other").
 *
 * Threads: thread-safe; one mutex, a leaf.
 */
#ifndef TY_SERVER_GW_METRICS_H
#define TY_SERVER_GW_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define GW_METRICS_SERIES 256

struct gw_metrics;

struct gw_metrics *gw_metrics_new(void);

/* One more request in flight for (deployment, version): +1 or -1. */
void gw_metrics_inflight(struct gw_metrics *m, const char *deployment, int64_t version, int delta);

/* A request ended: its status, latency and time to first token (0: none),
 * completion tokens. deployment "" for a request that named none known. */
void gw_metrics_observe(struct gw_metrics *m, const char *deployment, int64_t version, int status,
                        int64_t latency_us, int64_t ttft_us, int64_t completion_tokens);

/* Append the exposition text to *buf (realloc'd; *len its length, *cap its
 * size). dropped: records the writer dropped. RC_OK or RC_ENOMEM. */
enum rc gw_metrics_render(struct gw_metrics *m, int64_t dropped, char **buf, size_t *len,
                          size_t *cap) TY_WUR;

void gw_metrics_free(struct gw_metrics *m);

#endif
