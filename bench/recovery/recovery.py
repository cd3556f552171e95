#!/usr/bin/env python3
"""Recovery time: kill -9 of one worker of a 2-node DDP job (examples/ddp_mlp.py,
one rank per node, checkpoint every 10 steps) to the first metric line of the
new attempt (training resumed from the checkpoint). The sequence of
tests/integration/test_e2e_training.py test_2: kill -9, the server declares
the node down after --node-timeout-s, the worker is started again (as a
service manager would) as soon as the node shows down, the job is re-placed.
Also the workers' RSS (VmRSS) while ranks run.

Usage: recovery.py --timeouts 10,4 --reps 2
"""
import argparse
import datetime
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "launch"))
import common  # noqa: E402
from common import PY, EXAMPLES, wait_for  # noqa: E402


def log(msg):
    print("[recovery %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def ts_of(s):
    """'2026-11-29T20:30:48.485041Z' -> unix seconds."""
    if isinstance(s, (int, float)):
        return s / 1000.0
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def one_run(timeout_s, rep):
    ty = common.Trainyard(server_args=("--node-timeout-s", str(timeout_s),
                                       "--sched-interval-ms", "200"))
    try:
        ws = [ty.add_worker("node-%d" % i, 1) for i in range(2)]
        ty.wait_ready(2)
        spec_cmd = [PY, os.path.join(EXAMPLES, "ddp_mlp.py"), "--steps", "100000",
                    "--checkpoint-every", "10", "--sleep-per-step", "0.05", "--hidden", "64"]
        jid = ty.submit("recover", spec_cmd, gpus=2, gpus_per_node=1, max_restarts=2,
                        output_dir=os.path.join(ty.shared, "out-recover"))
        ty.wait_state(jid, ("RUNNING",), timeout=60, interval=0.2)
        wait_for(lambda: ty.admin.get("/api/v1/jobs/%s/checkpoints" % jid)[1]["checkpoints"],
                 timeout=60, what="a first checkpoint")
        rss = [rss_kib(w.proc.pid) for w in ws]
        srv_rss = rss_kib(ty.server.proc.pid)
        victim = ws[1]
        victim.kill9()
        t_kill = time.time()
        wait_for(lambda: [n for n in ty.admin.get("/api/v1/nodes")[1]["nodes"]
                          if n["name"] == "node-1" and n["state"] == "down"],
                 timeout=timeout_s + 30, interval=0.1, what="node-1 down")
        t_down_seen = time.time()
        victim.start()
        ty.wait_state(jid, ("RUNNING",), timeout=120, interval=0.1)

        def first_new_metric():
            ms = [m for m in ty.metrics(jid) if m["attempt"] >= 2]
            return min(ms, key=lambda m: m["ts"]) if ms else None
        m = wait_for(first_new_metric, timeout=120, interval=0.1, what="a metric of attempt 2")
        t_metric = ts_of(m["ts"])
        ev = ty.admin.get("/api/v1/jobs/%s/events" % jid)[1]["events"]
        t_restarting = min(ts_of(e["ts"]) for e in ev if e["to_state"] == "RESTARTING")
        t_running2 = max(ts_of(e["ts"]) for e in ev if e["to_state"] == "RUNNING")
        # The trail, relative to the kill, on stderr (to see where the time goes).
        for e in ev:
            log("  %+6.1f s  %s -> %s  (%s)" % (ts_of(e["ts"]) - t_kill, e["from_state"],
                                               e["to_state"], e["reason"]))
        st, lg, _ = ty.admin.get("/api/v1/jobs/%s/logs?attempt=%d&limit=30" % (jid, m["attempt"]))
        for line in (lg or {}).get("logs", [])[:12]:
            log("  log %+6.1f s rank %s: %s" % (ts_of(line["ts"]) - t_kill, line.get("rank"),
                                                 line["text"].strip()[:100]))
        ty.admin.post("/api/v1/jobs/%s/cancel" % jid)
        ty.wait_state(jid, ("CANCELLED", "FAILED", "SUCCEEDED"), timeout=60, interval=0.2)
        return {"timeout": timeout_s, "rep": rep, "detect": t_restarting - t_kill,
                "down_seen": t_down_seen - t_kill, "running": t_running2 - t_kill,
                "metric": t_metric - t_kill, "resume_step": m["step"], "rss": rss,
                "server_rss": srv_rss}
    finally:
        ty.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeouts", default="10,4")
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    rows = []
    for t in [int(x) for x in a.timeouts.split(",")]:
        for r in range(a.reps):
            log("node timeout %d s, run %d" % (t, r + 1))
            rows.append(one_run(t, r + 1))
    print("### Recovery: kill -9 of one worker of a 2-node DDP job -> first metric of the new attempt")
    print()
    print("| node timeout s | run | kill -> job RESTARTING s | kill -> node down seen (worker restarted) s | kill -> job RUNNING again s | kill -> first metric of new attempt s | resumed at step |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for x in rows:
        print("| %d | %d | %.1f | %.1f | %.1f | **%.1f** | %d |" % (
            x["timeout"], x["rep"], x["detect"], x["down_seen"], x["running"], x["metric"],
            x["resume_step"]))
    print()
    for t in sorted({x["timeout"] for x in rows}, reverse=True):
        ms = [x["metric"] for x in rows if x["timeout"] == t]
        over = [x["metric"] - x["detect"] for x in rows if x["timeout"] == t]
        print("- node timeout %d s: kill -> first new metric median %.1f s, of which %.1f s after "
              "the loss was declared." % (t, statistics.median(ms), statistics.median(over)))
    print()
    print("### Footprint while ranks run (VmRSS)")
    print()
    print("| process | median MiB | max MiB |")
    print("|---|---:|---:|")
    wr = [k for x in rows for k in x["rss"]]
    sr = [x["server_rss"] for x in rows]
    print("| trainyard-worker (1 rank running) | %.1f | %.1f |" % (statistics.median(wr) / 1024,
                                                                max(wr) / 1024))
    print("| trainyard-server | %.1f | %.1f |" % (statistics.median(sr) / 1024, max(sr) / 1024))


if __name__ == "__main__":
    main()
