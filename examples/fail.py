#!/usr/bin/env python3
"""Failure-test rank: prints a line, then exits 1.

--rank N makes only rank N fail; the other ranks sleep --sleep seconds (so a
test can see the worker stop them). --after S waits S seconds before failing.
"""
import argparse
import os
import sys
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rank", type=int, default=-1, help="the failing rank; -1 = every rank")
    p.add_argument("--after", type=float, default=0.0)
    p.add_argument("--sleep", type=float, default=60.0)
    p.add_argument("--code", type=int, default=1)
    args = p.parse_args()
    rank = int(os.environ.get("RANK", "0"))
    if args.rank >= 0 and rank != args.rank:
        print("rank %d sleeping" % rank, flush=True)
        time.sleep(args.sleep)
        return 0
    time.sleep(args.after)
    print("rank %d failing on purpose" % rank, flush=True)
    return args.code


if __name__ == "__main__":
    sys.exit(main())
