"""Retention (docs/operations.md, "Retention"): the leader removes expired
sessions, old webhook deliveries and the output lines, metric points and
events of jobs that finished long ago, in small batches, one audit event per
kind and pass; it leaves what is not past its age, pending deliveries and
running or recently finished jobs alone. The job counts by state that
/metrics shows are kept by the jobs' own changes and stay equal to a
count(*), and concurrent scrapes of a stale cache run one query."""
import atexit
import os
import shutil
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import test_audit_export as audit_tests  # noqa: E402
from harness import Client, Server, ServerTest, wait_for  # noqa: E402

TOKEN = "metrics-token-for-retention-0123456789"
BATCH = 10
KEY_DIR = tempfile.mkdtemp(prefix="ty-retention-key-")
atexit.register(shutil.rmtree, KEY_DIR, True)


def job_insert(name, state, finished_days, started=True, team="ret"):
    """SQL inserting a job of team by admin in state, finished
    finished_days ago (None: not finished), returning its id."""
    fin = "NULL" if finished_days is None else "now() - interval '%d days'" % finished_days
    return ("INSERT INTO jobs (name, team_id, user_id, spec, state, priority, gpus, time_limit_s, "
            "max_restarts, started_at, finished_at) SELECT '%s', t.id, u.id, '{}', '%s', 1, 1, "
            "3600, 0, %s, %s FROM teams t, users u WHERE t.name = '%s' AND u.username = 'admin' "
            "RETURNING id" % (name, state, "now() - interval '200 days'" if started else "NULL", fin,
                              team))


def job_rows(jid, n):
    """SQL adding n output lines, n metric points and n events to job jid."""
    return ("INSERT INTO job_logs (job_id, attempt, rank, stream, seq, ts, text) "
            "SELECT %s, 1, 0, 'stdout', g, now() - interval '200 days', 'line ' || g "
            "FROM generate_series(1, %d) g; "
            "INSERT INTO metrics (job_id, attempt, rank, step, ts, vals) "
            "SELECT %s, 1, 0, g, now() - interval '200 days', '{\"loss\": 1}' "
            "FROM generate_series(1, %d) g; "
            "INSERT INTO job_events (job_id, ts, from_state, to_state) "
            "SELECT %s, now() - interval '200 days', 'QUEUED', 'RUNNING' "
            "FROM generate_series(1, %d) g; " % (jid, n, jid, n, jid, n))


