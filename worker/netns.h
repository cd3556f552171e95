/*
 * netns.h - --isolate-network: the ranks of an attempt run in a network
 * namespace of their own that reaches only loopback and the site's allowed
 * networks (DESIGN.md "Compliance"; worker/README.md "Network isolation").
 *
 * One namespace per attempt, named ty-<owner>-<attempt id> (/run/netns/...,
 * so `ip netns exec ty-3f2a-31 ss -tlnp` works for an operator and leftovers
 * of a crashed worker can be found by name; <owner> is 4 hex digits of the
 * worker's work dir, which keeps two workers on one host apart). All ranks
 * of the attempt share it: they reach each other over its loopback for the
 * rendezvous.
 *
 *   - nnodes == 1: loopback only. The worker gives the ranks MASTER_ADDR
 *     127.0.0.1 (the node's address does not exist in the namespace).
 *   - nnodes > 1: also a veth pair tyh<tag> (host) / tyn<tag> (namespace)
 *     with a private /30 from 169.254.0.0/16, routes for the allowed IPv4
 *     CIDRs only (plus the rank-0 node's address on the other nodes), and on
 *     the host a firewall table ty_<tag> (nft; iptables chains TY-<tag>-* when
 *     nft is missing): masquerade out, drop whatever the namespace sends to
 *     the host or beyond that is not an allowed network, and on the rank-0
 *     node DNAT of <node address>:MASTER_PORT into the namespace. Without
 *     nft and iptables a multi-node attempt is refused, never launched
 *     unisolated.
 *
 * Mechanism: the ip, nft and iptables programs, run with posix_spawn() from
 * an argv array (no shell), absolute paths from a fixed PATH, LC_ALL=C.
 * Netlink would avoid the dependency on iproute2, but nftables has no stable
 * C API short of libnftables, and one mechanism for all of it keeps the
 * commands readable in the debug log and reproducible by hand.
 * Ranks enter the namespace through setns(2) on a short-lived thread that
 * spawns them (a network namespace is per thread; children inherit it), see
 * wrk_netns_call().
 *
 * Threads: wrk_netns_call() may run on any thread; everything else runs on
 * the worker's control thread only (commands are spawned and waited for
 * synchronously).
 */
#ifndef TY_WORKER_NETNS_H
#define TY_WORKER_NETNS_H

#include <stddef.h>

#include "err.h"

/* Most allowed networks of one attempt that become routes. */
#define WRK_NETNS_MAX_CIDRS 64

struct wrk_netns_spec {
    const char *owner;        /* borrowed; the worker's work dir: names of two workers on one
                                 host differ by a hash of it */
    const char *attempt_id;   /* borrowed; a valid id (assign.h) */
    int nnodes;               /* the attempt's node count */
    int node_rank;            /* this node's rank */
    const char *master_addr;  /* borrowed; the rank-0 node's address */
    int master_port;          /* the rendezvous port */
    const char *const *cidrs; /* borrowed; the site's networks ("10.0.0.0/8") */
    size_t ncidrs;
};

/*
 * Whether isolation can work on this host: root, the ip program, and a
 * network namespace can be created (not so in an unprivileged container).
 * RC_OK, RC_EPERM or RC_EUNAVAIL with e saying why. Call once at start.
 */
enum rc wrk_netns_check_host(struct err *e) TY_WUR;

/* "/run/netns/ty-<owner hash>-<attempt_id>" into out (64 + 32 bytes suffice). */
void wrk_netns_path(const char *owner, const char *attempt_id, char *out, size_t out_size);

/* The namespace side's interface of a multi-node attempt ("tyn<tag>", 16 bytes suffice). */
void wrk_netns_ifname(const char *owner, const char *attempt_id, char *out, size_t out_size);

/*
 * Create the attempt's namespace as described above. On failure whatever
 * was created is removed again and e says why (RC_EUNAVAIL, or RC_EINVAL for
 * a multi-node attempt whose master_addr is not a non-loopback IPv4 address).
 */
enum rc wrk_netns_setup(const struct wrk_netns_spec *s, struct err *e) TY_WUR;

/* Remove the namespace, veth and firewall rules of attempt_id; idempotent. */
void wrk_netns_teardown(const char *owner, const char *attempt_id);

/*
 * Remove every namespace, veth and firewall table of this owner whose attempt
 * is not in keep[0..nkeep) (borrowed): after an attempt ended, and at start
 * for what a crashed worker left. Another worker's on the same host stay.
 */
void wrk_netns_sweep(const char *owner, const char *const *keep, size_t nkeep);

/*
 * Run fn(arg) on a new thread that first joins the network namespace at path
 * (setns); processes fn spawns start inside it. Returns fn's result, or
 * RC_EUNAVAIL with e filled when the namespace cannot be entered. The
 * calling thread's namespace never changes.
 */
enum rc wrk_netns_call(const char *path, enum rc (*fn)(void *arg), void *arg, struct err *e) TY_WUR;

#endif
