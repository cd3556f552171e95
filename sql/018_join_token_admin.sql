-- 018_join_token_admin: join tokens an admin can list, revoke, and bind to
-- one node name (docs/agent-protocol.md, "Join"). A join may no longer take
-- the name of an existing node, which would retire that node's credential:
-- only a token bound to that name (an admin's deliberate, audited act, for a
-- reinstalled node) or the same token's own earlier join that never
-- registered (016) may join under it (server/api/api_agent_join.c).
-- Forward-only: never edit after merge.

-- How many joins the token was made for; NULL for tokens made before 018.
ALTER TABLE join_tokens ADD COLUMN uses integer CHECK (uses >= 0);
-- When an admin revoked it (NULL: not revoked), and who; a revoked token
-- joins nothing.
ALTER TABLE join_tokens ADD COLUMN revoked_at timestamptz;
ALTER TABLE join_tokens ADD COLUMN revoked_by bigint REFERENCES users(id) ON DELETE SET NULL;
-- The one node name this token may join as, and may take over when a node
-- of that name exists (its old credential is retired); NULL: any new name.
ALTER TABLE join_tokens ADD COLUMN node_name text;
