"""GET /api/v1/overview (the dashboard's overview in one call),
with nodes driven through the agent API so that their GPU samples are
chosen by the test: per-GPU state (free, busy with its job, team and
utilization, draining, down), the queue by team, allocated GPUs idle below
gpu_idle_util_pct for gpu_idle_min_s (here 1 s; the clock restarts when
the GPU gets busy), and the caller's recent jobs."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from harness import Client, ServerTest, wait_for  # noqa: E402


def gpu(i):
    return {"index": i, "uuid": "GPU-ov-%d" % i, "model": "Fake", "memory_mb": 16384}


class OverviewTest(ServerTest):
    server_args = ("--gpu-idle-min-s", "1", "--node-timeout-s", "3", "--sched-interval-ms", "200")

    def join(self, name, ngpus):
        st, tok, _ = self.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        self.assertEqual(st, 201, tok)
        st, joined, _ = Client(self.server.url).post("/api/v1/agent/join",
                                                     {"join_token": tok["token"], "name": name})
        self.assertEqual(st, 201, joined)
        node = Client(self.server.url, token=joined["credential"])
        st, reg, _ = node.post("/api/v1/agent/register",
                               {"gpus": [gpu(i) for i in range(ngpus)], "addr": "127.0.0.1"})
        self.assertEqual(st, 200, reg)
        return node, joined["node_id"]

    def beat(self, node, utils):
        st, body, _ = node.post("/api/v1/agent/heartbeat", {"gpus": [
            {"index": i, "util_pct": u, "mem_used_mb": 100} for i, u in enumerate(utils)]})
        self.assertEqual(st, 200, body)

    def overview(self, client=None):
        st, body, _ = (client or self.admin).get("/api/v1/overview")
        self.assertEqual(st, 200, body)
        return body

    def node_of(self, ov, name):
        return [n for n in ov["nodes"] if n["name"] == name][0]

    def test_overview(self):
        team = self.make_team("ov", quota=8)
        _, member = self.make_user("ov-member", teams=[team])
        a, _ = self.join("ov-a", 2)
        b, b_id = self.join("ov-b", 1)
        self.beat(a, [10, 10])
        self.beat(b, [0])
        st, body, _ = self.admin.post("/api/v1/nodes/%s/drain" % b_id)
        self.assertEqual(st, 200, body)
        ov = self.overview()
        self.assertEqual((ov["idle_util_pct"], ov["idle_min_s"]), (80, 1))
        self.assertEqual([g["state"] for g in self.node_of(ov, "ov-a")["gpus"]], ["free", "free"])
        self.assertEqual(self.node_of(ov, "ov-b")["gpus"][0]["state"], "draining")
        self.assertEqual(ov["idle_allocated"], [])  # free GPUs are never "idle allocated"

        st, job, _ = member.post("/api/v1/jobs", self.job_spec("ov", name="small"))
        self.assertEqual(st, 201, job)
        wait_for(lambda: self.admin.get("/api/v1/jobs/" + job["id"])[1]["state"] != "QUEUED",
                 what="job placed")
        # Three GPUs fit nowhere now: it waits.
        st, big, _ = member.post("/api/v1/jobs", self.job_spec("ov", name="big",
                                                                 resources={"gpus": 3}))
        self.assertEqual(st, 201, big)

        def idle():
            self.beat(a, [10, 10])
            self.beat(b, [0])
            got = self.overview()["idle_allocated"]
            return got or None
        flagged = wait_for(idle, timeout=30, what="the busy GPU flagged idle")
        self.assertEqual(len(flagged), 1, flagged)
        f = flagged[0]
        self.assertEqual((f["node"], f["job_id"], f["team"], f["util_pct"]),
                         ("ov-a", job["id"], "ov", 10), f)
        self.assertGreaterEqual(f["low_for_s"], 1)
        self.assertTrue(f["low_since"].endswith("Z"), f)

        ov = self.overview(member)
        gpus = self.node_of(ov, "ov-a")["gpus"]
        busy = [g for g in gpus if g["state"] == "busy"]
        self.assertEqual(len(busy), 1, gpus)
        self.assertEqual((busy[0]["job_id"], busy[0]["team"], busy[0]["util_pct"]),
                         (job["id"], "ov", 10))
        self.assertEqual([g["state"] for g in gpus if g is not busy[0]], ["free"])
        self.assertEqual(ov["queue_by_team"], [{"team_id": team["id"], "team": "ov", "jobs": 1,
                                                "gpus": 3}])
        self.assertEqual([j["id"] for j in ov["my_recent_jobs"]], [big["id"], job["id"]])
        self.assertEqual(self.overview()["my_recent_jobs"], [])  # the admin's own: none

        # Busy again: the clock stops, the flag goes.
        self.beat(a, [95, 10])
        self.assertEqual(self.overview()["idle_allocated"], [])

        # A node that stops sending heartbeats goes down, and so do its GPUs.
        def b_down():
            self.beat(a, [95, 10])
            return self.node_of(self.overview(), "ov-b")["gpus"][0]["state"] == "down"
        wait_for(b_down, timeout=30, what="ov-b down")

    def test_needs_sign_in(self):
        self.assert_error(Client(self.server.url).get("/api/v1/overview"), 401,
                          "unauthenticated")


if __name__ == "__main__":
    import harness
    harness.main()
