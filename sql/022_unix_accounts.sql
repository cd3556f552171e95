-- 022_unix_accounts: the Unix account a site maps a user or a team to, so
-- that the ranks of their jobs run as it on the nodes and the files they
-- write on shared storage belong to who ran the job (docs/operations.md,
-- "Identities"). A job runs as its user's account, else its team's, else
-- the node's default (--job-user); each node accepts only the accounts its
-- own --job-users allows, never trusting this column blindly.
-- Forward-only: never edit after merge.

-- NULL: not mapped. The same rule the worker applies (worker/ident.h).
ALTER TABLE users ADD COLUMN unix_account text
    CHECK (unix_account ~ '^[a-z_][a-z0-9_-]{0,31}$');
ALTER TABLE teams ADD COLUMN unix_account text
    CHECK (unix_account ~ '^[a-z_][a-z0-9_-]{0,31}$');
