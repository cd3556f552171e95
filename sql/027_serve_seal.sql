-- 027_serve_seal: what sealing the gateway's request records needs beyond
-- sql/023_serving.sql: finding a batch's records and the batch of a seal
-- event, clearing texts past their deployment's keep_texts_days, and the
-- retention loop's progress for that (docs/serving.md "Request records and
-- their seal", docs/audit-export.md "Gateway request records",
-- docs/operations.md "Retention"). Forward-only: never edit after merge.

-- A batch's records in id order: its proofs (the export) and its removal
-- with the audit events that sealed it (audit retention).
CREATE INDEX serve_requests_batch ON serve_requests (batch_id, id) WHERE batch_id IS NOT NULL;

-- The batch a seal event carries, from the event's id (the export), and the
-- batches older than a retention checkpoint (audit retention).
CREATE INDEX serve_batches_audit_seq ON serve_batches (audit_seq);

-- Records that still keep a text, oldest first: what the texts' retention
-- walks, so that a batch reads only rows that may be due.
CREATE INDEX serve_requests_texts ON serve_requests (ts, id)
    WHERE prompt_text IS NOT NULL OR answer_text IS NOT NULL;

-- The retention loop's progress for clearing texts (the kind 'serve_texts':
-- pending counts texts cleared by batches whose pass has not written its
-- event yet; the cursor is unused). The check is widened, never narrowed: a
-- replica of the previous version never writes the new kind.
ALTER TABLE retention_progress DROP CONSTRAINT retention_progress_kind_check;
ALTER TABLE retention_progress ADD CONSTRAINT retention_progress_kind_check
    CHECK (kind IN ('sessions', 'webhook_deliveries', 'job_logs', 'job_metrics', 'job_events',
                    'serve_texts'));
INSERT INTO retention_progress (kind) VALUES ('serve_texts');
