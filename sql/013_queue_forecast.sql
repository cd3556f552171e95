-- 013_queue_forecast: the scheduling leader's latest queue forecast (issue
-- 10, docs/queue.md), stored so that every replica serves the same one. The
-- leader's scheduler thread rewrites both tables in one transaction after a
-- pass (server/forecast.c). Derived data, like a cache: not audited, and no
-- foreign key to jobs, so that writing it never waits for a job row's lock.
-- Forward-only: never edit after merge.

-- One row: when the forecast was made and how.
CREATE TABLE queue_forecast_meta (
    id           boolean PRIMARY KEY DEFAULT true CHECK (id),
    generated_at timestamptz NOT NULL,
    truncated    boolean NOT NULL,  -- the horizon or event bound cut the simulation
    duration_us  bigint NOT NULL,   -- what the forecast took on the leader
    queued       integer NOT NULL,
    running      integer NOT NULL
);

-- One row per queued job (kind 'queued': its place, estimated start and
-- reason) and per running job (kind 'running': its expected end).
CREATE TABLE queue_forecast (
    job_id       bigint PRIMARY KEY,
    kind         text NOT NULL CHECK (kind IN ('queued', 'running')),
    position     integer,      -- queued: 0-based place in scheduling order
    start_at     timestamptz,  -- queued: estimated start; NULL = not known or never
    end_at       timestamptz,  -- running: expected end; NULL = not known
    reason       text NOT NULL DEFAULT 'none',  -- sched_wait_code()
    need_gpus    integer NOT NULL DEFAULT 0,
    free_gpus    integer NOT NULL DEFAULT 0,
    other_job_id bigint,
    run_ms       bigint NOT NULL DEFAULT 0,     -- predicted run time; 0 = none
    source       text NOT NULL DEFAULT 'none'   -- pred_source_name()
);
CREATE INDEX queue_forecast_queued ON queue_forecast (position) WHERE kind = 'queued';

-- The predictor's reading of newly finished jobs (db_forecast_finished).
CREATE INDEX jobs_succeeded_finished ON jobs (finished_at, id) WHERE state = 'SUCCEEDED';