class RetentionTest(ServerTest):
    server_args = ("--retention-interval-s", "1", "--retention-batch-rows", str(BATCH),
                   "--retain-job-logs-days", "90", "--retain-job-metrics-days", "90",
                   "--retain-job-events-days", "90", "--retain-sessions-days", "1",
                   "--retain-webhook-deliveries-days", "30")

    def count(self, sql):
        return int(self.db.sql(sql)[0][0])

    def retention_events(self):
        rows = self.db.sql("SELECT details::jsonb->>'kind', (details::jsonb->>'count')::bigint, "
                           "actor, target FROM audit_events WHERE action = 'retention.delete' ORDER BY id")
        return [(k, int(n), a, t) for k, n, a, t in rows]

    def test_removes_what_is_past_its_age_and_audits_each_pass(self):
        self.make_team("ret")
        # Finished (finished_at set) only in the fixture's transaction below.
        old = [self.db.sql(job_insert("old-%d" % i, st, None))[0][0]
               for i, st in enumerate(("SUCCEEDED", "FAILED", "CANCELLED"))]
        recent = self.db.sql(job_insert("recent", "SUCCEEDED", None))[0][0]
        running = self.db.sql(job_insert("running", "RUNNING", None))[0][0]
        queued = self.db.sql(job_insert("queued", "QUEUED", None, started=False))[0][0]
        # One transaction: a pass sees all of the fixture or none of it.
        sql = ["BEGIN;",
               "UPDATE jobs SET finished_at = now() - interval '100 days' WHERE id IN (%s);"
               % ",".join(old),
               "UPDATE jobs SET finished_at = now() - interval '10 days' WHERE id = %s;" % recent]
        # 25 rows of each kind on the first old job: more than two batches.
        for jid, n in ((old[0], 25), (old[1], 3), (old[2], 2), (recent, 4), (running, 5),
                       (queued, 1)):
            sql.append(job_rows(jid, n))
        sql.append(
            "INSERT INTO sessions (token_hash, user_id, csrf_token, expires_at) "
            "SELECT 'old-' || g, u.id, 'c', now() - interval '2 days' FROM users u, "
            "generate_series(1, 12) g WHERE u.username = 'admin'; "
            "INSERT INTO sessions (token_hash, user_id, csrf_token, expires_at) "
            "SELECT 'young-' || g, u.id, 'c', now() - interval '1 hour' FROM users u, "
            "generate_series(1, 2) g WHERE u.username = 'admin'; "
            "INSERT INTO webhooks (team_id, url, format, secret, events) "
            "SELECT id, 'http://127.0.0.1:9/never', 'generic', 's', '{job.succeeded}' "
            "FROM teams WHERE name = 'ret'; "
            "INSERT INTO webhook_deliveries (webhook_id, event, payload, status, next_at, "
            "created_at) SELECT w.id, 'job.succeeded', '{}', s, now() + interval '1 year', "
            "now() - make_interval(days => d) FROM webhooks w, (VALUES ('delivered', 31), "
            "('failed', 31), ('failed', 40), ('pending', 31), ('delivered', 29)) v(s, d);")
        sql.append("COMMIT;")
        sessions_before = self.count("SELECT count(*) FROM sessions")
        self.db.sql("\n".join(sql))

        def done():
            got = {k for k, _, _, _ in self.retention_events()}
            return got >= {"sessions", "webhook_deliveries", "job_logs", "job_metrics",
                           "job_events"}
        wait_for(done, timeout=60, what="a retention pass of every kind")

        ids = ",".join(old)
        for table in ("job_logs", "metrics", "job_events"):
            self.assertEqual(self.count("SELECT count(*) FROM %s WHERE job_id IN (%s)"
                                        % (table, ids)), 0, table)
            for jid, n in ((recent, 4), (running, 5), (queued, 1)):
                self.assertEqual(self.count("SELECT count(*) FROM %s WHERE job_id = %s"
                                            % (table, jid)), n, (table, jid))
        # The jobs themselves stay.
        self.assertEqual(self.count("SELECT count(*) FROM jobs WHERE id IN (%s)" % ids), 3)
        self.assertEqual(self.count("SELECT count(*) FROM sessions WHERE token_hash LIKE 'old-%'"),
                         0)
        # The two young ones stay, and every session that had not expired.
        self.assertEqual(self.count("SELECT count(*) FROM sessions"), sessions_before + 2)
        left = sorted(tuple(r) for r in self.db.sql(
            "SELECT status, extract(day FROM now() - created_at)::int FROM webhook_deliveries"))
        self.assertEqual(left, [("delivered", "29"), ("pending", "31")])
        # The signed-in admin's own session still works.
        self.assertEqual(self.admin.get("/api/v1/me")[0], 200)

        # One event per kind, with the counts, by the system, no target.
        events = self.retention_events()
        self.assertEqual(sorted((k, n) for k, n, _, _ in events),
                         [("job_events", 30), ("job_logs", 30), ("job_metrics", 30),
                          ("sessions", 12), ("webhook_deliveries", 3)], events)
        self.assertTrue(all(a == "system" and t == "" for _, _, a, t in events), events)
        batches = self.db.sql("SELECT (details::jsonb->>'batches')::int FROM audit_events WHERE "
                              "action = 'retention.delete' AND details::jsonb->>'kind' = 'job_logs'")
        self.assertGreaterEqual(int(batches[0][0]), 3)  # 30 rows at 10 a batch
        self.assertEqual(self.db.sql("SELECT sum(pending) FROM retention_progress")[0][0], "0")
        # The chain with the passes' events still verifies.
        st, body, _ = self.admin.get("/api/v1/audit/verify")
        self.assertEqual(st, 200, body)
        self.assertTrue(body["valid"], body)


