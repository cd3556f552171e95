-- 020_retention: what the retention loop needs to remove old rows in small
-- batches (docs/operations.md, "Retention"), and job counts per state kept by
-- the changes themselves, so that /metrics does not count every job ever run.
-- Forward-only: never edit after merge.

-- Indexes the retention loop's batches walk, so that each batch reads only
-- the rows it removes.
CREATE INDEX sessions_expires ON sessions (expires_at);
CREATE INDEX webhook_deliveries_done ON webhook_deliveries (created_at, id)
    WHERE status <> 'pending';
CREATE INDEX jobs_finished ON jobs (finished_at, id) WHERE finished_at IS NOT NULL;

-- One row per kind of data the loop removes, written only by the leader's
-- retention loop (so no two transactions contend for it).
--   pending:   rows removed by committed batches of a pass whose audit event
--              is not written yet; the pass's last batch appends the event
--              with them and sets it back to 0, and a pass cut short (the
--              server stopped) leaves them for the next pass to report.
--   cursor_ts, cursor_id: for the kinds that belong to finished jobs, every
--              job with (finished_at, id) at or before this has had its rows
--              of the kind removed; NULL: none yet.
CREATE TABLE retention_progress (
    kind      text PRIMARY KEY CHECK (kind IN ('sessions', 'webhook_deliveries', 'job_logs',
                                               'job_metrics', 'job_events')),
    pending   bigint NOT NULL DEFAULT 0,
    cursor_ts timestamptz,
    cursor_id bigint NOT NULL DEFAULT 0
);
INSERT INTO retention_progress (kind)
    VALUES ('sessions'), ('webhook_deliveries'), ('job_logs'), ('job_metrics'), ('job_events');

-- Job counts by state as deltas: each statement that inserts, deletes or
-- changes the state of jobs appends one row per state it moved (+n, -n).
-- Appending, not updating one counter row per state, means no two
-- transactions ever wait on each other here (a hot counter row would be
-- held from a job's transition to its commit, and two transitions in
-- opposite directions would lock two counters in opposite orders). The sum
-- per state is exact at every snapshot; the retention loop folds the rows
-- into one per state now and then (db_state_counts_fold), so a read costs
-- the rows since the last fold, never the number of jobs.
CREATE TABLE job_state_counts (
    state text NOT NULL,
    n     bigint NOT NULL
);

CREATE FUNCTION job_state_counts_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_state_counts (state, n)
        SELECT state, count(*) FROM new_jobs GROUP BY state;
    RETURN NULL;
END $$;

CREATE FUNCTION job_state_counts_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_state_counts (state, n)
        SELECT state, -count(*) FROM old_jobs GROUP BY state;
    RETURN NULL;
END $$;

CREATE FUNCTION job_state_counts_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_state_counts (state, n)
        SELECT state, sum(d) FROM (
            SELECT state, -1 AS d FROM old_jobs
            UNION ALL SELECT state, 1 FROM new_jobs) x
        GROUP BY state HAVING sum(d) <> 0;
    RETURN NULL;
END $$;

-- Statement triggers with transition tables: a bulk insert adds one row per
-- state, not one per job. (A transition table cannot go with UPDATE OF
-- state, so every UPDATE of jobs runs the function; most add nothing.)
CREATE TRIGGER jobs_state_counts_ins AFTER INSERT ON jobs
    REFERENCING NEW TABLE AS new_jobs FOR EACH STATEMENT EXECUTE FUNCTION job_state_counts_ins();
CREATE TRIGGER jobs_state_counts_del AFTER DELETE ON jobs
    REFERENCING OLD TABLE AS old_jobs FOR EACH STATEMENT EXECUTE FUNCTION job_state_counts_del();
CREATE TRIGGER jobs_state_counts_upd AFTER UPDATE ON jobs
    REFERENCING OLD TABLE AS old_jobs NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION job_state_counts_upd();

-- The triggers exist from here on and CREATE TRIGGER's lock keeps other
-- writers of jobs out until this migration commits, so this count and the
-- triggers' rows together are exact.
INSERT INTO job_state_counts (state, n) SELECT state, count(*) FROM jobs GROUP BY state;
