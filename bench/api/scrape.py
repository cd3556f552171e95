#!/usr/bin/env python3
"""Scrapes URL once a second (fixed rate, like Prometheus) with the bearer
token in TY_METRICS_TOKEN until SIGTERM, then prints one line:
"SCRAPES n failures p50_ms max_ms bytes". Used by metrics_cost.sh."""
import os
import signal
import statistics
import sys
import time
import urllib.request

url = sys.argv[1]
req = urllib.request.Request(url, headers={"Authorization": "Bearer " + os.environ["TY_METRICS_TOKEN"]})
stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
lat, fails, size = [], 0, 0
nxt = time.monotonic()
while not stop:
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            size = len(r.read())
        lat.append((time.monotonic() - t0) * 1000)
    except Exception:
        fails += 1
    nxt += 1.0
    while not stop and time.monotonic() < nxt:
        time.sleep(min(0.05, max(0.0, nxt - time.monotonic())))
print("SCRAPES %d %d %.2f %.2f %d" % (len(lat), fails, statistics.median(lat) if lat else 0,
                                     max(lat) if lat else 0, size), flush=True)
