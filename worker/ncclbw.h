/*
 * ncclbw.h - the arithmetic and the JSON of trainyard-nccl-probe, apart
 * from CUDA and NCCL so that the unit tests check them on any machine
 * (tests/unit/test_wrk_ncclbw.c) and the worker validates a probe file
 * with the same rules before it uploads it (register's "nccl_probe",
 * docs/agent-protocol.md).
 *
 * Bandwidths follow nccl-tests (doc/PERFORMANCE.md there): algbw = bytes /
 * time; busbw = algbw * 2 (n - 1) / n for all-reduce over n ranks, the
 * figure that compares with the hardware's link bandwidth whatever n is.
 * GB/s are 1e9 bytes per second, as nccl-tests prints them.
 *
 * Links jansson and libc only (the probe binary links this file alone).
 * Thread-safety: reentrant.
 */
#ifndef TY_WORKER_NCCLBW_H
#define TY_WORKER_NCCLBW_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define WRK_NCCLBW_MIN_BYTES 8ULL
#define WRK_NCCLBW_MAX_BYTES (1ULL << 30) /* 1 GiB */
#define WRK_NCCLBW_MAX_POINTS 64          /* sizes of one sweep (8 B..1 GiB doubling: 28) */
#define WRK_NCCLBW_MAX_VARIANTS 8         /* sweeps under a forced NCCL_ALGO / NCCL_PROTO */
#define WRK_NCCLBW_MAX_GPUS 64

/* all-reduce: the factor from algbw to busbw over n ranks, 2 (n - 1) / n; 0 for n < 2. */
double wrk_ncclbw_bus_factor(int nranks);

/* bytes / time_us in GB/s (1e9 B/s); 0 when time_us <= 0. */
double wrk_ncclbw_algbw_gbs(uint64_t bytes, double time_us);

/*
 * The sizes of a sweep: min_bytes, doubling, up to and including max_bytes
 * (a last size that doubling skips is not added). At most cap entries go to
 * out. Returns the count; 0 when min_bytes is 0 or above max_bytes.
 */
size_t wrk_ncclbw_sizes(uint64_t min_bytes, uint64_t max_bytes, uint64_t *out, size_t cap);

struct wrk_ncclbw_point {
    uint64_t bytes;
    double time_us;   /* mean time of one all-reduce */
    double algbw_gbs; /* wrk_ncclbw_algbw_gbs(bytes, time_us) */
    double busbw_gbs; /* algbw_gbs * wrk_ncclbw_bus_factor(gpus) */
};

struct wrk_ncclbw_series {
    char env_name[16];  /* "" for NCCL's own choice, else "NCCL_ALGO" or "NCCL_PROTO" */
    char env_value[16]; /* "Ring", "Tree", "LL", "LL128", "Simple" */
    size_t n;
    struct wrk_ncclbw_point pts[WRK_NCCLBW_MAX_POINTS];
};

/* Fill p from bytes, the time and the rank count (algbw and busbw computed). */
void wrk_ncclbw_point_set(struct wrk_ncclbw_point *p, uint64_t bytes, double time_us, int nranks);

struct wrk_ncclbw_run {
    int gpus;         /* ranks of the all-reduce: one per GPU, one process */
    int nccl_version; /* ncclGetVersion(), e.g. 22105 */
    int warmup, iters;
    /* series[0] is NCCL's own choice; then one per forced variant */
    size_t nseries;
    struct wrk_ncclbw_series series[1 + WRK_NCCLBW_MAX_VARIANTS];
};

/*
 * The probe's JSON (new reference; NULL on ENOMEM):
 * {"version":1,"op":"all_reduce","dtype":"float32","gpus":8,"nccl_version":22105,
 *  "warmup":5,"iters":20,"results":[{"bytes","time_us","algbw_gbs","busbw_gbs"}],
 *  "variants":[{"env":{"NCCL_ALGO":"Tree"},"results":[...]}]}
 */
json_t *wrk_ncclbw_json(const struct wrk_ncclbw_run *r);

/*
 * Whether j has the shape above within its bounds (what the server accepts
 * at register; a file that fails here is not uploaded). Returns 1, or 0 with
 * why (at least 128 bytes) saying what is wrong.
 */
int wrk_ncclbw_check(const json_t *j, char *why, size_t why_size);

#endif
