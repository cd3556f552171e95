"""End to end: real PostgreSQL, server, two workers with fake GPUs, and real
PyTorch DDP training (gloo on CPU) submitted through the API.

- a 4-rank job across both workers succeeds with metrics and every rank's logs
- kill -9 of a worker mid-training: the node is declared lost, the job is
  re-placed after the worker comes back and resumes from its checkpoint;
  the audit trail shows the loss and the recovery; a webhook receiver gets
  the notifications, HMAC-signed
- cancel mid-run leaves no process behind
- a failing script ends FAILED after max_restarts with the reason
"""
import hashlib
import hmac
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Client, ServerTest, Worker, wait_for  # noqa: E402

PY = "/usr/bin/python3"
EXAMPLES = os.path.join(os.path.abspath(harness.SRC), "examples")


class Receiver(http.server.BaseHTTPRequestHandler):
    """Collects webhook posts."""
    got = []

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        Receiver.got.append((dict(self.headers), body))
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *a):
        pass


class E2ETest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.shared = tempfile.mkdtemp(prefix="ty-shared-")
        os.chmod(cls.shared, 0o755)
        cls.server_args = ("--storage-root", cls.shared, "--node-timeout-s", "4",
                           "--sched-interval-ms", "200")
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "ml"})
        st, tok, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 10})
        assert st == 201, tok
        cls.join = tok["token"]
        cls.workers = [Worker(cls.server.url, cls.join, "node-%d" % i, gpus=2,
                              allowed_root=cls.shared, labels="rack=r1,switch=s1")
                       for i in range(2)]
        wait_for(lambda: len([n for n in cls.admin.get("/api/v1/nodes")[1]["nodes"]
                              if n["state"] == "ready"]) == 2, what="two ready nodes")
        cls.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=cls.httpd.serve_forever, daemon=True).start()
        cls.hook_url = "http://127.0.0.1:%d/hook" % cls.httpd.server_address[1]
        st, cls.hook, _ = cls.admin.post("/api/v1/webhooks", {"team": "ml", "url": cls.hook_url})
        assert st == 201, cls.hook

    @classmethod
    def tearDownClass(cls):
        try:
            for w in cls.workers:
                w.stop()
            cls.httpd.shutdown()
        finally:
            super().tearDownClass()
            shutil.rmtree(cls.shared, ignore_errors=True)

    def wait_job(self, job_id, states, timeout=120):
        def check():
            st, job, _ = self.admin.get("/api/v1/jobs/" + job_id)
            return job if job["state"] in states else None
        try:
            return wait_for(check, timeout=timeout, what="job %s in %s" % (job_id, states))
        except AssertionError:
            st, job, _ = self.admin.get("/api/v1/jobs/" + job_id)
            st, logs, _ = self.admin.get("/api/v1/jobs/%s/logs?limit=50" % job_id)
            raise AssertionError("job %s is %s (%s); logs: %s\nworkers:\n%s" % (
                job_id, job["state"], job["reason"], json.dumps(logs)[-3000:],
                "\n".join(w.log_tail(15) for w in self.workers)))

    def ddp_spec(self, name, steps, sleep=0.0, every=10, gpus=4, **over):
        spec = {"name": name, "team": "ml", "resources": {"gpus": gpus, "gpus_per_node": 2},
                "command": [PY, os.path.join(EXAMPLES, "ddp_mlp.py"), "--steps", str(steps),
                            "--checkpoint-every", str(every), "--sleep-per-step", str(sleep),
                            "--hidden", "64"],
                "max_restarts": 2, "output_dir": os.path.join(self.shared, "out-" + name)}
        spec.update(over)
        return spec

    def test_1_ddp_across_two_nodes(self):
        st, job, _ = self.admin.post("/api/v1/jobs", self.ddp_spec("across", 40))
        self.assertEqual(st, 201, job)
        done = self.wait_job(job["id"], ("SUCCEEDED", "FAILED"))
        self.assertEqual(done["state"], "SUCCEEDED", done)
        st, m, _ = self.admin.get("/api/v1/jobs/%s/metrics" % job["id"])
        steps = [p["step"] for p in m["metrics"]]
        self.assertEqual(steps, list(range(1, 41)))
        losses = [p["values"]["loss"] for p in m["metrics"]]
        self.assertLess(losses[-1], losses[0])
        for rank in range(4):
            st, logs, _ = self.admin.get("/api/v1/jobs/%s/logs?rank=%d" % (job["id"], rank))
            self.assertTrue(any("rank %d of 4 ready" % rank in l["text"] for l in logs["logs"]),
                            logs)
        st, ev, _ = self.admin.get("/api/v1/jobs/%s/events" % job["id"])
        self.assertEqual([e["to_state"] for e in ev["events"]],
                         ["QUEUED", "PLACED", "STARTING", "RUNNING", "SUCCEEDED"])
        st, ck, _ = self.admin.get("/api/v1/jobs/%s/checkpoints" % job["id"])
        self.assertEqual([c["step"] for c in ck["checkpoints"]], [40, 30, 20, 10])
        # Following a finished job's logs replays them and ends.
        st, sse, hdrs = self.admin.get("/api/v1/jobs/%s/logs?follow=1&rank=0" % job["id"])
        self.assertEqual(st, 200)
        self.assertTrue(hdrs["content-type"].startswith("text/event-stream"))
        self.assertIn("event: log", sse)
        self.assertIn('event: end\ndata: {"state":"SUCCEEDED"}', sse)
        self.assertTrue(wait_for(lambda: any(json.loads(b).get("event") == "job.succeeded" and
                                             json.loads(b)["job"]["id"] == job["id"]
                                             for _, b in Receiver.got), timeout=20,
                                 what="job.succeeded webhook"))

    def test_2_worker_killed_and_job_recovers(self):
        st, job, _ = self.admin.post("/api/v1/jobs", self.ddp_spec("recover", 150, sleep=0.1,
                                                                   every=10))
        self.assertEqual(st, 201, job)
        jid = job["id"]
        self.wait_job(jid, ("RUNNING",))
        wait_for(lambda: self.admin.get("/api/v1/jobs/%s/checkpoints" % jid)[1]["checkpoints"],
                 timeout=60, what="a first checkpoint")
        victim = self.workers[1]
        victim.kill9()
        t_kill = time.time()
        self.wait_job(jid, ("RESTARTING",), timeout=30)
        # The server declares the silent node lost before the worker returns.
        wait_for(lambda: [n for n in self.admin.get("/api/v1/nodes")[1]["nodes"]
                          if n["name"] == "node-1" and n["state"] == "down"],
                 timeout=30, what="node-1 down")
        victim.start()
        self.wait_job(jid, ("RUNNING",), timeout=120)
        done = self.wait_job(jid, ("SUCCEEDED", "FAILED"), timeout=300)
        self.assertEqual(done["state"], "SUCCEEDED", done)
        self.assertGreaterEqual(done["attempt"], 2)
        self.assertEqual(done["restarts"], 0)  # a node loss does not count
        st, m, _ = self.admin.get("/api/v1/jobs/%s/metrics?limit=20000" % jid)
        by_attempt = {}
        for p in m["metrics"]:
            by_attempt.setdefault(p["attempt"], []).append(p["step"])
        last = max(by_attempt)
        # The step counter continues from a checkpoint instead of restarting at 1.
        self.assertGreater(min(by_attempt[last]), 1, by_attempt.keys())
        self.assertEqual(max(by_attempt[last]), 150)
        st, logs, _ = self.admin.get("/api/v1/jobs/%s/logs?attempt=%d&rank=0" % (jid, last))
        self.assertTrue(any("resumed from" in l["text"] for l in logs["logs"]))
        actions = self.db.sql("SELECT action, target, details FROM audit_events WHERE "
                              "(target = 'node:node-1' AND action = 'node.state') OR target = "
                              "'job:%s' ORDER BY id" % jid)
        self.assertTrue(any(a[0] == "node.state" and '"to":"down"' in a[2] for a in actions))
        self.assertTrue(any(a[0] == "job.state" and '"to":"RESTARTING"' in a[2] for a in actions))
        self.assertEqual(self.admin.get("/api/v1/audit/verify")[1]["valid"], True)
        events = [json.loads(b)["event"] for _, b in Receiver.got
                  if json.loads(b)["job"]["id"] == jid]
        wait_for(lambda: {"node.lost", "job.recovered", "job.succeeded"} <=
                 {json.loads(b)["event"] for _, b in Receiver.got if json.loads(b)["job"]["id"] == jid},
                 timeout=30, what="node.lost, job.recovered and job.succeeded webhooks")
        # Every delivery is signed with the webhook's secret.
        for hdrs, body in Receiver.got:
            ts = hdrs["X-Trainyard-Timestamp"]
            want = hmac.new(self.hook["secret"].encode(), ts.encode() + b"." + body,
                            hashlib.sha256).hexdigest()
            self.assertEqual(hdrs["X-Trainyard-Signature"], "sha256=" + want)
        st, dl, _ = self.admin.get("/api/v1/webhooks/%s/deliveries" % self.hook["id"])
        self.assertTrue(all(d["status"] == "delivered" for d in dl["deliveries"]))
        print("recovery: kill to success %.1f s; events %s" % (time.time() - t_kill, events))

    def test_3_cancel_leaves_nothing(self):
        mark = "ty-" + uuid.uuid4().hex
        st, job, _ = self.admin.post("/api/v1/jobs", self.ddp_spec(
            "cancel", 100000, sleep=0.2, env={"TY_TEST_MARK": mark}))
        self.assertEqual(st, 201, job)
        self.wait_job(job["id"], ("RUNNING",))
        wait_for(lambda: len(harness.processes_with_env(mark)) >= 4, what="4 ranks running")
        st, b, _ = self.admin.post("/api/v1/jobs/%s/cancel" % job["id"])
        self.assertEqual(st, 202, b)
        done = self.wait_job(job["id"], ("CANCELLED",), timeout=60)
        self.assertEqual(done["allocations"], [])
        wait_for(lambda: harness.processes_with_env(mark) == [], timeout=20,
                 what="no process left")

    def test_4_failing_script_fails_after_restarts(self):
        spec = {"name": "fails", "team": "ml", "resources": {"gpus": 1},
                "command": [PY, os.path.join(EXAMPLES, "fail.py"), "--code", "3"],
                "max_restarts": 1}
        st, job, _ = self.admin.post("/api/v1/jobs", spec)
        self.assertEqual(st, 201, job)
        done = self.wait_job(job["id"], ("FAILED", "SUCCEEDED"))
        self.assertEqual(done["state"], "FAILED")
        self.assertEqual(done["restarts"], 1)
        self.assertIn("exited with 3", done["reason"])
        self.assertIn("no restarts left", done["reason"])
        st, ev, _ = self.admin.get("/api/v1/jobs/%s/events" % job["id"])
        self.assertEqual([e["to_state"] for e in ev["events"]].count("RESTARTING"), 1)
        wait_for(lambda: any(json.loads(b).get("event") == "job.failed" and
                             json.loads(b)["job"]["id"] == job["id"] for _, b in Receiver.got),
                 timeout=20, what="job.failed webhook")

    def test_5_drain_by_worker_and_by_admin(self):
        def node_state(name):
            return [n for n in self.admin.get("/api/v1/nodes")[1]["nodes"] if n["name"] == name][0]
        w = self.workers[0]
        w.stop()  # SIGTERM: the worker drains, stops its ranks, reports, exits 0
        self.assertEqual(node_state("node-0")["state"], "draining")
        w.start()
        wait_for(lambda: node_state("node-0")["state"] == "ready", timeout=20,
                 what="node-0 ready after its own drain")
        # An admin's drain survives a worker restart; undrain ends it.
        nid = node_state("node-0")["id"]
        st, b, _ = self.admin.post("/api/v1/nodes/%s/drain" % nid)
        self.assertEqual((st, b["state"]), (200, "draining"), b)
        registered = "FROM audit_events WHERE action = 'node.register' AND target = 'node:node-0'"
        before = self.db.sql("SELECT count(*) " + registered)[0][0]
        w.stop()
        w.start()
        # Register and heartbeat both set a node's state: wait for a heartbeat
        # after the new registration, then the admin's drain must still hold.
        wait_for(lambda: self.db.sql("SELECT count(*) " + registered)[0][0] != before,
                 timeout=20, what="node-0 to register again")
        wait_for(lambda: self.db.sql("SELECT last_seen_at > (SELECT max(ts) %s) FROM nodes WHERE "
                                     "name = 'node-0'" % registered)[0][0] == "t",
                 timeout=20, what="a heartbeat of node-0 after it registered")
        self.assertEqual(node_state("node-0")["state"], "draining")
        st, b, _ = self.admin.post("/api/v1/nodes/%s/undrain" % nid)
        self.assertEqual((st, b["state"]), (200, "ready"), b)
        # The admin's drain and undrain are found under the node's name.
        actions = [r[0] for r in self.db.sql("SELECT action FROM audit_events WHERE target = "
                                             "'node:node-0'")]
        self.assertIn("node.drain", actions)
        self.assertIn("node.undrain", actions)


if __name__ == "__main__":
    harness.main()
