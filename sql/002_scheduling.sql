-- 002_scheduling: placements of jobs on nodes, and attempts (one launch of a
-- job across its nodes).

CREATE TABLE attempts (
    id          bigserial PRIMARY KEY,
    job_id      bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    attempt     integer NOT NULL,
    state       text NOT NULL DEFAULT 'placed'
                CHECK (state IN ('placed', 'starting', 'running', 'ended')),
    master_addr text NOT NULL DEFAULT '',
    master_port integer NOT NULL DEFAULT 0,
    resume_from text NOT NULL DEFAULT '',
    outcome     text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    ended_at    timestamptz,
    UNIQUE (job_id, attempt)
);

-- The GPUs an attempt holds on one node. Rows exist while the GPUs are
-- booked; released_at is set when they are given back.
CREATE TABLE allocations (
    attempt_id  bigint NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
    job_id      bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    node_id     bigint NOT NULL REFERENCES nodes(id),
    node_rank   integer NOT NULL,
    gpu_indices integer[] NOT NULL,
    rank_start  integer NOT NULL,
    delivered   boolean NOT NULL DEFAULT false,
    started     boolean NOT NULL DEFAULT false,
    exited      boolean NOT NULL DEFAULT false,
    exit_info   jsonb,
    released_at timestamptz,
    PRIMARY KEY (attempt_id, node_id)
);
CREATE INDEX allocations_live ON allocations(node_id) WHERE released_at IS NULL;
CREATE INDEX allocations_job ON allocations(job_id);

-- Checkpoints a job recorded (TRAINYARD_CHECKPOINT lines); the newest is
-- handed to the next attempt as TRAINYARD_RESUME_FROM.
CREATE TABLE checkpoints (
    id         bigserial PRIMARY KEY,
    job_id     bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    attempt    integer NOT NULL,
    step       bigint NOT NULL,
    path       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX checkpoints_job ON checkpoints(job_id, step DESC);
