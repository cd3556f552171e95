#!/usr/bin/env python3
"""Control-plane crash figures: runs the crash tests (tests/integration/
test_crash_server.py, test_crash_replicas.py, test_crash_db.py) REPS times
each, one at a time, and tables the figures each prints on its FIGURES
line: the failover times, how long a 503 took while PostgreSQL was gone,
kill to /healthz, and the rest. The tests assert what must hold (nothing
acknowledged lost, one leader, a verifying audit chain); the times are
measured here, since a loaded machine stretches them.

Usage: crash.py [--reps N] [--tests replicas,db,server]
Needs TRAINYARD_TEST_PG_URL and TRAINYARD_BUILD_DIR (bench/crash/run.sh
sets both). Exit status 1 when a run failed (its output is printed).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

SRC = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TESTS = {"server": "test_crash_server.py", "replicas": "test_crash_replicas.py",
         "db": "test_crash_db.py"}


def log(msg):
    print("[crash %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def figures(text):
    """{(test name, figure): value} of the FIGURES lines in text."""
    out = {}
    for line in text.splitlines():
        if not line.startswith("FIGURES "):
            continue
        parts = line.split()
        for kv in parts[2:]:
            k, _, v = kv.partition("=")
            try:
                out[(parts[1], k)] = float(v)
            except ValueError:
                pass
    return out


def fmt(v):
    return "%d" % v if v == int(v) and abs(v) >= 10 else "%.3g" % v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tests", default="replicas,db,server")
    args = ap.parse_args()
    names = [t for t in args.tests.split(",") if t]
    env = dict(os.environ, TRAINYARD_SOURCE_DIR=SRC, PYTHONUNBUFFERED="1",
               PYTHONDONTWRITEBYTECODE="1", TRAINYARD_TEST_REQUIRE_PG="1")
    seen = {}
    walls = {}
    failed = 0
    for rep in range(args.reps):
        for name in names:
            log("%s, run %d of %d" % (name, rep + 1, args.reps))
            t0 = time.time()
            p = subprocess.run([sys.executable, os.path.join(SRC, "tests", "integration",
                                                             TESTS[name])],
                               capture_output=True, text=True, env=env)
            walls.setdefault(name, []).append(time.time() - t0)
            if p.returncode != 0:
                failed += 1
                print(p.stdout[-4000:] + p.stderr[-4000:], file=sys.stderr)
                log("%s failed (exit %d)" % (name, p.returncode))
                continue
            for key, v in figures(p.stdout + p.stderr).items():
                seen.setdefault(key, []).append(v)
    print("| test | figure | runs | min | median | max |")
    print("|---|---|---|---|---|---|")
    for (test, fig), vals in sorted(seen.items()):
        print("| %s | %s | %d | %s | %s | %s |" % (test, fig, len(vals), fmt(min(vals)),
                                                  fmt(statistics.median(vals)), fmt(max(vals))))
    for name, vals in sorted(walls.items()):
        print("| crash-%s | test wall time (s) | %d | %.0f | %.0f | %.0f |" % (
            name, len(vals), min(vals), statistics.median(vals), max(vals)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
