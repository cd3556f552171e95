-- 023_serving: the model registry, deployments and their replicas, the
-- gateway's keys and usage, and the per-request records the gateway writes
-- (docs/serving.md). Forward-only: never edit after merge.

-- A model: a name that versions are registered under, owned by a team and
-- kept on one site (its versions live in that site's storage roots and are
-- deployed only on that site's nodes).
CREATE TABLE models (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    team_id     bigint NOT NULL REFERENCES teams(id),
    site_id     bigint NOT NULL REFERENCES sites(id),
    description text NOT NULL DEFAULT '',
    created_by  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- One immutable version: where its files are, what they are (the manifest)
-- and where they came from (the lineage). version counts 1, 2, ... per model.
--   source_kind: 'output' (the job's output directory) or 'checkpoint' (one
--                recorded checkpoint file, with the output's config files)
--   datasets:    [{"name","uri","path","digest"}] of what the job read
--   manifest:    [{"path","size","sha256"}] sorted by path; manifest_sha256 is
--                the SHA-256 of its canonical text (docs/serving.md)
--   serve_kind, serve_script: the template's "serve" (what the replicas run)
--   lineage_complete: source job and every dataset digest known; a version
--                without it is deployed only with an admin's audited override
CREATE TABLE model_versions (
    id               bigserial PRIMARY KEY,
    model_id         bigint NOT NULL REFERENCES models(id),
    version          integer NOT NULL CHECK (version >= 1),
    site_id          bigint NOT NULL REFERENCES sites(id),
    source_kind      text NOT NULL CHECK (source_kind IN ('output', 'checkpoint')),
    source_job_id    bigint REFERENCES jobs(id),
    source_attempt   integer,
    source_step      bigint,
    path             text NOT NULL,
    template         text,
    serve_kind       text NOT NULL
                     CHECK (serve_kind IN ('chat', 'classify', 'embed', 'image', 'echo')),
    serve_script     text NOT NULL,
    params           jsonb NOT NULL DEFAULT '{}',
    datasets         jsonb NOT NULL DEFAULT '[]',
    metrics          jsonb NOT NULL DEFAULT '{}',
    manifest         jsonb NOT NULL,
    manifest_sha256  text NOT NULL CHECK (manifest_sha256 ~ '^[0-9a-f]{64}$'),
    lineage_complete boolean NOT NULL,
    description      text NOT NULL DEFAULT '',
    created_by       text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (model_id, version)
);
CREATE INDEX model_versions_job ON model_versions(source_job_id);

CREATE FUNCTION model_versions_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'model_versions is immutable' USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER model_versions_immutable BEFORE UPDATE OR DELETE ON model_versions
    FOR EACH ROW EXECUTE FUNCTION model_versions_guard();

-- Movable names for versions (prod, canary, ...). Every move is audited.
CREATE TABLE model_aliases (
    model_id   bigint NOT NULL REFERENCES models(id),
    alias      text NOT NULL CHECK (alias ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    version_id bigint NOT NULL REFERENCES model_versions(id),
    updated_by text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model_id, alias)
);

-- A deployment: a long-running service of one model, reached through the
-- gateway as "model": <name>. It serves version_id, or the version alias
-- points at when alias is set (resolved when a replica starts). A canary
-- sends canary_weight percent of requests to canary_version_id.
--   replicas:        the count wanted now, min_replicas..max_replicas; 0 only
--                    when min_replicas is 0 (scaled to zero after idle_s)
--   state:           'active' (replicas wanted) or 'stopped' (none)
--   lineage_override: an admin allowed a version with incomplete lineage
--   keep_texts_days: prompt and answer texts are kept this long on site;
--                    0 keeps only their hashes
--   widget:          the public chat widget's settings ({} = none)
--   canary_bound:    {"window_s","min_requests","max_error_rate","max_p99_ms"}
--                    for the automatic rollback, or {} for none
CREATE TABLE deployments (
    id                bigserial PRIMARY KEY,
    name              text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    model_id          bigint NOT NULL REFERENCES models(id),
    version_id        bigint REFERENCES model_versions(id),
    alias             text,
    canary_version_id bigint REFERENCES model_versions(id),
    canary_weight     integer NOT NULL DEFAULT 0 CHECK (canary_weight BETWEEN 0 AND 100),
    canary_bound      jsonb NOT NULL DEFAULT '{}',
    team_id           bigint NOT NULL REFERENCES teams(id),
    user_id           bigint NOT NULL REFERENCES users(id),
    site_id           bigint NOT NULL REFERENCES sites(id),
    engine            text NOT NULL DEFAULT 'pytorch' CHECK (engine IN ('pytorch', 'vllm', 'triton')),
    gpus_per_replica  integer NOT NULL CHECK (gpus_per_replica BETWEEN 1 AND 64),
    min_replicas      integer NOT NULL CHECK (min_replicas >= 0),
    max_replicas      integer NOT NULL CHECK (max_replicas >= 1 AND max_replicas >= min_replicas),
    replicas          integer NOT NULL CHECK (replicas >= 0),
    priority          smallint NOT NULL,
    idle_s            integer NOT NULL DEFAULT 0 CHECK (idle_s >= 0),
    state             text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'stopped')),
    lineage_override  boolean NOT NULL DEFAULT false,
    keep_texts_days   integer NOT NULL DEFAULT 0 CHECK (keep_texts_days >= 0),
    widget            jsonb NOT NULL DEFAULT '{}',
    last_request_at   timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CHECK ((version_id IS NULL) <> (alias IS NULL)),
    CHECK (replicas <= max_replicas)
);
CREATE INDEX deployments_team ON deployments(team_id);

-- Each replica is a job (the scheduler places it, the worker starts it, a
-- lost node restarts it like any job); this row ties the job to its
-- deployment and carries what the gateway needs to reach it. token is sent
-- by the gateway as "Authorization: Bearer <token>" and given to the model
-- server as TRAINYARD_SERVE_TOKEN, so that only the gateway's requests are
-- answered. ready: the model server's health check passed for this attempt.
CREATE TABLE serve_replicas (
    job_id        bigint PRIMARY KEY REFERENCES jobs(id),
    deployment_id bigint NOT NULL REFERENCES deployments(id),
    version_id    bigint NOT NULL REFERENCES model_versions(id),
    token         text NOT NULL,
    attempt       integer NOT NULL DEFAULT 0,
    ready         boolean NOT NULL DEFAULT false,
    ready_at      timestamptz,
    retired       boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX serve_replicas_deployment ON serve_replicas(deployment_id) WHERE NOT retired;

-- Gateway keys, each for one deployment, stored as SHA-256 of the secret
-- (shown once). public: a chat widget's key, limited per visitor address.
--   rate_per_min:  requests per minute (per key; per visitor for public keys)
--   token_quota:   prompt + completion tokens the key may use, 0 = unlimited
CREATE TABLE serve_keys (
    id            bigserial PRIMARY KEY,
    deployment_id bigint NOT NULL REFERENCES deployments(id),
    name          text NOT NULL,
    token_hash    text NOT NULL UNIQUE,
    prefix        text NOT NULL,
    public        boolean NOT NULL DEFAULT false,
    rate_per_min  integer NOT NULL DEFAULT 600 CHECK (rate_per_min >= 1),
    token_quota   bigint NOT NULL DEFAULT 0 CHECK (token_quota >= 0),
    created_by    text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    revoked_at    timestamptz
);
CREATE INDEX serve_keys_deployment ON serve_keys(deployment_id);

-- Usage per key and UTC day.
CREATE TABLE serve_usage (
    key_id            bigint NOT NULL REFERENCES serve_keys(id),
    day               date NOT NULL,
    requests          bigint NOT NULL DEFAULT 0,
    errors            bigint NOT NULL DEFAULT 0,
    prompt_tokens     bigint NOT NULL DEFAULT 0,
    completion_tokens bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (key_id, day)
);

-- One record per gateway request, failures and refusals included. Batches
-- of records are sealed into the audit chain by one event each that holds
-- the Merkle root of the batch's record hashes (docs/serving.md); batch_id
-- is NULL until then. record_sha256 is the SHA-256 of the record's
-- canonical text (docs/serving.md, "Request records"); ts_text is ts as that
-- text has it. prompt_text / answer_text are kept only when the
-- deployment's policy keeps texts, else NULL (the hashes always stay).
CREATE TABLE serve_requests (
    id                bigserial PRIMARY KEY,
    request_id        text NOT NULL,
    ts                timestamptz NOT NULL,
    ts_text           text NOT NULL,
    key_id            bigint,
    deployment_id     bigint,
    version_id        bigint,
    replica_job_id    bigint,
    manifest_sha256   text NOT NULL DEFAULT '',
    route             text NOT NULL,
    status            integer NOT NULL,
    error_code        text NOT NULL DEFAULT '',
    prompt_sha256     text NOT NULL DEFAULT '',
    answer_sha256     text NOT NULL DEFAULT '',
    prompt_tokens     integer NOT NULL DEFAULT 0,
    completion_tokens integer NOT NULL DEFAULT 0,
    latency_us        bigint NOT NULL DEFAULT 0,
    ttft_us           bigint NOT NULL DEFAULT 0,
    client_addr       text NOT NULL DEFAULT '',
    record_sha256     text NOT NULL,
    batch_id          bigint,
    prompt_text       text,
    answer_text       text
);
CREATE INDEX serve_requests_unsealed ON serve_requests(id) WHERE batch_id IS NULL;
CREATE INDEX serve_requests_deployment ON serve_requests(deployment_id, id);

-- A sealed batch: records first_id..last_id (those with this batch_id), the
-- Merkle root over their record_sha256 in id order, and the audit event
-- (audit_events.id) that carries the root.
CREATE TABLE serve_batches (
    id          bigserial PRIMARY KEY,
    first_id    bigint NOT NULL,
    last_id     bigint NOT NULL,
    count       integer NOT NULL CHECK (count >= 1),
    merkle_root text NOT NULL,
    audit_seq   bigint NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
