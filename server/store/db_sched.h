/*
 * db_sched.h - the scheduler's view of the database: read a snapshot for
 * the scheduler library, write back one pass's decisions.
 *
 * Thread-safety: the scheduler thread only, with its own connection.
 */
#ifndef TY_SERVER_DB_SCHED_H
#define TY_SERVER_DB_SCHED_H

#include <libpq-fe.h>
#include <stdint.h>

#include "err.h"
#include "sched.h"

/*
 * A snapshot and the storage behind its borrowed pointers. Filled by
 * db_sched_snapshot(), freed by db_sched_snapshot_free().
 */
struct db_sched_snapshot {
    struct sched_cluster cluster;
    struct sched_queue queue;
    struct sched_node *nodes;
    struct sched_team *teams;
    struct sched_running *running;
    struct sched_alloc *allocs; /* the running jobs' allocations */
    struct sched_job *jobs;
    char **strings; /* names and labels the nodes point into */
    size_t nstrings;
    char (*node_addr)[64]; /* per node: its address, for the rendezvous */
    int64_t now_ms;        /* database clock, ms since the epoch */
};

/* Read nodes, teams, running and queued jobs. */
enum rc db_sched_snapshot(PGconn *c, struct db_sched_snapshot *s) TY_WUR;
void db_sched_snapshot_free(struct db_sched_snapshot *s);

/*
 * Apply d in one transaction: preemptions (job -> RESTARTING, GPUs back),
 * placements (attempt, allocations, job -> PLACED), each audited. Jobs whose
 * state changed since the snapshot are skipped. Each attempt gets a random
 * rendezvous port in [port_min, port_max]. *placed receives the number
 * of jobs placed; nodes_touched (array of nnodes_max) the node ids to wake:
 * those of new placements and those whose ranks were preempted.
 * Every job of d is locked in id order before the first write (db.h "Lock
 * order"), and the transaction runs again on a deadlock (db_tx), so the
 * caller wakes the nodes only after this returns RC_OK. Before anything,
 * the transaction is fenced by lease_epoch, the scheduling lease's epoch
 * the decisions were made under (db_lease_fence): RC_ECONFLICT, nothing
 * written, when that lease is no longer this session's.
 */
enum rc db_sched_apply(PGconn *c, int64_t lease_epoch, const struct db_sched_snapshot *s,
                       const struct sched_decisions *d, int port_min, int port_max, int *placed,
                       int64_t *nodes_touched, size_t nodes_max, size_t *nnodes_touched) TY_WUR;

#endif
