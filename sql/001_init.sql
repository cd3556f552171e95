-- 001_init: users, teams, auth, jobs and the audit chain.
-- Applied by trainyard-server at start, in one transaction, and recorded in
-- schema_migrations. Forward-only: never edit after merge.

CREATE TABLE teams (
    id              bigserial PRIMARY KEY,
    name            text NOT NULL UNIQUE,
    gpu_quota       integer NOT NULL DEFAULT 0 CHECK (gpu_quota >= 0),
    priority_weight double precision NOT NULL DEFAULT 1.0 CHECK (priority_weight > 0),
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
    id            bigserial PRIMARY KEY,
    username      text NOT NULL UNIQUE,
    display_name  text NOT NULL DEFAULT '',
    role          text NOT NULL CHECK (role IN ('admin', 'auditor', 'member')),
    password_hash text NOT NULL,
    disabled      boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memberships (
    user_id bigint NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    team_id bigint NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    PRIMARY KEY (user_id, team_id)
);
CREATE INDEX memberships_team ON memberships(team_id);

-- Tokens and sessions are stored as SHA-256 of the secret: they are long
-- random strings, so a slow hash adds nothing and would cost every request.
CREATE TABLE sessions (
    token_hash text PRIMARY KEY,
    user_id    bigint NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    csrf_token text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX sessions_user ON sessions(user_id);

CREATE TABLE api_tokens (
    id         bigserial PRIMARY KEY,
    user_id    bigint NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name       text NOT NULL,
    token_hash text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz,
    revoked_at timestamptz,
    last_used_at timestamptz
);
CREATE INDEX api_tokens_user ON api_tokens(user_id);

CREATE TABLE jobs (
    id            bigserial PRIMARY KEY,
    name          text NOT NULL,
    team_id       bigint NOT NULL REFERENCES teams(id),
    user_id       bigint NOT NULL REFERENCES users(id),
    spec          jsonb NOT NULL,
    state         text NOT NULL CHECK (state IN ('QUEUED', 'PLACED', 'STARTING', 'RUNNING',
                        'RESTARTING', 'SUCCEEDED', 'FAILED', 'CANCELLED')),
    priority      smallint NOT NULL,            -- 0 low, 1 normal, 2 high
    gpus          integer NOT NULL,
    gpus_per_node integer NOT NULL DEFAULT 0,
    time_limit_s  integer NOT NULL,
    max_restarts  integer NOT NULL,
    restarts      integer NOT NULL DEFAULT 0,
    attempt       integer NOT NULL DEFAULT 0,
    reason        text NOT NULL DEFAULT '',
    cancel_requested boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    finished_at   timestamptz
);
CREATE INDEX jobs_team_id ON jobs(team_id, id DESC);
CREATE INDEX jobs_user_id ON jobs(user_id, id DESC);
CREATE INDEX jobs_state_id ON jobs(state, id DESC);

CREATE TABLE job_events (
    id         bigserial PRIMARY KEY,
    job_id     bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    ts         timestamptz NOT NULL DEFAULT now(),
    from_state text,
    to_state   text NOT NULL,
    reason     text NOT NULL DEFAULT '',
    actor      text NOT NULL DEFAULT ''
);
CREATE INDEX job_events_job ON job_events(job_id, id);

-- Worker nodes. A node authenticates with a credential whose SHA-256 is
-- stored; join tokens (created by admins) are exchanged for credentials.
CREATE TABLE join_tokens (
    id         bigserial PRIMARY KEY,
    token_hash text NOT NULL UNIQUE,
    created_by bigint REFERENCES users(id) ON DELETE SET NULL,
    uses_left  integer NOT NULL CHECK (uses_left >= 0),
    expires_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE nodes (
    id              bigserial PRIMARY KEY,
    name            text NOT NULL UNIQUE,
    hostname        text NOT NULL DEFAULT '',
    addr            text NOT NULL DEFAULT '',
    labels          jsonb NOT NULL DEFAULT '{}',
    state           text NOT NULL DEFAULT 'down' CHECK (state IN ('ready', 'draining', 'down')),
    credential_hash text NOT NULL UNIQUE,
    cpus            integer NOT NULL DEFAULT 0,
    memory_mb       bigint NOT NULL DEFAULT 0,
    version         text NOT NULL DEFAULT '',
    gpu_stats       jsonb NOT NULL DEFAULT '[]',
    last_seen_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE gpus (
    node_id            bigint NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    idx                integer NOT NULL CHECK (idx >= 0 AND idx < 64),
    uuid               text NOT NULL,
    model              text NOT NULL,
    memory_mb          bigint NOT NULL,
    compute_capability text NOT NULL DEFAULT '',
    nvlink_peers       integer[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (node_id, idx)
);

-- The audit chain. Each row's hash covers prev_hash and the canonical event
-- (common/audit_canon.h). details is kept as the exact text that was hashed.
CREATE TABLE audit_events (
    id        bigint PRIMARY KEY,
    ts        timestamptz NOT NULL,
    ts_text   text NOT NULL,
    actor     text NOT NULL,
    source    text NOT NULL,
    action    text NOT NULL,
    target    text NOT NULL,
    outcome   text NOT NULL,
    details   text NOT NULL,
    prev_hash text NOT NULL,
    hash      text NOT NULL
);
CREATE INDEX audit_events_ts ON audit_events(ts);
CREATE INDEX audit_events_action ON audit_events(action, id);

-- One row: the chain head. Writers lock it (SELECT ... FOR UPDATE) inside
-- their transaction, which serializes appends and keeps ids gapless.
CREATE TABLE audit_head (
    one  boolean PRIMARY KEY DEFAULT true CHECK (one),
    seq  bigint NOT NULL,
    hash text NOT NULL
);
INSERT INTO audit_head (seq, hash)
    VALUES (0, '0000000000000000000000000000000000000000000000000000000000000000');

-- Append-only, even for a superuser: the triggers refuse every UPDATE, DELETE
-- and TRUNCATE, whichever role issues it.
CREATE FUNCTION audit_events_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_events is append-only'
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER audit_events_no_update BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_guard();
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_guard();
