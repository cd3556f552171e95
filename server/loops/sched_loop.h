/*
 * sched_loop.h - the scheduler thread of trainyard-server.
 *
 * Only the leader schedules: the thread holds a PostgreSQL session advisory
 * lock on its own connection and a lease it renews (lease.h, db_lease.h);
 * a second replica's thread waits for it, and ends the holder's session
 * when the lease has expired (a hung leader). Each write of the leader is
 * fenced by the lease's epoch. Each
 * pass reads a snapshot (db_sched.c), runs the pure scheduler library
 * (scheduler/sched.h) and writes the placements, preemptions and the
 * reservation in one transaction, then wakes the nodes' long-polls.
 *
 * After each pass the leader refreshes the queue forecast of that snapshot
 * (forecast.h) and stores it for every replica.
 *
 * A pass runs when app_wake_scheduler() is called (submit, cancel, job end,
 * node change) and at least every cfg->sched_interval_ms.
 *
 * Threads: one thread; it owns its decisions and snapshot buffers.
 */
#ifndef TY_SERVER_SCHED_LOOP_H
#define TY_SERVER_SCHED_LOOP_H

#include "app.h"
#include "err.h"

struct sched_loop;

/* Start the thread; *out owned by the caller (sched_loop_stop frees it). */
enum rc sched_loop_start(struct srv_app *app, struct sched_loop **out) TY_WUR;

/* Stop and join the thread and free it; NULL is a no-op. */
void sched_loop_stop(struct sched_loop *loop);

#endif
