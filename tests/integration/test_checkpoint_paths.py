"""The server vets the checkpoint paths a node reports.

A node that speaks the worker protocol with its own credential (as a
compromised or buggy node would) reports checkpoints of its attempt:

- paths outside the job's checkpoint directory are refused: /etc/shadow,
  "<checkpoint dir>/../../etc/x", a path in the site's storage roots but
  outside the checkpoint directory, another job's checkpoint directory, and
  a ".." that stays inside; each refusal is a policy.violation audit event
  (actor the node, stage "checkpoint", the path) and a webhook
- the rest of the same batch (logs, metrics, a good checkpoint, stored with
  its path normalized) is kept; the answer names the refused entries
- GET /jobs/{id}/checkpoints lists only the good ones, and the next attempt
  resumes from the last good checkpoint although the refused ones had
  higher steps
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest, wait_for  # noqa: E402


class CheckpointPathsTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="ty-ckpt-")
        cls.server_args = ("--storage-root", cls.root, "--sched-interval-ms", "200",
                           "--node-timeout-s", "120")
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "ml"})
        assert st == 201, cls.team

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.root, ignore_errors=True)

    def join_node(self, name):
        return harness.join_fake_node(self.server.url, self.admin, name)

    def take_assignment(self, node, job_id):
        def poll():
            st, body, _ = node.get("/api/v1/agent/assignments?wait=2")
            self.assertEqual(st, 200, body)
            mine = [a for a in body["assignments"] if a["job_id"] == job_id]
            return mine[0] if mine else None
        return wait_for(poll, timeout=60, what="an assignment of job %s" % job_id)

    def violations(self, job_id):
        return [(r[0], json.loads(r[1])) for r in self.db.sql(
            "SELECT actor, details FROM audit_events WHERE action = 'policy.violation' AND "
            "target = 'job:%s' ORDER BY id" % job_id)]

    def test_checkpoint_paths(self):
        node = self.join_node("ghost")
        # the team's hook (never reached: deliveries stay queued and are counted)
        st, hook, _ = self.admin.post("/api/v1/webhooks", {
            "team": "ml", "url": "http://127.0.0.1:9/h", "events": ["policy.violation"]})
        self.assertEqual(st, 201, hook)
        st, job, _ = self.admin.post("/api/v1/jobs", {
            "name": "ck", "team": "ml", "command": ["/bin/true"], "resources": {"gpus": 1},
            "max_restarts": 2})
        self.assertEqual(st, 201, job)
        jid = job["id"]
        a1 = self.take_assignment(node, jid)
        ckdir = a1["checkpoint_dir"]
        self.assertEqual(ckdir, os.path.join(self.root, "jobs", jid, "checkpoints"))
        self.assertEqual(a1["resume_from"], "")
        aid = a1["attempt_id"]
        st, b, _ = node.post("/api/v1/agent/attempts/%s/started" % aid,
                             {"node_rank": 0, "pids": [4242]})
        self.assertEqual(st, 200, b)

        good10 = ckdir + "/step-10.pt"
        st, b, _ = node.post("/api/v1/agent/attempts/%s/output" % aid, {
            "checkpoints": [{"rank": 0, "step": 10, "path": good10}]})
        self.assertEqual((st, b), (200, {"ok": True}))

        hostile = [
            "/etc/shadow",
            ckdir + "/../../etc/x",
            os.path.join(self.root, "jobs", jid, "model.pt"),  # in the site's roots
            os.path.join(self.root, "jobs", "999", "checkpoints", "x.pt"),
            ckdir + "/sub/../step-30.pt",  # stays inside, but no attempt could resume from it
        ]
        batch = {
            "logs": [{"rank": 0, "stream": "stdout", "seq": 1, "ts_ms": 1764400000000,
                      "text": "still logging\n"}],
            "metrics": [{"rank": 0, "step": 20, "ts_ms": 1764400000000,
                         "values": {"loss": 0.5}}],
            "checkpoints": [{"rank": 0, "step": 999 - i, "path": p}
                            for i, p in enumerate(hostile)] +
                           [{"rank": 0, "step": 20, "path": ckdir + "//./step-20.pt"}]}
        st, b, _ = node.post("/api/v1/agent/attempts/%s/output" % aid, batch)
        self.assertEqual(st, 200, b)
        # only the good ones are recorded, the good path normalized
        st, ck, _ = self.admin.get("/api/v1/jobs/%s/checkpoints" % jid)
        self.assertEqual(st, 200, ck)
        self.assertEqual([(c["step"], c["path"]) for c in ck["checkpoints"]],
                         [(20, ckdir + "/step-20.pt"), (10, good10)])
        for p in hostile:
            self.assertEqual(self.db.sql("SELECT count(*) FROM checkpoints WHERE path = '%s'"
                                         % p.replace("'", "''")), [["0"]])
        # the answer names the refused entries
        self.assertTrue(b["ok"])
        refused = b["refused_checkpoints"]
        self.assertEqual([r["index"] for r in refused], list(range(len(hostile))))
        self.assertIn("outside the job's checkpoint directory", refused[0]["reason"])
        self.assertIn('must not contain ".."', refused[1]["reason"])
        self.assertIn("outside the job's checkpoint directory", refused[2]["reason"])

        # the rest of the batch is kept
        st, logs, _ = self.admin.get("/api/v1/jobs/%s/logs" % jid)
        self.assertIn("still logging\n", [l["text"] for l in logs["logs"]])
        st, m, _ = self.admin.get("/api/v1/jobs/%s/metrics" % jid)
        self.assertEqual([p["step"] for p in m["metrics"]], [20])
        # each refusal is in the trail, against the job, by the node
        v = self.violations(jid)
        self.assertEqual(len(v), len(hostile), v)
        for (actor, d), p in zip(v, hostile):
            self.assertEqual(actor, "node:ghost")
            self.assertEqual(d["stage"], "checkpoint")
            self.assertEqual(d["node"], "ghost")
            self.assertEqual(d["attempt"], 1)
            self.assertEqual(d["path"], p)
            self.assertTrue(d["reason"].startswith("checkpoint refused: "), d)
        self.assertEqual(self.db.sql("SELECT count(*) FROM webhook_deliveries WHERE event = "
                                     "'policy.violation'"), [[str(len(hostile))]])
        # the ordinary checkpoint audit covers exactly the recorded ones
        got = self.db.sql("SELECT details FROM audit_events WHERE action = 'job.checkpoint' AND "
                          "target = 'job:%s' ORDER BY id" % jid)
        self.assertEqual([json.loads(r[0])["path"] for r in got],
                         [good10, ckdir + "/step-20.pt"])

        # the attempt fails: the next one resumes from the last good checkpoint
        st, b, _ = node.post("/api/v1/agent/attempts/%s/exit" % aid, {
            "node_rank": 0, "ranks": [{"rank": 0, "exit_code": 1, "signal": 0}],
            "reason": "rank 0 exited with 1"})
        self.assertEqual(st, 200, b)
        a2 = self.take_assignment(node, jid)
        self.assertEqual(a2["attempt"], 2)
        self.assertEqual(a2["resume_from"], ckdir + "/step-20.pt")
        st, b, _ = node.post("/api/v1/agent/attempts/%s/exit" % a2["attempt_id"], {
            "node_rank": 0, "ranks": [{"rank": 0, "exit_code": 0, "signal": 0}], "reason": ""})
        self.assertEqual(st, 200, b)
        st, j, _ = self.admin.get("/api/v1/jobs/" + jid)
        self.assertEqual(j["state"], "SUCCEEDED", j)
        self.assertEqual(self.admin.get("/api/v1/audit/verify")[1]["valid"], True)


if __name__ == "__main__":
    harness.main()
