/*
 * db_scrape.h - the cluster's state for /metrics, read in one query.
 *
 * The query is bounded: queue length by team (one row per team, from the
 * jobs_state_id index), job counts by state (eight rows), GPU totals, one
 * heartbeat age per node, node counts by state and the audit chain's head
 * (one row). It takes no lock and writes nothing.
 *
 * Thread-safety: reentrant; the caller owns the connection.
 */
#ifndef TY_SERVER_DB_SCRAPE_H
#define TY_SERVER_DB_SCRAPE_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "metrics.h" /* the snapshot's types */

/* Read the snapshot into *out (rows owned by it: db_scrape_cleanup()).
 * Returns RC_OK, RC_EUNAVAIL (database gone), RC_ENOMEM or RC_EINTERNAL. */
enum rc db_scrape_read(PGconn *c, struct db_scrape_snapshot *out /* out */) TY_WUR;

/* A copy of src into *dst (deep). Returns RC_OK or RC_ENOMEM. */
enum rc db_scrape_copy(struct db_scrape_snapshot *dst /* out */,
                       const struct db_scrape_snapshot *src) TY_WUR;

/* Free the rows; the struct is left empty. NULL-safe. */
void db_scrape_cleanup(struct db_scrape_snapshot *s);

#endif
