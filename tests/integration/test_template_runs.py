"""Every repository template run through the platform on the CPU.

A real server (templates/ and examples/ of this tree), one worker with fake
GPUs (so every rank is a gloo rank on the CPU) and jobs submitted by
template id with small parameters: tiny sizes, few steps, one rank each.
What the tests prove:

- each of the nine templates reaches SUCCEEDED through the API, with its
  loss metrics recorded (GET /jobs/{id}/metrics) for the training scripts,
  and the final model and metrics summary in the job's output_dir;
- real data from Debian packages, prepared with examples/data/ into the
  site's storage root and passed as the job's datasets: sklearn's digits
  as an image folder (defect-resnet50 and product-embed reach validation
  accuracy >= 0.90, product-embed's recall@1 too) and fortunes-zh
  (review-textcls: labels from the source file; chatbot-gpt2:
  question/answer pairs of consecutive lines) with the validation loss
  below the first evaluation's by test_examples.py's margins; one dataset
  goes by its registered name;
- kill -9 of a running rank after a checkpoint: the platform restarts the
  job (a restart used), the next attempt gets TRAINYARD_RESUME_FROM, its
  first metric step is the checkpoint's step + 1 and the job succeeds.

The jobs run side by side (all submitted at set-up) so the two cores stay
busy; each test then waits for its own.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest, Worker, wait_for  # noqa: E402
from test_examples import CHAT_MARGIN, TEXTCLS_MARGIN  # noqa: E402

TEMPLATES = os.path.join(os.path.abspath(harness.SRC), "templates")
EXAMPLES = os.path.join(os.path.abspath(harness.SRC), "examples")
PY = "/usr/bin/python3"
ENDED = ("SUCCEEDED", "FAILED", "CANCELLED")
# The kill test's seed: unique on this host, so its ranks are found by
# command line (harness.processes_with_cmdline) and no other test's.
KILL_SEED = str(100000 + os.getpid() % 100000)

# Synthetic data, the smallest settings that still train a few steps.
SYNTHETIC = {
    "ddp-mlp-demo": {"steps": 20, "checkpoint_every": 10},
    "product-ddpm": {"size": "tiny", "steps": 6, "batch": 16, "checkpoint_every": 3,
                     "eval_every": 3},
    "bench-resnet50": {"size": "tiny", "steps": 6, "batch": 16},
    "bench-gpt2": {"size": "tiny", "steps": 6, "batch": 8},
    "sleep-test": {},
}
# Real data (the datasets are set up below).
REAL = {
    "defect-resnet50": {"arch": "tiny", "steps": 120, "batch": 32, "lr": 0.003,
                        "eval_every": 40, "checkpoint_every": 60},
    "product-embed": {"size": "tiny", "steps": 120, "batch": 32, "lr": 0.003, "eval_every": 40,
                      "checkpoint_every": 60},
    "review-textcls": {"size": "tiny", "steps": 40, "batch": 32, "lr": 0.002, "eval_every": 10,
                       "checkpoint_every": 20},
    "chatbot-gpt2": {"size": "tiny", "steps": 40, "batch": 16, "lr": 0.003, "eval_every": 10,
                     "checkpoint_every": 20},
}
KILL = {"arch": "tiny", "steps": 150, "batch": 32, "checkpoint_every": 10, "eval_every": 150,
        "seed": int(KILL_SEED)}


def prepare(cmd, what):
    out = subprocess.run([PY] + cmd, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (what, out.stderr))
    return out.stdout


class TemplateRunsTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.storage = tempfile.mkdtemp(prefix="ty-tplrun-")
        os.chmod(cls.storage, 0o755)
        cls.server_args = ("--storage-root", cls.storage, "--templates-dir", TEMPLATES,
                           "--examples-dir", EXAMPLES, "--sched-interval-ms", "200")
        super().setUpClass()
        cls.worker = None
        try:
            cls.set_up_jobs()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def set_up_jobs(cls):
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "shop", "gpu_quota": 4})
        assert st == 201, cls.team
        data = os.path.join(cls.storage, "data")
        cls.digits = os.path.join(data, "digits")
        cls.fortunes = os.path.join(data, "fortunes")
        out = prepare([os.path.join(EXAMPLES, "data", "digits_to_folder.py"), cls.digits],
                      "digits_to_folder")
        assert "wrote 1797 images (32x32) in 10 classes" in out, out
        prepare([os.path.join(EXAMPLES, "data", "fortunes_to_sets.py"), cls.fortunes,
                 "--max-per-class", "500", "--max-pairs", "1500"], "fortunes_to_sets")
        # The digits also as a registered dataset, passed by name.
        st, ds, _ = cls.admin.post("/api/v1/datasets", {
            "name": "digits", "uri": cls.digits, "team": "shop"})
        assert st == 201, ds
        st, tok, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        assert st == 201, tok
        # Four fake GPUs: the sleep template holds one for its minute while
        # the training jobs share the others (and the two cores).
        cls.worker = Worker(cls.server.url, tok["token"], "cpu-node", gpus=4,
                            allowed_root=cls.storage)
        cls.jobs = {}
        # The kill test's job first, so that it is placed first.
        cls.jobs["kill"] = cls.submit("defect-resnet50", KILL, name="kill-and-resume",
                                      max_restarts=1)
        datasets = {"defect-resnet50": ["digits"], "product-embed": [cls.digits],
                    "review-textcls": [cls.fortunes], "chatbot-gpt2": [cls.fortunes]}
        for tid, params in REAL.items():
            cls.jobs[tid] = cls.submit(tid, params, datasets=datasets[tid])
        for tid, params in SYNTHETIC.items():
            cls.jobs[tid] = cls.submit(tid, params)

    @classmethod
    def submit(cls, tid, params, **over):
        body = {"template": tid, "team": "shop", "params": params, "resources": {"gpus": 1},
                "output_dir": os.path.join(cls.storage, "out", over.get("name", tid))}
        body.update(over)
        st, job, _ = cls.admin.post("/api/v1/jobs", body)
        assert st == 201, (tid, job)
        return job

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.worker:
                cls.worker.stop()
        finally:
            try:
                super().tearDownClass()
            finally:
                shutil.rmtree(cls.storage, ignore_errors=True)

    # ------------------------------------------------------------ helpers

    def job(self, job_id):
        return self.admin.get("/api/v1/jobs/" + job_id)[1]

    def logs(self, job_id):
        st, body, _ = self.admin.get("/api/v1/jobs/%s/logs?limit=5000" % job_id)
        return [l["text"].rstrip("\n") for l in body["logs"]]

    def wait_ended(self, key, timeout=600):
        job_id = self.jobs[key]["id"]
        final = wait_for(lambda: (lambda j: j if j["state"] in ENDED else None)(self.job(job_id)),
                         timeout=timeout, interval=0.5, what="job %s (%s) to end" % (job_id, key))
        if final["state"] != "SUCCEEDED":
            self.fail("%s ended %s (%s); logs:\n%s\nworker:\n%s" % (
                key, final["state"], final.get("reason"), "\n".join(self.logs(job_id)[-40:]),
                self.worker.log_tail(20)))
        return final

    def metrics(self, job_id):
        st, body, _ = self.admin.get("/api/v1/jobs/%s/metrics" % job_id)
        self.assertEqual(st, 200, body)
        return body["metrics"]

    def evals(self, job_id, name):
        return [(m["step"], m["values"][name]) for m in self.metrics(job_id)
                if name in m["values"]]

    def assert_trained(self, key, steps):
        """Loss metrics at every step, and the final model and metrics
        summary in the job's output_dir."""
        job = self.jobs[key]
        ms = [m for m in self.metrics(job["id"]) if "loss" in m["values"]]
        self.assertEqual([m["step"] for m in ms], list(range(1, steps + 1)), key)
        self.assertTrue(all(m["values"]["samples_per_sec"] > 0 for m in ms), key)
        out = job["spec"]["output_dir"]
        with open(os.path.join(out, "metrics.json"), encoding="utf-8") as f:
            summary = json.load(f)
        self.assertEqual(summary["steps"], steps, key)
        self.assertEqual(summary["final"]["step"], steps, key)
        self.assertGreater(os.path.getsize(os.path.join(out, "model.pt")), 0, key)
        return ms, summary

    # ------------------------------------------------------------ kill -9 and resume

    def test_0_kill_a_rank_and_resume_from_the_checkpoint(self):
        job_id = self.jobs["kill"]["id"]
        marker = "--seed\0" + KILL_SEED + "\0"

        def announced():
            j = self.job(job_id)
            if j["state"] in ENDED:
                return j
            st, ck, _ = self.admin.get("/api/v1/jobs/%s/checkpoints" % job_id)
            return ck["checkpoints"] or None
        first = wait_for(announced, timeout=300, interval=0.2, what="a checkpoint")
        self.assertIsInstance(first, list, "the job ended before its first checkpoint: %s" % first)
        ranks = harness.processes_with_cmdline(marker)
        self.assertEqual(len(ranks), 1, ranks)
        (pid, _), = ranks
        os.kill(pid, signal.SIGKILL)
        killed_at = max(m["step"] for m in self.metrics(job_id))

        final = self.wait_ended("kill")
        self.assertEqual(final["restarts"], 1, final)
        self.assertEqual(final["attempt"], 2, final)
        self.assertLess(killed_at, KILL["steps"], "the kill came after the last step")
        st, ev, _ = self.admin.get("/api/v1/jobs/%s/events" % job_id)
        self.assertIn("RESTARTING", [e["to_state"] for e in ev["events"]])
        # The second attempt resumed from a checkpoint of the first...
        st, ck, _ = self.admin.get("/api/v1/jobs/%s/checkpoints" % job_id)
        first_ck = {c["path"]: c["step"] for c in ck["checkpoints"] if c["attempt"] == 1}
        resumed = [l for l in self.logs(job_id) if "resumed from " in l]
        self.assertEqual(len(resumed), 1, resumed)
        path, n = [(p, s) for p, s in first_ck.items() if "resumed from %s at step %d" % (p, s)
                   in resumed[0]][0]
        self.assertGreaterEqual(n, KILL["checkpoint_every"])
        # ...and its step counter continues from it, not from 1.
        ms = self.metrics(job_id)
        steps1 = [m["step"] for m in ms if m["attempt"] == 1 and "loss" in m["values"]]
        steps2 = [m["step"] for m in ms if m["attempt"] == 2 and "loss" in m["values"]]
        self.assertEqual(steps1[:n], list(range(1, n + 1)))
        self.assertEqual(steps2, list(range(n + 1, KILL["steps"] + 1)))
        out = self.jobs["kill"]["spec"]["output_dir"]
        with open(os.path.join(out, "metrics.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["final"]["step"], KILL["steps"])
        print("  killed at step %d, resumed from %s (step %d)" % (killed_at, path, n),
              file=sys.stderr)

    # ------------------------------------------------------------ real data

    def test_defect_resnet50_learns_digits(self):
        self.wait_ended("defect-resnet50")
        job_id = self.jobs["defect-resnet50"]["id"]
        self.assertEqual(self.jobs["defect-resnet50"]["spec"]["datasets"], ["digits"])
        self.assert_trained("defect-resnet50", REAL["defect-resnet50"]["steps"])
        self.assertIn("data: %s, 10 classes" % self.digits,
                      "\n".join(self.logs(job_id)))
        acc = self.evals(job_id, "val_acc")
        self.assertGreaterEqual(acc[-1][1], 0.90, acc)
        print("  digits, defect-resnet50: val_acc %s" % acc, file=sys.stderr)

    def test_product_embed_learns_digits(self):
        self.wait_ended("product-embed")
        job_id = self.jobs["product-embed"]["id"]
        self.assert_trained("product-embed", REAL["product-embed"]["steps"])
        top1, r1 = self.evals(job_id, "val_top1"), self.evals(job_id, "val_recall_at_1")
        self.assertGreaterEqual(top1[-1][1], 0.90, top1)
        self.assertGreaterEqual(r1[-1][1], 0.90, r1)
        print("  digits, product-embed: val_top1 %s, val_recall_at_1 %s" % (top1, r1),
              file=sys.stderr)

    def test_review_textcls_learns_fortunes(self):
        self.wait_ended("review-textcls")
        job_id = self.jobs["review-textcls"]["id"]
        self.assert_trained("review-textcls", REAL["review-textcls"]["steps"])
        self.assertIn("3 labels ['chinese', 'song100', 'tang300']", "\n".join(self.logs(job_id)))
        loss = self.evals(job_id, "val_loss")
        self.assertEqual(len(loss), 4, loss)
        self.assertLess(loss[-1][1], loss[0][1] - TEXTCLS_MARGIN, loss)
        print("  fortunes, review-textcls: val_loss %s" % loss, file=sys.stderr)

    def test_chatbot_gpt2_learns_fortunes(self):
        self.wait_ended("chatbot-gpt2")
        job_id = self.jobs["chatbot-gpt2"]["id"]
        self.assert_trained("chatbot-gpt2", REAL["chatbot-gpt2"]["steps"])
        loss = self.evals(job_id, "val_loss")
        self.assertEqual(len(loss), 4, loss)
        self.assertLess(loss[-1][1], loss[0][1] - CHAT_MARGIN, loss)
        out = self.jobs["chatbot-gpt2"]["spec"]["output_dir"]
        self.assertTrue(os.path.isfile(os.path.join(out, "config.json")))
        print("  fortunes, chatbot-gpt2: val_loss %s" % loss, file=sys.stderr)

    # ------------------------------------------------------------ synthetic data

    def test_synthetic_templates_succeed(self):
        for tid, params in SYNTHETIC.items():
            with self.subTest(template=tid):
                self.wait_ended(tid)
                if tid == "sleep-test":
                    continue
                if tid == "ddp-mlp-demo":  # the platform's own demo: no summary
                    ms = [m for m in self.metrics(self.jobs[tid]["id"]) if "loss" in m["values"]]
                    self.assertEqual([m["step"] for m in ms], list(range(1, 21)))
                    continue
                self.assert_trained(tid, params["steps"])
        st, v, _ = self.admin.get("/api/v1/audit/verify")
        self.assertTrue(v["valid"], v)

    def test_every_template_was_run(self):
        st, body, _ = self.admin.get("/api/v1/templates")
        ids = {t["id"] for t in body["templates"]}
        self.assertEqual(ids, set(REAL) | set(SYNTHETIC))
        for key, job in self.jobs.items():
            self.assertEqual(job["spec"]["template"], key if key != "kill" else "defect-resnet50")


if __name__ == "__main__":
    harness.main()
