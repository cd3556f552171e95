/*
 * nccl_probe.c - trainyard-nccl-probe: all-reduce bandwidth per message size
 * over the GPUs this process sees, measured and reported the way nccl-tests'
 * all_reduce_perf does (algbw = bytes / time, busbw = algbw * 2 (n - 1) / n;
 * the arithmetic and the JSON are in ncclbw.c, unit-tested without CUDA).
 *
 *   trainyard-nccl-probe [--min-bytes 8] [--max-bytes 1073741824] [--warmup 5]
 *                        [--iters 20] [--no-variants] [--json] [--output FILE]
 *
 * One process drives every visible GPU (ncclCommInitAll), like
 * all_reduce_perf -g N: in-place float32 sum, sizes doubling from min to
 * max. Per size: warm-up calls, a synchronize of every stream, then the
 * timed calls, then a synchronize again; the time is the host clock over the
 * timed calls divided by their number (nccl-tests' method), so it covers
 * every GPU, not one stream's events.
 *
 * The baseline runs with NCCL_ALGO and NCCL_PROTO unset (NCCL's own
 * choice). With two GPUs or more the sweep is repeated under each forced
 * NCCL_ALGO (Ring, Tree) and NCCL_PROTO (LL, LL128, Simple), each on fresh
 * communicators, since NCCL reads these variables when a communicator is
 * created; a variant NCCL refuses is left out. The server sets NCCL_ALGO /
 * NCCL_PROTO for a job only where a variant measured a gain over the
 * baseline (server/nccl_env.c).
 *
 * With one GPU the all-reduce is a local copy and busbw is 0 (there is no
 * bus), but the run still proves that CUDA and NCCL work.
 *
 * The JSON (--json on stdout, or --output FILE) is what the worker uploads
 * with register: trainyard-worker --nccl-probe-file FILE
 * (docs/agent-protocol.md). Built only where CUDA and NCCL are found.
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "ncclbw.h"

struct probe {
    int ngpus;
    int devs[WRK_NCCLBW_MAX_GPUS];
    ncclComm_t comms[WRK_NCCLBW_MAX_GPUS];
    cudaStream_t streams[WRK_NCCLBW_MAX_GPUS];
    float *bufs[WRK_NCCLBW_MAX_GPUS];
    size_t nsizes;
    uint64_t sizes[WRK_NCCLBW_MAX_POINTS];
    long warmup, iters;
};

static const struct {
    const char *name, *value;
} VARIANTS[] = {
    {"NCCL_ALGO", "Ring"},   {"NCCL_ALGO", "Tree"},    {"NCCL_PROTO", "LL"},
    {"NCCL_PROTO", "LL128"}, {"NCCL_PROTO", "Simple"},
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

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end = NULL;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v < lo || v > hi)
        return 0;
    *out = (uint64_t)v;
    return 1;
}

/* One grouped in-place all-reduce of count floats on every GPU. */
static int all_reduce(struct probe *p, size_t count)
{
    if (!nccl_ok(ncclGroupStart(), "group start"))
        return 0;
    for (int i = 0; i < p->ngpus; i++)
        if (!nccl_ok(ncclAllReduce(p->bufs[i], p->bufs[i], count, ncclFloat, ncclSum, p->comms[i],
                                   p->streams[i]),
                     "all-reduce")) {
            ncclGroupEnd();
            return 0;
        }
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

static void comms_free(struct probe *p, int abort_them)
{
    for (int i = 0; i < p->ngpus; i++) {
        if (p->comms[i] == NULL)
            continue;
        if (abort_them)
            ncclCommAbort(p->comms[i]);
        else
            ncclCommDestroy(p->comms[i]);
        p->comms[i] = NULL;
    }
}

/*
 * One sweep under the environment name=value (name NULL: NCCL's own
 * choice) on fresh communicators. Returns 1 when every size ran.
 */
static int sweep(struct probe *p, const char *name, const char *value, struct wrk_ncclbw_series *s)
{
    int ok = 0;

    unsetenv("NCCL_ALGO");
    unsetenv("NCCL_PROTO");
    if (name != NULL)
        setenv(name, value, 1);
    memset(s, 0, sizeof(*s));
    if (name != NULL) {
        snprintf(s->env_name, sizeof(s->env_name), "%s", name);
        snprintf(s->env_value, sizeof(s->env_value), "%s", value);
    }
    if (!nccl_ok(ncclCommInitAll(p->comms, p->ngpus, p->devs), "init"))
        goto out;
    for (size_t k = 0; k < p->nsizes; k++) {
        uint64_t bytes = p->sizes[k];
        size_t count = (size_t)(bytes / sizeof(float));
        double t0, t1;
        if (count == 0)
            continue;
        for (long w = 0; w < p->warmup; w++)
            if (!all_reduce(p, count))
                goto out;
        if (!sync_all(p))
            goto out;
        t0 = now_us();
        for (long it = 0; it < p->iters; it++)
            if (!all_reduce(p, count))
                goto out;
        if (!sync_all(p))
            goto out;
        t1 = now_us();
        wrk_ncclbw_point_set(&s->pts[s->n++], bytes, (t1 - t0) / (double)p->iters, p->ngpus);
    }
    ok = 1;
out:
    comms_free(p, !ok);
    return ok;
}

static void print_table(const struct wrk_ncclbw_run *r)
{
    printf("trainyard-nccl-probe: all-reduce, float32, in place, %d GPU(s), NCCL %d\n", r->gpus,
           r->nccl_version);
    for (size_t i = 0; i < r->nseries; i++) {
        const struct wrk_ncclbw_series *s = &r->series[i];
        printf("\n# %s%s%s\n%12s %12s %12s %12s\n", s->env_name[0] ? s->env_name : "NCCL's choice",
               s->env_name[0] ? "=" : "", s->env_value, "bytes", "time_us", "algbw_GB/s",
               "busbw_GB/s");
        for (size_t k = 0; k < s->n; k++)
            printf("%12llu %12.2f %12.3f %12.3f\n", (unsigned long long)s->pts[k].bytes,
                   s->pts[k].time_us, s->pts[k].algbw_gbs, s->pts[k].busbw_gbs);
    }
}

/* Write text to path through path.tmp and a rename, so a reader never sees half a file. */
static int write_file(const char *path, const char *text)
{
    char tmp[4096];
    FILE *f;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return 0;
    f = fopen(tmp, "w");
    if (f == NULL)
        return 0;
    if (fputs(text, f) < 0 || fputc('\n', f) < 0 || fclose(f) != 0) {
        remove(tmp);
        return 0;
    }
    return rename(tmp, path) == 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: trainyard-nccl-probe [--min-bytes N] [--max-bytes N] [--warmup N] "
                    "[--iters N] [--no-variants] [--json] [--output FILE]\n");
}

