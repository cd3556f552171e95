-- 005_audit_signing: signed checkpoints of the audit chain, and retention.
-- Forward-only: never edit after merge. See docs/audit-export.md.

-- A checkpoint vouches, with the server's Ed25519 signature, that event seq
-- had hash `hash`. `signed` is the whole signed object exactly as the server
-- made it ({"type":"trainyard.audit.checkpoint",...,"signature":"..."});
-- the other columns repeat its members for queries.
--   periodic:  made by the leader every audit_checkpoint_interval_s when the
--              chain head moved (seq 0 with the genesis hash for an empty chain)
--   retention: made in the transaction that removes events 1..seq; the chain
--              that remains starts from its hash
CREATE TABLE audit_checkpoints (
    id          bigserial PRIMARY KEY,
    seq         bigint NOT NULL CHECK (seq >= 0),
    hash        text NOT NULL,
    created_at  text NOT NULL,          -- as signed: "2026-11-29T21:00:00.000000Z"
    kind        text NOT NULL CHECK (kind IN ('periodic', 'retention')),
    key_id      text NOT NULL,
    signature   text NOT NULL,
    signed      text NOT NULL,
    inserted_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_checkpoints_seq ON audit_checkpoints(seq);
CREATE INDEX audit_checkpoints_kind_seq ON audit_checkpoints(kind, seq);

-- Append-only like audit_events, whichever role asks.
CREATE FUNCTION audit_checkpoints_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_checkpoints is append-only'
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER audit_checkpoints_no_update BEFORE UPDATE OR DELETE ON audit_checkpoints
    FOR EACH ROW EXECUTE FUNCTION audit_checkpoints_guard();
CREATE TRIGGER audit_checkpoints_no_truncate BEFORE TRUNCATE ON audit_checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION audit_checkpoints_guard();

-- audit_events stays append-only with one exception: retention may DELETE
-- the events up to a signed retention checkpoint. The transaction says how
-- far it removes with SET LOCAL trainyard.retention_through = '<seq>' (the
-- server uses set_config(..., true)), and a kind 'retention' checkpoint
-- covering the row must exist (the server inserts it in the same
-- transaction). UPDATE and TRUNCATE are refused for everyone.
CREATE OR REPLACE FUNCTION audit_events_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    through text;
BEGIN
    IF TG_OP = 'DELETE' AND TG_LEVEL = 'ROW' THEN
        through := current_setting('trainyard.retention_through', true);
        IF through IS NOT NULL AND through ~ '^[0-9]{1,18}$'
           AND OLD.id <= through::bigint
           AND EXISTS (SELECT 1 FROM audit_checkpoints
                       WHERE kind = 'retention' AND seq >= OLD.id) THEN
            RETURN OLD;
        END IF;
    END IF;
    RAISE EXCEPTION 'audit_events is append-only'
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
