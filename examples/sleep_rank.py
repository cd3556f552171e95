#!/usr/bin/env python3
"""Prints the launch environment and its start time, then sleeps.

  TRAINYARD_METRIC {"step":0,"started_unix_ms":...}
lets a test measure launch latency and check the env the worker set.
"""
import argparse
import json
import os
import sys
import time

KEYS = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "MASTER_ADDR",
        "MASTER_PORT", "CUDA_VISIBLE_DEVICES", "TRAINYARD_JOB_ID", "TRAINYARD_ATTEMPT",
        "TRAINYARD_CHECKPOINT_DIR", "TRAINYARD_RESUME_FROM"]


def main():
    started = int(time.time() * 1000)
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=5.0)
    args = p.parse_args()
    env = {k: os.environ.get(k) for k in KEYS}
    print("env " + json.dumps(env, sort_keys=True), flush=True)
    print("cwd " + os.getcwd(), flush=True)
    print("TRAINYARD_METRIC " + json.dumps({"step": 0, "started_unix_ms": started}), flush=True)
    time.sleep(args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
