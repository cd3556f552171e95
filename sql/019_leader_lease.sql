-- 019_leader_lease: the lease the scheduling leader renews, so that a leader
-- whose process hangs (its host alive, its session and advisory lock kept)
-- is found stale by a follower, which ends that session and leads with a
-- higher epoch; every leader-only write checks its epoch in its own
-- transaction (server/store/db_lease.h, docs/operations.md "High
-- availability"). Forward-only: never edit after merge.

CREATE TABLE leader_lease (
    -- What is led: 'scheduler' (the scheduler passes and the queue forecast).
    name text PRIMARY KEY,
    -- Bumped by each new leader; a leader-only write carries the epoch it
    -- was decided under and is refused when it is no longer this one.
    epoch bigint NOT NULL CHECK (epoch >= 0),
    -- host:pid of the server that holds it, for operators and logs.
    holder text NOT NULL,
    -- The holder's session (pg_backend_pid()), the one that holds the
    -- advisory lock: what a follower ends when the lease is stale.
    backend_pid integer NOT NULL,
    -- Both by the database's clock, never a server's.
    renewed_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);

-- Epoch 0 and pid 0 match no session: nobody leads until one takes it.
INSERT INTO leader_lease (name, epoch, holder, backend_pid, renewed_at, expires_at)
VALUES ('scheduler', 0, '', 0, now(), now());
