#!/usr/bin/env python3
"""What an Idempotency-Key costs a submit: POST /api/v1/jobs latency without
a key, with a new key each time, and a repeat of a keyed submit (answered
200 from the stored job), side by side, rounds alternating the order.

One client, one request at a time (the latency a pipeline sees), against a
release server on a private PostgreSQL (bench/lib/with-pg.sh). Jobs need
no node: they stay queued.

Usage: bench/lib/with-pg.sh idem 900 bench/api/submit_idempotency.py
       [--n 200] [--rounds 3]
Prints a markdown table.
"""
import argparse
import os
import statistics
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "launch"))
import common  # noqa: E402


def timed(ty, body, key):
    headers = {"Idempotency-Key": key} if key else None
    t0 = time.perf_counter()
    st, b, _ = ty.admin.request("POST", "/api/v1/jobs", body, headers=headers)
    ms = (time.perf_counter() - t0) * 1000.0
    assert st in (200, 201), (st, b)
    return ms, st


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    ty = common.Trainyard()
    body = {"name": "idem-bench", "team": "bench", "command": ["/bin/true"],
            "resources": {"gpus": 1}}
    kinds = ("no key", "new key", "repeat of a keyed submit")
    ms = {k: [] for k in kinds}
    statuses = {k: set() for k in kinds}
    try:
        repeat_key = str(uuid.uuid4())
        timed(ty, body, repeat_key)  # the submit the repeats repeat
        for _ in range(20):  # warm the server's connections and caches
            timed(ty, body, None)
        for r in range(a.rounds):
            order = kinds if r % 2 == 0 else tuple(reversed(kinds))
            for kind in order:
                for _ in range(a.n):
                    key = {"no key": None, "new key": str(uuid.uuid4()),
                           "repeat of a keyed submit": repeat_key}[kind]
                    t, st = timed(ty, body, key)
                    ms[kind].append(t)
                    statuses[kind].add(st)
    finally:
        ty.close()
    base = statistics.median(ms["no key"])
    print("| submit | requests | answer | median ms | p90 ms | median / no key |")
    print("|---|---:|---|---:|---:|---:|")
    for kind in kinds:
        xs = sorted(ms[kind])
        print("| %s | %d | %s | %.2f | %.2f | %.2f |" % (
            kind, len(xs), "/".join(str(s) for s in sorted(statuses[kind])),
            statistics.median(xs), common.pct(xs, 90), statistics.median(xs) / base))


if __name__ == "__main__":
    main()
