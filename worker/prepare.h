/*
 * prepare.h - what happens to an assignment on this node before its ranks
 * run, and their start: refused while draining; the rendezvous port
 * checked free (rank-0 node); the data-residency check of every path
 * (pathchk.h); the script checked present (cause.h); ds_config.json
 * written; under --isolate-network the namespace made (isolate.h); the
 * launch plan built (assign.h) and handed to the launcher. Whatever fails
 * is reported as a refusal (refuse.h), never left unanswered.
 *
 * Threads: main thread only (the control loop).
 */
#ifndef TY_WORKER_PREPARE_H
#define TY_WORKER_PREPARE_H

#include <jansson.h>

#include "agent_int.h"
#include "assign.h"

/*
 * Prepare and start as (borrowed; changed in place for isolation), whose
 * "allowed_networks" are networks (borrowed, may be NULL). 1 when its ranks
 * started: the caller must save the state file before anything else, so
 * that no rank goes unrecorded. 0 when it was refused (reported) or is
 * already running (delivered twice).
 */
int wrk_prepare_start(struct wrk_agent *a, struct wrk_assignment *as, const json_t *networks);

#endif
