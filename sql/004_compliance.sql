-- 004_compliance: sites, the compliance policy and registered datasets.
-- Forward-only: never edit after merge.

-- A site is a place data may live: its storage roots (absolute paths) and
-- the internal networks (CIDRs) job traffic and remote dataset URIs may
-- reach. Every node and every job belongs to one site; the scheduler places
-- a job only on nodes of its site. The server validates both arrays
-- (common/pathpol.h) before writing them.
CREATE TABLE sites (
    id            bigserial PRIMARY KEY,
    name          text NOT NULL UNIQUE,
    storage_roots text[] NOT NULL DEFAULT '{}',
    networks      text[] NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
-- Site 1: where nodes and jobs go unless told otherwise. The server fills
-- its storage roots from its storage_root setting while they are empty.
INSERT INTO sites (name) VALUES ('default');

ALTER TABLE nodes ADD COLUMN site_id bigint NOT NULL DEFAULT 1 REFERENCES sites(id);
ALTER TABLE jobs ADD COLUMN site_id bigint NOT NULL DEFAULT 1 REFERENCES sites(id);
-- Deleting a site checks (and the foreign key scans) jobs by site.
CREATE INDEX jobs_site ON jobs(site_id);
-- The highest classification among the job's datasets, fixed at submit.
ALTER TABLE jobs ADD COLUMN classification text NOT NULL DEFAULT 'internal'
    CHECK (classification IN ('public', 'internal', 'confidential', 'secret'));
-- The local paths the submit check accepted, normalized ("//", "." and ".."
-- resolved; registered dataset names replaced by their paths):
-- {"working_dir": "...", "output_dir": "...", "datasets": ["...", ...]}.
-- Assignments send these, so the worker's realpath check (which refuses
-- "..") sees exactly what was approved, and a dataset deleted or changed
-- later does not change a submitted job. '{}' for jobs from before 004.
ALTER TABLE jobs ADD COLUMN paths jsonb NOT NULL DEFAULT '{}';

-- One row: the settings that hold for the whole installation.
CREATE TABLE compliance_policy (
    one                    boolean PRIMARY KEY DEFAULT true CHECK (one),
    -- China's MLPS 2.0 asks that logs be kept at least 180 days.
    audit_retention_days   integer NOT NULL DEFAULT 180 CHECK (audit_retention_days >= 180),
    -- Classification of a path that is not a registered dataset.
    default_classification text NOT NULL DEFAULT 'internal'
        CHECK (default_classification IN ('public', 'internal', 'confidential', 'secret')),
    updated_at             timestamptz NOT NULL DEFAULT now()
);
INSERT INTO compliance_policy DEFAULT VALUES;

CREATE TABLE datasets (
    id             bigserial PRIMARY KEY,
    name           text NOT NULL UNIQUE,
    uri            text NOT NULL,
    site_id        bigint NOT NULL REFERENCES sites(id),
    classification text NOT NULL
        CHECK (classification IN ('public', 'internal', 'confidential', 'secret')),
    team_id        bigint NOT NULL REFERENCES teams(id),
    description    text NOT NULL DEFAULT '',
    created_by     text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX datasets_team ON datasets(team_id);
CREATE INDEX datasets_site ON datasets(site_id);
