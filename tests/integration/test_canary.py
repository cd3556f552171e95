"""Canary replicas, promote, rollback and the automatic rollback
(docs/serving.md "Canary") on a real server, PostgreSQL and worker, with
examples/serve_echo.py as the model server.

One ddp-mlp-demo job is trained once; its output is registered through the
registry API twice (versions 1 and 2 of one model), and one deployment of
version 1 takes every step in turn:

- POST .../canary {version 2, weight 10} makes one replica of version 2 in
  the same transaction (audited deployment.canary op "set", its job.submit);
  of 1,000 requests through the gateway, 10 % +- 3 % answer with
  x-trainyard-version of version 2;
- POST .../rollback sets the weight to 0 and cancels the canary's replica:
  no request reaches version 2 afterwards;
- a canary with a bound on its 99th percentile latency that it really
  breaks is rolled back by the server itself (actor system:canary, the
  measured figures in the event, a canary.rolled_back webhook,
  trainyard_canary_rollbacks_total): the echo server batches requests
  (TRAINYARD_SERVE_BATCH_MS, 5 ms by default), so every answer it gives
  takes at least 5 ms, and a bound of 4 ms is one that a real replica of it
  cannot keep;
- POST .../canary/promote makes the canary's version the deployment's: the
  canary's replica is kept as the deployment's, the old one cancelled.

The first canary, the rollback and the promote go through the command
line (trainyard canary, trainyard rollback, trainyard canary promote).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import CLI_BIN, Client, ServerTest, Worker, wait_for  # noqa: E402

METRICS_TOKEN = "metrics-token-for-canary-tests-0123456789"


class CanaryTest(ServerTest):

    @classmethod
    def setUpClass(cls):
        cls.storage = tempfile.mkdtemp(prefix="ty-canary-")
        os.chmod(cls.storage, 0o755)
        src = os.path.abspath(harness.SRC)
        cls.server_args = ("--storage-root", cls.storage,
                           "--templates-dir", os.path.join(src, "templates"),
                           "--examples-dir", os.path.join(src, "examples"),
                           "--sched-interval-ms", "200", "--metrics-token", METRICS_TOKEN,
                           "--metrics-cache-ms", "0")
        super().setUpClass()
        st, tok, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        assert st == 201, tok
        cls.worker = Worker(cls.server.url, tok["token"], "canary-node", gpus=2,
                            allowed_root=cls.storage)

    @classmethod
    def tearDownClass(cls):
        try:
            cls.worker.stop()
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.storage, ignore_errors=True)

    def cli(self, *args):
        """trainyard ARGS --json: (exit status, the answer or stderr)."""
        home = tempfile.mkdtemp(prefix="home-", dir=self.storage)
        env = {k: v for k, v in os.environ.items()
               if k not in ("LC_ALL", "LC_MESSAGES", "TRAINYARD_TOKEN", "XDG_CONFIG_HOME")}
        env.update(LANG="C.UTF-8", HOME=home, TRAINYARD_URL=self.server.url,
                   TRAINYARD_TOKEN=self.cli_token)
        p = subprocess.run([CLI_BIN] + list(args) + ["--json"], capture_output=True, text=True,
                           env=env, timeout=120)
        return p.returncode, json.loads(p.stdout) if p.returncode == 0 else p.stderr

    def job(self, jid):
        return self.admin.get("/api/v1/jobs/" + str(jid))[1]

    def dep(self):
        return self.admin.get("/api/v1/deployments/cn")[1]

    def replicas_of(self, version):
        return [r for r in self.dep()["replicas_detail"] if r["version"] == version]

    def ready(self, version):
        return any(r["ready"] for r in self.replicas_of(version))

    def events(self, action, after):
        rows = self.db.sql("SELECT row_to_json(e) FROM (SELECT id, actor, details::jsonb AS details FROM "
                           "audit_events WHERE action = '%s' AND target = 'deployment:cn' AND "
                           "id > %d ORDER BY id) e" % (action, after))
        return [json.loads(r[0]) for r in rows]

    def last_event_id(self):
        return int(self.db.sql("SELECT coalesce(max(id), 0) FROM audit_events")[0][0])

    def versions_answering(self, key, n, strict=True):
        """The x-trainyard-version of n chat requests through the gateway
        (None for an answer other than 200); strict: each must be 200."""
        c = Client(self.server.url, token=key)
        body = json.dumps({"model": "cn", "messages": [{"role": "user", "content": "hi"}]})
        seen = []
        for _ in range(n):
            st, answer, hdrs = c.request("POST", "/v1/chat/completions", raw=body)
            if strict:
                self.assertEqual(st, 200, answer)
            seen.append(hdrs.get("x-trainyard-version") if st == 200 else None)
        return seen

    def test_canary_rollback_auto_rollback_promote(self):
        self.make_team("ml")
        st, job, _ = self.admin.post("/api/v1/jobs", {
            "name": "tiny", "team": "ml", "template": "ddp-mlp-demo",
            "params": {"steps": 4, "checkpoint_every": 2}, "resources": {"gpus": 1}})
        self.assertEqual(st, 201, job)
        wait_for(lambda: self.job(job["id"])["state"] in ("SUCCEEDED", "FAILED"), timeout=300,
                 what="the training job to end")
        self.assertEqual(self.job(job["id"])["state"], "SUCCEEDED", self.worker.log_tail(30))
        vids = {}
        for n in (1, 2):
            st, v, _ = self.admin.post("/api/v1/models/cn-model/versions",
                                       {"job_id": job["id"], "source": "output"})
            self.assertEqual((st, v.get("version")), (201, n), v)
            vids[n] = v["id"]
        st, d, _ = self.admin.post("/api/v1/deployments", {
            "name": "cn", "model": "cn-model", "version": 1, "replicas": 1,
            "max_replicas": 2})
        self.assertEqual(st, 201, d)
        primary = d["replicas_detail"][0]["job_id"]
        key = self.admin.post("/api/v1/deployments/cn/keys",
                              {"name": "k", "rate_per_min": 1000000})[1]["secret"]

        # Refusals change nothing.
        before = self.last_event_id()
        for body, status, field in (({"version": 1, "weight": 10}, 409, "version"),
                                    ({"version": 9, "weight": 10}, 404, "version"),
                                    ({"version": 2}, 400, "weight"),
                                    ({"version": 2, "weight": 10, "replicas": 3}, 400,
                                     "replicas"),
                                    ({"version": 2, "weight": 10, "bound": {"window_s": 5}},
                                     400, "bound"),
                                    ({"version": 2, "weight": 101}, 400, "weight")):
            st, err, _ = self.admin.post("/api/v1/deployments/cn/canary", body)
            self.assertEqual((st, err["error"]["field"]), (status, field), (body, err))
        for route in ("canary/promote", "rollback"):
            st, err, _ = self.admin.post("/api/v1/deployments/cn/" + route, {})
            self.assertEqual(st, 409, err)
        self.assertEqual(self.events("deployment.canary", before), [])
        self.assertEqual(len(self.dep()["replicas_detail"]), 1)

        self.cli_token = self.admin.post("/api/v1/tokens", {"name": "cli"})[1]["token"]
        st, usage = self.cli("canary", "cn", "2")
        self.assertEqual(st, 2, usage)
        self.assertIn("--weight", usage)

        # A canary of 10 %: one replica of version 2, in the same transaction.
        st, d = self.cli("canary", "cn", "2", "--weight", "10")
        self.assertEqual(st, 0, d)
        self.assertEqual((d["canary_version"], d["canary_weight"], d["canary_replicas"]),
                         (2, 10, 1), d)
        canary = [r["job_id"] for r in d["replicas_detail"] if r["version"] == 2]
        self.assertEqual(len(canary), 1, d)
        ev = self.events("deployment.canary", before)
        self.assertEqual(len(ev), 1, ev)
        self.assertEqual((ev[0]["details"]["op"], ev[0]["details"]["weight"],
                          ev[0]["details"]["replicas_added"]), ("set", 10, [int(canary[0])]), ev)
        self.assertEqual(self.db.sql("SELECT count(*) FROM audit_events WHERE action = "
                                     "'job.submit' AND target = 'job:%s'" % canary[0]), [["1"]])
        wait_for(lambda: self.ready(1) and self.ready(2), timeout=180,
                 what="the primary and the canary replicas ready")
        # The gateway reads the ready replicas every 250 ms: the first answer
        # after both are ready comes from a view that holds both.
        wait_for(lambda: self.versions_answering(key, 1, strict=False) != [None], timeout=30,
                 what="the gateway's view of the ready replicas")
        seen = self.versions_answering(key, 1000)
        share = seen.count(str(vids[2]))
        self.assertEqual(seen.count(str(vids[1])) + share, 1000)
        self.assertTrue(70 <= share <= 130, "canary got %d of 1000" % share)

        # Rollback: weight 0, the canary's replica cancelled, no request reaches it.
        before = self.last_event_id()
        st, d = self.cli("rollback", "cn")
        self.assertEqual(st, 0, d)
        self.assertEqual((d["canary_weight"], d["canary_version"]), (0, 2), d)
        self.assertEqual([r["job_id"] for r in d["replicas_detail"]], [primary], d)
        ev = self.events("deployment.canary", before)
        self.assertEqual((ev[0]["details"]["op"], ev[0]["details"]["replicas_cancelled"]),
                         ("rollback", [int(canary[0])]), ev)
        wait_for(lambda: self.job(canary[0])["state"] == "CANCELLED", timeout=90,
                 what="the canary replica cancelled")
        # The view is read every 250 ms; the cancelled replica was marked
        # retired in the rollback's transaction.
        seen = self.versions_answering(key, 200)
        self.assertEqual(seen.count(str(vids[2])), 0, seen)

        # The automatic rollback: a bound of 4 ms on p99 that the echo
        # server's 5 ms batching window breaks on every answer. The team's
        # webhook that asked for canary.rolled_back is told.
        st, hook, _ = self.admin.post("/api/v1/webhooks", {
            "team": "ml", "url": "http://127.0.0.1:9/h", "events": ["canary.rolled_back"]})
        self.assertEqual(st, 201, hook)
        before = self.last_event_id()
        st, d, _ = self.admin.post("/api/v1/deployments/cn/canary", {
            "version": 2, "weight": 50,
            "bound": {"window_s": 600, "min_requests": 20, "max_p99_ms": 4}})
        self.assertEqual(st, 200, d)
        canary = [r["job_id"] for r in d["replicas_detail"] if r["version"] == 2]
        self.assertEqual(len(canary), 1, d)
        wait_for(lambda: self.ready(2), timeout=180, what="the new canary replica ready")

        def rolled_back():
            if self.dep()["canary_weight"] == 0:
                return True
            # The rollback may cancel the canary's replica while one of
            # these is on its way to it (503 shutting_down from the model
            # server): only the records count here.
            self.versions_answering(key, 10, strict=False)
            return False
        wait_for(rolled_back, timeout=120, what="the automatic rollback")
        ev = [e for e in self.events("deployment.canary", before)
              if e["details"]["op"] == "auto_rollback"]
        self.assertEqual(len(ev), 1, ev)
        det = ev[0]["details"]
        self.assertEqual((ev[0]["actor"], det["broke"], det["replicas_cancelled"]),
                         ("system:canary", "max_p99_ms", [int(canary[0])]), det)
        self.assertGreaterEqual(det["requests"], 20, det)
        self.assertGreater(det["p99_ms"], 4, det)
        self.assertEqual(det["bound"]["max_p99_ms"], 4, det)
        wait_for(lambda: self.job(canary[0])["state"] == "CANCELLED", timeout=90,
                 what="the rolled back canary replica cancelled")
        payload = json.loads(self.db.sql("SELECT payload FROM webhook_deliveries WHERE "
                                         "webhook_id = %s AND event = 'canary.rolled_back'"
                                         % hook["id"])[0][0])
        self.assertEqual(payload["details"]["op"], "auto_rollback", payload)
        st, text, _ = Client(self.server.url, token=METRICS_TOKEN).get("/metrics")
        self.assertIn("trainyard_canary_rollbacks_total 1\n", text)

        # Promote: the canary's replica becomes the deployment's, the old one goes.
        st, d, _ = self.admin.post("/api/v1/deployments/cn/canary", {"version": 2, "weight": 10})
        self.assertEqual(st, 200, d)
        canary = [r["job_id"] for r in d["replicas_detail"] if r["version"] == 2]
        before = self.last_event_id()
        st, d = self.cli("canary", "promote", "cn")
        self.assertEqual(st, 0, d)
        self.assertEqual((d["version"], d["canary_version"], d["canary_weight"]), (2, None, 0), d)
        self.assertEqual([r["job_id"] for r in d["replicas_detail"]], canary, d)
        ev = self.events("deployment.canary", before)
        self.assertEqual((ev[0]["details"]["op"], ev[0]["details"]["replicas_cancelled"]),
                         ("promote", [int(primary)]), ev)
        wait_for(lambda: self.job(primary)["state"] == "CANCELLED", timeout=90,
                 what="the old version's replica cancelled")
        wait_for(lambda: self.ready(2), timeout=180, what="the promoted replica ready")
        wait_for(lambda: set(self.versions_answering(key, 20, strict=False)) == {str(vids[2])},
                 timeout=30, what="every request answered by version 2")
        # A PATCH of the canary's settings (the dashboard's slider) makes and
        # cancels its replicas alike.
        st, d, _ = self.admin.request("PATCH", "/api/v1/deployments/cn",
                                      {"canary_version": 1, "canary_weight": 20})
        self.assertEqual(st, 200, d)
        old = [r["job_id"] for r in d["replicas_detail"] if r["version"] == 1]
        self.assertEqual(len(old), 1, d)
        st, d, _ = self.admin.request("PATCH", "/api/v1/deployments/cn", {"canary_weight": 0})
        self.assertEqual(st, 200, d)
        self.assertEqual([r["version"] for r in d["replicas_detail"]], [2], d)
        wait_for(lambda: self.job(old[0])["state"] == "CANCELLED", timeout=90,
                 what="the slider's canary replica cancelled")
        st, v, _ = self.admin.get("/api/v1/audit/verify")
        self.assertEqual(st, 200, v)


if __name__ == "__main__":
    harness.main()
