"""Job event and failure reasons as a code with parameters: a
real server, PostgreSQL and worker. Each job's events, GET /jobs/{id} and
the job list carry reason_code and reason_params next to the English
reason, and every code seen is one docs/job-reasons.md documents.

- a rank that exits 2 with max_restarts=1: submitted, placed {nodes,
  rank0_node}, assignment_taken {node}, attempt_running {attempt},
  restarting {counted, cause: rank_exited {rank, exit_code, attempt,
  node}}, ..., failed_no_restarts {restarts_used, max_restarts, cause}
- a missing script: failed_for_good {failure: script_not_found, cause:
  script_not_found {script}} (the worker's code)
- a job past its time limit: the cause is time_limit_exceeded, from the
  worker, not "killed by signal 15"
- a job cancelled while queued: cancelled_by_user; while running:
  cancelled (once every rank stopped)
- the job's SSE stream (logs?follow=1) carries its events, codes
  included, as "job_event" before "end"; events_after= skips the ones the
  page has
- a malformed reason_code / reason_params in an exit report is refused
  with the field named
"""
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest, Worker, wait_for  # noqa: E402


def documented_codes():
    with open(os.path.join(harness.SRC, "docs", "job-reasons.md"), encoding="utf-8") as f:
        return set(re.findall(r"^\| `([a-z0-9_]+)` \| (?!`)", f.read(), re.M))


class JobReasonsTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix="ty-reasons-")
        os.chmod(cls.base, 0o755)
        cls.server_args = ("--storage-root", cls.base, "--sched-interval-ms", "200")
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "ml", "gpu_quota": 8})
        assert st == 201, cls.team
        st, tok, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 2})
        assert st == 201, tok
        cls.worker = Worker(cls.server.url, tok["token"], "node-r", gpus=2,
                            allowed_root=cls.base)
        wait_for(lambda: any(n["state"] == "ready"
                             for n in cls.admin.get("/api/v1/nodes")[1]["nodes"]),
                 what="node-r ready")
        cls.documented = documented_codes()

    @classmethod
    def tearDownClass(cls):
        try:
            cls.worker.stop()
        finally:
            super().tearDownClass()
            shutil.rmtree(cls.base, ignore_errors=True)

    def submit(self, name, command, **over):
        spec = {"name": name, "team": "ml", "command": command, "resources": {"gpus": 1}}
        spec.update(over)
        st, job, _ = self.admin.post("/api/v1/jobs", spec)
        self.assertEqual(st, 201, job)
        return job["id"]

    def wait_end(self, job_id, timeout=120):
        def check():
            job = self.admin.get("/api/v1/jobs/" + job_id)[1]
            return job if job["state"] in ("SUCCEEDED", "FAILED", "CANCELLED") else None
        return wait_for(check, timeout=timeout, what="job %s to end" % job_id)

    def events(self, job_id):
        st, body, _ = self.admin.get("/api/v1/jobs/%s/events" % job_id)
        self.assertEqual(st, 200, body)
        evs = body["events"] if isinstance(body, dict) else body
        for ev in evs:
            self.assertIn("reason_code", ev)
            self.assertIsInstance(ev["reason_params"], dict, ev)
            self.assert_documented(ev["reason_code"], ev["reason_params"])
        return evs

    def assert_documented(self, code, params):
        self.assertIn(code, self.documented, "code %r is not in docs/job-reasons.md" % code)
        cause = params.get("cause")
        if cause is not None:
            self.assertEqual(set(cause), {"code", "params"}, cause)
            self.assert_documented(cause["code"], cause["params"])

    def test_rank_exit_then_no_restarts(self):
        jid = self.submit("exit2", ["/bin/sh", "-c", "exit 2"], max_restarts=1)
        job = self.wait_end(jid)
        self.assertEqual(job["state"], "FAILED", job)
        self.assertEqual(job["reason_code"], "failed_no_restarts", job)
        p = job["reason_params"]
        self.assertEqual((p["restarts_used"], p["max_restarts"]), (1, 1), p)
        self.assertEqual(p["cause"]["code"], "rank_exited", p)
        self.assertEqual(p["cause"]["params"],
                         {"rank": 0, "exit_code": 2, "attempt": 2, "node": "node-r"}, p)
        self.assertIn("rank 0 exited with 2", job["reason"])  # the English text stays
        evs = self.events(jid)
        codes = [e["reason_code"] for e in evs]
        self.assertEqual(codes[:4], ["submitted", "placed", "assignment_taken", "attempt_running"],
                         codes)
        self.assertEqual(evs[1]["reason_params"], {"nodes": 1, "rank0_node": "node-r"})
        self.assertEqual(evs[2]["reason_params"], {"node": "node-r"})
        self.assertEqual(evs[3]["reason_params"], {"attempt": 1})
        restart = [e for e in evs if e["reason_code"] == "restarting"]
        self.assertEqual(len(restart), 1, codes)
        rp = restart[0]["reason_params"]
        self.assertEqual((rp["counted"], rp["restarts_used"], rp["max_restarts"]), (True, 1, 1))
        self.assertEqual(rp["cause"]["params"]["attempt"], 1)
        self.assertEqual(codes[-1], "failed_no_restarts")
        # The list shows the same reason.
        st, page, _ = self.admin.get("/api/v1/jobs?team=ml&state=FAILED")
        self.assertEqual(st, 200, page)
        row = [j for j in page["jobs"] if j["id"] == jid][0]
        self.assertEqual(row["reason_code"], "failed_no_restarts")

    def test_missing_script_fails_for_good(self):
        jid = self.submit("noscript", ["/usr/bin/python3", os.path.join(self.base, "nope.py")],
                          max_restarts=3)
        job = self.wait_end(jid)
        self.assertEqual(job["state"], "FAILED", job)
        self.assertEqual(job["reason_code"], "failed_for_good", job)
        p = job["reason_params"]
        self.assertEqual(p["failure"], "script_not_found")
        self.assertEqual(p["cause"]["code"], "script_not_found")
        self.assertIn("nope.py", p["cause"]["params"]["script"])
        self.assertEqual(p["cause"]["params"]["node"], "node-r")
        self.events(jid)

    def test_time_limit(self):
        jid = self.submit("slow", ["/bin/sleep", "60"], time_limit_s=1, max_restarts=0)
        job = self.wait_end(jid)
        self.assertEqual(job["state"], "FAILED", job)
        self.assertEqual(job["reason_code"], "failed_no_restarts", job)
        self.assertEqual(job["reason_params"]["cause"]["code"], "time_limit_exceeded", job)
        self.events(jid)

    def test_cancel_queued(self):
        # The only node drains: the job stays queued until cancelled. (More
        # GPUs than the site has would be refused at submit: site_too_small.)
        node = next(n for n in self.admin.get("/api/v1/nodes")[1]["nodes"]
                    if n["name"] == "node-r")
        st, body, _ = self.admin.post("/api/v1/nodes/%s/drain" % node["id"])
        self.assertIn(st, (200, 202), body)
        try:
            jid = self.submit("big", ["/bin/true"])
            st, body, _ = self.admin.post("/api/v1/jobs/%s/cancel" % jid)
            self.assertIn(st, (200, 202), body)
            job = self.wait_end(jid)
        finally:
            st, body, _ = self.admin.post("/api/v1/nodes/%s/undrain" % node["id"])
            self.assertIn(st, (200, 202), body)
        self.assertEqual(job["state"], "CANCELLED", job)
        self.assertEqual((job["reason_code"], job["reason_params"]), ("cancelled_by_user", {}))
        self.events(jid)

    def test_cancel_running(self):
        jid = self.submit("long", ["/bin/sleep", "60"])
        wait_for(lambda: self.admin.get("/api/v1/jobs/" + jid)[1]["state"] == "RUNNING",
                 what="job %s running" % jid)
        st, body, _ = self.admin.post("/api/v1/jobs/%s/cancel" % jid)
        self.assertIn(st, (200, 202), body)
        job = self.wait_end(jid)
        self.assertEqual(job["state"], "CANCELLED", job)
        self.assertEqual((job["reason_code"], job["reason_params"]), ("cancelled", {}))
        self.events(jid)

    def sse(self, path):
        """The events of a followed stream, read until it ends: [(event, data)]."""
        st, body, hdrs = self.admin.get(path)
        self.assertEqual(st, 200, body)
        self.assertTrue(hdrs["content-type"].startswith("text/event-stream"), hdrs)
        out = []
        for block in body.split("\n\n"):
            ev = [ln[7:] for ln in block.split("\n") if ln.startswith("event: ")]
            data = [ln[6:] for ln in block.split("\n") if ln.startswith("data: ")]
            if ev:
                out.append((ev[0], json.loads(data[0])))
        return out

    def test_stream_carries_job_events(self):
        jid = self.submit("sse", ["/bin/sh", "-c", "echo hi; exit 3"], max_restarts=0)
        self.wait_end(jid)
        got = self.sse("/api/v1/jobs/%s/logs?follow=1" % jid)
        names = [e for e, _ in got]
        self.assertEqual(names[-1], "end", names)
        evs = [d for e, d in got if e == "job_event"]
        self.assertEqual([e["id"] for e in evs], [e["id"] for e in self.events(jid)])
        self.assertEqual(evs[-1]["reason_code"], "failed_no_restarts")
        self.assertEqual(evs[-1]["to_state"], "FAILED")
        self.assertIn("log", names)
        later = self.sse("/api/v1/jobs/%s/logs?follow=1&events_after=%s" % (jid, evs[1]["id"]))
        self.assertEqual([d["id"] for e, d in later if e == "job_event"],
                         [e["id"] for e in evs[2:]])

    def test_bad_exit_report_refused(self):
        st, tok, _ = self.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        self.assertEqual(st, 201, tok)
        c = harness.Client(self.server.url)
        st, joined, _ = c.post("/api/v1/agent/join", {"join_token": tok["token"], "name": "fake-r"})
        self.assertEqual(st, 201, joined)
        node = harness.Client(self.server.url, token=joined["credential"])
        st, reg, _ = node.post("/api/v1/agent/register", {"gpus": []})
        self.assertEqual(st, 200, reg)
        for body, field in (({"ranks": [], "reason_code": 7}, "reason_code"),
                            ({"ranks": [], "reason_code": "x" * 40}, "reason_code"),
                            ({"ranks": [], "reason_params": []}, "reason_params"),
                            ({"ranks": [], "reason_params": {"a": {"b": 1}}}, "reason_params")):
            self.assert_error(node.post("/api/v1/agent/attempts/1/exit", body), 400,
                              "invalid_argument", field)


if __name__ == "__main__":
    harness.main()
