/*
 * sim_main.c - trainyard-sim: replays a job trace through the scheduler
 * library and prints quality and speed figures (a table, or JSON).
 *
 * trainyard-sim --trace FILE --format philly|csv --nodes N --gpus-per-node G
 *               --policy P [--switch-size K] [--sample N] [--seed S]
 *               [--load X] [--json] [--check] [--predict] [--pred-team] [--quantile Q]
 *               [--forecast-every N] [--min-wait-s S] [--forecast-exact]
 *
 * Exit status: 0 done, 1 bad trace or run failure, 2 bad arguments.
 */
#include "sim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TRACE_BYTES (1LL << 30)

static void usage(FILE *f)
{
    fprintf(f, "usage: trainyard-sim --trace FILE --format philly|csv --nodes N "
               "--gpus-per-node G --policy "
               "fifo|sjf-oracle|trainyard|tiresias-las|trainyard-spf|trainyard-qspf "
               "[--switch-size K] [--sample N] [--seed S] [--load X] [--json] [--check] "
               "[--predict] [--pred-team] [--quantile Q] [--forecast-every N] [--min-wait-s S]\n"
               "       [--forecast-exact]\n");
}

static int arg_ll(const char *name, const char *s, long long lo, long long hi, long long *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *s == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "trainyard-sim: %s must be an integer in %lld..%lld, got \"%s\"\n", name,
                lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int read_file(const char *path, char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *b = NULL;
    size_t n = 0, cap = 0;

    if (!f) {
        fprintf(stderr, "trainyard-sim: cannot open trace %s: %s\n", path, strerror(errno));
        return -1;
    }
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 20;
            if ((long long)cap > MAX_TRACE_BYTES) {
                fprintf(stderr, "trainyard-sim: trace %s is larger than 1 GiB\n", path);
                goto fail;
            }
            char *nb = realloc(b, cap);
            if (!nb)
                goto fail;
            b = nb;
        }
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        fprintf(stderr, "trainyard-sim: cannot read trace %s\n", path);
        goto fail;
    }
    fclose(f);
    *buf = b;
    *len = n;
    return 0;
fail:
    free(b);
    fclose(f);
    return -1;
}

struct args {
    const char *trace, *format, *policy;
    long long nodes, gpn, sw, sample, seed, fc_every, min_wait_s;
    double load, quantile;
    bool json, check, predict, pred_team, fc_exact;
};

/* One option with its value; 0 ok, -1 bad (message printed). */
static int one_option(struct args *A, const char *a, const char *v)
{
    if (strcmp(a, "--trace") == 0)
        A->trace = v;
    else if (strcmp(a, "--format") == 0)
        A->format = v;
    else if (strcmp(a, "--policy") == 0)
        A->policy = v;
    else if (strcmp(a, "--nodes") == 0)
        return arg_ll("--nodes", v, 1, 100000, &A->nodes);
    else if (strcmp(a, "--gpus-per-node") == 0)
        return arg_ll("--gpus-per-node", v, 1, SCHED_MAX_GPUS_PER_NODE, &A->gpn);
    else if (strcmp(a, "--switch-size") == 0)
        return arg_ll("--switch-size", v, 0, 100000, &A->sw);
    else if (strcmp(a, "--sample") == 0)
        return arg_ll("--sample", v, 1, 100000000, &A->sample);
    else if (strcmp(a, "--seed") == 0)
        return arg_ll("--seed", v, 0, INT64_MAX, &A->seed);
    else if (strcmp(a, "--forecast-every") == 0)
        return arg_ll("--forecast-every", v, 1, 100000000, &A->fc_every);
    else if (strcmp(a, "--min-wait-s") == 0)
        return arg_ll("--min-wait-s", v, 1, 100000000, &A->min_wait_s);
    else if (strcmp(a, "--quantile") == 0) {
        char *end = NULL;
        errno = 0;
        A->quantile = strtod(v, &end);
        if (errno || *end != '\0' || !(A->quantile > 0 && A->quantile < 1)) {
            fprintf(stderr, "trainyard-sim: --quantile must be a number in (0, 1), got \"%s\"\n",
                    v);
            return -1;
        }
    } else if (strcmp(a, "--load") == 0) {
        char *end = NULL;
        errno = 0;
        A->load = strtod(v, &end);
        if (errno || *end != '\0' || !(A->load > 0) || A->load > 1e6) {
            fprintf(stderr, "trainyard-sim: --load must be a number above 0, got \"%s\"\n", v);
            return -1;
        }
    } else {
        fprintf(stderr, "trainyard-sim: unknown option %s\n", a);
        return -1;
    }
    return 0;
}

/* Parse argv into A: 0 run, 1 done (help), 2 bad arguments. */
static int parse_args(int argc, char **argv, struct args *A)
{
    memset(A, 0, sizeof(*A));
    A->seed = 1;
    A->load = 1.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            A->json = true;
        } else if (strcmp(a, "--check") == 0) {
            A->check = true;
        } else if (strcmp(a, "--predict") == 0) {
            A->predict = true;
        } else if (strcmp(a, "--pred-team") == 0) {
            A->pred_team = true;
        } else if (strcmp(a, "--forecast-exact") == 0) {
            A->fc_exact = true;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 1;
        } else if (i + 1 >= argc) {
            fprintf(stderr, "trainyard-sim: unknown or incomplete option %s\n", a);
            usage(stderr);
            return 2;
        } else if (one_option(A, a, argv[++i]) != 0) {
            usage(stderr);
            return 2;
        }
    }
    if (!A->trace || !A->format || !A->policy || A->nodes == 0 || A->gpn == 0) {
        fprintf(stderr, "trainyard-sim: --trace, --format, --nodes, --gpus-per-node and "
                        "--policy are required\n");
        usage(stderr);
        return 2;
    }
    return 0;
}

