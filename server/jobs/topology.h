/*
 * topology.h - the strict validators of what a worker reports about its
 * node at register (docs/agent-protocol.md, "Register"): "capabilities"
 * (the Python probe, worker/caps.h), "interconnect" (interfaces,
 * InfiniBand, GPU PCIe and paths; worker/topo.h, worker/gpu.h) and
 * "nccl_probe" (trainyard-nccl-probe's JSON, worker/ncclbw.h).
 *
 * Each takes the member as sent (NULL when absent: accepted, nothing
 * reported) and returns RC_OK, or RC_EINVAL with e naming the first bad
 * field ("interconnect.interfaces[2].addrs[0]") so that register answers
 * 400 and writes nothing. Unknown keys are refused at every level. Sizes are
 * bounded so a node row stays small (a 64-GPU path matrix is the largest
 * part, about 40 KiB).
 *
 * Accepted:
 *   capabilities  {"probe": "ok"|"failed"|"timeout"|"skipped",
 *                  "python": string 1..32, "torch": string 1..64 or null,
 *                  "torch_cuda": string 1..32 or null,
 *                  "nccl", "fsdp", "deepspeed": boolean or "unknown"};
 *                  probe required, the rest optional; strings printable
 *   interconnect  {"interfaces": <= 32 x {"name": [A-Za-z0-9_.:@-]{1,31},
 *                     "addrs": <= 8 x "IP/prefix", "speed_mbps": 1..10^7 or null,
 *                     "state": plain <= 15, "mtu": 1..2^20 or null, "loopback": bool},
 *                  "infiniband": <= 32 x {"hca": name, "port": 1..255,
 *                     "state": plain <= 15, "rate_gbps": 0..10^5, "link_layer": plain <= 15},
 *                  "gpus": <= 64 x {"index": 0..63, "bus_id": printable <= 31,
 *                     "pcie": {"gen","width","max_gen","max_width": 0..99}, "nvlinks": 0..64},
 *                  "p2p": square matrix, <= 64 rows, of "X", "PIX", "PXB", "PHB",
 *                     "NODE", "SYS", "NV1".."NV64" or ""}; every member optional
 *   nccl_probe    {"version": 1, "op": "all_reduce", "dtype": string <= 16,
 *                  "gpus": 1..64, "nccl_version", "warmup": integers >= 0, "iters": 1..,
 *                  "results": 1..64 x {"bytes": 1..2^40, "time_us", "algbw_gbs",
 *                     "busbw_gbs": numbers >= 0},
 *                  "variants": <= 8 x {"env": {NCCL_ALGO and/or NCCL_PROTO: NCCL's
 *                     names}, "results": as above}} or null
 *
 * Pure. Thread-safety: reentrant.
 */
#ifndef TY_SERVER_TOPOLOGY_H
#define TY_SERVER_TOPOLOGY_H

#include <jansson.h>

#include "err.h"

enum rc topo_check_capabilities(const json_t *v, struct err *e) TY_WUR;
enum rc topo_check_interconnect(const json_t *v, struct err *e) TY_WUR;
enum rc topo_check_nccl_probe(const json_t *v, struct err *e) TY_WUR;

#endif
