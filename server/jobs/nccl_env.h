/*
 * nccl_env.h - the communication settings of one node of a job, derived from
 * what the job's nodes reported at register (their "interconnect" and
 * "nccl_probe", docs/agent-protocol.md) and shown with a reason for each
 * (GET /api/v1/jobs/{id}, "nccl").
 *
 * Variables, in the order they are shown:
 *   NCCL_SOCKET_IFNAME  "=<if>" (NCCL's exact-match form) and
 *   GLOO_SOCKET_IFNAME  "<if>": the interface that carries the rendezvous
 *                       address: the one holding master_addr, else the one
 *                       whose subnet holds it (longest prefix), else the one
 *                       holding the node's own address. Without a match both
 *                       are left to NCCL and gloo.
 *   NCCL_IB_HCA         "=mlx5_0:1,..." the node's ACTIVE InfiniBand/RoCE
 *                       ports, when every node of the job has one;
 *   NCCL_IB_DISABLE     "1" otherwise: NCCL needs one transport on all nodes.
 *   NCCL_P2P_LEVEL      "NVL" when every pair of the job's GPUs on the node is
 *                       NVLink-connected, else "PXB" (P2P through PCIe
 *                       switches, not through the CPU); unset with one GPU or
 *                       without a reported GPU topology (fake GPUs, no NVML).
 *   NCCL_ALGO,          only for a single-node job whose node has probe
 *   NCCL_PROTO          results for exactly the job's GPU count, and only the
 *                       variant that beat NCCL's own choice by
 *                       NCCL_ENV_MIN_GAIN at every size from 1 MiB up and was
 *                       never more than NCCL_ENV_MAX_LOSS slower at any size.
 *
 * A name the job's "env" sets wins: it is shown with the user's value and
 * the reason "set by the user", and left out of what the worker gets. The IB
 * pair and the ALGO/PROTO pair go together: when the user sets one, the
 * other is not derived either.
 *
 * Pure: no I/O, no clock. Thread-safety: reentrant.
 */
#ifndef TY_SERVER_NCCL_ENV_H
#define TY_SERVER_NCCL_ENV_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"

#define NCCL_ENV_MIN_GAIN 0.10          /* a variant must be 10 % faster ... */
#define NCCL_ENV_MAX_LOSS 0.05          /* ... and never 5 % slower */
#define NCCL_ENV_LARGE_BYTES (1u << 20) /* "large" all-reduces: gradient buckets */

/*
 * Derive the settings of nodes[self].
 *
 * master_addr: the attempt's rendezvous address (borrowed). user_env: the
 * job's "env" object (borrowed; NULL or not an object = none). nodes: every
 * node of the attempt (borrowed array), each
 *   {"node_rank":0,"name":"gpu-07","addr":"10.0.0.7","gpus":[0,1],
 *    "interconnect":{...} or null,"nccl_probe":{...} or null}
 * with the shapes that register validated (server/jobs/topology.h); anything
 * missing counts as not reported.
 *
 * *env (new object): the derived variables to send in the assignment's
 * "nccl_env". *shown (new array): one entry per variable above,
 *   {"name":"NCCL_IB_DISABLE","value":"1" or null,"source":"derived"|"user",
 *    "reason":{"en":"...","zh-CN":"..."}}.
 * Returns RC_OK, RC_EINVAL (self is not an index of nodes) or RC_ENOMEM; on
 * failure both outputs are NULL.
 */
enum rc nccl_env_derive(const char *master_addr, const json_t *user_env, const json_t *nodes,
                        size_t self, json_t **env, json_t **shown) TY_WUR;

#endif
