/*
 * gpu.h - what this node has: GPUs (NVML loaded with dlopen at run time, so
 * nothing is needed at build time, or --fake-gpus for dev/CI), CPUs, memory;
 * the GPU side of the interconnect (PCIe link, NVLink, the path between each
 * pair of GPUs) and the GPU memory each process uses. Fake GPUs have no
 * topology and no per-process memory: nothing is made up for them.
 *
 * Thread-safety: a struct wrk_gpus belongs to one thread (the worker's main
 * thread); wrk_gpus_sample() must not run concurrently on the same object.
 */
#ifndef TY_WORKER_GPU_H
#define TY_WORKER_GPU_H

#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "assign.h"
#include "err.h"

struct wrk_gpu_info {
    int index;
    char uuid[96];
    char model[96];
    int64_t memory_mb;
    char compute_capability[16]; /* "9.0" */
    int npeers;
    int nvlink_peers[WRK_MAX_GPUS]; /* indices of GPUs reachable over NVLink */
    /* Interconnect (NVML only; 0 / "" when unknown) */
    char bus_id[32];          /* PCI bus id, "00000000:18:00.0" */
    int pcie_gen, pcie_width; /* current PCIe link: generation, lanes */
    int pcie_max_gen, pcie_max_width;
    int nvlinks;                /* active NVLink links of this GPU */
    char path[WRK_MAX_GPUS][8]; /* to GPU j, as nvidia-smi topo -m: "NV4", "PIX", "PXB",
                                   "PHB", "NODE", "SYS"; "X" for itself; "" unknown */
    /* last sample */
    int util_pct;
    int64_t mem_used_mb;
};

struct wrk_fake_spec {
    int count;      /* 1..64 */
    int memory_gib; /* default 80 */
    char model[64]; /* default "Fake GPU" */
};

/*
 * Parse "COUNT[:MEMORY_GIB[:MODEL]]" (count 0..64, memory 1..4096 GiB, model
 * printable, at most 63 bytes). Returns RC_OK or RC_EINVAL (e filled).
 */
enum rc wrk_fake_parse(const char *s, struct wrk_fake_spec *out, struct err *e) TY_WUR;

struct wrk_gpus;

/*
 * Discover GPUs. fake may be NULL (use NVML; no NVML or no GPU gives an empty
 * list, not an error); node_name names fake UUIDs "GPU-fake-<node>-<i>".
 * Returns RC_OK or RC_ENOMEM. Free with wrk_gpus_free().
 */
enum rc wrk_gpus_open(const struct wrk_fake_spec *fake, const char *node_name,
                      struct wrk_gpus **out) TY_WUR;

void wrk_gpus_free(struct wrk_gpus *g);

int wrk_gpus_count(const struct wrk_gpus *g);

/* Borrowed pointer to GPU i (0 <= i < count), valid until wrk_gpus_free(). */
const struct wrk_gpu_info *wrk_gpus_get(const struct wrk_gpus *g, int i);

/*
 * Refresh util_pct/mem_used_mb. For fake GPUs busy(ctx, index) says whether a
 * rank uses the GPU (100 % and half the memory) or not (0).
 */
void wrk_gpus_sample(struct wrk_gpus *g, int (*busy)(void *ctx, int index), void *ctx);

/* Register's "gpus" array (new reference) or NULL on ENOMEM. */
json_t *wrk_gpus_register_json(const struct wrk_gpus *g);

/* Heartbeat's "gpus" array (new reference) or NULL on ENOMEM. */
json_t *wrk_gpus_heartbeat_json(const struct wrk_gpus *g);

/*
 * {"gpus":[{"index","bus_id","pcie":{"gen","width","max_gen","max_width"},"nvlinks"}],
 *  "p2p":[["X","NV18"],["NV18","X"]]} (new reference; NULL on ENOMEM): the
 * members register merges into "interconnect". An empty object for fake GPUs
 * or without NVML. p2p[i][j] is the path between GPU i and GPU j (gpu.h,
 * wrk_gpu_info.path).
 */
json_t *wrk_gpus_interconnect_json(const struct wrk_gpus *g);

/* The nvidia-smi name of an NVML topology level (nvmlGpuTopologyLevel_t):
 * 10 "PIX", 20 "PXB", 30 "PHB", 40 "NODE", 50 "SYS"; "" for anything else. */
const char *wrk_gpu_level_name(int nvml_level);

struct wrk_proc_mem {
    pid_t pid;
    uint64_t bytes; /* GPU memory in use, summed over this node's GPUs */
};

/*
 * The GPU memory each compute process uses now (NVML
 * nvmlDeviceGetComputeRunningProcesses), one entry per pid, at most max.
 * Returns the count, or -1 when it cannot be measured (fake GPUs, no NVML,
 * a driver without the call, an NVML error): callers then report nothing.
 */
int wrk_gpus_proc_mem(struct wrk_gpus *g, struct wrk_proc_mem *out, size_t max);

/*
 * For tests: GPUs described by info (n entries, copied), as NVML would have
 * found them, topology included, but without a device to sample. RC_OK or
 * RC_ENOMEM; free with wrk_gpus_free().
 */
enum rc wrk_gpus_from_info(const struct wrk_gpu_info *info, int n, struct wrk_gpus **out) TY_WUR;

/* Online CPUs and total memory (MiB, from /proc/meminfo; 0 if unknown). */
int wrk_host_cpus(void);
int64_t wrk_host_memory_mb(void);

#endif