class StateCountsTest(ServerTest):
    server_args = ("--retention-interval-s", "1", "--metrics-token", TOKEN,
                   "--metrics-cache-ms", "0", "--sched-interval-ms", "60000")

    def counts(self):
        """(counters, count(*)) by state, both without zero states."""
        kept = {s: int(n) for s, n in self.db.sql(
            "SELECT state, sum(n) FROM job_state_counts GROUP BY state HAVING sum(n) <> 0")}
        real = {s: int(n) for s, n in self.db.sql(
            "SELECT state, count(*) FROM jobs GROUP BY state")}
        return kept, real

    def test_counts_stay_exact(self):
        team = self.make_team("cnt")
        spec = self.job_spec("cnt")
        ids, lock = [], threading.Lock()

        def submit(k):
            for _ in range(k):
                st, body, _ = self.admin.post("/api/v1/jobs", spec)
                self.assertEqual(st, 201, body)
                with lock:
                    ids.append(body["id"])
        threads = [threading.Thread(target=submit, args=(15,)) for _ in range(4)]
        for t in threads:
            t.start()
        # Meanwhile: bulk inserts and state changes straight in SQL, while the
        # leader folds the rows every second.
        for i in range(5):
            self.db.sql(job_insert("bulk", "QUEUED", None, started=False, team="cnt").replace(
                "RETURNING id", "") + "; " + job_insert("bulk", "RUNNING", None, team="cnt"))
        for t in threads:
            t.join()
        # Starts, finishes and cancels.
        self.db.sql("UPDATE jobs SET state = 'RUNNING' WHERE id IN (%s)" % ",".join(ids[:20]))
        self.db.sql("UPDATE jobs SET state = 'SUCCEEDED', finished_at = now() WHERE id IN (%s)"
                    % ",".join(ids[:10]))
        self.db.sql("UPDATE jobs SET state = 'FAILED', finished_at = now() WHERE id IN (%s)"
                    % ",".join(ids[10:13]))
        for jid in ids[20:30]:
            st, body, _ = self.admin.post("/api/v1/jobs/%s/cancel" % jid)
            self.assertIn(st, (200, 202), body)
        self.db.sql("UPDATE jobs SET priority = 2 WHERE id IN (%s)" % ",".join(ids[30:35]))
        # Deletions: jobs removed with all that belongs to them.
        self.db.sql("DELETE FROM jobs WHERE id IN (%s)" % ",".join(ids[5:8] + ids[25:27]))
        kept, real = self.counts()
        self.assertEqual(kept, real)
        self.assertEqual(sum(real.values()), 60 + 10 - 5)
        # A fold happened meanwhile or happens now: the sums are unchanged by it.
        rows = self.count_rows()
        wait_for(lambda: self.count_rows() <= len(real), timeout=30, what="a fold")
        self.assertLessEqual(self.count_rows(), rows)
        kept, real = self.counts()
        self.assertEqual(kept, real)
        # /metrics shows the same numbers.
        st, text, _ = Client(self.server.url, token=TOKEN).get("/metrics")
        self.assertEqual(st, 200, text)
        for state, n in real.items():
            self.assertIn('trainyard_jobs{state="%s"} %d' % (state, n), text)
        del team

    def count_rows(self):
        return int(self.db.sql("SELECT count(*) FROM job_state_counts")[0][0])


