"""End to end under "launcher": "torchrun": real PostgreSQL, server, two
workers with two fake GPUs each (two nodes on this machine), the system's
torchrun (Debian 12: PyTorch 1.13 on Python 3.11, whose defaults
"--redirects 0 --tee 0" do not parse there) and gloo on the CPU.

- DDP across both nodes: SUCCEEDED, the loss curve stored, every rank's
  lines in the job's logs under that rank, torchrun's header stripped;
- what a rank writes to stderr is shipped under that rank too (one node).
"""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest, Worker, wait_for  # noqa: E402

PY = "/usr/bin/python3"
EXAMPLES = os.path.join(os.path.abspath(harness.SRC), "examples")
TORCHRUN = shutil.which("torchrun", path="/usr/bin:" + os.environ.get("PATH", ""))

# Each rank: one line on stdout and one on stderr, naming its rank.
BOTH_STREAMS = ("import os, sys; r = os.environ['RANK']; "
                "print('out of rank ' + r, flush=True); "
                "print('err of rank ' + r, file=sys.stderr, flush=True)")


@unittest.skipUnless(TORCHRUN, "torchrun is not installed (scripts/deps.sh test)")
class TorchrunTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.shared = tempfile.mkdtemp(prefix="ty-shared-")
        os.chmod(cls.shared, 0o755)
        cls.server_args = ("--storage-root", cls.shared, "--sched-interval-ms", "200")
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "ml"})
        assert st == 201, cls.team
        st, tok, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 2})
        assert st == 201, tok
        cls.workers = [Worker(cls.server.url, tok["token"], "node-%d" % i, gpus=2,
                              allowed_root=cls.shared) for i in range(2)]
        wait_for(lambda: len([n for n in cls.admin.get("/api/v1/nodes")[1]["nodes"]
                              if n["state"] == "ready"]) == 2, what="two ready nodes")

    @classmethod
    def tearDownClass(cls):
        try:
            for w in cls.workers:
                w.stop()
        finally:
            super().tearDownClass()
            shutil.rmtree(cls.shared, ignore_errors=True)

    def run_job(self, name, command, gpus=4):
        spec = {"name": name, "team": "ml", "launcher": "torchrun", "command": command,
                "resources": {"gpus": gpus, "gpus_per_node": 2}, "max_restarts": 0,
                "output_dir": os.path.join(self.shared, "out-" + name)}
        st, job, _ = self.admin.post("/api/v1/jobs", spec)
        self.assertEqual(st, 201, job)

        def ended():
            j = self.admin.get("/api/v1/jobs/" + job["id"])[1]
            return j if j["state"] in ("SUCCEEDED", "FAILED", "CANCELLED") else None
        done = wait_for(ended, timeout=180, what="job %s to end" % job["id"])
        logs = self.admin.get("/api/v1/jobs/%s/logs?limit=1000" % job["id"])[1]["logs"]
        self.assertEqual(done["state"], "SUCCEEDED", "%s\nlogs: %s\nworkers:\n%s" % (
            done, [(l["rank"], l["text"]) for l in logs][-40:],
            "\n".join(w.log_tail(15) for w in self.workers)))
        return job["id"], logs

    def rank_texts(self, job_id, rank):
        st, logs, _ = self.admin.get("/api/v1/jobs/%s/logs?rank=%d&limit=1000" % (job_id, rank))
        self.assertEqual(st, 200, logs)
        return [l["text"] for l in logs["logs"]]

    def test_1_ddp_across_two_nodes(self):
        jid, logs = self.run_job("ddp", [PY, os.path.join(EXAMPLES, "ddp_mlp.py"), "--steps",
                                         "8", "--hidden", "32", "--checkpoint-every", "8"])
        st, m, _ = self.admin.get("/api/v1/jobs/%s/metrics" % jid)
        self.assertEqual(st, 200, m)
        self.assertEqual([p["step"] for p in m["metrics"]], list(range(1, 9)))
        self.assertTrue(all(p["values"]["loss"] > 0 for p in m["metrics"]), m)
        for rank in range(4):
            texts = self.rank_texts(jid, rank)
            self.assertTrue(any("rank %d of 4 ready" % rank in t for t in texts), (rank, texts))
            for other in set(range(4)) - {rank}:
                self.assertFalse(any("rank %d of 4 ready" % other in t for t in texts),
                                 (rank, texts))
        self.assertFalse([l for l in logs if l["text"].startswith("[trainyard")], logs)

    def test_2_stderr_under_its_rank(self):
        # One node is enough here (test_1 maps the second node's ranks).
        jid, _ = self.run_job("streams", [PY, "-c", BOTH_STREAMS], gpus=2)
        for rank in range(2):
            texts = self.rank_texts(jid, rank)
            self.assertIn("out of rank %d\n" % rank, texts)
            self.assertIn("err of rank %d\n" % rank, texts)


if __name__ == "__main__":
    harness.main()
