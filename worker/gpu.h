/*
 * gpu.h - what this node has: GPUs (NVML loaded with dlopen at run time, so
 * nothing is needed at build time, or --fake-gpus for dev/CI), CPUs, memory.
 *
 * Thread-safety: a struct wrk_gpus belongs to one thread (the worker's main
 * thread); wrk_gpus_sample() must not run concurrently on the same object.
 */
#ifndef TY_WORKER_GPU_H
#define TY_WORKER_GPU_H

#include <stdint.h>

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

/* Online CPUs and total memory (MiB, from /proc/meminfo; 0 if unknown). */
int wrk_host_cpus(void);
int64_t wrk_host_memory_mb(void);

#endif
