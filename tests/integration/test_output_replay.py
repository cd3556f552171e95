"""Output batches a node sends: replays store nothing twice, drops are shown.

A node speaking the worker protocol with its own credential posts output
batches of its attempt:

- a batch posted twice with the same lines (the worker retries a post
  whose answer it never got) stores its logs, metrics and checkpoint once,
  audits the checkpoint once and adds its dropped_logs once; the second
  answer is the same as the first
- dropped_logs adds up over batches into the job's dropped_lines (GET
  /jobs/{id}), which `trainyard show` prints in both languages, and only
  when lines were dropped
- a batch without logs cannot be told from a new one and is stored
- a dropped_logs that is not an integer from 0 to 2^40 is a 400 naming the
  field, and nothing of that batch is stored
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest, wait_for  # noqa: E402


def log(seq, text):
    return {"rank": 0, "stream": "stdout", "seq": seq, "ts_ms": 1764400000000 + seq,
            "text": text}


class OutputReplayTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="ty-replay-")
        cls.server_args = ("--storage-root", cls.root, "--sched-interval-ms", "200",
                           "--node-timeout-s", "120")
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "ml"})
        assert st == 201, cls.team

    def join_node(self, name):
        return harness.join_fake_node(self.server.url, self.admin, name)

    def counts(self, jid):
        one = lambda q: int(self.db.sql(q % jid)[0][0])  # noqa: E731
        return {
            "logs": one("SELECT count(*) FROM job_logs WHERE job_id = %s"),
            "metrics": one("SELECT count(*) FROM metrics WHERE job_id = %s"),
            "checkpoints": one("SELECT count(*) FROM checkpoints WHERE job_id = %s"),
            "audited": one("SELECT count(*) FROM audit_events WHERE action = 'job.checkpoint' "
                           "AND target = 'job:%s'"),
            "dropped": self.admin.get("/api/v1/jobs/%s" % jid)[1]["dropped_lines"],
        }

    def show(self, jid, lang):
        tok = self.admin.post("/api/v1/tokens", {"name": "replay-" + lang})[1]["token"]
        env = dict(os.environ, TRAINYARD_URL=self.server.url, TRAINYARD_TOKEN=tok,
                   HOME=tempfile.mkdtemp(prefix="ty-replay-home-"), LANG=lang, LC_ALL=lang)
        out = subprocess.run([harness.CLI_BIN, "show", jid], capture_output=True, text=True,
                             env=env, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout

    def test_replay_and_drops(self):
        node = self.join_node("replayer")
        st, job, _ = self.admin.post("/api/v1/jobs", {
            "name": "burst", "team": "ml", "command": ["/bin/true"], "resources": {"gpus": 1}})
        self.assertEqual(st, 201, job)
        jid = job["id"]

        def poll():
            st, body, _ = node.get("/api/v1/agent/assignments?wait=2")
            self.assertEqual(st, 200, body)
            mine = [a for a in body["assignments"] if a["job_id"] == jid]
            return mine[0] if mine else None
        a1 = wait_for(poll, timeout=60, what="the assignment of job %s" % jid)
        aid = a1["attempt_id"]
        st, b, _ = node.post("/api/v1/agent/attempts/%s/started" % aid,
                             {"node_rank": 0, "pids": [4242]})
        self.assertEqual(st, 200, b)
        self.assertEqual(self.counts(jid)["dropped"], 0)
        self.assertNotIn("output lines dropped", self.show(jid, "C.UTF-8"))

        ckpt = a1["checkpoint_dir"] + "/step-10.pt"
        batch = {
            "logs": [log(1, "epoch 1: 10%|#\n"),
                     log(2, 'TRAINYARD_METRIC {"step":10,"loss":0.5}\n'),
                     log(3, 'TRAINYARD_CHECKPOINT {"step":10,"path":"%s"}\n' % ckpt)],
            "metrics": [{"rank": 0, "step": 10, "ts_ms": 1764400000002,
                         "values": {"loss": 0.5}}],
            "checkpoints": [{"rank": 0, "step": 10, "path": ckpt}],
            "dropped_logs": 7}
        path = "/api/v1/agent/attempts/%s/output" % aid
        st, first, _ = node.post(path, batch)
        self.assertEqual((st, first), (200, {"ok": True}))
        once = {"logs": 3, "metrics": 1, "checkpoints": 1, "audited": 1, "dropped": 7}
        self.assertEqual(self.counts(jid), once)
        # The same batch again, as a retry after a lost answer: the same
        # answer, nothing stored or audited twice.
        st, again, _ = node.post(path, batch)
        self.assertEqual((st, again), (200, first))
        self.assertEqual(self.counts(jid), once)

        # The next batch adds up; one without logs is stored.
        st, b, _ = node.post(path, {"logs": [log(4, "epoch 1: 20%|##\n")], "dropped_logs": 5})
        self.assertEqual(st, 200, b)
        st, b, _ = node.post(path, {"metrics": [{"rank": 0, "step": 20, "ts_ms": 1764400000005,
                                                 "values": {"loss": 0.4}}], "dropped_logs": 1})
        self.assertEqual(st, 200, b)
        want = {"logs": 4, "metrics": 2, "checkpoints": 1, "audited": 1, "dropped": 13}
        self.assertEqual(self.counts(jid), want)

        # Bad counts: a 400 on the field, and nothing of the batch stored.
        for bad in (-1, "3", 1.5, 2 ** 40 + 1, None, True):
            st, err, _ = node.post(path, {"logs": [log(100, "never stored\n")],
                                          "dropped_logs": bad})
            self.assertEqual(st, 400, (bad, err))
            self.assertEqual(err["error"]["field"], "dropped_logs", err)
            self.assertEqual(self.counts(jid), want, bad)

        # The job says it, and so does `trainyard show`, in both languages.
        en = self.show(jid, "C.UTF-8")
        self.assertRegex(en, r"(?m)^output lines dropped +13$")
        zh = self.show(jid, "zh_CN.UTF-8")
        self.assertRegex(zh, r"(?m)^丢弃的输出行数 +13$")
        st, b, _ = node.post("/api/v1/agent/attempts/%s/exit" % aid, {
            "node_rank": 0, "ranks": [{"rank": 0, "exit_code": 0, "signal": 0}], "reason": ""})
        self.assertEqual(st, 200, b)
        self.assertEqual(self.admin.get("/api/v1/jobs/" + jid)[1]["state"], "SUCCEEDED")
        self.assertEqual(self.admin.get("/api/v1/audit/verify")[1]["valid"], True)


if __name__ == "__main__":
    harness.main()
