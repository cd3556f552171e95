-- 007_audit_keys: every audit signing key the server has used, so that
-- checkpoints and exports signed before a key rotation stay verifiable.
-- Forward-only: never edit after merge. See docs/audit-export.md.

-- One row per key. The server inserts its key at start; when that key is
-- new, the key that was current until then gets retired_at in the same
-- transaction (and an audit.key_rotated event is written).
CREATE TABLE audit_keys (
    key_id      text PRIMARY KEY CHECK (key_id ~ '^[0-9a-f]{16}$'),
    public_key  text NOT NULL,          -- base64 of the raw 32-byte Ed25519 key
    created_at  timestamptz NOT NULL DEFAULT now(),
    retired_at  timestamptz
);
-- At most one current key.
CREATE UNIQUE INDEX audit_keys_one_current ON audit_keys ((true)) WHERE retired_at IS NULL;

-- Append-only, except that retired_at may be set once.
CREATE FUNCTION audit_keys_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.retired_at IS NULL AND NEW.retired_at IS NOT NULL
       AND NEW.key_id = OLD.key_id AND NEW.public_key = OLD.public_key
       AND NEW.created_at = OLD.created_at THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit_keys is append-only (retired_at may be set once)'
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER audit_keys_no_update BEFORE UPDATE OR DELETE ON audit_keys
    FOR EACH ROW EXECUTE FUNCTION audit_keys_guard();
CREATE TRIGGER audit_keys_no_truncate BEFORE TRUNCATE ON audit_keys
    FOR EACH STATEMENT EXECUTE FUNCTION audit_keys_guard();
