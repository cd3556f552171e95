/*
 * bench_advisor.c - time adv_plan() over the known-model table x
 * allocations of 1 to 512 GPUs (V100 32 GB, T4 16 GB, A10 24 GB, A100 40 and
 * 80 GB, H100 80 GB; 1 to 8 GPUs per node) x two software sets (all of
 * DDP, FSDP and DeepSpeed; Debian's torch 1.13 alone). Each plan evaluates
 * every alternative; plans where nothing fits also search the smallest
 * allocation. Prints one markdown row per model: plans, how many fit, the
 * median, p99 and worst microseconds per plan, and plans per second.
 *
 * bench_advisor [--reps R]   (each plan is timed R times; the median is kept)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "advisor.h"

static const struct {
    const char *name;
    double gib;
    int cc10;
    double nvlink_gbps; /* 0: PCIe */
} kinds[] = {
    {"V100-32", 32, 70, 150}, {"T4-16", 16, 75, 0},     {"A10-24", 24, 86, 0},
    {"A100-40", 40, 80, 300}, {"A100-80", 80, 80, 300}, {"H100-80", 80, 90, 450},
};
static const int sizes[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static struct adv_plan plan;

int main(int argc, char **argv)
{
    long reps = 5;
    size_t nk, per_model = sizeof(kinds) / sizeof(kinds[0]) * (sizeof(sizes) / sizeof(int)) * 2;
    const struct adv_known *known = adv_known_table(&nk);
    double *t = calloc(per_model, sizeof(double)), *all = calloc(per_model * nk, sizeof(double));
    double *r = NULL;
    size_t nall = 0, fit_all = 0;

    if (argc == 3 && strcmp(argv[1], "--reps") == 0) {
        char *end = NULL;
        errno = 0;
        reps = strtol(argv[2], &end, 10);
        if (errno || *end || reps < 1 || reps > 1000) {
            fprintf(stderr, "bench_advisor: bad --reps \"%s\"\n", argv[2]);
            return 2;
        }
    } else if (argc != 1) {
        fprintf(stderr, "usage: bench_advisor [--reps R]\n");
        return 2;
    }
    r = calloc((size_t)reps, sizeof(double));
    if (t == NULL || all == NULL || r == NULL)
        return 1;
    printf("| model | plans | fit | median us/plan | p99 us | worst us | plans/s |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|\n");
    for (size_t m = 0; m < nk; m++) {
        size_t n = 0, fit = 0;
        double sum = 0;

        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
            for (size_t s = 0; s < sizeof(sizes) / sizeof(int); s++) {
                for (int sw = 0; sw < 2; sw++) {
                    struct adv_request q;
                    struct err e;
                    int g = sizes[s];

                    adv_request_init(&q);
                    snprintf(q.model.name, sizeof(q.model.name), "%s", known[m].name);
                    q.global_batch = 8 * g + 3 * (s % 2); /* some batches do not split */
                    q.alloc.gpus = g;
                    q.alloc.gpus_per_node = g < 8 ? g : 8;
                    q.alloc.gpu_mem_bytes = (uint64_t)(kinds[k].gib * 1073741824.0);
                    q.alloc.cc10 = kinds[k].cc10;
                    q.alloc.intra = kinds[k].nvlink_gbps > 0 ? ADV_INTRA_NVLINK : ADV_INTRA_PCIE;
                    q.alloc.intra_gbps = kinds[k].nvlink_gbps > 0 ? kinds[k].nvlink_gbps : 16;
                    q.alloc.inter = ADV_INTER_IB;
                    q.alloc.inter_gbps = 25;
                    q.alloc.cpu_mem_per_node_bytes = 512ULL << 30;
                    q.caps.torch_major = sw ? 1 : 2;
                    q.caps.torch_minor = sw ? 13 : 1;
                    q.caps.fsdp = !sw;
                    q.caps.deepspeed = !sw;
                    for (long i = 0; i < reps; i++) {
                        double t0 = now_us();
                        if (adv_plan(&q, &plan, &e) != RC_OK) {
                            fprintf(stderr, "bench_advisor: %s: %s\n", known[m].name, e.message);
                            return 1;
                        }
                        r[i] = now_us() - t0;
                    }
                    qsort(r, (size_t)reps, sizeof(double), cmp_dbl);
                    t[n] = r[reps / 2];
                    all[nall++] = t[n];
                    sum += t[n];
                    n++;
                    fit += plan.status == ADV_PLAN_OK;
                }
            }
        }
        fit_all += fit;
        qsort(t, n, sizeof(double), cmp_dbl);
        printf("| %s | %zu | %zu | %.1f | %.1f | %.1f | %.0f |\n", known[m].name, n, fit, t[n / 2],
               t[(n * 99) / 100], t[n - 1], 1e6 * n / sum);
    }
    {
        double sum = 0;
        for (size_t i = 0; i < nall; i++)
            sum += all[i];
        qsort(all, nall, sizeof(double), cmp_dbl);
        printf("| all | %zu | %zu | %.1f | %.1f | %.1f | %.0f |\n", nall, fit_all, all[nall / 2],
               all[(nall * 99) / 100], all[nall - 1], 1e6 * nall / sum);
        printf("\ntarget: at most 1000 us per plan (alternatives included): %s\n",
               all[nall - 1] <= 1000 ? "met (worst case)" : "NOT met in the worst case");
    }
    free(r);
    free(t);
    free(all);
    return 0;
}
