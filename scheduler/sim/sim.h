/*
 * sim.h - trainyard-sim's core as a library: trace parsing and a
 * discrete-event replay of a trace through ty_sched. The executable
 * (sim_main.c) only parses arguments and prints; tests call this directly.
 *
 * Threading: none; no globals. Everything is deterministic for a given trace,
 * configuration and seed, except the measured pass times.
 */
#ifndef TY_SIM_H
#define TY_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "sched.h"

enum sim_format {
    SIM_FORMAT_PHILLY = 1, /* timestamp,duration,num_gpus,gpu_time,cluster (with header) */
    SIM_FORMAT_CSV = 2     /* submit_s,duration_s,num_gpus[,team][,time_limit_s] */
};

struct sim_job {
    int64_t submit_ms;     /* from the first arrival (after sampling: window offset) */
    int64_t duration_ms;   /* the true run time */
    int gpus;              /* >= 1 */
    int64_t team;          /* team id (philly: cluster column, numbered by first use) */
    int64_t time_limit_ms; /* 0: none given */
    int64_t tod_s;         /* philly: time of day of the arrival (s); -1 otherwise */
    long line;             /* line in the trace file, for messages */
};

struct sim_trace {
    struct sim_job *jobs; /* owned; sorted by submit then line */
    size_t njobs;
    int64_t nteams;
};

/*
 * Parse text[0..len) in format fmt into out (caller storage, overwritten).
 * Returns RC_OK, RC_EINVAL with e naming the line (malformed row, gpus <= 0,
 * negative duration, no jobs), or RC_ENOMEM. On error out is empty.
 */
enum rc sim_trace_parse(const char *text, size_t len, enum sim_format fmt, struct sim_trace *out,
                        struct err *e) TY_WUR;

/* Free what t owns; NULL is a no-op. */
void sim_trace_free(struct sim_trace *t);

/*
 * Keep n jobs the way Pollux's workload generator does (philly only): drop
 * jobs under 60 s or of 1,000 GPU-hours or more, keep arrivals between 02:00
 * and 10:00 of the day, sample n of them with the seed, and re-time each to
 * its offset into that window. For csv traces: sample n jobs, times kept.
 */
enum rc sim_trace_sample(struct sim_trace *t, size_t n, uint64_t seed, struct err *e) TY_WUR;

/* Days since 1970-01-01 of a proleptic Gregorian date. */
int64_t sim_days_from_civil(int64_t y, unsigned m, unsigned d);

struct sim_config {
    int nodes;         /* >= 1 */
    int gpus_per_node; /* 1..SCHED_MAX_GPUS_PER_NODE */
    int switch_size;   /* nodes per switch label (racks: 2 switches); 0 = no labels */
    const struct sched_policy *policy;
    double load; /* arrival-rate multiplier (submit times divided by it); 1 = as traced */
    bool check;  /* run sched_check() on every plan (slow; tests) */
};

struct sim_result {
    size_t jobs;
    double avg_jct_s, p50_jct_s, p99_jct_s;
    double avg_queue_s;
    double makespan_s;
    double gpu_utilization; /* busy GPU-time / (GPUs x makespan) */
    double offered_load;    /* trace GPU-time / (GPUs x arrival span) */
    int64_t preemptions;
    int64_t passes;
    double pass_ms_p50, pass_ms_p99;
    double wall_s;
};

/*
 * Replay t on the configured cluster. Returns RC_OK; RC_EINVAL (e names the
 * trace line) when a job needs more GPUs than the cluster has; RC_EINTERNAL
 * when sched_check finds a violation (cfg->check) or a plan cannot be
 * applied; RC_ENOMEM.
 */
enum rc sim_run(const struct sim_config *cfg, const struct sim_trace *t, struct sim_result *out,
                struct err *e) TY_WUR;

#endif
