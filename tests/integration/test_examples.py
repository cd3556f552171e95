"""The template library's training scripts (examples/), started by hand.

No platform and no database: each test starts the ranks itself, two gloo
ranks on the CPU with the env the worker would set (RANK, WORLD_SIZE,
MASTER_ADDR/PORT, TRAINYARD_CHECKPOINT_DIR, ...) plus the advisor's plan
env, and reads what rank 0 prints (TRAINYARD_PLAN_APPLIED, TRAINYARD_METRIC,
TRAINYARD_CHECKPOINT). What the tests prove:

- every script, tiny size, synthetic data: exits 0 on both ranks, logs the
  plan it applied, prints metrics with the loss, the learning rate, the
  throughput and the measured sizes, validates, checkpoints (announced
  files that load), and writes model.pt and metrics.json;
- the plan: ZeRO-1 (ZeroRedundancyOptimizer) and micro-batch x accumulation
  give the same training as plain DDP with the whole micro-batch, and so
  does activation checkpointing; a global batch that cannot be split is
  reported as the batch reached; bf16 autocast on the CPU; FSDP and
  DeepSpeed, which Debian's PyTorch 1.13 lacks, and fp16 on the CPU are
  refused with the missing piece named;
- the measured sizes equal the analytic counts (parameters, gradients,
  Adam's state in whole and per ZeRO-1 shard, GPT-2's saved activations
  per Korthikanti et al. with and without recomputation);
- kill -9 of both ranks after a checkpoint, then a run with
  TRAINYARD_RESUME_FROM: the step counter continues from the checkpoint and
  the run ends exactly where an uninterrupted one does (model, optimizer
  and data position restored);
- real data from Debian packages: sklearn's digits as an image folder
  (defect_classify and product_embed reach validation accuracy >= 0.90) and
  fortunes-zh (review_textcls and chat_gpt2: validation loss falls below
  the first evaluation's by a stated margin).

Each test's wall time is printed at its end and as a table at the end.
"""
import importlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import free_port, wait_for  # noqa: E402

PY = "/usr/bin/python3"
EXAMPLES = os.path.join(os.path.abspath(harness.SRC), "examples")
SCRIPTS = ("defect_classify.py", "product_ddpm.py", "product_embed.py", "review_textcls.py",
           "chat_gpt2.py", "bench_resnet50.py", "bench_gpt2.py")
WALL = []  # (test, seconds)

# Margins the real-data tests hold the scripts to (validation loss in nats,
# the last evaluation against the first).
TEXTCLS_MARGIN = 0.15
CHAT_MARGIN = 0.5


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def lines_of(text, kind):
    out = []
    for line in text.splitlines():
        if line.startswith(kind + " "):
            out.append(json.loads(line[len(kind) + 1:]))
    return out


