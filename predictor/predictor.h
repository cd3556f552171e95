/*
 * predictor.h - the runtime predictor of the queue forecast (docs/queue.md): learns
 * from finished jobs how long jobs really run, and predicts a queued job's run
 * time as a quantile of the past runs of the most specific key that has enough
 * of them, falling back to the job's time limit.
 *
 * Keys, most specific first: exact (template, command, team, user, GPUs),
 * template (template, GPUs), user (user, command), team (team, GPUs). Each
 * key keeps the newest max_per_key runs.
 *
 * It learns only what pred_observe() is told, and pred_predict() takes no
 * duration: a caller that observes a job when it finishes can never leak a
 * job's own future into its prediction (the simulator and the server both
 * observe at completion).
 *
 * A pure module like scheduler/sched.h: no I/O, clock, globals or threads. The
 * state is passed in; one thread owns a struct pred_state at a time (reads of
 * a state that nobody writes may run concurrently).
 */
#ifndef TY_PREDICTOR_H
#define TY_PREDICTOR_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* What identifies "the same job" for the predictor. Strings are borrowed for the call. */
struct pred_key {
    const char *template_id; /* may be NULL or "" (own command) */
    const char *command;     /* the job's command line joined by spaces; may be NULL */
    int64_t team_id;
    int64_t user_id;
    int gpus;
};

/* Which key answered a prediction. */
enum pred_source {
    PRED_NONE = 0,      /* no key with enough runs and no time limit: 0 returned */
    PRED_EXACT = 1,     /* template, command, team, user and GPUs */
    PRED_TEMPLATE = 2,  /* template and GPUs (only with a template) */
    PRED_USER = 3,      /* user and command (only with a command) */
    PRED_TEAM = 4,      /* team and GPUs */
    PRED_TIME_LIMIT = 5 /* the job's time limit */
};

struct pred_opts {
    double quantile;    /* 0 < q < 1; 0 = 0.5 */
    size_t min_samples; /* a key answers only with this many runs; 0 = 3 */
    size_t max_per_key; /* runs kept per key (newest); 0 = 64; at most PRED_MAX_PER_KEY */
    unsigned skip;      /* keys never consulted: bits (1u << PRED_EXACT) ... (1u << PRED_TEAM);
                           0 = consult all. Runs are recorded under every key anyway. */
};

#define PRED_MAX_PER_KEY 4096

struct pred_state;

/*
 * A new, empty predictor. opts may be NULL (all defaults). *out is owned by
 * the caller (pred_free). RC_OK; RC_EINVAL (quantile outside (0, 1), NaN, or
 * max_per_key above PRED_MAX_PER_KEY, or min_samples above max_per_key);
 * RC_ENOMEM. On error *out is NULL.
 */
enum rc pred_new(const struct pred_opts *opts, struct pred_state **out) TY_WUR;

/* Free p and everything it owns. NULL is a no-op. */
void pred_free(struct pred_state *p);

/*
 * A finished job's run time (ms > 0), recorded under each of its keys. k and
 * its strings are borrowed (copied as needed). RC_OK; RC_EINVAL (run_ms <= 0,
 * gpus < 0, NULL p or k); RC_ENOMEM (p is unchanged then).
 */
enum rc pred_observe(struct pred_state *p, const struct pred_key *k, int64_t run_ms) TY_WUR;

/*
 * Predicted run time in ms: the quantile of the most specific key with
 * enough runs (exact, then template+gpus, then user+command, then team+gpus),
 * else time_limit_ms (PRED_TIME_LIMIT) when > 0, else 0 (PRED_NONE). src may
 * be NULL. Reads p only; O(1) per key (the runs are kept sorted).
 */
int64_t pred_predict(const struct pred_state *p, const struct pred_key *k, int64_t time_limit_ms,
                     enum pred_source *src);

/* "none", "exact", "template", "user", "team", "time_limit"; "unknown" otherwise. Static. */
const char *pred_source_name(enum pred_source s);

/* Runs recorded so far (for tests and statistics). */
size_t pred_observed(const struct pred_state *p);

#endif
