/*
 * heartbeat.h - POST /api/v1/agent/heartbeat: GPU utilisation and memory,
 * the running attempts, whether the node is draining; the answer may name
 * attempts to cancel, which are cancelled at once.
 *
 * Threads: main thread only (the control thread's HTTP handle).
 */
#ifndef TY_WORKER_HEARTBEAT_H
#define TY_WORKER_HEARTBEAT_H

#include "gpu.h"
#include "http.h"
#include "launcher.h"

/*
 * Sample g, send one heartbeat over h (5 s at most) and apply the cancels
 * it answers with to l. All borrowed. A failure is logged; the next
 * heartbeat tries again.
 */
void wrk_heartbeat(struct wrk_http *h, struct wrk_gpus *g, struct wrk_launcher *l, int draining);

#endif
