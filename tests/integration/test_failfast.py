"""Deterministic failures fail a job at once: a real server,
PostgreSQL and worker; every job has max_restarts=3.

- a command that does not exist, a python script that does not exist
  (relative to the working dir, and absolute) and a working dir the worker's
  realpath check refuses: each job is FAILED after exactly one attempt with
  no restart used; the job's reason, its FAILED event and the job.state
  audit event name the cause; the worker's report carries it as "failure"
- the same interpreter with a script that is there runs: a script that
  exits 3 still spends all three restarts
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest, Worker, wait_for  # noqa: E402

PY = "/usr/bin/python3"
EXAMPLES = os.path.join(os.path.abspath(harness.SRC), "examples")


class FailFastTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix="ty-failfast-")
        os.chmod(cls.base, 0o755)
        cls.root = os.path.join(cls.base, "root")
        cls.outside = os.path.join(cls.base, "outside")
        os.mkdir(cls.root)
        os.mkdir(cls.outside)
        cls.server_args = ("--storage-root", cls.root, "--sched-interval-ms", "200")
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "ml"})
        assert st == 201, cls.team
        st, tok, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 2})
        assert st == 201, tok
        cls.worker = Worker(cls.server.url, tok["token"], "node-a", gpus=4,
                            allowed_root=cls.root)
        wait_for(lambda: any(n["state"] == "ready"
                             for n in cls.admin.get("/api/v1/nodes")[1]["nodes"]),
                 what="node-a ready")

    @classmethod
    def tearDownClass(cls):
        try:
            cls.worker.stop()
        finally:
            super().tearDownClass()
            shutil.rmtree(cls.base, ignore_errors=True)

    def submit(self, name, command, **over):
        spec = {"name": name, "team": "ml", "command": command, "resources": {"gpus": 1},
                "max_restarts": 3}
        spec.update(over)
        st, job, _ = self.admin.post("/api/v1/jobs", spec)
        self.assertEqual(st, 201, job)
        return job["id"]

    def wait_end(self, job_id, timeout=120):
        def check():
            job = self.admin.get("/api/v1/jobs/" + job_id)[1]
            return job if job["state"] in ("SUCCEEDED", "FAILED", "CANCELLED") else None
        try:
            return wait_for(check, timeout=timeout, what="job %s to end" % job_id)
        except AssertionError:
            job = self.admin.get("/api/v1/jobs/" + job_id)[1]
            raise AssertionError("job %s is %s (%s)\n%s" % (job_id, job["state"], job["reason"],
                                                            self.worker.log_tail(20)))

    def assert_failed_at_once(self, job_id, cause, *words):
        job = self.wait_end(job_id)
        self.assertEqual(job["state"], "FAILED", job)
        self.assertEqual(job["attempt"], 1, job)
        self.assertEqual(job["restarts"], 0, job)
        self.assertIn("not restarted (%s:" % cause, job["reason"])
        for w in words:
            self.assertIn(w, job["reason"])
        self.assertEqual(self.db.sql("SELECT count(*) FROM attempts WHERE job_id = %s" % job_id),
                         [["1"]])
        st, ev, _ = self.admin.get("/api/v1/jobs/%s/events" % job_id)
        states = [e["to_state"] for e in ev["events"]]
        self.assertNotIn("RESTARTING", states)
        self.assertEqual(states[-1], "FAILED")
        self.assertEqual(ev["events"][-1]["reason"], job["reason"])
        rows = self.db.sql("SELECT details FROM audit_events WHERE action = 'job.state' AND "
                           "target = 'job:%s' AND details LIKE '%%\"to\":\"FAILED\"%%'" % job_id)
        self.assertEqual(len(rows), 1, rows)
        self.assertEqual(json.loads(rows[0][0])["reason"], job["reason"])
        # what the worker reported, as stored with the node's exit
        got = self.db.sql("SELECT exit_info->'failure'->>'code', exit_info->'failure'->>'detail' "
                          "FROM allocations WHERE job_id = %s" % job_id)
        self.assertEqual(len(got), 1, got)
        self.assertEqual(got[0][0], cause)
        self.assertTrue(got[0][1], got)
        return job

    def test_1_missing_program(self):
        jid = self.submit("no-prog", ["/nonexistent/prog", "--x"])
        self.assert_failed_at_once(jid, "exec_failed", '"/nonexistent/prog"',
                                   "No such file or directory", "on node node-a")

    def test_2_missing_script(self):
        jid = self.submit("no-script", ["python3", "missing.py", "--steps", "3"])
        self.assert_failed_at_once(jid, "script_not_found", '"missing.py"',
                                   "in the working directory")
        absent = os.path.join(self.root, "nowhere", "train.py")
        jid = self.submit("no-script-abs", [PY, absent])
        self.assert_failed_at_once(jid, "script_not_found", absent)

    def test_3_refused_path(self):
        link = os.path.join(self.root, "escape")
        os.symlink(self.outside, link)
        jid = self.submit("refused", ["/bin/true"], working_dir=link)
        self.assert_failed_at_once(jid, "path_refused", "policy violation: work_dir")
        self.assertEqual(os.listdir(self.outside), [])
        rows = self.db.sql("SELECT actor, details FROM audit_events WHERE action = "
                           "'policy.violation' AND target = 'job:%s'" % jid)
        self.assertEqual(len(rows), 1, rows)
        self.assertEqual(rows[0][0], "node:node-a")
        self.assertEqual(json.loads(rows[0][1])["stage"], "node")

    def test_4_ordinary_failure_still_restarts(self):
        # the script is there, relative to the working dir: it runs, and fails
        wd = os.path.join(self.root, "wd")
        os.mkdir(wd)
        shutil.copy(os.path.join(EXAMPLES, "fail.py"), wd)
        jid = self.submit("fails", ["python3", "fail.py", "--code", "3"], working_dir=wd)
        job = self.wait_end(jid, timeout=240)
        self.assertEqual(job["state"], "FAILED", job)
        self.assertEqual(job["restarts"], 3, job)
        self.assertEqual(job["attempt"], 4, job)
        self.assertIn("exited with 3", job["reason"])
        self.assertIn("no restarts left (3 of 3 used)", job["reason"])
        self.assertNotIn("not restarted", job["reason"])
        st, ev, _ = self.admin.get("/api/v1/jobs/%s/events" % jid)
        self.assertEqual([e["to_state"] for e in ev["events"]].count("RESTARTING"), 3)
        st, logs, _ = self.admin.get("/api/v1/jobs/%s/logs?attempt=4" % jid)
        self.assertTrue(any("failing on purpose" in l["text"] for l in logs["logs"]), logs)
        self.assertEqual(self.db.sql("SELECT count(*) FROM allocations WHERE job_id = %s AND "
                                     "exit_info ? 'failure'" % jid), [["0"]])

    def test_zz_audit_chain_intact(self):
        self.assertEqual(self.admin.get("/api/v1/audit/verify")[1]["valid"], True)


if __name__ == "__main__":
    harness.main()
