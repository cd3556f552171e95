#!/usr/bin/env python3
"""Training overhead: examples/ddp_mlp.py with 2 ranks (gloo on CPU) launched
through trainyard vs the same 2 ranks started by hand with the same
environment (the worker's: PATH, HOME, LANG, PYTHONPATH plus the launcher
variables), alternating runs. Throughput = median samples_per_sec of rank 0's
per-step metrics after a warm-up (the first WARM fraction of steps).

Usage: train.py [--rounds 3] [--steps 1200]   (rounds alternate which runs first) [--hidden 256] [--batch 64]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "launch"))
import common  # noqa: E402
from common import PY, EXAMPLES  # noqa: E402

WARM = 0.2


def log(msg):
    print("[train %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def steady(points):
    """points: [(step, samples_per_sec)]; median after warm-up."""
    points.sort()
    cut = int(len(points) * WARM)
    return statistics.median(v for _, v in points[cut:])


def cmd(a):
    return [PY, os.path.join(EXAMPLES, "ddp_mlp.py"), "--steps", str(a.steps), "--hidden",
            str(a.hidden), "--batch", str(a.batch), "--checkpoint-every", "0",
            "--metric-every", str(a.metric_every)]


def cpu_s(pids):
    """utime + stime of these processes, seconds."""
    tot = 0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            tot += int(fields[11]) + int(fields[12])
        except (OSError, ValueError, IndexError):
            pass
    return tot / os.sysconf("SC_CLK_TCK")


def platform_pids(ty):
    """The server, the worker and the PostgreSQL backends of the test cluster."""
    pids = [ty.server.proc.pid] + [w.proc.pid for w in ty.workers]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    if ty.db.name.encode() in f.read():
                        pids.append(int(d))
            except OSError:
                pass
    return pids


def by_hand(a, port, ckdir):
    procs = []
    for rank in range(2):
        env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "PYTHONPATH") if k in os.environ}
        env.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2",
                    "LOCAL_WORLD_SIZE": "2", "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1",
                    "MASTER_PORT": str(port), "CUDA_VISIBLE_DEVICES": str(rank),
                    "TRAINYARD_JOB_ID": "0", "TRAINYARD_ATTEMPT": "1",
                    "TRAINYARD_CHECKPOINT_DIR": ckdir, "TRAINYARD_RESUME_FROM": "",
                    "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                    "HF_DATASETS_OFFLINE": "1"})
        procs.append(subprocess.Popen(cmd(a), env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True, cwd=ckdir))
    out = procs[0].communicate(timeout=600)[0]
    procs[1].wait(timeout=60)
    pts = []
    for line in out.splitlines():
        if line.startswith("TRAINYARD_METRIC ") and "samples_per_sec" in line:
            m = json.loads(line[len("TRAINYARD_METRIC "):])
            pts.append((m["step"], m["samples_per_sec"]))
    assert len(pts) == a.steps // a.metric_every, len(pts)
    return steady(pts)


def platform(ty, a, i):
    pids = platform_pids(ty)
    c0 = cpu_s(pids)
    jid = ty.submit("train-%d" % i, cmd(a), gpus=2)
    j = ty.wait_state(jid, ("SUCCEEDED", "FAILED"), timeout=600, interval=0.5)
    a.platform_cpu.append(cpu_s(pids) - c0)
    assert j["state"] == "SUCCEEDED", j
    want = a.steps // a.metric_every

    def got():
        m = [(p["step"], p["values"]["samples_per_sec"]) for p in ty.metrics(jid)
             if "samples_per_sec" in p["values"]]
        return m if len(m) >= want else None
    pts = common.wait_for(got, timeout=30, what="all metrics")
    return steady(pts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--metric-every", type=int, default=1)
    a = ap.parse_args()
    a.platform_cpu = []
    ty = common.Trainyard()
    ck = tempfile.mkdtemp(prefix="ty-train-hand-")
    rows = []
    try:
        ty.add_worker("w2", 2)
        ty.wait_ready(1)
        for i in range(a.rounds):
            got = {}
            # ABAB... would favour whichever runs second when the box drifts: alternate.
            for which in (("hand", "trainyard") if i % 2 == 0 else ("trainyard", "hand")):
                log("round %d: %s" % (i + 1, which))
                t0 = time.time()
                if which == "hand":
                    v = by_hand(a, common.harness.free_port(), ck)
                else:
                    v = platform(ty, a, i)
                got[which] = (v, time.time() - t0)
            rows.append((i + 1, got["hand"][0], got["hand"][1], got["trainyard"][0],
                         got["trainyard"][1]))
    finally:
        ty.close()
        subprocess.run(["rm", "-rf", ck])
    print("### Training overhead: examples/ddp_mlp.py, 2 ranks (gloo, CPU), %d steps, hidden %d, "
          "batch %d per rank, a metric line every %d step(s)" % (a.steps, a.hidden, a.batch,
                                                                 a.metric_every))
    print()
    print("| round | by hand samples/s | by hand wall s | trainyard samples/s | trainyard wall s (submit to SUCCEEDED) | ratio |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r, h, th, p, tp in rows:
        print("| %d | %.0f | %.1f | %.0f | %.1f | %.3f |" % (r, h, th, p, tp, p / h))
    hm = statistics.median(r[1] for r in rows)
    pm = statistics.median(r[3] for r in rows)
    print()
    print("Median over rounds: by hand %.0f, trainyard %.0f samples/s; ratio %.3f (target >= 0.99: %s)."
          % (hm, pm, pm / hm, "met" if pm / hm >= 0.99 else "NOT met"))
    print("CPU used by trainyard itself (server + worker + its PostgreSQL backends) per "
          "platform run: median %.1f s, i.e. %.0f %% of one core over the run (2 cores, shared)."
          % (statistics.median(a.platform_cpu), 100 * statistics.median(a.platform_cpu) /
             statistics.median(r[4] for r in rows)))
    print("Throughput = median of rank 0's per-step samples_per_sec after the first %d %% of steps."
          % int(WARM * 100))


if __name__ == "__main__":
    main()
