#!/usr/bin/env python3
"""What the inference gateway adds to a request (docs/serving.md, "The
gateway"): requests/s and p50/p99 of POST /v1/chat/completions through
trainyard-server's gateway against the same replica (examples/serve_echo.py)
called directly, in one run, with the per-request records on and off
(gateway_records, a benchmark switch).

  bench/lib/with-pg.sh gateway 1200 bench/serving/gateway.py [--concurrency C]
      [--seconds S] [--rate R]

Two loads per path, each after a warm-up: closed loop (C connections, each
sending its next request when the last one answered: the most the path
takes) and paced (the same C connections together sending R requests a
second, or less when the direct path cannot take R: the latency at a fixed
load). Every connection is kept alive (HTTP/1.1). The client is Python
asyncio on the same machine, so on a small machine it takes a share of the
CPU the server and the replica would have: the ratios matter more than the
absolute figures. "records off" is the same server started with
--gateway-records false: the gateway's cost without its records.

A model server that sends an answer's header and body in two writes with
Nagle's algorithm on is held back by the caller's delayed ACK (about 40 ms
an answer on Linux): the gateway's libcurl sees that where this asyncio
client, sending whole requests on busy connections, mostly does not. The
lines then compare that stall, not the gateway; check the direct and
gateway p50 of a single request (--concurrency 1) before reading the table.
examples/trainyard_serve.py turns the algorithm off on every connection.
"""
import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "integration"))
import harness  # noqa: E402
import test_gateway as tg  # noqa: E402

BODY = json.dumps({"model": "bot", "messages": [{"role": "user", "content": "hello"}],
                   "max_tokens": 16}).encode()


async def one_conn(port, path, token, deadline, interval, lat, errors):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    req = (b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
           b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
           % (path.encode(), token.encode(), len(BODY))) + BODY
    nxt = time.perf_counter()
    try:
        while True:
            now = time.perf_counter()
            if now >= deadline:
                break
            if interval:
                if nxt > now:
                    await asyncio.sleep(nxt - now)
                nxt += interval
            t0 = time.perf_counter()
            writer.write(req)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            n = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    n = int(line.split(b":")[1])
            await reader.readexactly(n)
            lat.append(time.perf_counter() - t0)
            if status != 200:
                errors.append(status)
    finally:
        writer.close()


async def load(port, path, token, conns, seconds, rate):
    lat, errors = [], []
    deadline = time.perf_counter() + seconds
    interval = conns / rate if rate else 0
    t0 = time.perf_counter()
    await asyncio.gather(*[one_conn(port, path, token, deadline, interval, lat, errors)
                           for _ in range(conns)])
    took = time.perf_counter() - t0
    lat.sort()
    return {"rps": len(lat) / took, "p50": lat[len(lat) // 2] * 1e3,
            "p99": lat[int(len(lat) * 0.99)] * 1e3, "n": len(lat), "errors": len(errors)}


def run(port, path, token, conns, seconds, rate=0):
    asyncio.run(load(port, path, token, conns, 2, rate))  # warm-up: connections, caches
    return asyncio.run(load(port, path, token, conns, seconds, rate))


class Fixture(tg.GatewayTest):
    """The test's fixture (a deployment "bot" whose replicas are the echo
    server), without its tests."""

    def runTest(self):
        pass


def fixture(records):
    Fixture.server_env = None
    extra = () if records else ("--gateway-records", "false")
    orig = harness.Server.__init__

    def init(self, db, args=(), **kw):
        orig(self, db, args=tuple(args) + extra + ("--access-log", "false", "--http-threads",
                                                   "4", "--log-level", "warn"), **kw)
    harness.Server.__init__ = init
    try:
        Fixture.setUpClass()
    finally:
        harness.Server.__init__ = orig
    return Fixture


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--rate", type=float, default=1000)
    a = ap.parse_args()
    rows = []
    direct_max = None
    for records in (True, False):
        f = fixture(records)
        try:
            rate = a.rate
            if direct_max is None:
                d = run(f.echo_port, "/v1/chat/completions", tg.REPLICA_TOKEN, a.concurrency,
                        a.seconds)
                direct_max = d["rps"]
                rows.append(("direct", "closed loop", d))
            rate = min(a.rate, 0.8 * direct_max)
            if records:
                rows.append(("direct", "paced %.0f/s" % rate,
                             run(f.echo_port, "/v1/chat/completions", tg.REPLICA_TOKEN,
                                 a.concurrency, a.seconds, rate)))
            name = "gateway, records " + ("on" if records else "off")
            rows.append((name, "closed loop", run(f.server.port, "/v1/chat/completions", f.key,
                                                  a.concurrency, a.seconds)))
            rows.append((name, "paced %.0f/s" % rate, run(f.server.port, "/v1/chat/completions",
                                                           f.key, a.concurrency, a.seconds, rate)))
            if records:
                n = f.db.sql("SELECT count(*) FROM serve_requests")[0][0]
                print("records written: %s" % n, flush=True)
        finally:
            Fixture.tearDownClass()
    print("\nconcurrency %d, %g s per line, echo replica (examples/serve_echo.py)\n"
          % (a.concurrency, a.seconds))
    print("| path | load | req/s | p50 ms | p99 ms | requests | errors |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, kind, r in rows:
        print("| %s | %s | %.0f | %.2f | %.2f | %d | %d |"
              % (name, kind, r["rps"], r["p50"], r["p99"], r["n"], r["errors"]))
    by = {(n, k.split()[0]): r for n, k, r in rows}
    d, g = by[("direct", "closed")], by[("gateway, records on", "closed")]
    print("\nthroughput ratio gateway/direct (closed loop, records on): %.2f" % (g["rps"] / d["rps"]))
    dp, gp = by[("direct", "paced")], by[("gateway, records on", "paced")]
    print("p99 added at the paced rate (records on): %.2f ms" % (gp["p99"] - dp["p99"]))


if __name__ == "__main__":
    tempfile.tempdir = os.environ.get("BENCH_TMP") or None
    main()
