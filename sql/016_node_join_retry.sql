-- 016_node_join_retry: a node whose join answer was lost may join again
-- with the same (now used-up) token. The worker retries a join that got no
-- answer; the server had committed it, so the retry found the token used up
-- and the node could never join. Such a retry is taken when the token is
-- the one this node joined with, it has not expired, and the node has never
-- registered with the credential it got (nobody holds it): the node gets a
-- new credential, and no use of the token is spent (server/api_agent.c).
-- Forward-only: never edit after merge.

-- The token the node last joined with; NULL for nodes joined before 016.
ALTER TABLE nodes ADD COLUMN join_token_id bigint REFERENCES join_tokens(id) ON DELETE SET NULL;
-- Whether the node has registered with its current credential. True for
-- nodes joined before 016, so that none of them may be joined again so.
ALTER TABLE nodes ADD COLUMN credential_used boolean NOT NULL DEFAULT true;
