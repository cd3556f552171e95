"""Two server replicas on one database: only the leader schedules (advisory
lock); when it stops, the other takes over. No GPU is ever booked twice."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ADMIN_PASSWORD, Client, Database, Server, wait_for  # noqa: E402


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
            wait_for(lambda: any("this replica leads scheduling" in s.log_text() for s in (a, b)),
                     timeout=20, what="a leader")
            time.sleep(0.5)
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
            wait_for(lambda: db.sql("SELECT count(*) FROM jobs WHERE state = 'PLACED'")[0][0] == "4",
                     what="4 placed")
            time.sleep(1)
            self.assertEqual(db.sql("SELECT count(*) FROM jobs WHERE state = 'PLACED'")[0][0], "4")
            booked = db.sql("SELECT g, count(*) FROM allocations, unnest(gpu_indices) g WHERE "
                            "released_at IS NULL GROUP BY g HAVING count(*) > 1")
            self.assertEqual(booked, [], "a GPU booked twice")
            self.assertNotIn("this replica leads scheduling", follower.log_text())
            # The leader goes away: the follower takes the lock and schedules.
            leader.stop()
            # Finish exactly the placed jobs, in one transaction: the follower may
            # take the lock at any moment and place the queued ones, which must
            # stay placed.
            placed = [r[0] for r in db.sql("SELECT id FROM jobs WHERE state = 'PLACED'")]
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
            wait_for(lambda: db.sql("SELECT count(*) FROM jobs WHERE state = 'PLACED'")[0][0] == "3",
                     timeout=20, what="the queued jobs placed by the new leader")
        finally:
            for s in (a, b):
                if s.proc.poll() is None:
                    s.stop()
            db.close()


if __name__ == "__main__":
    harness.main()
