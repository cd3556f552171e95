/*
 * agent_int.h - the agent's state, shared by the files that make up the
 * agent (agent.c, join.c, register.c, prepare.c, and poller.c for
 * wrk_sleep_ms()); not for other modules.
 *
 * Threads: struct wrk_agent belongs to the control thread, except poller
 * (poller.h says which of its fields another thread touches) and what the
 * launcher and shipper callbacks reach through their own locks.
 */
#ifndef TY_WORKER_AGENT_INT_H
#define TY_WORKER_AGENT_INT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "agent.h"
#include "gpu.h"
#include "http.h"
#include "launcher.h"
#include "poller.h"
#include "shipper.h"

/* Timeout of every request but the long-poll and the heartbeat. */
#define WRK_REQ_TIMEOUT_MS 15000L

struct wrk_agent {
    const struct wrk_config *cfg; /* borrowed from wrk_agent_run()'s caller */
    struct wrk_http *http;        /* control thread */
    struct wrk_http *poll_http;   /* poller thread */
    struct wrk_http *ship_http;   /* shipper thread */
    struct wrk_gpus *gpus;
    struct wrk_launcher *launcher;
    struct wrk_shipper *shipper;
    json_t *labels;
    json_t *caps;       /* the capability probe's result (caps.h) */
    json_t *nccl_probe; /* --nccl-probe-file, checked, or NULL */
    char node_id[64];
    char *credential; /* owned; never logged */
    char hostname[256];
    char addr[64];
    char node_path[PATH_MAX];
    char state_path[PATH_MAX];
    const char *roots[WRK_MAX_ROOTS];
    size_t nroots;
    int hb_ms;
    int draining;
    uint64_t saved_gen;
    uint64_t swept_gen; /* launcher generation of the last wrk_isolate_sweep() */
    struct wrk_poller poller;
};

/* 1 once the signal handler has asked the worker to stop. Thread-safe. */
int wrk_agent_stopping(const struct wrk_agent *a);

/* Sleep ms milliseconds, resumed after a signal. Thread-safe. */
void wrk_sleep_ms(int ms);

#endif
