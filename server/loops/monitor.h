/*
 * monitor.h - the node monitor thread: a node silent for longer than
 * cfg->node_timeout_s is marked down, its GPUs are given back, and each job
 * that had ranks there restarts (a node loss does not count against
 * max_restarts) and notifies its "node.lost" webhooks. A monitor judges
 * no node before node_timeout_s has passed since it started: silence while
 * no server was up (a restart) is not a node's fault.
 *
 * Threads: one thread, checking every second. Several replicas may run it:
 * marking a node down is a single claiming UPDATE.
 */
#ifndef TY_SERVER_MONITOR_H
#define TY_SERVER_MONITOR_H

#include "app.h"
#include "err.h"

struct monitor;

enum rc monitor_start(struct srv_app *app, struct monitor **out) TY_WUR;
void monitor_stop(struct monitor *m);

#endif
