/*
 * nccl_probe.c - trainyard-nccl-probe: all-reduce bus bandwidth per message
 * size over the GPUs this process sees, the way nccl-tests reports it
 * (busbw = algbw * 2 (n - 1) / n). The worker's NCCL settings and the
 * strategy advisor use these figures; an operator runs it on a new node.
 *
 *   trainyard-nccl-probe [--min-bytes 8] [--max-bytes 268435456] [--iters 20] [--json]
 *
 * One process drives every visible GPU (ncclCommInitAll), like
 * all_reduce_perf -g N. With one GPU the all-reduce is a local copy and the
 * bus bandwidth is reported as 0 (there is no bus), but the run still proves
 * that CUDA and NCCL work.
 *
 * Built only where CUDA and NCCL are found at build time.
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_MAX_GPUS 64

struct probe {
    int ngpus;
    int devs[PROBE_MAX_GPUS];
    ncclComm_t comms[PROBE_MAX_GPUS];
    cudaStream_t streams[PROBE_MAX_GPUS];
    float *bufs[PROBE_MAX_GPUS];
};

static int cuda_ok(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 1;
    fprintf(stderr, "trainyard-nccl-probe: %s: %s\n", what, cudaGetErrorString(e));
    return 0;
}

static int nccl_ok(ncclResult_t r, const char *what)
{
    if (r == ncclSuccess)
        return 1;
    fprintf(stderr, "trainyard-nccl-probe: %s: %s\n", what, ncclGetErrorString(r));
    return 0;
}

static int parse_size(const char *s, size_t *out)
{
    char *end = NULL;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v == 0)
        return 0;
    *out = (size_t)v;
    return 1;
}

/* One all-reduce of count floats on every GPU, grouped. */
static int all_reduce(struct probe *p, size_t count)
{
    if (!nccl_ok(ncclGroupStart(), "group start"))
        return 0;
    for (int i = 0; i < p->ngpus; i++)
        if (!nccl_ok(ncclAllReduce(p->bufs[i], p->bufs[i], count, ncclFloat, ncclSum, p->comms[i],
                                   p->streams[i]),
                     "all-reduce"))
            return 0;
    return nccl_ok(ncclGroupEnd(), "group end");
}

static int sync_all(struct probe *p)
{
    for (int i = 0; i < p->ngpus; i++)
        if (!cuda_ok(cudaSetDevice(p->devs[i]), "set device") ||
            !cuda_ok(cudaStreamSynchronize(p->streams[i]), "synchronize"))
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    struct probe p;
    size_t min_bytes = 8, max_bytes = (size_t)256 << 20;
    long iters = 20;
    int json = 0, rc = 1, first = 1;

    memset(&p, 0, sizeof(p));
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--min-bytes") == 0 && i + 1 < argc &&
                 parse_size(argv[i + 1], &min_bytes))
            i++;
        else if (strcmp(argv[i], "--max-bytes") == 0 && i + 1 < argc &&
                 parse_size(argv[i + 1], &max_bytes))
            i++;
        else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
            size_t v;
            if (!parse_size(argv[++i], &v) || v > 10000) {
                fprintf(stderr, "trainyard-nccl-probe: --iters must be 1..10000\n");
                return 2;
            }
            iters = (long)v;
        } else {
            fprintf(stderr, "usage: trainyard-nccl-probe [--min-bytes N] [--max-bytes N] "
                            "[--iters N] [--json]\n");
            return 2;
        }
    }
    if (min_bytes < 4 || max_bytes < min_bytes) {
        fprintf(stderr, "trainyard-nccl-probe: need 4 <= min-bytes <= max-bytes\n");
        return 2;
    }
    if (!cuda_ok(cudaGetDeviceCount(&p.ngpus), "no CUDA device") || p.ngpus < 1)
        return 1;
    if (p.ngpus > PROBE_MAX_GPUS)
        p.ngpus = PROBE_MAX_GPUS;
    for (int i = 0; i < p.ngpus; i++)
        p.devs[i] = i;
    if (!nccl_ok(ncclCommInitAll(p.comms, p.ngpus, p.devs), "init"))
        return 1;
    for (int i = 0; i < p.ngpus; i++) {
        if (!cuda_ok(cudaSetDevice(i), "set device") ||
            !cuda_ok(cudaStreamCreate(&p.streams[i]), "stream") ||
            !cuda_ok(cudaMalloc((void **)&p.bufs[i], max_bytes), "allocate"))
            goto out;
        if (!cuda_ok(cudaMemset(p.bufs[i], 0, max_bytes), "memset"))
            goto out;
    }
    {
        int version = 0;
        ncclGetVersion(&version);
        if (json)
            printf("{\"gpus\":%d,\"nccl_version\":%d,\"results\":[", p.ngpus, version);
        else
            printf("trainyard-nccl-probe: %d GPU(s), NCCL %d\n%12s %10s %12s %12s\n", p.ngpus,
                   version, "bytes", "time_us", "algbw_GBs", "busbw_GBs");
    }
    for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
        size_t count = bytes / sizeof(float);
        cudaEvent_t start, stop;
        float ms = 0;
        double us, algbw, busbw;
        if (count == 0)
            continue;
        /* Warm up, then time iters grouped calls on GPU 0's stream. */
        if (!all_reduce(&p, count) || !sync_all(&p))
            goto out;
        cudaSetDevice(0);
        cudaEventCreate(&start);
        cudaEventCreate(&stop);
        cudaEventRecord(start, p.streams[0]);
        for (long k = 0; k < iters; k++)
            if (!all_reduce(&p, count))
                goto out;
        cudaSetDevice(0);
        cudaEventRecord(stop, p.streams[0]);
        if (!sync_all(&p))
            goto out;
        cudaEventElapsedTime(&ms, start, stop);
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
        us = (double)ms * 1000.0 / (double)iters;
        algbw = us > 0 ? (double)bytes / us / 1000.0 : 0;
        busbw = p.ngpus > 1 ? algbw * 2.0 * (p.ngpus - 1) / p.ngpus : 0.0;
        if (json)
            printf("%s{\"bytes\":%zu,\"time_us\":%.2f,\"algbw_gbs\":%.3f,\"busbw_gbs\":%.3f}",
                   first ? "" : ",", bytes, us, algbw, busbw);
        else
            printf("%12zu %10.2f %12.3f %12.3f\n", bytes, us, algbw, busbw);
        first = 0;
        if (bytes > max_bytes / 4)
            break;
    }
    if (json)
        printf("]}\n");
    rc = 0;
out:
    for (int i = 0; i < p.ngpus; i++) {
        if (p.bufs[i] != NULL) {
            cudaSetDevice(i);
            cudaFree(p.bufs[i]);
        }
        if (p.comms[i] != NULL)
            ncclCommDestroy(p.comms[i]);
    }
    return rc;
}