class SingleFlightScrapeTest(ServerTest):
    # A long cache: every scrape of the wave is answered from one read.
    server_args = ("--metrics-token", TOKEN, "--metrics-cache-ms", "600000")

    def test_concurrent_scrapes_of_a_stale_cache_run_one_query(self):
        n = 24
        barrier = threading.Barrier(n)
        seen, lock = [], threading.Lock()

        def scrape():
            c = Client(self.server.url, token=TOKEN)
            barrier.wait()
            st, text, _ = c.get("/metrics")
            self.assertEqual(st, 200, text)
            reads = [line for line in text.splitlines()
                     if line.startswith("trainyard_metrics_state_reads_total ")]
            with lock:
                seen.append(float(reads[0].split()[1]) if reads else None)
        threads = [threading.Thread(target=scrape) for _ in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len(seen), n)
        # The cache was empty: the first scrape read, every other one waited
        # for that read or found it cached.
        self.assertEqual(set(seen), {1.0}, seen)


class AuditRetentionTest(audit_tests.AuditCase):
    """The audit trail's own retention: off unless the server's configuration
    sets audit_retention_days, which must then be at least 180; when on, the
    keeper removes whole events up to a signed retention checkpoint, and an
    export from there verifies with the offline verifier."""

    def restart(self, *args):
        """The class's server again, with args and the same signing key; the
        admin signs in to it."""
        key = os.path.join(KEY_DIR, "audit-signing.pem")
        if not os.path.exists(key):
            shutil.copy2(os.path.join(self.server.dir, "audit-signing.pem"), key)
        self.server.stop()
        type(self).server = Server(self.db, args=("--audit-key-path", key) + args, admin=False)
        type(self).admin = Client(self.server.url)
        st, body = self.admin.login("admin", harness.ADMIN_PASSWORD)
        self.assertEqual(st, 200, body)

    def test_a_short_retention_is_refused_at_start(self):
        with self.assertRaises(RuntimeError) as ctx:
            Server(self.db, args=("--audit-retention-days", "30"), admin=False)
        self.assertIn("audit_retention_days must be 0 (keep forever) or at least 180",
                      str(ctx.exception))

    def test_off_by_default_then_from_a_signed_checkpoint(self):
        key = self.public_key()
        self.assert_error(self.admin.post("/api/v1/audit/retention"), 409, "conflict")
        self.make_events(40, "ar")
        aged = audit_tests.RetentionTest.age_events(self, 20, 200)
        # A keeper that starts leading runs retention at once: off, it removes nothing.
        self.restart()
        wait_for(lambda: "audit retention is off" in self.server.log_text(), timeout=60,
                 what="the keeper's retention turn")
        self.assertEqual(self.db.sql("SELECT min(id) FROM audit_events")[0][0], "1")
        # On (180 days): the 20 events of 200 days ago go, before a signed checkpoint.
        self.restart("--audit-retention-days", "180")
        wait_for(lambda: self.db.sql("SELECT min(id) FROM audit_events")[0][0] == "21",
                 timeout=60, what="the keeper's retention")
        cp = self.db.sql("SELECT seq, hash FROM audit_checkpoints WHERE kind = 'retention'")
        self.assertEqual(cp, [["20", aged["20"]["hash"]]])
        ev = self.db.sql("SELECT actor, details FROM audit_events WHERE action = 'audit.retention'")
        self.assertEqual(ev[0][0], "system")
        st, v, _ = self.admin.get("/api/v1/audit/verify")
        self.assertTrue(v["valid"], v)
        self.assertEqual(v["from_seq"], 20)
        data = self.export()[0]
        events, m = self.check_export(data, "jsonl", key)
        self.assertEqual((events[0]["id"], m["prev_hash"]), (21, aged["20"]["hash"]))
        self.assertIn(("20", "retention"), {(c["seq"], c["kind"]) for c in m["checkpoints"]})
        rc, out, err = self.run_cli(data, key)
        self.assertEqual(rc, 0, out + err)


if __name__ == "__main__":
    harness.main()
