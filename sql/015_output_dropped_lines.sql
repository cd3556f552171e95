-- 015_output_dropped_lines: how many lines of an attempt's output its nodes
-- dropped before sending them (the worker's output queue is bounded and
-- drops plain log lines first when the server cannot keep up; protocol field
-- "dropped_logs", docs/agent-protocol.md). Shown with the job so that a gap
-- in its logs or loss curve is explained. Added to in the transaction that
-- stores the batch which reported them, never by a replayed batch.
-- Forward-only: never edit after merge.

ALTER TABLE attempts
    ADD COLUMN dropped_lines bigint NOT NULL DEFAULT 0 CHECK (dropped_lines >= 0);
