/*
 * gw_records.h - the gateway's request records, written off the request
 * path: a request's record is queued in memory (gw_records_push) and a
 * writer thread inserts what is queued in one transaction (the rows, their
 * serve_usage, deployments.last_request_at: store/db_gateway.h) at least
 * every GW_RECORDS_FLUSH_MS, at once when GW_RECORDS_BATCH are waiting, and
 * a last time when stopped.
 *
 * What a crash can lose: the records of requests already answered but not
 * yet written, at most GW_RECORDS_FLUSH_MS' worth plus the batch being
 * written (a kill -9 or a power loss; a SIGTERM stop writes them all).
 * While PostgreSQL is away the queue keeps up to GW_RECORDS_MAX_QUEUED
 * records and the writer retries every flush; past that a record is
 * dropped, logged and counted (trainyard_gateway_records_dropped_total).
 *
 * Threads: gw_records_push() is thread-safe (one mutex, a leaf); one writer
 * thread, which holds no lock across SQL.
 */
#ifndef TY_SERVER_GW_RECORDS_H
#define TY_SERVER_GW_RECORDS_H

#include <jansson.h>
#include <stdint.h>

#define GW_RECORDS_FLUSH_MS 100
#define GW_RECORDS_BATCH 512
#define GW_RECORDS_MAX_QUEUED 200000

struct srv_app;
struct gw_records;

/* Start the writer thread. NULL on failure. app borrowed. */
struct gw_records *gw_records_new(struct srv_app *app);

/* Queue one record (takes ownership of row, an object with serve_requests'
 * columns). */
void gw_records_push(struct gw_records *r, json_t *row);

/* Records dropped because the queue was full (for /metrics). */
int64_t gw_records_dropped(struct gw_records *r);

/* Write what is queued, stop the thread, free. NULL is a no-op. */
void gw_records_free(struct gw_records *r);

#endif
