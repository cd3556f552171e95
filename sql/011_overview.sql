-- 011_overview: what the dashboard's overview and audit pages need (issue
-- 12). Forward-only: never edit after merge.

-- Each GPU's newest sample from its worker's heartbeat (NVML's utilization
-- and memory in use; with --fake-gpus 100 % while a rank runs, else 0), and
-- since when it has been allocated and below the server's
-- gpu_idle_util_pct without a break: low_util_since, for the allocation of
-- low_util_attempt. Both NULL when the GPU is free or busy enough; a new
-- allocation starts the clock again.
ALTER TABLE gpus ADD COLUMN util_pct integer,
    ADD COLUMN mem_used_mb bigint,
    ADD COLUMN low_util_since timestamptz,
    ADD COLUMN low_util_attempt bigint;

-- GET /api/v1/audit/events pages by id (keyset, newest first); a filter on
-- actor or target walks these instead of the whole table (action has its
-- own since 001, the time range audit_events_ts).
CREATE INDEX audit_events_actor ON audit_events(actor, id);
CREATE INDEX audit_events_target ON audit_events(target, id);
