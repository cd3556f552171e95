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
    /* forecast accuracy (struct sim_opts.forecast_every): jobs that waited at
     * least min_wait_ms among those forecast at their submit */
    size_t fc_sampled;    /* forecasts made (each: with predictions and limits-only) */
    size_t fc_counted;    /* of those, jobs that waited at least min_wait_ms */
    size_t fc_unknown;    /* of the counted, forecasts with no start (past the horizon) */
    double fc_med_wait_s; /* their median actual wait */
    double fc_med_err_s;  /* median |forecast - actual start|, with predictions */
    double fc_p90_err_s;  /* p90 of the same */
    double fc_med_ratio;  /* median of |forecast - actual| / wait, per job */
    double lim_med_err_s; /* the same from time limits alone (as Slurm's) */
    double lim_p90_err_s; /* p90 of the same */
    double lim_med_ratio; /* median |error| / wait, limits alone */
    double fc_ms_p50;     /* one forecast's cost (ms) */
    double fc_ms_max;
    size_t pred_from_runs; /* predictions made from past runs (not the time limit) */
};

/* Options of a replay beyond the cluster (zero: none; sim_run uses none). */
struct sim_opts {
    bool predict;          /* learn run times online from finished jobs (predictor/) and give
                              the scheduler predicted_ms and expected_end_ms */
    double quantile;       /* the predictor's quantile; 0 = 0.5 */
    bool pred_team;        /* also consult the team key (team, GPUs), which ignores the time
                              limit: on Philly it predicted hour-long jobs from minute-long
                              ones (bench/RESULTS.md, the team-key rows) */
    size_t forecast_every; /* forecast at every Nth arrival (while jobs are queued); 0 = never */
    int64_t min_wait_ms;   /* forecast accuracy counts jobs that waited this long; 0 = 10 min */
    bool forecast_exact;   /* forecasts simulate a sched_plan() per end (sched_forecast_opts.exact)
                              instead of the event simulation */
    struct sim_job_out *jobs_out; /* borrowed; NULL or one entry per trace job, filled */
};

/* What happened to one job of the trace (struct sim_opts.jobs_out). */
struct sim_job_out {
    int64_t pred_ms;   /* its prediction at arrival; 0 = none (its limit was used) */
    int64_t start_ms;  /* first start */
    int64_t finish_ms; /* completion */
};

/*
 * Replay t on the configured cluster. Returns RC_OK; RC_EINVAL (e names the
 * trace line) when a job needs more GPUs than the cluster has; RC_EINTERNAL
 * when sched_check finds a violation (cfg->check) or a plan cannot be
 * applied; RC_ENOMEM.
 */
enum rc sim_run(const struct sim_config *cfg, const struct sim_trace *t, struct sim_result *out,
                struct err *e) TY_WUR;

/*
 * sim_run with options (o may be NULL). With o->predict the predictor learns
 * each job's run time when the job finishes, never before: a queued job's
 * predicted_ms is asked at its arrival (and its rest at a resume), a running
 * job's expected end is its start plus that. The key is the job's team and
 * GPUs, with its time limit standing in for the command (the traces have
 * none). With o->forecast_every, sched_forecast() runs at those arrivals
 * twice (with the predictions, and from time limits alone) and the arriving
 * job's forecast start is compared with its actual start at the end.
 */
enum rc sim_run_opts(const struct sim_config *cfg, const struct sim_opts *o,
                     const struct sim_trace *t, struct sim_result *out, struct err *e) TY_WUR;

#endif
