"""Reports that carry multibyte text are stored whole or refused, never
answered with a 5xx that the worker's shipper would retry forever
(server/api/api_agent_report.c, server/jobs/job_reason.c), on real
PostgreSQL, with a node that speaks the worker protocol itself:

- an exit report whose reason is long enough that the server cuts it to
  fit the job's reason, the cut falling inside a three-byte character, is
  taken (200): the job restarts with its reason cut on a character
  boundary, and the node's later lines, of the next attempt, arrive;
- a reason past 4,096 bytes is refused with a 400 naming `reason`, and a
  body that is not UTF-8 with a 400: nothing is stored, and the same
  report with a short reason is then taken."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import wait_for  # noqa: E402

# "x" then 300 three-byte characters: "rank 0 exited with 1: " (22 bytes)
# plus this is cut to 511 bytes inside a character.
LONG = "x" + "\u5931" * 300


class ReportUtf8Test(harness.FakeNodeTest):
    node_name = "utf-a"

    def start(self, aid):
        st, b, _ = self.node.post("/api/v1/agent/attempts/%s/started" % aid,
                                  {"node_rank": 0, "pids": [4242]})
        self.assertEqual(st, 200, b)

    def output(self, aid, seq, text):
        return self.node.post("/api/v1/agent/attempts/%s/output" % aid, {
            "logs": [{"rank": 0, "stream": "stdout", "seq": seq, "ts_ms": 1764400000000 + seq,
                      "text": text}]})

    def exit_body(self, reason):
        return {"node_rank": 0, "ranks": [{"rank": 0, "exit_code": 1, "signal": 0}],
                "reason": reason}

    def test_1_long_multibyte_reason_is_taken(self):
        st, job, _ = self.admin.post("/api/v1/jobs", {
            "name": "u", "team": "ml", "command": ["/bin/true"], "resources": {"gpus": 1},
            "max_restarts": 1})
        self.assertEqual(st, 201, job)
        jid = job["id"]
        aid = self.take(jid, 1)["attempt_id"]
        self.start(aid)
        self.assertEqual(self.output(aid, 1, "before\n")[0], 200)
        st, b, _ = self.node.post("/api/v1/agent/attempts/%s/exit" % aid, self.exit_body(LONG))
        self.assertEqual(st, 200, b)
        # The job restarts; the reason of that is the cut text, whole
        # characters only.
        aid2 = self.take(jid, 2)["attempt_id"]
        why = self.db.sql("SELECT reason FROM job_events WHERE job_id = %d AND to_state = "
                          "'RESTARTING'" % int(jid))[0][0]
        self.assertIn("rank 0 exited with 1: x\u5931", why)
        self.assertIn("\u5931 on node utf-a", why)
        self.start(aid2)
        st, b, _ = self.output(aid2, 1, "after \u5931\n")
        self.assertEqual(st, 200, b)
        st, logs, _ = self.admin.get("/api/v1/jobs/%s/logs" % jid)
        self.assertEqual([l["text"] for l in logs["logs"]], ["before\n", "after \u5931\n"])
        st, b, _ = self.node.post("/api/v1/agent/attempts/%s/exit" % aid2, {
            "node_rank": 0, "ranks": [{"rank": 0, "exit_code": 0, "signal": 0}], "reason": ""})
        self.assertEqual(st, 200, b)

    def test_2_unstorable_report_is_a_400(self):
        st, job, _ = self.admin.post("/api/v1/jobs", {
            "name": "v", "team": "ml", "command": ["/bin/true"], "resources": {"gpus": 1},
            "max_restarts": 0})
        self.assertEqual(st, 201, job)
        jid = job["id"]
        aid = self.take(jid, 1)["attempt_id"]
        self.start(aid)
        path = "/api/v1/agent/attempts/%s/exit" % aid
        self.assert_error(self.node.post(path, self.exit_body("\u5931" * 1400)), 400,
                          "invalid_argument", "reason")
        raw = json.dumps(self.exit_body("cut \u5931")).encode()
        raw = raw.replace("\\u5931".encode(), b"\xe5\xa4")  # a character cut short
        st, b, _ = self.node.request("POST", path, raw=raw)
        self.assertEqual(st, 400, b)
        self.assertEqual(self.admin.get("/api/v1/jobs/" + jid)[1]["state"], "RUNNING")
        st, b, _ = self.node.post(path, self.exit_body("rank 0 exited with 1"))
        self.assertEqual(st, 200, b)
        wait_for(lambda: self.admin.get("/api/v1/jobs/" + jid)[1]["state"] == "FAILED",
                 timeout=60, what="job %s FAILED" % jid)


if __name__ == "__main__":
    harness.main()
