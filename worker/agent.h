/*
 * agent.h - the worker's life: join (once), register, then heartbeats, the
 * assignment long-poll, launches, cancels, reports, and a draining shutdown.
 *
 * Threads (see worker/README.md): the caller's thread runs wrk_agent_run() as
 * the control loop (heartbeats, launching, cancels, state file); it starts
 * the assignment poller, the shipper and the launcher's I/O thread, and joins
 * them before returning. Main thread only.
 */
#ifndef TY_WORKER_AGENT_H
#define TY_WORKER_AGENT_H

#include <stdatomic.h>
#include <stddef.h>

#include "err.h"
#include "gpu.h"
#include "ident.h"
#include "labels.h" /* the format of wrk_config.labels */

#define WRK_MAX_ROOTS 32

struct wrk_config {
    const char *server;               /* base URL, required */
    const char *join_token;           /* only needed on the first start; never logged */
    const char *join_token_file;      /* --join-token-file, or NULL: TRAINYARD_JOIN_TOKEN */
    const char *name;                 /* node name, default the host name */
    const char *labels;               /* "rack=r1,switch=s1" or NULL */
    const char *work_dir;             /* holds node.json and state.json */
    const char *addr;                 /* address other nodes reach this one at; NULL = guess */
    const char *ca_file;              /* PEM bundle for https, NULL = default bundle */
    const char *roots[WRK_MAX_ROOTS]; /* --allowed-root; none = work_dir */
    size_t nroots;
    int fake; /* use fake_spec instead of NVML */
    struct wrk_fake_spec fake_spec;
    int grace_s;         /* shutdown grace for ranks, default 30 */
    int heartbeat_ms;    /* default 2000; the server's answer to register wins */
    int discover_only;   /* print the register body and exit */
    int isolate_network; /* --isolate-network: ranks in a network namespace */
    const char *python;  /* --python: the interpreter the capability probe asks; "" = no probe */
    const char *nccl_probe_file; /* --nccl-probe-file: trainyard-nccl-probe JSON, or NULL */
    const char *sys_root;   /* --sys-root: where sysfs is, default "/sys" (tests use a fake one) */
    const atomic_int *stop; /* set by the signal handler: drain and exit */
    const char *job_user;   /* --job-user: the ranks' default account, "self" = the worker's */
    const struct wrk_ident *job_ident; /* job_user resolved (main.c); never NULL when running */
    /* --job-users: the accounts an assignment's "unix_account" may name, besides job_user */
    char job_users[WRK_IDENT_MAX_USERS][WRK_IDENT_NAME_MAX + 1];
    size_t njob_users;
};

/* Run until *cfg->stop is set and every rank has ended. Returns the process exit status. */
int wrk_agent_run(const struct wrk_config *cfg);

#endif
