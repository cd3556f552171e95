"""Two server replicas on one database: only the leader schedules (advisory
lock); when it stops, the other takes over. No GPU is ever booked twice.
Wake-ups cross replicas (LISTEN/NOTIFY): a worker long-polling the replica
that does not lead gets its placement at once."""
import os
import shutil
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ADMIN_PASSWORD, Client, Database, Server, Worker, wait_for  # noqa: E402

METRICS_TOKEN = "metrics-token-for-replica-tests-0123456789"


def metric(server, name):
    """The value of the unlabelled series name in server's /metrics
    (trainyard_long_polls_parked: the requests it holds parked now;
    trainyard_long_polls_expired_total: those its deadline resumed)."""
    st, body, _ = Client(server.url, token=METRICS_TOKEN).get("/metrics")
    assert st == 200, (st, body)
    text = body if isinstance(body, str) else ""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return int(line.split()[1])
    raise AssertionError("no %s in /metrics" % name)


class ReplicaTest(harness.unittest.TestCase):
    def test_one_leader_and_failover(self):
        db = Database()
        args = ("--sched-interval-ms", "200", "--node-timeout-s", "3600")
        a = Server(db, args=args)
        b = Server(db, args=args, admin=False)
        try:
            admin = Client(a.url)
            self.assertEqual(admin.login("admin", ADMIN_PASSWORD)[0], 200)
            admin.post("/api/v1/teams", {"name": "rep"})
            db.sql("INSERT INTO nodes (name, addr, state, credential_hash) VALUES "
                   "('r1', '127.0.0.1', 'ready', 'x1')")
            db.sql("INSERT INTO gpus (node_id, idx, uuid, model, memory_mb) SELECT id, g, 'G' || g, "
                   "'FAKE', 1 FROM nodes, generate_series(0, 3) g")
            # A job of its own site and node, placed by a pass, proves a pass ran;
            # no job of team rep can use that node.
            self.assertEqual(admin.post("/api/v1/teams", {"name": "bar"})[0], 201)
            self.assertEqual(admin.post("/api/v1/sites", {"name": "bar",
                                                          "storage_roots": ["/srv/bar"]})[0], 201)
            db.sql("INSERT INTO nodes (name, addr, state, credential_hash, site_id) SELECT 'rb', "
                   "'127.0.0.1', 'ready', 'xb', id FROM sites WHERE name = 'bar'")
            db.sql("INSERT INTO gpus (node_id, idx, uuid, model, memory_mb) SELECT id, 0, 'GB', "
                   "'FAKE', 1 FROM nodes WHERE name = 'rb'")

            def rep_placed():
                return db.sql("SELECT count(*) FROM jobs j JOIN teams t ON t.id = j.team_id "
                              "WHERE t.name = 'rep' AND j.state = 'PLACED'")[0][0]
            wait_for(lambda: any("this replica leads scheduling" in s.log_text() for s in (a, b)),
                     timeout=20, what="a leader")
            # (the follower's log is read again below, after the passes that
            # placed the jobs: it must never say it leads)
            leaders = [s for s in (a, b) if "this replica leads scheduling" in s.log_text()]
            self.assertEqual(len(leaders), 1, "exactly one leader")
            leader, follower = leaders[0], (b if leaders[0] is a else a)
            # Submissions through both replicas; 4 GPUs for 6 one-GPU jobs.
            ids = []
            for i in range(6):
                c = Client((a if i % 2 else b).url)
                c.cookie, c.csrf = admin.cookie, admin.csrf
                st, job, _ = c.post("/api/v1/jobs", {"name": "r%d" % i, "team": "rep",
                                                     "command": ["/bin/true"],
                                                     "resources": {"gpus": 1}})
                self.assertEqual(st, 201, job)
                ids.append(job["id"])
            wait_for(lambda: rep_placed() == "4", what="4 placed")
            # Passes after that leave the other two queued.
            st, bar, _ = admin.post("/api/v1/jobs", {"name": "bar", "team": "bar", "site": "bar",
                                                     "command": ["/bin/true"],
                                                     "resources": {"gpus": 1}})
            self.assertEqual(st, 201, bar)
            wait_for(lambda: db.sql("SELECT state FROM jobs WHERE id = %s" % bar["id"])[0][0]
                     == "PLACED", timeout=20, what="a scheduler pass to place the bar job")
            self.assertEqual(rep_placed(), "4")
            booked = db.sql("SELECT node_id, g, count(*) FROM allocations, unnest(gpu_indices) g "
                            "WHERE released_at IS NULL GROUP BY node_id, g HAVING count(*) > 1")
            self.assertEqual(booked, [], "a GPU booked twice")
            self.assertNotIn("this replica leads scheduling", follower.log_text())
            # The leader goes away: the follower takes the lock and schedules.
            leader.stop()
            # Finish exactly the placed jobs, in one transaction: the follower may
            # take the lock at any moment and place the queued ones, which must
            # stay placed.
            placed = [r[0] for r in db.sql("SELECT id FROM jobs WHERE state = 'PLACED' AND "
                                           "id <> %s" % bar["id"])]
            self.assertEqual(len(placed), 4)
            db.sql("BEGIN; UPDATE jobs SET state = 'SUCCEEDED' WHERE id IN (%s); "
                   "UPDATE allocations SET released_at = now() WHERE job_id IN (%s); COMMIT"
                   % (",".join(placed), ",".join(placed)))
            c = Client(follower.url)
            c.cookie, c.csrf = admin.cookie, admin.csrf
            c.post("/api/v1/jobs", {"name": "after", "team": "rep", "command": ["/bin/true"],
                                    "resources": {"gpus": 1}})
            wait_for(lambda: "this replica leads scheduling" in follower.log_text(), timeout=20,
                     what="the follower to lead")
            wait_for(lambda: rep_placed() == "3", timeout=20,
                     what="the queued jobs placed by the new leader")
        finally:
            for s in (a, b):
                if s.proc.poll() is None:
                    s.stop()
            db.close()

    def test_wake_ups_cross_replicas(self):
        """A job submitted on the follower wakes the leader; the leader's
        placement wakes the worker long-polling the follower (its poll waits
        30 s); output and exit shipped to the follower wake a log follower on
        the leader (whose keep-alive is 15 s). Periodic passes are pushed out
        of the test's reach, so only wake-ups can make it pass. The listeners
        lose their connections first and must reconnect."""
        db = Database()
        shared = tempfile.mkdtemp(prefix="ty-rep-")
        os.chmod(shared, 0o755)
        args = ("--sched-interval-ms", "60000", "--storage-root", shared,
                "--metrics-token", METRICS_TOKEN)
        a = Server(db, args=args)
        b = Server(db, args=args, admin=False)
        worker = None
        try:
            wait_for(lambda: any("this replica leads scheduling" in s.log_text() for s in (a, b)),
                     timeout=20, what="a leader")
            leader = a if "this replica leads scheduling" in a.log_text() else b
            follower = b if leader is a else a
            admin = Client(follower.url)
            self.assertEqual(admin.login("admin", ADMIN_PASSWORD)[0], 200)
            self.assertEqual(admin.post("/api/v1/teams", {"name": "wake"})[0], 201)
            st, tok, _ = admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
            self.assertEqual(st, 201, tok)
            worker = Worker(follower.url, tok["token"], "wake-node", gpus=1, allowed_root=shared)
            wait_for(lambda: db.sql("SELECT count(*) FROM nodes n JOIN gpus g ON g.node_id = n.id "
                                    "WHERE n.state = 'ready'")[0][0] == "1",
                     timeout=30, what="the worker to register")
            # Both listeners come back after losing their connections.
            q = ("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND "
                 "application_name = 'trainyard-server-notify'")
            old = wait_for(lambda: (lambda p: p if len(p) == 2 else None)({r[0] for r in db.sql(q)}),
                           timeout=20, what="both listeners")
            db.sql("SELECT pg_terminate_backend(pid) FROM (%s) l" % q)
            wait_for(lambda: (lambda p: len(p) == 2 and not p & old)({r[0] for r in db.sql(q)}),
                     timeout=20, what="both listeners to reconnect")
            # The worker's long-poll (wait=30) is parked on the follower: the
            # placement must wake it, not its deadline.
            wait_for(lambda: metric(follower, "trainyard_long_polls_parked") >= 1, timeout=60,
                     what="the worker's long-poll to park on the follower")
            expired = metric(follower, "trainyard_long_polls_expired_total")
            st, job, _ = admin.post("/api/v1/jobs", {
                "name": "wake", "team": "wake", "resources": {"gpus": 1}, "max_restarts": 0,
                "command": ["/usr/bin/python3", os.path.join(os.path.abspath(harness.SRC),
                                                             "examples", "sleep_rank.py"),
                            "--seconds", "1"]})
            self.assertEqual(st, 201, job)
            got = {}

            def follow():
                c = Client(leader.url)
                c.cookie, c.csrf = admin.cookie, admin.csrf
                got["resp"] = c.get("/api/v1/jobs/%s/logs?follow=1" % job["id"])
            t = threading.Thread(target=follow, daemon=True)
            t.start()

            def state():
                return admin.get("/api/v1/jobs/" + job["id"])[1]["state"]
            try:
                wait_for(lambda: state() in ("RUNNING", "SUCCEEDED"), timeout=120,
                         what="the job to run")
            except AssertionError:
                print(worker.log_tail(30))
                raise
            # Handed out by the wake-up: the parked poll (the follower's only
            # parked request) did not reach its deadline first.
            self.assertEqual(metric(follower, "trainyard_long_polls_expired_total"), expired,
                             "the worker's poll waited for its deadline, not the placement")
            self.assertEqual(wait_for(lambda: (lambda s: s if s in ("SUCCEEDED", "FAILED") else
                                               None)(state()), timeout=20, what="the job to end"),
                             "SUCCEEDED")
            t.join(timeout=30)
            self.assertFalse(t.is_alive(), "the log follower on the leader did not end")
            st, sse, _ = got["resp"]
            self.assertEqual(st, 200)
            self.assertIn("event: log", sse)
            self.assertIn('event: end\ndata: {"state":"SUCCEEDED"}', sse)
            # Woken by the output and the end: a keep-alive comment would mean
            # the follower waited for its 15 s deadline instead.
            self.assertNotIn(": ping", sse, "the log follower waited for its keep-alive")
        finally:
            if worker is not None:
                worker.stop()
            for s in (a, b):
                if s.proc.poll() is None:
                    s.stop()
            db.close()
            shutil.rmtree(shared, ignore_errors=True)


if __name__ == "__main__":
    harness.main()
