-- 009_job_plans: the strategy advisor's plans of a job (issue 8,
-- docs/advisor.md). Forward-only: never edit after merge.

-- The plan made at submit for the site's nodes (a job with a model and a
-- strategy); NULL when the job has none.
ALTER TABLE jobs ADD COLUMN plan jsonb;

-- The plan re-made at placement for the GPUs this attempt holds, which its
-- ranks get (config.env, ds_config.json, FSDP settings); NULL when the job
-- has no model.
ALTER TABLE attempts ADD COLUMN plan jsonb;

-- What a job event records: a state change ('state', from_state ->
-- to_state), or the plan chosen at placement ('plan', to_state the state the
-- job was in, reason the plan in short).
ALTER TABLE job_events ADD COLUMN kind text NOT NULL DEFAULT 'state'
    CHECK (kind IN ('state', 'plan'));
