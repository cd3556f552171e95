#!/usr/bin/env python3
"""Template overhead: each training template's tiny config on the CPU,
launched through trainyard by template id (POST /api/v1/jobs with
{"template", "params"}) against the same expanded command started by hand
with the same environment, interleaved (round 1: platform, by hand, control;
round 2: by hand, control, platform; ...) so that a drift of the shared
machine does not favour one side. The control is a second by-hand run: its
ratio to the first shows how far two identical runs differ on this machine.

"The same environment" is the one the worker gave the rank: read from
/proc/PID/environ (and the working directory from /proc/PID/cwd) of the
rank of the template's first platform run, with only MASTER_PORT,
TRAINYARD_CHECKPOINT_DIR and TRAINYARD_OUTPUT_DIR pointed elsewhere for the
by-hand run. Throughput = median of rank 0's per-step samples_per_sec after
the first WARM fraction of the steps (platform: GET /jobs/{id}/metrics; by
hand: the TRAINYARD_METRIC lines on its stdout, a pipe as under the worker).

Usage: templates.py [--rounds 2] [--gpus 1] [--only ID[,ID...]] [--scale 1.0]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "launch"))
import common  # noqa: E402
from common import ROOT  # noqa: E402

WARM = 0.2
POLL_S = 1.0  # how often a running platform job is polled
TEMPLATES = os.path.join(ROOT, "templates")
EXAMPLES = os.path.join(ROOT, "examples")
# Each template's tiny config, synthetic data, steps for ~5-10 s on one CPU
# rank of the 2-core box; checkpoints and evaluations at the end only.
CASES = [
    ("ddp-mlp-demo", {"steps": 600}),
    ("defect-resnet50", {"arch": "tiny", "steps": 120, "batch": 32, "checkpoint_every": 100000,
                         "eval_every": 100000}),
    ("product-ddpm", {"size": "tiny", "steps": 80, "batch": 32, "checkpoint_every": 100000,
                      "eval_every": 100000}),
    ("product-embed", {"size": "tiny", "steps": 60, "batch": 32, "checkpoint_every": 100000,
                       "eval_every": 100000}),
    ("review-textcls", {"size": "tiny", "steps": 30, "batch": 32, "checkpoint_every": 100000,
                        "eval_every": 100000}),
    ("chatbot-gpt2", {"size": "tiny", "steps": 30, "batch": 16, "checkpoint_every": 100000,
                      "eval_every": 100000}),
    ("bench-resnet50", {"size": "tiny", "steps": 120, "batch": 32}),
    ("bench-gpt2", {"size": "tiny", "steps": 24, "batch": 16}),
]
# What the by-hand run must not share with the platform's run.
PRIVATE = ("MASTER_PORT", "TRAINYARD_CHECKPOINT_DIR", "TRAINYARD_OUTPUT_DIR",
           "TRAINYARD_RESUME_FROM")


def log(msg):
    print("[templates %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def steady(points):
    """points: [(step, samples_per_sec)]; median after warm-up."""
    points.sort()
    cut = int(len(points) * WARM)
    return statistics.median(v for _, v in points[cut:])


def rank_env(marker):
    """(environ dict, cwd) of the one process whose command line holds
    marker, or None while there is none."""
    for pid, _ in common.harness.processes_with_cmdline(marker):
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                raw = f.read()
            cwd = os.readlink("/proc/%d/cwd" % pid)
        except OSError:
            continue
        env = {}
        for item in raw.split(b"\0"):
            if b"=" in item:
                k, v = item.split(b"=", 1)
                env[k.decode()] = v.decode("utf-8", "replace")
        if "RANK" in env and "TRAINYARD_JOB_ID" in env:
            return env, cwd
    return None


CONTROL_PLANE = ("trainyard-server", "trainyard-worker", "postgres")


def control_plane_ticks():
    """{pid: utime+stime ticks} of the server, the worker and PostgreSQL
    (not the ranks: they are the worker's children with their own names)."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv0 = f.read().split(b"\0", 1)[0].decode(errors="replace")
            with open("/proc/%s/stat" % pid) as f:
                st = f.read()
        except OSError:
            continue
        if not any(n in argv0 for n in CONTROL_PLANE):
            continue
        fields = st[st.rfind(")") + 2:].split()
        out[pid] = int(fields[11]) + int(fields[12])
    return out


def cpu_share(before, after, seconds):
    """Percent of one core the control plane used between two snapshots."""
    ticks = sum(t - before.get(pid, 0) for pid, t in after.items())
    return 100.0 * ticks / os.sysconf("SC_CLK_TCK") / max(seconds, 1e-9)


def platform(ty, a, tid, params, i, marker, captured):
    body = {"template": tid, "team": "bench", "params": params, "name": "%s-%d" % (tid, i),
            "resources": {"gpus": a.gpus},
            "output_dir": os.path.join(ty.shared, "out", "%s-%d" % (tid, i))}
    st, job, _ = ty.admin.post("/api/v1/jobs", body)
    assert st == 201, job
    jid = job["id"]
    t0 = time.time()
    cp0 = control_plane_ticks()
    while True:
        j = ty.job(jid)
        if tid not in captured and j["state"] == "RUNNING":
            got = rank_env(marker)
            if got:
                captured[tid] = (job["spec"]["command"], got[0], got[1])
                log("  %s: the rank's env (names): %s" % (tid, " ".join(sorted(got[0]))))
        if j["state"] in ("SUCCEEDED", "FAILED", "CANCELLED"):
            break
        if time.time() - t0 > 900:
            raise RuntimeError("%s: job %s still %s" % (tid, jid, j["state"]))
        # Watching costs CPU on the rank's cores (a /proc scan, a GET that
        # the server and PostgreSQL answer), which the hand run does not
        # pay: scan often only until the env is captured, then poll
        # rarely. The wall time is read to within this interval.
        time.sleep(0.05 if tid not in captured else POLL_S)
    wall = time.time() - t0
    cpu = cpu_share(cp0, control_plane_ticks(), wall)
    assert j["state"] == "SUCCEEDED", (tid, j)
    steps = params["steps"]

    def all_metrics():
        m = [(p["step"], p["values"]["samples_per_sec"]) for p in ty.metrics(jid)
             if "samples_per_sec" in p["values"]]
        return m if len(m) >= steps else None
    return steady(common.wait_for(all_metrics, timeout=30, what="all metrics")), wall, cpu


def by_hand(tid, captured, tmp, i):
    command, env, cwd = captured[tid]
    env = dict(env)
    env["MASTER_PORT"] = str(common.harness.free_port())
    for k in ("TRAINYARD_CHECKPOINT_DIR", "TRAINYARD_OUTPUT_DIR"):
        if k in env:
            env[k] = os.path.join(tmp, "%s-%s-%s" % (tid, i, k.split("_")[1].lower()))
            os.makedirs(env[k], exist_ok=True)
    t0 = time.time()
    # (The worker may have removed the job's working directory since.)
    p = subprocess.Popen(command, env=env, cwd=cwd if os.path.isdir(cwd) else tmp,
                         stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    out = p.communicate(timeout=900)[0]
    wall = time.time() - t0
    assert p.returncode == 0, (tid, out[-3000:])
    pts = []
    for line in out.splitlines():
        if line.startswith("TRAINYARD_METRIC ") and "samples_per_sec" in line:
            m = json.loads(line[len("TRAINYARD_METRIC "):])
            pts.append((m["step"], m["samples_per_sec"]))
    return steady(pts), wall, 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--gpus", type=int, default=1, help="ranks per job (fake GPUs)")
    ap.add_argument("--only", default="", help="comma-separated template ids")
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every case's steps")
    a = ap.parse_args()
    if a.gpus != 1:
        sys.exit("templates.py: by hand runs rank 0 only; --gpus 1 for now")
    cases = [(t, dict(p, steps=max(5, int(p["steps"] * a.scale)))) for t, p in CASES
             if not a.only or t in a.only.split(",")]
    # The server's default scheduler interval: a faster one would be a
    # cost the platform does not have as shipped.
    ty = common.Trainyard(server_args=("--templates-dir", TEMPLATES, "--examples-dir", EXAMPLES))
    tmp = tempfile.mkdtemp(prefix="ty-tpl-hand-", dir=ty.shared)
    rows = {t: [] for t, _ in cases}
    captured = {}
    schemas = {}
    try:
        for tid, _ in cases:
            st, t, _ = ty.admin.get("/api/v1/templates/" + tid)
            assert st == 200, t
            schemas[tid] = t["params"]
        ty.add_worker("w", a.gpus)
        ty.wait_ready(1)
        # An uncounted platform run of each template first: it gives the
        # env the hand runs reuse, and its /proc scans (frequent until the
        # rank is found) then cost no measured run anything.
        for tid, params in cases:
            key = "seed" if "seed" in schemas[tid] else "checkpoint_every"
            params = dict(params, **{key: 10000 + os.getpid() % 90000})
            marker = "%s\0%d\0" % (schemas[tid][key]["arg"], params[key])
            log("capture, %s: platform (not counted)" % tid)
            platform(ty, a, tid, params, -1, marker, captured)
            if tid not in captured:
                raise RuntimeError("%s: the rank's environment was not captured" % tid)
        for i in range(a.rounds):
            # The order rotates (P H C, H C P, C P H, ...). C is a second hand run: C/H is the ratio of two runs
            # that differ in nothing, the noise floor that P/H is read
            # against.
            order = ("platform", "hand", "control")[i % 3:] + ("platform", "hand", "control")[:i % 3]
            for tid, params in cases:
                # A value unique to this benchmark run marks the rank's
                # command line (the platform run's, read for its env): the
                # seed, or for the demo (no seed) a checkpoint interval
                # past its last step.
                key = "seed" if "seed" in schemas[tid] else "checkpoint_every"
                params = dict(params, **{key: 10000 + os.getpid() % 90000})
                marker = "%s\0%d\0" % (schemas[tid][key]["arg"], params[key])
                got = {}
                for which in order:
                    log("round %d, %s: %s" % (i + 1, tid, which))
                    if which == "platform":
                        got[which] = platform(ty, a, tid, params, i, marker, captured)
                    else:
                        got[which] = by_hand(tid, captured, tmp, "%d%s" % (i, which))
                rows[tid].append((got["platform"], got["hand"], got["control"]))
                log("  %s: platform %.1f, by hand %.1f, control %.1f samples/s, ratio %.3f, "
                    "control %.3f" % (tid, got["platform"][0], got["hand"][0], got["control"][0],
                                      got["platform"][0] / got["hand"][0],
                                      got["control"][0] / got["hand"][0]))
    finally:
        ty.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print("### Templates through trainyard vs by hand: tiny configs, synthetic data, 1 CPU rank, "
          "%d rounds (P H C, H C P, C P H, ...)" % a.rounds)
    print()
    print("| template | steps | platform samples/s | by hand samples/s | ratio P/H |"
          " control C/H | per-round P/H | per-round C/H | platform wall s | by hand wall s |"
          " control plane CPU % |")
    print("|---|---:|---:|---:|---:|---:|---|---|---:|---:|---:|")
    ratios, controls, all_p, all_c = [], [], [], []
    for tid, params in cases:
        r = rows[tid]
        pm = statistics.median(x[0][0] for x in r)
        hm = statistics.median(x[1][0] for x in r)
        cm = statistics.median(x[2][0] for x in r)
        ratios.append(pm / hm)
        controls.append(cm / hm)
        all_p += [x[0][0] / x[1][0] for x in r]
        all_c += [x[2][0] / x[1][0] for x in r]
        print("| %s | %d | %.1f | %.1f | %.3f | %.3f | %s | %s | %.1f | %.1f | %.1f |" % (
            tid, params["steps"], pm, hm, pm / hm, cm / hm,
            ", ".join("%.3f" % (x[0][0] / x[1][0]) for x in r),
            ", ".join("%.3f" % (x[2][0] / x[1][0]) for x in r),
            statistics.median(x[0][1] for x in r), statistics.median(x[1][1] for x in r),
            statistics.median(x[0][2] for x in r)))
    print()
    med = statistics.median(ratios)
    print("Median P/H over templates: %.3f (range %.3f to %.3f); target >= 0.99: %s."
          % (med, min(ratios), max(ratios), "met" if med >= 0.99 else "NOT met"))
    print("Control C/H (two identical hand runs) over templates: median %.3f (range %.3f to %.3f)."
          % (statistics.median(controls), min(controls), max(controls)))
    print("All %d rounds pooled: P/H median %.3f, C/H median %.3f; P/H < 1 in %d rounds, "
          "C/H < 1 in %d." % (len(all_p), statistics.median(all_p), statistics.median(all_c),
                              sum(1 for v in all_p if v < 1), sum(1 for v in all_c if v < 1)))
    print("Throughput = median of rank 0's per-step samples_per_sec after the first %d %% of "
          "steps; platform wall = submit to SUCCEEDED, by hand wall = process start to exit; "
          "control plane CPU = the server's, the worker's and PostgreSQL's CPU time during the "
          "platform run, in percent of one core." % int(WARM * 100))


if __name__ == "__main__":
    main()
