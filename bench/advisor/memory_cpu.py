#!/usr/bin/env python3
"""bench/advisor/memory_cpu.py - the advisor's predicted memory against what
each template script measures, on the CPU (no GPU needed).

For each template script at --size tiny:
  1. the model in the advisor's terms: bench_gpt2's tiny GPT-2 by its shape
     (an analytic prediction of parameters and activations); every other
     script as a measured model (docs/advisor.md "measured"), its parameter
     count and per-sample saved activations taken from a calibration run of
     one rank at micro-batch 1 - so for those the activation row checks how
     the advisor scales a measurement to the planned micro-batch, not an
     analytic count;
  2. the advisor's plan (advise_json, the JSON layer POST /api/v1/advisor
     uses) for 2 CPU processes on this machine, global batch 16;
  3. two gloo ranks run a few steps with the plan's env (TRAINYARD_STRATEGY,
     _MICRO_BATCH, _GRAD_ACCUM, _PRECISION), and rank 0's TRAINYARD_METRIC
     sizes (param_bytes + grad_bytes + optim_state_bytes, activation_bytes:
     saved_tensors_hooks) are compared with the plan's "predicted".
Prints a markdown table: model | predicted | measured | error %.
Target: at most 15 % each.

Usage: bench/advisor/memory_cpu.py [--build DIR] [--steps N]
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(ROOT, "examples")
PY = os.environ.get("TRAINYARD_BENCH_PYTHON", "/usr/bin/python3")  # Debian's PyTorch
GLOBAL_BATCH = 16
WORLD = 2

TINY_GPT2 = {"transformer": {"arch": "decoder", "layers": 2, "hidden": 64, "heads": 4, "ffn": 256,
                             "vocab": 512, "seq_len": 64, "positions": 64, "dropout": False},
             "attention": "eager", "label": "gpt2-tiny"}

# (template, script); None: calibrate a measured model.
SCRIPTS = [
    ("bench-gpt2", "bench_gpt2.py", TINY_GPT2),
    ("chatbot-gpt2", "chat_gpt2.py", None),
    ("review-textcls", "review_textcls.py", None),
    ("defect-resnet50", "defect_classify.py", None),
    ("product-embed", "product_embed.py", None),
    ("product-ddpm", "product_ddpm.py", None),
    ("bench-resnet50", "bench_resnet50.py", None),
]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run(tmp, script, args, env, world):
    """Run world ranks by hand; rank 0's last TRAINYARD_METRIC with sizes."""
    port = free_port()
    procs, logs = [], []
    for r in range(world):
        e = {k: v for k, v in os.environ.items() if not k.startswith("TRAINYARD_")}
        e.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": str(world),
                  "RANK": str(r), "LOCAL_RANK": str(r), "LOCAL_WORLD_SIZE": str(world),
                  "CUDA_VISIBLE_DEVICES": "", "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"})
        e.update(env)
        log = os.path.join(tmp, "%s.%d.log" % (script, r))
        logs.append(log)
        with open(log, "wb") as f:
            procs.append(subprocess.Popen([PY, os.path.join(EXAMPLES, script)] + args, stdout=f,
                                          stderr=subprocess.STDOUT, env=e, cwd=tmp))
    rcs = [p.wait(600) for p in procs]
    with open(logs[0], encoding="utf-8", errors="replace") as f:
        text = f.read()
    if any(rcs):
        raise RuntimeError("%s exited %s:\n%s" % (script, rcs, text[-2000:]))
    sizes, applied = None, {}
    for line in text.splitlines():
        if line.startswith("TRAINYARD_PLAN_APPLIED "):
            applied = json.loads(line[len("TRAINYARD_PLAN_APPLIED "):])
        if line.startswith("TRAINYARD_METRIC "):
            m = json.loads(line[len("TRAINYARD_METRIC "):])
            if "param_bytes" in m:
                sizes = m
    if sizes is None:
        raise RuntimeError("%s printed no sizes:\n%s" % (script, text[-2000:]))
    return sizes, applied


def optimizer_of(applied):
    """The advisor's name for the optimizer the script reported using
    (make_optimizer: SGD always with momentum 0.9)."""
    name = applied.get("optimizer", "")
    if "SGD" in name:
        return "sgd-momentum"
    if "AdamW" in name:
        return "adamw"
    return "adam" if "Adam" in name else "adamw"


def advise(build, model, ram, optimizer):
    req = {"model": model, "global_batch": GLOBAL_BATCH, "optimizer": optimizer,
           "allocation": {"gpus": WORLD, "gpus_per_node": WORLD, "gpu_memory_bytes": 0,
                          "compute_capability": 0, "cpu_memory_per_node_bytes": ram},
           "strategy": "ddp"}
    out = subprocess.run([os.path.join(build, "bench", "advisor", "advise_json")],
                         input=json.dumps(req), capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def pct(pred, meas):
    return 100.0 * (pred - meas) / meas if meas else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--steps", type=int, default=2)
    a = ap.parse_args()
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    tmp = tempfile.mkdtemp(prefix="ty-advmem-")
    rows, worst = [], 0.0
    for tpl, script, model in SCRIPTS:
        base = ["--size", "tiny", "--steps", str(a.steps)]
        # One rank, one sample per step: the optimizer the script uses, and
        # for a measured model its parameters and one sample's activations.
        cal, applied = run(tmp, script, base + ["--batch", "1"], {"TRAINYARD_MICRO_BATCH": "1"}, 1)
        if model is None:
            model = {"measured": {"params": cal["param_bytes"] // 4,
                                  "activation_bytes_per_sample": max(1, cal["activation_bytes"])},
                     "label": tpl + "-tiny"}
        plan = advise(a.build, model, ram, optimizer_of(applied))
        env = {k: v for k, v in plan["config"]["env"].items()
               if k in ("TRAINYARD_STRATEGY", "TRAINYARD_MICRO_BATCH", "TRAINYARD_GRAD_ACCUM",
                        "TRAINYARD_PRECISION", "TRAINYARD_ACTIVATION_CHECKPOINTING")}
        m, _ = run(tmp, script, base + ["--batch", str(GLOBAL_BATCH)], env, WORLD)
        p = plan["predicted"]
        ms = m["param_bytes"] + m["grad_bytes"] + m["optim_state_bytes"]
        e1, e2 = pct(p["model_state_bytes"], ms), pct(p["activation_bytes"], m["activation_bytes"])
        worst = max(worst, abs(e1), abs(e2))
        rows.append("| %s (`%s`, %s, %s) | micro %d x accum %d | %d | %d | %+.1f | %d | %d | %+.1f |" % (
            tpl, script, "shape" if "transformer" in model else "measured", optimizer_of(applied),
            plan["micro_batch"],
            plan["grad_accum"], p["model_state_bytes"], ms, e1, p["activation_bytes"],
            m["activation_bytes"], e2))
        print("  %s done" % script, file=sys.stderr, flush=True)
    print("| template (script, model, optimizer) | plan | predicted model states | measured | error % "
          "| predicted activations | measured | error % |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(r)
    print()
    print("target: at most 15 %% per size: %s (worst %.1f %%)" % ("met" if worst <= 15 else "NOT met",
                                                                   worst))


if __name__ == "__main__":
    main()
