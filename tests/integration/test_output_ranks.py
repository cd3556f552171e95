"""Output batches name only the calling node's ranks.

Two nodes, one GPU each, run one two-rank attempt; each holds one rank.
Log lines are told from replays by (rank, stream, seq), so a node that could
store lines under the other node's rank first would have that node's real
batch taken for a replay and dropped without a word:

- node B posting a log line (or a metric) for node A's rank is refused, 403
  permission_denied naming the entry's rank, nothing of the batch stored,
  and the refusal is audited (policy.violation, stage "output", actor B)
- node A's real batch with the same (rank, stream, seq) is then stored
- each node's own rank is accepted; a metric without a rank is a 400
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest, wait_for  # noqa: E402


def line(rank, seq, text):
    return {"rank": rank, "stream": "stdout", "seq": seq, "ts_ms": 1764400000000 + seq,
            "text": text}


class OutputRanksTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="ty-ranks-")
        cls.server_args = ("--storage-root", cls.root, "--sched-interval-ms", "200",
                           "--node-timeout-s", "120")
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "ml"})
        assert st == 201, cls.team

    def take(self, node, jid):
        def poll():
            st, body, _ = node.get("/api/v1/agent/assignments?wait=2")
            self.assertEqual(st, 200, body)
            mine = [a for a in body["assignments"] if a["job_id"] == jid]
            return mine[0] if mine else None
        return wait_for(poll, timeout=60, what="the assignment of job %s" % jid)

    def logs(self, jid):
        return self.db.sql("SELECT rank, seq, text FROM job_logs WHERE job_id = %s "
                           "ORDER BY rank, seq" % jid)

    def count(self, q):
        return int(self.db.sql(q)[0][0])

    def test_foreign_rank_refused(self):
        na = harness.join_fake_node(self.server.url, self.admin, "rank-a")
        nb = harness.join_fake_node(self.server.url, self.admin, "rank-b")
        st, job, _ = self.admin.post("/api/v1/jobs", {
            "name": "two", "team": "ml", "command": ["/bin/true"],
            "resources": {"gpus": 2, "gpus_per_node": 1}})
        self.assertEqual(st, 201, job)
        jid = job["id"]
        aa, ab = self.take(na, jid), self.take(nb, jid)
        self.assertEqual(aa["attempt_id"], ab["attempt_id"])
        aid = aa["attempt_id"]
        rank_a = [r["rank"] for r in aa["ranks"]]
        rank_b = [r["rank"] for r in ab["ranks"]]
        self.assertEqual(sorted(rank_a + rank_b), [0, 1])
        path = "/api/v1/agent/attempts/%s/output" % aid
        violations = ("SELECT count(*) FROM audit_events WHERE action = 'policy.violation' "
                      "AND target = 'job:%s' AND actor = 'node:rank-b' "
                      "AND details::jsonb->>'stage' = 'output'" % jid)

        # B claims A's first line: refused whole, nothing stored, audited.
        err = self.assert_error(nb.post(path, {
            "logs": [line(rank_b[0], 1, "b's own"), line(rank_a[0], 1, "forged")],
            "dropped_logs": 3}), 403, "permission_denied", "logs[1].rank")
        self.assertIn(str(rank_a[0]), err["message"])
        self.assertEqual(self.logs(jid), [])
        self.assertEqual(self.admin.get("/api/v1/jobs/" + jid)[1]["dropped_lines"], 0)
        self.assertEqual(self.count(violations), 1)
        # A metric under A's rank, and a rank no node holds: refused too.
        self.assert_error(nb.post(path, {"metrics": [
            {"rank": rank_a[0], "step": 1, "ts_ms": 1764400000000, "values": {"loss": 1.0}}]}),
            403, "permission_denied", "metrics[0].rank")
        self.assert_error(na.post(path, {"logs": [line(7, 1, "nobody's")]}),
                          403, "permission_denied", "logs[0].rank")
        self.assertEqual(self.count("SELECT count(*) FROM metrics WHERE job_id = %s" % jid), 0)
        self.assertEqual(self.count(violations), 2)
        # A metric must say its rank.
        self.assert_error(na.post(path, {"metrics": [
            {"step": 1, "ts_ms": 1764400000000, "values": {"loss": 1.0}}]}), 400,
            "invalid_argument", "metrics")

        # A's real batch with the same (rank, stream, seq) is stored, not
        # taken for a replay; B's own line goes in under its rank.
        st, b, _ = na.post(path, {"logs": [line(rank_a[0], 1, "a's real line")],
                                  "metrics": [{"rank": rank_a[0], "step": 1,
                                               "ts_ms": 1764400000000, "values": {"loss": 1.0}}]})
        self.assertEqual((st, b), (200, {"ok": True}))
        st, b, _ = nb.post(path, {"logs": [line(rank_b[0], 1, "b's own")]})
        self.assertEqual((st, b), (200, {"ok": True}))
        want = sorted([[str(rank_a[0]), "1", "a's real line"],
                       [str(rank_b[0]), "1", "b's own"]])
        self.assertEqual(sorted([list(r) for r in self.logs(jid)]), want)
        self.assertEqual(self.count("SELECT count(*) FROM metrics WHERE job_id = %s" % jid), 1)
        self.assertEqual(self.admin.get("/api/v1/audit/verify")[1]["valid"], True)


if __name__ == "__main__":
    harness.main()
