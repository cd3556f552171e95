#!/usr/bin/env python3
"""What a rank's output burst keeps: metric points and log lines stored.

A one-GPU job prints N lines as fast as Python can, then exits. The worker's
output queue is bounded (65,536 lines) and drops when the server cannot keep
up. Two workloads:
  progress: 9 progress-bar lines around every TRAINYARD_METRIC line (as tqdm
            prints around a training loop);
  metrics:  nothing but TRAINYARD_METRIC lines.
With --compare-build DIR, the same jobs also run on a worker from that build
(another commit), side by side in the same run: both workers are joined to
one server and the node not under test is drained, rounds alternate.

The job's dropped_lines (what the server was told) should equal the lines
printed less the lines stored.

Usage: output_burst.py [--lines 100000] [--rounds 2] [--compare-build DIR]
Prints a markdown table. Stops everything it started.
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import PY  # noqa: E402

PRINTER = r"""
import sys
n, every = int(sys.argv[1]), int(sys.argv[2])
w = sys.stdout.write
for i in range(n):
    if i % every == 0:
        w('TRAINYARD_METRIC {"step":%d,"loss":%.4f}\n' % (i, 1.0 / (i + 1)))
    else:
        w('epoch 1: %3d%%|%s| %d/%d\n' % (i * 100 // n, '#' * (i * 20 // n), i, n))
sys.stdout.flush()
"""


def count_rows(ty, jid, what, limit):
    """Rows of GET /jobs/{id}/<what> (logs or metrics), over every page."""
    after, n = 0, 0
    while True:
        st, body, _ = ty.admin.get("/api/v1/jobs/%s/%s?limit=%d&after=%s"
                                   % (jid, what, limit, after))
        assert st == 200, body
        rows = body[what]
        n += len(rows)
        if not rows:
            return n
        after = rows[-1]["id"]


def run_one(ty, script, lines, every, nodes, use):
    for name, nid in nodes.items():
        path = "/api/v1/nodes/%s/%s" % (nid, "undrain" if name == use else "drain")
        st, body, _ = ty.admin.post(path, {})
        assert st in (200, 204), (path, st, body)
    t0 = time.time()
    jid = ty.submit("burst-%s" % use, [PY, script, str(lines), str(every)])
    j = ty.wait_state(jid, ("SUCCEEDED", "FAILED"), timeout=600, interval=0.2)
    assert j["state"] == "SUCCEEDED", j
    # The exit report leaves the worker after every line queued before it,
    # so once SUCCEEDED everything that was not dropped is stored.
    wall = time.time() - t0
    metrics_printed = (lines + every - 1) // every
    return {"metrics_printed": metrics_printed, "metrics_stored": count_rows(ty, jid, "metrics", 20000),
            "lines_printed": lines, "lines_stored": count_rows(ty, jid, "logs", 5000), "wall": wall,
            "reported": j.get("dropped_lines")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--compare-build", default=None,
                    help="a build dir whose trainyard-worker runs the same jobs")
    a = ap.parse_args()

    ty = common.Trainyard()
    script = os.path.join(ty.shared, "printer.py")
    with open(script, "w") as f:
        f.write(PRINTER)
    os.chmod(script, 0o644)
    results = {}
    try:
        builds = {"this build": common.harness.WORKER_BIN}
        if a.compare_build:
            builds["compared build"] = os.path.join(a.compare_build, "worker", "trainyard-worker")
        for name, binary in builds.items():
            common.harness.WORKER_BIN = binary
            ty.add_worker(name.replace(" ", "-"), gpus=1)
        ty.wait_ready(len(builds))
        nodes = {}
        for n in ty.nodes():
            for name in builds:
                if n["name"] == name.replace(" ", "-"):
                    nodes[name] = n["id"]
        for r in range(a.rounds):
            for workload, every in (("progress", 10), ("metrics", 1)):
                order = list(builds) if r % 2 == 0 else list(reversed(list(builds)))
                for name in order:
                    res = run_one(ty, script, a.lines, every, nodes, name)
                    results.setdefault((workload, name), []).append(res)
                    print("[burst] round %d %s %s: %s" % (r, workload, name, res),
                          file=sys.stderr, flush=True)
    finally:
        ty.close()

    print("| workload | worker | lines printed | metric lines printed | metric points stored "
          "(median) | log lines stored (median) | lines dropped (median) | the job's dropped_lines "
          "(median) | job wall s (median) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for (workload, name), rs in sorted(results.items()):
        med = lambda k: statistics.median(x[k] for x in rs)  # noqa: E731
        reported = [x["reported"] for x in rs if x["reported"] is not None]
        print("| %s | %s | %d | %d | %d (%.1f %%) | %d | %d | %s | %.1f |" % (
            workload, name, a.lines, rs[0]["metrics_printed"], med("metrics_stored"),
            100.0 * med("metrics_stored") / rs[0]["metrics_printed"], med("lines_stored"),
            a.lines - med("lines_stored"),
            "%d" % statistics.median(reported) if reported else "-", med("wall")))


if __name__ == "__main__":
    main()
