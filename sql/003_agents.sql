-- 003_agents: what workers send back (logs, metrics), and webhooks.

CREATE TABLE job_logs (
    id       bigserial PRIMARY KEY,
    job_id   bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    attempt  integer NOT NULL,
    rank     integer NOT NULL,
    stream   text NOT NULL CHECK (stream IN ('stdout', 'stderr')),
    seq      bigint NOT NULL,
    ts       timestamptz NOT NULL,
    text     text NOT NULL,
    -- A batch the worker retries after a lost answer is stored once.
    UNIQUE (job_id, attempt, rank, stream, seq)
);
CREATE INDEX job_logs_job ON job_logs(job_id, id);

CREATE TABLE metrics (
    id      bigserial PRIMARY KEY,
    job_id  bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    attempt integer NOT NULL,
    rank    integer NOT NULL,
    step    bigint NOT NULL,
    ts      timestamptz NOT NULL,
    vals    jsonb NOT NULL
);
CREATE INDEX metrics_job ON metrics(job_id, step, id);

-- Webhooks belong to a team (every job of it) or to one job.
CREATE TABLE webhooks (
    id         bigserial PRIMARY KEY,
    team_id    bigint REFERENCES teams(id) ON DELETE CASCADE,
    job_id     bigint REFERENCES jobs(id) ON DELETE CASCADE,
    url        text NOT NULL,
    format     text NOT NULL CHECK (format IN ('generic', 'wecom', 'dingtalk', 'feishu')),
    secret     text NOT NULL,
    events     text[] NOT NULL,
    created_by bigint REFERENCES users(id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((team_id IS NULL) <> (job_id IS NULL))
);

CREATE TABLE webhook_deliveries (
    id           bigserial PRIMARY KEY,
    webhook_id   bigint NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    event        text NOT NULL,
    payload      text NOT NULL,
    attempts     integer NOT NULL DEFAULT 0,
    status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    http_status  integer,
    last_error   text NOT NULL DEFAULT '',
    next_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_at) WHERE status = 'pending';

-- Whether the stop request of an allocation went out on the long-poll
-- already (heartbeats repeat it until the node reports the exit).
ALTER TABLE allocations ADD COLUMN cancel_sent boolean NOT NULL DEFAULT false;

-- Incremented at every worker start (register). A long-poll carries the
-- generation it began under, so a request left over from a killed worker
-- process can never take (and lose) an assignment meant for its successor.
ALTER TABLE nodes ADD COLUMN generation bigint NOT NULL DEFAULT 0;

-- Who drained a node: an admin's drain survives worker restarts; a worker's
-- own drain (on its shutdown) ends when it registers again.
ALTER TABLE nodes ADD COLUMN admin_drained boolean NOT NULL DEFAULT false;
