-- 010_reason_codes: job event and failure reasons as a code with parameters
-- next to the English text (issue 12; common/reason_codes.h,
-- docs/job-reasons.md), so the dashboard can show them in the user's
-- language. Forward-only: never edit after merge.

-- '' and {} on rows written before this migration: show reason (English).
ALTER TABLE job_events ADD COLUMN reason_code text NOT NULL DEFAULT '',
    ADD COLUMN reason_params jsonb NOT NULL DEFAULT '{}'
        CHECK (jsonb_typeof(reason_params) = 'object');

-- The reason of the job's newest transition (its failure reason once
-- FAILED), like jobs.reason.
ALTER TABLE jobs ADD COLUMN reason_code text NOT NULL DEFAULT '',
    ADD COLUMN reason_params jsonb NOT NULL DEFAULT '{}'
        CHECK (jsonb_typeof(reason_params) = 'object');
