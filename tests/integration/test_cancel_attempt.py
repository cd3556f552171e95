"""A cancelled job's attempt ends with it (server/store/lifecycle.c
lifecycle_settle_cancel), on real PostgreSQL, with a node that speaks the
worker protocol itself:

- a running job is cancelled (202, cancel_requested); the node reports its
  ranks' exit; the job becomes CANCELLED and its attempt is 'ended' with
  outcome 'cancelled' and an end time, not left 'running';
- a job cancelled before its ranks started ends its attempt too;
- the GPUs are given back: a next job is placed on the node.

The server has no attempts listing; the attempts table is read directly."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import wait_for  # noqa: E402


class CancelAttemptTest(harness.FakeNodeTest):
    node_name = "can-a"

    def submit(self, name):
        st, job, _ = self.admin.post("/api/v1/jobs", {
            "name": name, "team": "ml", "command": ["/bin/sleep", "600"],
            "resources": {"gpus": 1}})
        self.assertEqual(st, 201, job)
        return job["id"]

    def attempts(self, jid):
        return self.db.sql("SELECT attempt, state, outcome, ended_at IS NOT NULL FROM attempts "
                           "WHERE job_id = %d ORDER BY attempt" % int(jid))

    def wait_state(self, jid, state):
        return wait_for(lambda: self.admin.get("/api/v1/jobs/" + jid)[1]["state"] == state,
                        timeout=60, what="job %s %s" % (jid, state))

    def test_1_running_job_cancelled(self):
        jid = self.submit("run")
        a = self.take(jid)
        aid = a["attempt_id"]
        st, b, _ = self.node.post("/api/v1/agent/attempts/%s/started" % aid,
                                  {"node_rank": 0, "pids": [4242]})
        self.assertEqual(st, 200, b)
        self.wait_state(jid, "RUNNING")
        self.assertEqual(self.attempts(jid), [["1", "running", "", "f"]])
        st, b, _ = self.admin.post("/api/v1/jobs/%s/cancel" % jid)
        self.assertEqual(st, 202, b)
        # The node stops the ranks (SIGTERM) and reports their exit.
        st, b, _ = self.node.post("/api/v1/agent/attempts/%s/exit" % aid, {
            "node_rank": 0, "ranks": [{"rank": 0, "exit_code": -1, "signal": 15}],
            "reason": "cancelled"})
        self.assertEqual(st, 200, b)
        self.wait_state(jid, "CANCELLED")
        self.assertEqual(self.attempts(jid), [["1", "ended", "cancelled", "t"]])

    def test_2_job_cancelled_before_its_ranks_started(self):
        jid = self.submit("placed")
        aid = self.take(jid)["attempt_id"]
        st, b, _ = self.admin.post("/api/v1/jobs/%s/cancel" % jid)
        self.assertEqual(st, 202, b)
        # The node had not started the ranks: it reports none.
        st, b, _ = self.node.post("/api/v1/agent/attempts/%s/exit" % aid, {
            "node_rank": 0, "ranks": [], "reason": "cancelled"})
        self.assertEqual(st, 200, b)
        self.wait_state(jid, "CANCELLED")
        self.assertEqual(self.attempts(jid), [["1", "ended", "cancelled", "t"]])
        # Its GPU is free again.
        self.take(self.submit("next"))


if __name__ == "__main__":
    harness.main()
