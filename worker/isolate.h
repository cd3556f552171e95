/*
 * isolate.h - --isolate-network as the agent uses it (the namespaces
 * themselves are netns.h): fit an assignment's environment to its
 * namespace, create the namespace before the ranks start, and remove those
 * whose attempt is no longer running here.
 *
 * Threads: main thread only (they spawn ip, nft or iptables and wait).
 */
#ifndef TY_WORKER_ISOLATE_H
#define TY_WORKER_ISOLATE_H

#include <stddef.h>

#include <jansson.h>

#include "assign.h"
#include "err.h"
#include "launcher.h"

/*
 * Fit as (changed in place) to its namespace before the plan is built: the
 * rank-0 node's ranks meet at 127.0.0.1, and GLOO_SOCKET_IFNAME and
 * NCCL_SOCKET_IFNAME name the namespace's interface unless the job's own env
 * sets them. owner is the --work-dir the namespace names derive from.
 * RC_OK or RC_ENOMEM.
 */
enum rc wrk_isolate_prepare(const char *owner, struct wrk_assignment *as) TY_WUR;

/*
 * Create the attempt's namespace, routed to the IPv4 CIDRs of networks (a
 * JSON array, borrowed; NULL for none) with master (the rendezvous address
 * before wrk_isolate_prepare()); ns_path receives where the ranks go.
 * RC_OK, or what wrk_netns_setup() returns with e filled.
 */
enum rc wrk_isolate_setup(const char *owner, const struct wrk_assignment *as, const char *master,
                          const json_t *networks, char *ns_path, size_t ns_size,
                          struct err *e) TY_WUR;

/*
 * Remove owner's namespaces of attempts that l (borrowed; NULL once the
 * launcher is gone: keep none) no longer runs. Out of memory leaves them to
 * the next sweep.
 */
void wrk_isolate_sweep(const char *owner, struct wrk_launcher *l);

#endif
