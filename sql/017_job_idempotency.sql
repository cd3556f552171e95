-- 017_job_idempotency: POST /api/v1/jobs with an Idempotency-Key header.
-- A client that sent a submit and got no answer (a timeout, a 503 on
-- COMMIT that may have committed, a double click) sends it again with the
-- same key and gets the job the first one made instead of a second job.
-- The key is the submitting user's (two users may use the same key); the
-- hash is SHA-256 of the request body, so that a key reused for another
-- request is refused instead of answered with the wrong job.
-- Forward-only: never edit after merge.

ALTER TABLE jobs ADD COLUMN idempotency_key text;
ALTER TABLE jobs ADD COLUMN idempotency_hash text;
CREATE UNIQUE INDEX jobs_idempotency ON jobs (user_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
