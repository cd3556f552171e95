-- 014_queue_forecast_pages: what GET /api/v1/queue needs to answer a page
-- at the cost of its own rows (issue 10, docs/queue.md, bench/RESULTS.md
-- "Queue pages"). Until now every page joined all of queue_forecast to jobs
-- for the filters' team and user and counted the matches for `total`:
-- about 30 ms a page at 10,000 queued jobs. The leader now stores each
-- job's team and user beside its forecast row and the counts per team and
-- user once per forecast (server/db_forecast.c db_forecast_store), in the
-- same transaction as the rest. Derived data, not audited, like 013.
-- Forward-only: never edit after merge.

-- A job's team and user never change after submit, so copying them is safe.
ALTER TABLE queue_forecast ADD COLUMN team_id bigint, ADD COLUMN user_id bigint;

-- A page of one team's or one user's jobs reads its range in stored order.
CREATE INDEX queue_forecast_team ON queue_forecast (team_id, position) WHERE kind = 'queued';
CREATE INDEX queue_forecast_user ON queue_forecast (user_id, position) WHERE kind = 'queued';
-- The first page's running jobs, without scanning the queued ones.
CREATE INDEX queue_forecast_running ON queue_forecast (job_id) WHERE kind = 'running';

-- The stored forecast's queued jobs per (team, user): `total` of any filter
-- is a sum over the few rows that match, not a count of the queue.
CREATE TABLE queue_forecast_totals (
    team_id bigint NOT NULL,
    user_id bigint NOT NULL,
    queued  integer NOT NULL,
    PRIMARY KEY (team_id, user_id)
);

-- The forecast stored before this migration, until the leader's next one.
UPDATE queue_forecast f SET team_id = j.team_id, user_id = j.user_id FROM jobs j
WHERE j.id = f.job_id;
INSERT INTO queue_forecast_totals (team_id, user_id, queued)
SELECT team_id, user_id, count(*) FROM queue_forecast
WHERE kind = 'queued' AND team_id IS NOT NULL GROUP BY team_id, user_id;
