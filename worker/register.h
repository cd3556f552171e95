/*
 * register.h - POST /api/v1/agent/register on every start: the node's GPUs,
 * CPUs, memory, capabilities, interconnect and NCCL probe, and the attempts
 * state.json says are still running here; the answer sets the heartbeat
 * interval and says which of those attempts to keep (re-adopted by the
 * launcher) and which to stop.
 *
 * Threads: main thread only (the control thread's HTTP handle).
 */
#ifndef TY_WORKER_REGISTER_H
#define TY_WORKER_REGISTER_H

#include <jansson.h>

#include "agent_int.h"
#include "state.h"

/*
 * --nccl-probe-file: read path and check it with the server's rules
 * (ncclbw.h). A new reference, or NULL when path is NULL or the file is
 * missing, too large or invalid (logged, never fatal: the server would
 * refuse the whole register over it, and the node is usable without a
 * probe).
 */
json_t *wrk_register_nccl_probe(const char *path);

/*
 * The register body (a new reference, NULL on ENOMEM). st (borrowed) lists
 * the running attempts; NULL for none (--discover). The interconnect is read
 * afresh each time, so that a link brought up since the last start is seen.
 */
json_t *wrk_register_body(struct wrk_agent *a, const struct wrk_state *st);

/* Keep only the attempts of st with a live process. */
void wrk_register_prune_dead(struct wrk_state *st);

/*
 * Register, retrying with backoff (1 s doubling to 10 s) until it works or
 * the worker stops; on success the launcher re-adopts st's attempts and
 * cancels those the server does not keep. 0 ok, -1 give up, -2 the
 * credential was refused (401/403).
 */
int wrk_register(struct wrk_agent *a, struct wrk_state *st);

#endif
