"""PATCH /api/v1/jobs/{id} {"priority"} (the dashboard's queue page): a real
server, PostgreSQL and a one-GPU worker, so one job runs and the next waits.

- an admin changes a QUEUED job's priority: the answer, GET /jobs/{id} (the
  column and the spec) and a job.priority audit event {from, to} show it;
- a member of the job's team gets 403 and nothing changes;
- a RUNNING job gets 409 conflict and keeps its priority, no event;
- a bad value, a missing field or an unknown one gets 400 naming the field,
  and nothing changes.
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest, Worker, wait_for  # noqa: E402


class JobPriorityTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix="ty-prio-")
        os.chmod(cls.base, 0o755)
        cls.server_args = ("--storage-root", cls.base, "--sched-interval-ms", "200")
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "ml", "gpu_quota": 8})
        assert st == 201, cls.team
        st, tok, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        assert st == 201, tok
        cls.worker = Worker(cls.server.url, tok["token"], "node-p", gpus=1,
                            allowed_root=cls.base)
        wait_for(lambda: any(n["state"] == "ready"
                             for n in cls.admin.get("/api/v1/nodes")[1]["nodes"]),
                 what="node-p ready")

    @classmethod
    def tearDownClass(cls):
        try:
            cls.worker.stop()
        finally:
            super().tearDownClass()
            shutil.rmtree(cls.base, ignore_errors=True)

    def prio_events(self, jid):
        return self.db.sql("SELECT actor, details::text FROM audit_events WHERE action = "
                           "'job.priority' AND target = 'job:%s' ORDER BY id" % int(jid))

    def test_priority(self):
        _, member = self.make_user("pm", teams=[self.team])
        member = self.token_client(member)
        spec = {"team": "ml", "command": ["/bin/sleep", "60"], "resources": {"gpus": 1}}
        st, run, _ = member.post("/api/v1/jobs", dict(spec, name="runs"))
        self.assertEqual(st, 201, run)
        wait_for(lambda: self.admin.get("/api/v1/jobs/" + run["id"])[1]["state"] == "RUNNING",
                 what="job %s running" % run["id"])
        st, wait, _ = member.post("/api/v1/jobs", dict(spec, name="waits"))
        self.assertEqual(st, 201, wait)
        path = "/api/v1/jobs/" + wait["id"]
        try:
            # The only GPU is taken: the second job stays QUEUED.
            self.assertEqual(self.admin.get(path)[1]["state"], "QUEUED")
            self.assertEqual(wait["priority"], "normal")

            # Bad input: 400 naming the field, nothing changed, no event.
            for body, field in (({"priority": "urgent"}, "priority"),
                                ({"priority": 2}, "priority"), ({}, "priority"),
                                ({"priority": "high", "name": "x"}, "name")):
                self.assert_error(self.admin.request("PATCH", path, body=body), 400,
                                  "invalid_argument", field)
            self.assert_error(self.admin.request("PATCH", path, body=None), 400)
            # A member of the job's own team may not reorder the queue.
            self.assert_error(member.request("PATCH", path, body={"priority": "high"}), 403,
                              "permission_denied")
            self.assertEqual(self.admin.get(path)[1]["priority"], "normal")
            self.assertEqual(self.prio_events(wait["id"]), [])

            st, body, _ = self.admin.request("PATCH", path, body={"priority": "high"})
            self.assertEqual(st, 200, body)
            self.assertEqual(body["priority"], "high")
            job = self.admin.get(path)[1]
            self.assertEqual(job["priority"], "high", job)
            self.assertEqual(job["spec"]["priority"], "high", job)
            self.assertEqual(job["state"], "QUEUED", job)
            events = self.prio_events(wait["id"])
            self.assertEqual(len(events), 1, events)
            self.assertIn("admin", events[0][0])
            self.assertEqual(json.loads(events[0][1]), {"from": "normal", "to": "high"})

            # A running job is past the queue: 409, nothing changed.
            self.assert_error(self.admin.request("PATCH", "/api/v1/jobs/" + run["id"],
                                                 body={"priority": "low"}), 409, "conflict")
            self.assertEqual(self.admin.get("/api/v1/jobs/" + run["id"])[1]["priority"],
                             "normal")
            self.assertEqual(self.prio_events(run["id"]), [])
            # No such job: 404.
            self.assert_error(self.admin.request("PATCH", "/api/v1/jobs/999999",
                                                 body={"priority": "low"}), 404)
        finally:
            for jid in (wait["id"], run["id"]):
                self.admin.post("/api/v1/jobs/%s/cancel" % jid)


if __name__ == "__main__":
    harness.main()
