-- 028_canary: canary replicas and the automatic rollback (docs/serving.md "Canary").
-- Forward-only: never edit after merge.

-- How many replicas of the canary version run while a deployment has a
-- canary version and a weight above 0 (in addition to `replicas`; at most
-- max_replicas). Written by the deployments API.
ALTER TABLE deployments ADD COLUMN canary_replicas integer NOT NULL DEFAULT 1
    CHECK (canary_replicas BETWEEN 1 AND 64);

-- When the current canary began taking traffic (its version set or changed,
-- or its weight raised from 0); NULL: never. The automatic rollback counts
-- only requests since then, so the records of a canary rolled back before do
-- not roll back its next try.
ALTER TABLE deployments ADD COLUMN canary_started_at timestamptz;

-- The automatic rollback reads one version's records of the last window_s
-- seconds every two seconds.
CREATE INDEX serve_requests_version_ts ON serve_requests (version_id, ts);