static void print_result(const struct sim_config *cfg, const struct sim_result *r, bool json,
                         bool predict)
{
    if (json) {
        printf("{\"predict\":%s,\"pred_from_runs\":%zu,\"fc_sampled\":%zu,\"fc_counted\":%zu,"
               "\"fc_unknown\":%zu,\"fc_med_wait_s\":%.1f,\"fc_med_err_s\":%.1f,"
               "\"fc_p90_err_s\":%.1f,\"fc_med_ratio\":%.3f,\"lim_med_err_s\":%.1f,"
               "\"lim_p90_err_s\":%.1f,\"lim_med_ratio\":%.3f,\"fc_ms_p50\":%.2f,"
               "\"fc_ms_max\":%.2f,",
               predict ? "true" : "false", r->pred_from_runs, r->fc_sampled, r->fc_counted,
               r->fc_unknown, r->fc_med_wait_s, r->fc_med_err_s, r->fc_p90_err_s, r->fc_med_ratio,
               r->lim_med_err_s, r->lim_p90_err_s, r->lim_med_ratio, r->fc_ms_p50, r->fc_ms_max);
        printf("\"policy\":\"%s\",\"jobs\":%zu,\"avg_jct_s\":%.3f,\"p50_jct_s\":%.3f,"
               "\"p99_jct_s\":%.3f,\"avg_queue_s\":%.3f,\"makespan_s\":%.3f,"
               "\"gpu_utilization\":%.4f,\"offered_load\":%.4f,\"preemptions\":%lld,"
               "\"passes\":%lld,\"pass_ms_p50\":%.4f,\"pass_ms_p99\":%.4f,\"wall_s\":%.3f}\n",
               cfg->policy->name, r->jobs, r->avg_jct_s, r->p50_jct_s, r->p99_jct_s, r->avg_queue_s,
               r->makespan_s, r->gpu_utilization, r->offered_load, (long long)r->preemptions,
               (long long)r->passes, r->pass_ms_p50, r->pass_ms_p99, r->wall_s);
        return;
    }
    printf("policy           %s\n", cfg->policy->name);
    printf("jobs             %zu\n", r->jobs);
    printf("avg_jct_s        %.1f\n", r->avg_jct_s);
    printf("p50_jct_s        %.1f\n", r->p50_jct_s);
    printf("p99_jct_s        %.1f\n", r->p99_jct_s);
    printf("avg_queue_s      %.1f\n", r->avg_queue_s);
    printf("makespan_s       %.1f\n", r->makespan_s);
    printf("gpu_utilization  %.3f\n", r->gpu_utilization);
    printf("offered_load     %.3f\n", r->offered_load);
    printf("preemptions      %lld\n", (long long)r->preemptions);
    printf("passes           %lld\n", (long long)r->passes);
    printf("pass_ms_p50      %.4f\n", r->pass_ms_p50);
    printf("pass_ms_p99      %.4f\n", r->pass_ms_p99);
    printf("wall_s           %.2f\n", r->wall_s);
    if (predict)
        printf("pred_from_runs   %zu\n", r->pred_from_runs);
    if (r->fc_sampled) {
        printf("forecasts        %zu (%zu waited long enough, %zu without a start)\n",
               r->fc_sampled, r->fc_counted, r->fc_unknown);
        printf("median wait s    %.1f\n", r->fc_med_wait_s);
        printf("forecast err s   median %.1f p90 %.1f (limits alone: %.1f, %.1f)\n",
               r->fc_med_err_s, r->fc_p90_err_s, r->lim_med_err_s, r->lim_p90_err_s);
        printf("forecast ms      median %.2f max %.2f\n", r->fc_ms_p50, r->fc_ms_max);
    }
}

int main(int argc, char **argv)
{
    struct args A;
    struct sim_trace t = {0};
    struct sim_result r;
    struct err e;
    char *buf = NULL;
    size_t len = 0;
    int status;

    err_init(&e);
    if ((status = parse_args(argc, argv, &A)) != 0)
        return status == 1 ? 0 : 2;
    status = 1;
    enum sim_format fmt;
    if (strcmp(A.format, "philly") == 0)
        fmt = SIM_FORMAT_PHILLY;
    else if (strcmp(A.format, "csv") == 0)
        fmt = SIM_FORMAT_CSV;
    else {
        fprintf(stderr, "trainyard-sim: --format must be philly or csv, got \"%s\"\n", A.format);
        return 2;
    }
    struct sim_config cfg = {(int)A.nodes, (int)A.gpn, (int)A.sw, sched_policy_find(A.policy),
                             A.load,       A.check};
    if (cfg.policy == NULL) {
        fprintf(stderr, "trainyard-sim: unknown policy \"%s\"\n", A.policy);
        return 2;
    }
    if (read_file(A.trace, &buf, &len) != 0)
        goto out;
    if (sim_trace_parse(buf, len, fmt, &t, &e) != RC_OK)
        goto report;
    if (A.sample > 0 && sim_trace_sample(&t, (size_t)A.sample, (uint64_t)A.seed, &e) != RC_OK)
        goto report;
    struct sim_opts o = {A.predict,           A.quantile, A.pred_team, (size_t)A.fc_every,
                         A.min_wait_s * 1000, A.fc_exact, NULL};
    if (sim_run_opts(&cfg, &o, &t, &r, &e) != RC_OK)
        goto report;
    print_result(&cfg, &r, A.json, A.predict);
    status = 0;
    goto out;
report:
    fprintf(stderr, "trainyard-sim: %s: %s\n", A.trace, e.message[0] ? e.message : rc_str(e.rc));
out:
    sim_trace_free(&t);
    free(buf);
    return status;
}
