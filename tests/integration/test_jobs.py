"""The jobs API: validation, visibility, listing, cancel, and placement by
the scheduler thread on nodes registered in the database."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Client, ServerTest  # noqa: E402


class JobsTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        st, cls.team_a, _ = cls.admin.post("/api/v1/teams", {"name": "alpha", "gpu_quota": 4})
        st, cls.team_b, _ = cls.admin.post("/api/v1/teams", {"name": "beta", "gpu_quota": 4})

    def setUp(self):
        if not hasattr(JobsTest, "alice"):
            _, JobsTest.alice = self.make_user("alice", teams=[self.team_a])
            _, JobsTest.bob = self.make_user("bob", teams=[self.team_b])

    def test_submit_returns_job(self):
        st, job, _ = self.alice.post("/api/v1/jobs", self.job_spec(
            "alpha", name="resnet", command=["python3", "train.py", "--epochs", "3"],
            resources={"gpus": 2}, priority="high", env={"LR": "0.1"}, max_restarts=2))
        self.assertEqual(st, 201, job)
        self.assertEqual(job["state"], "QUEUED")
        self.assertTrue(job["id"].isdigit())
        self.assertEqual(job["spec"]["env"], {"LR": "0.1"})
        self.assertEqual(job["spec"]["launcher"], "native")
        self.assertEqual(job["priority"], "high")
        st, ev, _ = self.alice.get("/api/v1/jobs/%s/events" % job["id"])
        self.assertEqual(st, 200)
        self.assertEqual(ev["events"][0]["to_state"], "QUEUED")
        rows = self.db.sql("SELECT action FROM audit_events WHERE target = 'job:%s'" % job["id"])
        self.assertIn(["job.submit"], rows)

    def test_validation_names_the_field(self):
        cases = [
            ({"resources": {"gpus": 0}}, "resources.gpus"),
            ({"resources": {"gpus": 2000}}, "resources.gpus"),
            ({"resources": {"gpus": 3, "gpus_per_node": 2}}, "resources.gpus"),
            ({"resources": {"gpus": 1, "cpus": 4}}, "resources.cpus"),
            ({"command": []}, "command"),
            ({"command": "python3 x.py"}, "command"),
            ({"launcher": "mpirun"}, "launcher"),
            ({"priority": "urgent"}, "priority"),
            ({"max_restarts": -1}, "max_restarts"),
            ({"time_limit_s": 0}, "time_limit_s"),
            ({"env": {"RANK": "3"}}, "env.RANK"),
            ({"env": {"HTTP_PROXY": "http://x"}}, "env.HTTP_PROXY"),
            ({"env": {"A": 1}}, "env.A"),
            ({"colour": "red"}, "colour"),
        ]
        before = self.db.sql("SELECT count(*) FROM jobs")[0][0]
        for over, field in cases:
            resp = self.alice.post("/api/v1/jobs", self.job_spec("alpha", **over))
            self.assert_error(resp, 400, "invalid_argument", field)
        self.assert_error(self.alice.post("/api/v1/jobs", self.job_spec("nosuchteam")), 400, None, "team")
        self.assert_error(self.alice.post("/api/v1/jobs", self.job_spec("beta")), 403, None, "team")
        self.assertEqual(self.db.sql("SELECT count(*) FROM jobs")[0][0], before)

    def test_visibility_and_listing(self):
        ids = []
        for i in range(5):
            st, job, _ = self.alice.post("/api/v1/jobs", self.job_spec("alpha", name="a%d" % i))
            self.assertEqual(st, 201, job)
            ids.append(job["id"])
        st, bjob, _ = self.bob.post("/api/v1/jobs", self.job_spec("beta", name="b0"))
        self.assertEqual(st, 201, bjob)
        # Bob cannot see or cancel Alice's jobs; the answer does not reveal them.
        self.assert_error(self.bob.get("/api/v1/jobs/" + ids[0]), 404, "not_found")
        self.assert_error(self.bob.post("/api/v1/jobs/%s/cancel" % ids[0]), 404)
        st, lst, _ = self.bob.get("/api/v1/jobs?limit=500")
        self.assertNotIn(ids[0], [j["id"] for j in lst["jobs"]])
        self.assertIn(bjob["id"], [j["id"] for j in lst["jobs"]])
        # Pages follow the cursor without gaps or repeats, newest first.
        seen, cursor = [], None
        while True:
            q = "/api/v1/jobs?team=alpha&limit=2" + ("&cursor=" + cursor if cursor else "")
            st, page, _ = self.alice.get(q)
            self.assertEqual(st, 200, page)
            seen += [j["id"] for j in page["jobs"]]
            cursor = page["next_cursor"]
            if not cursor:
                break
        self.assertEqual(seen, sorted(seen, key=int, reverse=True))
        self.assertEqual(len(seen), len(set(seen)))
        for i in ids:
            self.assertIn(i, seen)
        st, page, _ = self.admin.get("/api/v1/jobs?user=bob")
        self.assertEqual({j["user"] for j in page["jobs"]}, {"bob"})
        st, page, _ = self.admin.get("/api/v1/jobs?state=QUEUED&team=beta")
        self.assertTrue(all(j["team"] == "beta" for j in page["jobs"]))

    def test_cancel(self):
        st, job, _ = self.alice.post("/api/v1/jobs", self.job_spec("alpha", name="c1",
                                                                   resources={"gpus": 512}))
        st, body, _ = self.alice.post("/api/v1/jobs/%s/cancel" % job["id"])
        self.assertEqual(st, 202, body)
        self.assertEqual(body["state"], "CANCELLED")
        self.assert_error(self.alice.post("/api/v1/jobs/%s/cancel" % job["id"]), 409, "conflict")
        st, ev, _ = self.alice.get("/api/v1/jobs/%s/events" % job["id"])
        self.assertEqual([e["to_state"] for e in ev["events"]], ["QUEUED", "CANCELLED"])
        actions = [r[0] for r in self.db.sql(
            "SELECT action FROM audit_events WHERE target = 'job:%s' ORDER BY id" % job["id"])]
        self.assertEqual(actions, ["job.submit", "job.cancel", "job.state"])

    def test_scheduler_places_jobs_on_ready_nodes(self):
        # Two nodes of 4 GPUs on one switch, registered as a worker would.
        for n in ("node-a", "node-b"):
            self.db.sql("INSERT INTO nodes (name, addr, state, credential_hash, labels) VALUES "
                        "('%s', '127.0.0.1', 'ready', 'h-%s', '{\"switch\":\"s1\"}')" % (n, n))
            self.db.sql("INSERT INTO gpus (node_id, idx, uuid, model, memory_mb) SELECT id, g, "
                        "'GPU-' || name || g, 'FAKE', 16384 FROM nodes, generate_series(0,3) g "
                        "WHERE name = '%s'" % n)
        # Proof that a scheduler pass ran: a node of its own site, which no job
        # of the default site may use, and a team within its quota there.
        st, _, _ = self.admin.post("/api/v1/sites", {"name": "barrier",
                                                     "storage_roots": ["/srv/barrier"]})
        self.assertEqual(st, 201)
        self.db.sql("INSERT INTO nodes (name, addr, state, credential_hash, site_id) SELECT "
                    "'node-barrier', '127.0.0.1', 'ready', 'h-barrier', id FROM sites WHERE "
                    "name = 'barrier'")
        self.db.sql("INSERT INTO gpus (node_id, idx, uuid, model, memory_mb) SELECT id, g, "
                    "'GPU-barrier' || g, 'FAKE', 16384 FROM nodes, generate_series(0,1) g "
                    "WHERE name = 'node-barrier'")
        self.make_team("gamma", quota=2)
        barriers = []

        def scheduler_pass():
            barriers.append(self.wait_scheduler_pass(self.job_spec(
                "gamma", name="barrier", site="barrier"))["id"])
        # Beta has no quota for now, so alpha may borrow the whole cluster.
        self.admin.request("PATCH", "/api/v1/teams/" + self.team_b["id"], body={"gpu_quota": 0})
        st, big, _ = self.alice.post("/api/v1/jobs", self.job_spec("alpha", name="gang8",
                                                                   resources={"gpus": 8, "gpus_per_node": 4}))
        self.assertEqual(st, 201, big)
        job = self.wait_state(big["id"], "PLACED")
        allocs = job["allocations"]
        self.assertEqual(len(allocs), 2)
        self.assertEqual(sorted(a["node"] for a in allocs), ["node-a", "node-b"])
        self.assertEqual([len(a["gpu_indices"]) for a in allocs], [4, 4])
        self.assertEqual([a["rank_start"] for a in allocs], [0, 4])
        # The cluster is full: a 1-GPU job waits.
        st, small, _ = self.bob.post("/api/v1/jobs", self.job_spec("beta", name="small"))
        scheduler_pass()
        st, j2, _ = self.bob.get("/api/v1/jobs/" + small["id"])
        self.assertEqual(j2["state"], "QUEUED")
        # Beta gets its quota back: alpha's borrowed gang is preempted.
        self.admin.request("PATCH", "/api/v1/teams/" + self.team_b["id"], body={"gpu_quota": 4})
        self.wait_state(small["id"], "PLACED", client=self.bob)
        gang = self.wait_state(big["id"], "RESTARTING")
        self.assertIn("preempted for job %s" % small["id"], gang["reason"])
        self.assertEqual(gang["allocations"], [])
        # Cancelling the waiting gang ends it.
        st, b, _ = self.alice.post("/api/v1/jobs/%s/cancel" % big["id"])
        self.assertEqual((st, b["state"]), (202, "CANCELLED"))
        booked = self.db.sql("SELECT count(*) FROM allocations WHERE released_at IS NULL AND "
                             "job_id NOT IN (%s)" % ",".join(barriers))[0][0]
        self.assertEqual(booked, "1")
        # A draining node takes no new work.
        self.db.sql("UPDATE nodes SET state = 'draining' WHERE name <> 'node-barrier'")
        st, third, _ = self.bob.post("/api/v1/jobs", self.job_spec("beta", name="third"))
        scheduler_pass()
        self.assertEqual(self.bob.get("/api/v1/jobs/" + third["id"])[1]["state"], "QUEUED")
        self.db.sql("UPDATE nodes SET state = 'ready'")
        self.wait_state(third["id"], "PLACED", client=self.bob)
        placed = self.db.sql("SELECT count(*) FROM audit_events WHERE action = 'job.state' AND "
                             "details LIKE '%%\"to\":\"PLACED\"%%' AND target NOT IN (%s)"
                             % ",".join("'job:%s'" % b for b in barriers))[0][0]
        self.assertEqual(placed, "3")
        self.assertEqual(self.admin.get("/api/v1/audit/verify")[1]["valid"], True)
        self.db.sql("UPDATE allocations SET released_at = now()")
        self.db.sql("UPDATE jobs SET state = 'CANCELLED' WHERE state <> 'CANCELLED'")

    def wait_state(self, job_id, state, client=None, timeout=15):
        client = client or self.alice
        deadline = time.time() + timeout
        while time.time() < deadline:
            st, job, _ = client.get("/api/v1/jobs/" + job_id)
            if job["state"] == state:
                return job
            time.sleep(0.1)
        self.fail("job %s did not reach %s: %s" % (job_id, state, json.dumps(job)))


if __name__ == "__main__":
    harness.main()
