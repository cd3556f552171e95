-- 012_audit_action_prefix: GET /api/v1/audit/events?action=job. (a prefix)
-- reads the byte range ["job.", "job/") of this index instead of every
-- event (server/db_audit.c audit_list; 395 ms at 1,000,000 events for a
-- prefix nothing matched, bench/RESULTS.md). Forward-only: never edit after
-- merge.
CREATE INDEX audit_events_action_c ON audit_events ((action COLLATE "C"), id);
