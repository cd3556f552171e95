-- 021_metrics_page_index: an index for a job's metric page
-- (server/store/db_logs.c db_metrics_read: WHERE job_id = $1 AND id > $2
-- ORDER BY id LIMIT $3). metrics_job (job_id, step, id) cannot serve it:
-- its id comes after step, so the page read every point of the job and
-- sorted them, or walked the primary key over every job's points
-- (bench/RESULTS.md, "Metric pages"). (job_id, id) reads the page's rows
-- in order and stops at its end, like job_logs_job does for log pages.
-- metrics_job goes: no statement reads metrics by (job_id, step) (the
-- advisor's last param_bytes orders by attempt first and reads the job's
-- rows either way, as does the delete of a job's rows), and every output
-- batch paid for it. Built in the migration's transaction: writes to
-- metrics wait for the build on an existing database.
-- Forward-only: never edit after merge.

CREATE INDEX metrics_job_id ON metrics (job_id, id);
DROP INDEX metrics_job;
