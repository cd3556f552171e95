-- 006_exports: approval of downloads of job outputs (model weights).
-- Forward-only: never edit after merge.

-- One request to download one file of a job's output directory. Requests
-- for jobs classified public or internal are approved by the server at once;
-- confidential and secret ones wait for an admin other than the requester
-- (four eyes). An approval issues a one-time download link: only the SHA-256
-- of its token is kept (link_hash), like API tokens. Rows are never deleted:
-- together with the audit trail they prove who took what out.
CREATE TABLE export_requests (
    id              bigserial PRIMARY KEY,
    job_id          bigint NOT NULL REFERENCES jobs(id),
    -- Relative to the job's output directory; checked again at download.
    path            text NOT NULL CHECK (length(path) BETWEEN 1 AND 4096),
    reason          text NOT NULL DEFAULT '',
    -- 'expired' is written when an expired link is used; readers treat an
    -- approved row whose link_expires_at has passed as expired too.
    state           text NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'approved', 'denied', 'downloaded', 'expired')),
    -- The job's classification when the request was made.
    classification  text NOT NULL
        CHECK (classification IN ('public', 'internal', 'confidential', 'secret')),
    requested_by    bigint NOT NULL REFERENCES users(id),
    -- NULL with decided_at set: approved by the server (public/internal job).
    decided_by      bigint REFERENCES users(id),
    decided_at      timestamptz,
    note            text NOT NULL DEFAULT '',
    link_hash       text UNIQUE,
    link_expires_at timestamptz,
    downloaded_at   timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CHECK (state = 'pending' OR decided_at IS NOT NULL),
    CHECK (state NOT IN ('approved', 'downloaded', 'expired')
           OR (link_hash IS NOT NULL AND link_expires_at IS NOT NULL)),
    -- Four eyes: nobody decides on their own request.
    CHECK (decided_by IS NULL OR decided_by <> requested_by OR state = 'denied')
);
CREATE INDEX export_requests_requester ON export_requests(requested_by, id);
CREATE INDEX export_requests_state ON export_requests(state, id);
CREATE INDEX export_requests_job ON export_requests(job_id);