class Run:
    """The ranks of one training run started by hand; rank i's stdout and
    stderr go to <dir>/rank<i>.log."""

    def __init__(self, tmp, script, args=(), env=None, world=2, name="run"):
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir, exist_ok=True)
        port = free_port()
        self.procs, self.logs = [], []
        for r in range(world):
            e = {k: v for k, v in os.environ.items() if not k.startswith("TRAINYARD_")}
            e.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": str(world),
                      "RANK": str(r), "LOCAL_RANK": str(r), "LOCAL_WORLD_SIZE": str(world),
                      "CUDA_VISIBLE_DEVICES": "", "PYTHONUNBUFFERED": "1"})
            e.update(env or {})
            log = os.path.join(self.dir, "rank%d.log" % r)
            with open(log, "wb") as f:
                self.procs.append(subprocess.Popen([PY, os.path.join(EXAMPLES, script)] + list(args),
                                                   stdout=f, stderr=subprocess.STDOUT, env=e,
                                                   cwd=self.dir))
            self.logs.append(log)

    def wait(self, timeout=300):
        deadline = time.time() + timeout
        for p in self.procs:
            try:
                p.wait(max(1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                self.kill()
                raise AssertionError("ranks still running after %d s:\n%s" % (timeout, self.text()[-3000:]))
        return [p.returncode for p in self.procs]

    def kill(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
        for p in self.procs:
            p.wait()

    def text(self, rank=0):
        with open(self.logs[rank], encoding="utf-8", errors="replace") as f:
            return f.read()

    def metrics(self):
        return [m for m in lines_of(self.text(), "TRAINYARD_METRIC") if "loss" in m]

    def evals(self, name):
        return [(m["step"], m[name]) for m in lines_of(self.text(), "TRAINYARD_METRIC") if name in m]

    def plan(self):
        got = lines_of(self.text(), "TRAINYARD_PLAN_APPLIED")
        assert len(got) == 1, "want one TRAINYARD_PLAN_APPLIED line:\n" + self.text()[-3000:]
        return got[0]

    def checkpoints(self):
        return lines_of(self.text(), "TRAINYARD_CHECKPOINT")


class ExamplesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp_obj = tempfile.TemporaryDirectory(prefix="trainyard-examples-")
        cls.tmp = cls.tmp_obj.name

    @classmethod
    def tearDownClass(cls):
        cls.tmp_obj.cleanup()
        if WALL:
            print("\nwall time per test:", file=sys.stderr)
            for name, s in WALL:
                print("  %-58s %6.1f s" % (name, s), file=sys.stderr)
            print("  %-58s %6.1f s" % ("total", sum(s for _, s in WALL)), file=sys.stderr)

    def setUp(self):
        self.t0 = time.monotonic()

    def tearDown(self):
        s = time.monotonic() - self.t0
        WALL.append((self.id().split(".", 1)[1], s))
        print("  [%s: %.1f s]" % (self._testMethodName, s), file=sys.stderr, flush=True)

    # ------------------------------------------------------------ helpers

    def run_ok(self, script, args=(), env=None, name=None, timeout=300):
        run = Run(self.tmp, script, args, env, name=name or "%s-%s" % (script, self._testMethodName))
        rcs = run.wait(timeout)
        self.assertEqual(rcs, [0, 0], "rank exit codes; rank 0 log:\n%s\nrank 1 log:\n%s"
                         % (run.text(0)[-4000:], run.text(1)[-2000:]))
        return run

    def assert_common(self, run, steps, ckpt_dir, out_dir, val_metric=None):
        """What every script's run must show."""
        plan = run.plan()
        self.assertEqual(plan["world_size"], 2)
        self.assertIn("plan applied: strategy %s" % plan["strategy"], run.text())
        self.assertIn("rank 1 of 2 ready", run.text(1))
        ms = run.metrics()
        self.assertEqual([m["step"] for m in ms], list(range(1, steps + 1)))
        for m in ms:
            self.assertTrue(math.isfinite(m["loss"]), m)
            self.assertGreater(m["samples_per_sec"], 0, m)
            self.assertIn("lr", m)
            for k in ("param_bytes", "grad_bytes", "optim_state_bytes", "activation_bytes", "rss_peak_bytes"):
                self.assertGreater(m.get(k, 0), 0, "%s missing in %s" % (k, m))
            # No GPU here: CUDA's peak is not reported (RSS has its own name).
            self.assertNotIn("peak_mem_bytes", m)
        self.assertEqual(ms[0]["grad_bytes"], ms[0]["param_bytes"])  # fp32, all trainable
        if val_metric:
            self.assertTrue(run.evals(val_metric), "no %s metric" % val_metric)
        import torch
        ck = run.checkpoints()
        self.assertEqual([c["step"] for c in ck], list(range(2, steps + 1, 2)))
        for c in ck[-2:]:  # --keep-checkpoints 2 removes older ones
            self.assertEqual(os.path.dirname(c["path"]), ckpt_dir)
            state = torch.load(c["path"], map_location="cpu")
            self.assertEqual(state["step"], c["step"])
            for k in ("model", "optimizer", "data"):
                self.assertIn(k, state)
        self.assertEqual(sorted(os.listdir(ckpt_dir)), sorted(os.path.basename(c["path"]) for c in ck[-2:]))
        summary = load_json(os.path.join(out_dir, "metrics.json"))
        self.assertEqual(summary["steps"], steps)
        self.assertEqual(summary["final"]["step"], steps)
        self.assertTrue(os.path.getsize(os.path.join(out_dir, "model.pt")) > 0)
        return plan, ms

    def synthetic(self, script, env=None, args=(), val_metric="val_loss", steps=4):
        ck = os.path.join(self.tmp, script + "-ck")
        out = os.path.join(self.tmp, script + "-out")
        env = dict(env or {}, TRAINYARD_CHECKPOINT_DIR=ck)
        run = self.run_ok(script, ["--size", "tiny", "--steps", str(steps), "--checkpoint-every", "2",
                                   "--eval-every", "2", "--output", out] + list(args), env)
        plan, ms = self.assert_common(run, steps, ck, out, val_metric)
        self.assertTrue(plan["synthetic"])
        return run, plan, ms, out

    # ------------------------------------------------------------ every script, synthetic data

    def test_defect_classify_synthetic_zero1_accumulation(self):
        run, plan, ms, out = self.synthetic("defect_classify.py", {
            "TRAINYARD_STRATEGY": "zero1", "TRAINYARD_MICRO_BATCH": "4", "TRAINYARD_GRAD_ACCUM": "2"},
            ["--batch", "16"], val_metric="val_acc")
        self.assertEqual((plan["strategy"], plan["optimizer"]), ("zero1", "ZeroRedundancyOptimizer(AdamW)"))
        self.assertEqual((plan["micro_batch"], plan["grad_accum"], plan["global_batch"]), (4, 2, 16))
        self.assertTrue(plan["global_batch_reached"])
        self.assertIn("micro-batch 4 x accumulation 2 x 2 ranks = global batch 16,", run.text())
        # ZeRO-1: rank 0 holds part of Adam's state; all of it is 2 fp32
        # moments per parameter plus a 4-byte step per parameter tensor.
        m = ms[0]
        extra = m["optim_state_bytes_total"] - 2 * m["param_bytes"]
        self.assertTrue(0 < extra < 4 * 200 and extra % 4 == 0, m)
        self.assertLess(m["optim_state_bytes"], m["optim_state_bytes_total"])
        self.assertTrue(os.path.isfile(os.path.join(out, "classes.json")))

    def test_product_ddpm_synthetic_writes_samples(self):
        # --output wins over TRAINYARD_OUTPUT_DIR.
        elsewhere = os.path.join(self.tmp, "ddpm-env-output")
        run, plan, ms, out = self.synthetic("product_ddpm.py", {"TRAINYARD_OUTPUT_DIR": elsewhere},
                                            args=["--samples", "4"])
        self.assertFalse(os.path.exists(elsewhere))
        self.assertEqual(plan["strategy"], "ddp")
        pngs = sorted(os.listdir(os.path.join(out, "samples")))
        self.assertEqual(pngs, ["sample-%03d.png" % i for i in range(4)])
        from PIL import Image
        with Image.open(os.path.join(out, "samples", pngs[0])) as im:
            self.assertEqual(im.size, (16, 16))
        self.assertTrue(os.path.isfile(os.path.join(out, "samples.png")))

    def test_product_embed_synthetic(self):
        run, plan, ms, out = self.synthetic("product_embed.py", val_metric="val_recall_at_5")
        self.assertTrue(run.evals("val_top1") and run.evals("val_recall_at_1"))
        import torch
        g = torch.load(os.path.join(out, "gallery.pt"))
        self.assertEqual(tuple(g["embeddings"].shape), (len(g["labels"]), 64))

    def test_review_textcls_synthetic_bf16_checkpointing(self):
        run, plan, ms, out = self.synthetic("review_textcls.py", {
            "TRAINYARD_PRECISION": "bf16", "TRAINYARD_ACTIVATION_CHECKPOINTING": "1"}, val_metric="val_acc")
        self.assertEqual(plan["precision"], "bf16")
        self.assertTrue(plan["activation_checkpointing"])
        self.assertEqual(plan["checkpointed_modules"], 2)
        self.assertIn("precision bf16, activation checkpointing on 2 modules (2 encoder layers)", run.text())
        self.assertTrue(os.path.isfile(os.path.join(out, "vocab.json")))

    def test_chat_gpt2_synthetic_zero1_sizes(self):
        run, plan, ms, out = self.synthetic("chat_gpt2.py", {
            "TRAINYARD_STRATEGY": "zero1", "TRAINYARD_MICRO_BATCH": "2", "TRAINYARD_GRAD_ACCUM": "4"},
            ["--batch", "16"])
        self.assertEqual((plan["strategy"], plan["micro_batch"], plan["grad_accum"], plan["global_batch"]),
                         ("zero1", 2, 4, 16))
        # GPT-2 tiny: V=259 bytes+specials, 128 positions, 2 layers of width 64.
        V, T, L, d = 259, 128, 2, 64
        params = V * d + T * d + L * (12 * d * d + 13 * d) + 2 * d
        tensors = 4 + 12 * L
        m = ms[0]
        self.assertEqual(m["param_bytes"], 4 * params)
        self.assertEqual(m["grad_bytes"], 4 * params)
        self.assertEqual(m["optim_state_bytes_total"], 8 * params + 4 * tensors)
        share = m["optim_state_bytes"] / m["optim_state_bytes_total"]
        self.assertTrue(0.3 < share < 0.7, "rank 0's ZeRO-1 share %.2f" % share)
        cfg = load_json(os.path.join(out, "config.json"))
        self.assertEqual(cfg["param_count"], params)
        self.assertEqual(cfg["tokenizer"]["type"], "bytes")

    def test_bench_resnet50_synthetic_accumulation_only(self):
        run, plan, ms, out = self.synthetic("bench_resnet50.py", {"TRAINYARD_GRAD_ACCUM": "2"},
                                            val_metric=None)
        # --batch 32 on 2 ranks with accumulation 2 from the plan: micro-batch 8.
        self.assertEqual((plan["micro_batch"], plan["grad_accum"], plan["global_batch"]), (8, 2, 32))
        self.assertEqual((plan["micro_batch_from"], plan["grad_accum_from"]), ("split", "plan"))
        self.assertTrue(all(m["img_per_sec"] == m["samples_per_sec"] for m in ms))
        self.assertIn("throughput: ", run.text())

    def test_bench_gpt2_synthetic_batch_not_reachable(self):
        run, plan, ms, out = self.synthetic("bench_gpt2.py", {"TRAINYARD_MICRO_BATCH": "4"},
                                            ["--batch", "10"], val_metric=None)
        # 10 over 2 ranks at micro-batch 4: accumulation 2 reaches 16, and says so.
        self.assertEqual((plan["micro_batch"], plan["grad_accum"], plan["global_batch"]), (4, 2, 16))
        self.assertFalse(plan["global_batch_reached"])
        self.assertIn("global batch 10 asked, 16 reached", run.text())
        for m in ms:  # sequence length 64 at tiny size
            self.assertAlmostEqual(m["tokens_per_sec"], 64 * m["seq_per_sec"], delta=1)

    # ------------------------------------------------------------ the plan changes how, not what

    def test_zero1_accumulation_and_checkpointing_train_the_same(self):
        """review_textcls (no dropout or batch norm at tiny size): DDP with
        micro-batch 8, ZeRO-1 with 2 x 4 micro-steps and DDP with activation
        checkpointing end at the same loss and validation loss."""
        # SGD: unlike Adam, it would notice gradients scaled by the wrong
        # accumulation factor.
        args = ["--size", "tiny", "--steps", "6", "--batch", "16", "--eval-every", "6",
                "--checkpoint-every", "0", "--optim", "sgd", "--lr", "0.1"]
        ref = self.run_ok("review_textcls.py", args, {"TRAINYARD_MICRO_BATCH": "8"}, name="same-ddp")
        zero = self.run_ok("review_textcls.py", args, {"TRAINYARD_STRATEGY": "zero1",
                                                       "TRAINYARD_MICRO_BATCH": "2",
                                                       "TRAINYARD_GRAD_ACCUM": "4"}, name="same-zero1")
        ckpt = self.run_ok("review_textcls.py", args, {"TRAINYARD_MICRO_BATCH": "8",
                                                       "TRAINYARD_ACTIVATION_CHECKPOINTING": "1"},
                           name="same-ckpt")
        self.assertEqual((zero.plan()["micro_batch"], zero.plan()["grad_accum"]), (2, 4))
        want = ref.metrics()[-1]
        for run in (zero, ckpt):
            got = run.metrics()[-1]
            self.assertAlmostEqual(got["loss"], want["loss"], delta=1e-4)
            self.assertAlmostEqual(got["val_loss"], want["val_loss"], delta=1e-4)
        self.assertLess(ckpt.metrics()[0]["activation_bytes"], ref.metrics()[0]["activation_bytes"])

    def test_refusals(self):
        """What this node cannot run is refused, the missing piece named,
        before any rendezvous (one rank is enough to see it)."""
        cases = [({"TRAINYARD_PRECISION": "fp16"}, "cuda", "fp16 needs CUDA"),
                 ({"TRAINYARD_STRATEGY": "zero7"}, None, "is not one of ddp, zero1"),
                 ({"TRAINYARD_MICRO_BATCH": "0"}, None, "TRAINYARD_MICRO_BATCH='0' is not an integer >= 1")]
        # Debian 12's PyTorch 1.13 fails to import FSDP and has no DeepSpeed;
        # where they import, the refusal is not expected.
        for module, strategy, words in (("torch.distributed.fsdp", "fsdp",
                                         "needs torch.distributed.fsdp, which does not import"),
                                        ("deepspeed", "zero3-offload", "needs DeepSpeed")):
            try:
                importlib.import_module(module)
            except Exception:
                cases.append(({"TRAINYARD_STRATEGY": strategy}, module, words))
        self.assertIn("fsdp", [env.get("TRAINYARD_STRATEGY") for env, _, _ in cases],
                      "FSDP imports with this PyTorch: the test expects Debian's 1.13")
        for env, missing, words in cases:
            run = Run(self.tmp, "chat_gpt2.py", ["--size", "tiny", "--steps", "2"], env, world=1,
                      name="refuse-%s" % "-".join(env.values()))
            self.assertEqual(run.wait(120), [2], run.text())
            text = run.text()
            refused = lines_of(text, "TRAINYARD_PLAN_REFUSED")
            self.assertEqual(len(refused), 1, text)
            self.assertIn(words, refused[0]["reason"])
            self.assertEqual(refused[0].get("missing"), missing, refused[0])
            self.assertIn("trainyard: refusing the plan: ", text)
            self.assertNotIn("TRAINYARD_PLAN_APPLIED", text)
            self.assertNotIn("TRAINYARD_METRIC", text)

    # ------------------------------------------------------------ sizes against analytic counts

    def test_sizes_match_analytic_counts(self):
        # ResNet-50 (torchvision): 25,557,032 parameters in 161 tensors;
        # Adam keeps 2 fp32 moments per parameter and a 4-byte step per
        # tensor; ZeRO-1 splits that over the 2 ranks.
        run = self.run_ok("bench_resnet50.py", ["--size", "full", "--image-size", "64", "--batch", "4",
                                                "--steps", "1", "--optim", "adam"],
                          {"TRAINYARD_STRATEGY": "zero1"}, name="sizes-resnet50")
        m = run.metrics()[0]
        P = 25557032
        self.assertEqual(m["param_bytes"], 4 * P)
        self.assertEqual(m["grad_bytes"], 4 * P)
        self.assertEqual(m["optim_state_bytes_total"], 8 * P + 4 * 161)
        share = m["optim_state_bytes"] / m["optim_state_bytes_total"]
        self.assertTrue(0.35 < share < 0.65, "rank 0's ZeRO-1 share %.2f" % share)

        # GPT-2 tiny in fp32 without dropout: Korthikanti et al.'s per-layer
        # activations without the dropout terms, s*b*h*(32 + 2*a*s/h) in
        # 16-bit, doubled for fp32, plus the fp32 log-softmax of the logits
        # (s*b*V*4) and the final norm's input and output (2*s*b*h*4). With
        # every block recomputed only each block's input stays (s*b*h*4).
        b, s, h, a, V, L = 8, 64, 64, 4, 512, 2
        outside = 4 * s * b * V + 8 * s * b * h
        full = L * 2 * s * b * h * (32 + 2 * a * s / h) + outside
        recomputed = L * 4 * s * b * h + outside
        for env, want in (({}, full), ({"TRAINYARD_ACTIVATION_CHECKPOINTING": "1"}, recomputed)):
            run = self.run_ok("bench_gpt2.py", ["--size", "tiny", "--steps", "1"], env,
                              name="sizes-gpt2-%d" % len(env))
            m = run.metrics()[0]
            self.assertEqual(run.plan()["micro_batch"], b)
            self.assertLess(abs(m["activation_bytes"] - want) / want, 0.02,
                            "measured %d, analytic %d (%s)" % (m["activation_bytes"], want, env))
            d = h
            self.assertEqual(m["param_bytes"], 4 * (V * d + 64 * d + L * (12 * d * d + 13 * d) + 2 * d))
            print("  gpt2 tiny activations%s: measured %d, analytic %d (%+.2f %%)"
                  % (" (recomputed)" if env else "", m["activation_bytes"], want,
                     100.0 * (m["activation_bytes"] - want) / want), file=sys.stderr)

    # ------------------------------------------------------------ kill -9 and resume

    def test_kill_and_resume_continues_the_step_counter(self):
        args = ["--size", "tiny", "--steps", "40", "--checkpoint-every", "4", "--eval-every", "0",
                "--batch", "8"]
        ck = os.path.join(self.tmp, "resume-ck")
        run = Run(self.tmp, "chat_gpt2.py", args, {"TRAINYARD_CHECKPOINT_DIR": ck}, name="resume-killed")
        first = wait_for(lambda: run.checkpoints() or any(p.poll() is not None for p in run.procs),
                         timeout=120, what="the first checkpoint")
        run.kill()
        self.assertTrue(isinstance(first, list), "a rank ended before the first checkpoint:\n" + run.text())
        self.assertEqual([p.returncode for p in run.procs], [-signal.SIGKILL] * 2,
                         "the run ended before it was killed")
        ckpt = run.checkpoints()[-1]
        killed_at = max(m["step"] for m in run.metrics())
        self.assertLess(killed_at, 40)
        # Only whole checkpoints carry a checkpoint's name.
        self.assertTrue(os.path.isfile(ckpt["path"]))

        resumed = self.run_ok("chat_gpt2.py", args, {"TRAINYARD_CHECKPOINT_DIR": ck,
                                                     "TRAINYARD_RESUME_FROM": ckpt["path"]}, name="resume-2")
        n = ckpt["step"]
        self.assertIn("resumed from %s at step %d" % (ckpt["path"], n), resumed.text())
        self.assertEqual(resumed.plan()["start_step"], n)
        steps = [m["step"] for m in resumed.metrics()]
        self.assertEqual(steps, list(range(n + 1, 41)))
        self.assertEqual(resumed.checkpoints()[0]["step"], (n // 4 + 1) * 4)
        self.assertFalse([f for f in os.listdir(ck) if ".tmp." in f], os.listdir(ck))

        # The same run without the kill ends at the same loss: optimizer
        # state and data position came back with the model.
        whole = self.run_ok("chat_gpt2.py", args, {"TRAINYARD_CHECKPOINT_DIR": os.path.join(self.tmp, "whole-ck")},
                            name="resume-whole")
        want = {m["step"]: m["loss"] for m in whole.metrics()}
        for m in resumed.metrics():
            self.assertAlmostEqual(m["loss"], want[m["step"]], delta=1e-5, msg="step %d" % m["step"])
        print("  killed at step %d, resumed from checkpoint %d" % (killed_at, n), file=sys.stderr)

    # ------------------------------------------------------------ real data

    def digits(self):
        path = os.path.join(self.tmp, "digits")
        if not os.path.isdir(path):
            out = subprocess.run([PY, os.path.join(EXAMPLES, "data", "digits_to_folder.py"), path],
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("wrote 1797 images (32x32) in 10 classes", out.stdout)
        return path

    def fortunes(self):
        path = os.path.join(self.tmp, "fortunes")
        if not os.path.isdir(path):
            out = subprocess.run([PY, os.path.join(EXAMPLES, "data", "fortunes_to_sets.py"), path,
                                  "--max-per-class", "500", "--max-pairs", "1500"],
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(out.returncode, 0, out.stderr)
        return path

    def test_real_digits_defect_classify(self):
        out = os.path.join(self.tmp, "digits-defect-out")
        run = self.run_ok("defect_classify.py", ["--size", "tiny", "--data", self.digits(), "--steps", "120",
                                                 "--eval-every", "40", "--checkpoint-every", "0",
                                                 "--output", out])
        self.assertFalse(run.plan()["synthetic"])
        self.assertIn("10 classes, 1438 train / 359 validation images", run.text())
        acc = run.evals("val_acc")
        self.assertGreaterEqual(acc[-1][1], 0.90, acc)
        self.assertEqual(load_json(os.path.join(out, "classes.json"))["classes"],
                         [str(i) for i in range(10)])
        print("  digits, defect_classify: val_acc %s" % acc, file=sys.stderr)

    def test_real_digits_product_embed(self):
        # The data and output paths from the env, as the platform gives them.
        out = os.path.join(self.tmp, "digits-embed-out")
        run = self.run_ok("product_embed.py", ["--size", "tiny", "--steps", "120", "--eval-every", "40",
                                               "--checkpoint-every", "0"],
                          {"TRAINYARD_DATA": self.digits(), "TRAINYARD_OUTPUT_DIR": out})
        self.assertIn("data: %s, 10 classes" % self.digits(), run.text())
        self.assertTrue(os.path.isfile(os.path.join(out, "gallery.pt")))
        top1, r1 = run.evals("val_top1"), run.evals("val_recall_at_1")
        self.assertGreaterEqual(top1[-1][1], 0.90, top1)
        self.assertGreaterEqual(r1[-1][1], 0.90, r1)
        self.assertTrue(run.evals("val_recall_at_5"))
        print("  digits, product_embed: val_top1 %s, val_recall_at_1 %s" % (top1, r1), file=sys.stderr)

    def test_real_fortunes_review_textcls(self):
        data = os.path.join(self.fortunes(), "textcls.tsv")
        run = self.run_ok("review_textcls.py", ["--size", "tiny", "--data", data, "--steps", "60",
                                                "--eval-every", "10", "--checkpoint-every", "0"])
        self.assertIn("3 labels ['chinese', 'song100', 'tang300']", run.text())
        loss = run.evals("val_loss")
        self.assertEqual(len(loss), 6)
        self.assertLess(loss[-1][1], loss[0][1] - TEXTCLS_MARGIN, loss)
        acc = run.evals("val_acc")[-1][1]
        self.assertGreater(acc, 0.5, "3 labels of about the same size: better than the majority")
        print("  fortunes, review_textcls: val_loss %s, val_acc %.3f" % (loss, acc), file=sys.stderr)

    def test_real_fortunes_chat_gpt2(self):
        data = os.path.join(self.fortunes(), "chat.jsonl")
        out = os.path.join(self.tmp, "chat-out")
        run = self.run_ok("chat_gpt2.py", ["--size", "tiny", "--data", data, "--steps", "60",
                                           "--eval-every", "10", "--checkpoint-every", "0", "--output", out])
        loss = run.evals("val_loss")
        self.assertEqual(len(loss), 6)
        self.assertLess(loss[-1][1], loss[0][1] - CHAT_MARGIN, loss)
        self.assertIn("sample: ", run.text())
        # What a later serving step gets: the config and weights that load
        # into the script's own model.
        sys.path.insert(0, EXAMPLES)
        try:
            import chat_gpt2
            import torch
            cfg = load_json(os.path.join(out, "config.json"))
            model = chat_gpt2.GPT(chat_gpt2.GPTConfig(**cfg["model"]))
            model.load_state_dict(torch.load(os.path.join(out, "model.pt")))
            self.assertEqual(sum(p.numel() for p in model.parameters()), cfg["param_count"])
        finally:
            sys.path.remove(EXAMPLES)
        print("  fortunes, chat_gpt2: val_loss %s" % loss, file=sys.stderr)


if __name__ == "__main__":
    harness.main()