int main(int argc, char **argv)
{
    static struct probe p; /* large: keep it off the stack */
    static struct wrk_ncclbw_run run;
    uint64_t min_bytes = WRK_NCCLBW_MIN_BYTES, max_bytes = WRK_NCCLBW_MAX_BYTES, v;
    int json = 0, variants = 1, rc = 1;
    const char *output = NULL;
    json_t *doc = NULL;
    char *text = NULL;

    p.warmup = 5;
    p.iters = 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "--no-variants") == 0) {
            variants = 0;
        } else if (strcmp(a, "--min-bytes") == 0 && next && parse_u64(next, 4, 1ULL << 40, &v)) {
            min_bytes = v;
            i++;
        } else if (strcmp(a, "--max-bytes") == 0 && next && parse_u64(next, 4, 1ULL << 40, &v)) {
            max_bytes = v;
            i++;
        } else if (strcmp(a, "--warmup") == 0 && next && parse_u64(next, 0, 10000, &v)) {
            p.warmup = (long)v;
            i++;
        } else if (strcmp(a, "--iters") == 0 && next && parse_u64(next, 1, 10000, &v)) {
            p.iters = (long)v;
            i++;
        } else if (strcmp(a, "--output") == 0 && next) {
            output = next;
            i++;
        } else {
            usage();
            return 2;
        }
    }
    p.nsizes = wrk_ncclbw_sizes(min_bytes, max_bytes, p.sizes, WRK_NCCLBW_MAX_POINTS);
    if (p.nsizes == 0) {
        fprintf(stderr, "trainyard-nccl-probe: need 4 <= min-bytes <= max-bytes\n");
        return 2;
    }
    if (!cuda_ok(cudaGetDeviceCount(&p.ngpus), "no CUDA device") || p.ngpus < 1)
        return 1;
    if (p.ngpus > WRK_NCCLBW_MAX_GPUS)
        p.ngpus = WRK_NCCLBW_MAX_GPUS;
    for (int i = 0; i < p.ngpus; i++) {
        p.devs[i] = i;
        if (!cuda_ok(cudaSetDevice(i), "set device") ||
            !cuda_ok(cudaStreamCreate(&p.streams[i]), "stream") ||
            !cuda_ok(cudaMalloc((void **)&p.bufs[i], (size_t)p.sizes[p.nsizes - 1]),
                     "allocate (try a smaller --max-bytes)") ||
            !cuda_ok(cudaMemset(p.bufs[i], 0, (size_t)p.sizes[p.nsizes - 1]), "memset"))
            goto out;
    }
    run.gpus = p.ngpus;
    run.warmup = (int)p.warmup;
    run.iters = (int)p.iters;
    ncclGetVersion(&run.nccl_version);
    if (!sweep(&p, NULL, NULL, &run.series[0]))
        goto out;
    run.nseries = 1;
    for (size_t k = 0; variants && p.ngpus > 1 && k < sizeof(VARIANTS) / sizeof(VARIANTS[0]); k++) {
        if (sweep(&p, VARIANTS[k].name, VARIANTS[k].value, &run.series[run.nseries]))
            run.nseries++;
        else
            fprintf(stderr, "trainyard-nccl-probe: %s=%s left out\n", VARIANTS[k].name,
                    VARIANTS[k].value);
    }
    if (json || output != NULL) {
        doc = wrk_ncclbw_json(&run);
        text = doc != NULL ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
        if (text == NULL) {
            fprintf(stderr, "trainyard-nccl-probe: out of memory\n");
            goto out;
        }
    }
    if (output != NULL && !write_file(output, text)) {
        fprintf(stderr, "trainyard-nccl-probe: cannot write %s: %s\n", output, strerror(errno));
        goto out;
    }
    if (json)
        printf("%s\n", text);
    else
        print_table(&run);
    rc = 0;
out:
    comms_free(&p, 0);
    for (int i = 0; i < p.ngpus; i++) {
        cudaSetDevice(i);
        if (p.bufs[i] != NULL)
            cudaFree(p.bufs[i]);
        if (p.streams[i] != NULL)
            cudaStreamDestroy(p.streams[i]);
    }
    free(text);
    json_decref(doc);
    return rc;
}
