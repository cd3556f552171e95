-- 025_service_jobs: jobs that run until cancelled (a deployment's replicas,
-- docs/serving.md "Deployments"). Forward-only: never edit after merge.
--
--   service:        the job serves; it has no time limit (time_limit_s = 0),
--                   is restarted after every failure however many restarts it
--                   used (max_restarts is not spent), and is never preempted.
--                   Set only by the server when it makes a replica; a submit
--                   through the jobs API never sets it.
--   not_before:     a restart of a service job waits until then (the
--                   scheduler leaves the job queued); NULL: no wait.
--   failure_streak: the service job's failed attempts in a row that ended
--                   within a minute of their start; the wait before the next
--                   attempt doubles with it (1 s, 2 s, ... at most 300 s).
ALTER TABLE jobs ADD COLUMN service boolean NOT NULL DEFAULT false;
ALTER TABLE jobs ADD COLUMN not_before timestamptz;
ALTER TABLE jobs ADD COLUMN failure_streak integer NOT NULL DEFAULT 0;

-- A job without a time limit is a service job; every other job keeps one.
-- NOT VALID: existing rows are not scanned (every submit gave them a limit
-- of at least 1 s); every row written from now on is checked.
ALTER TABLE jobs ADD CONSTRAINT jobs_time_limit_or_service
    CHECK (service OR time_limit_s > 0) NOT VALID;
