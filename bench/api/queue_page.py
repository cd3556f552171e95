#!/usr/bin/env python3
"""GET /api/v1/queue at about 10,000 queued jobs: the size and time of the
first page and of the whole queue (bench/RESULTS.md, "Queue pages").

  bench/lib/with-pg.sh queue-page 900 bench/api/queue_page.py [--jobs N] [--runs R]

with-pg.sh builds the committed HEAD (release) or takes BUILD_DIR, starts a
private PostgreSQL and runs this. The fixture: one job through the API, then
N - 1 copies of it by SQL (priorities mixed), and a restart of the server,
whose first pass stores a forecast of all of them; --forecast-interval-ms
600000 holds that forecast still while it is measured. Each figure is the
median of R requests over loopback (time to the last byte, client side).

A server from before the pages (no "total" in the answer) answers every job
at once: its "page 1" is the whole queue, and it has no paged rows."""
import argparse
import json
import os
import statistics
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "integration"))
import harness  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    db = harness.Database()
    srv = harness.Server(db, args=("--forecast-interval-ms", "600000", "--access-log", "false"))
    try:
        admin = harness.Client(srv.url)
        st, body = admin.login("admin", harness.ADMIN_PASSWORD)
        assert st == 200, body
        tok = admin.post("/api/v1/tokens", {"name": "bench"})[1]["token"]
        st, team, _ = admin.post("/api/v1/teams", {"name": "bench"})
        assert st == 201, team
        st, job, _ = admin.post("/api/v1/jobs", {"name": "b", "team": "bench",
                                                 "command": ["/bin/true"],
                                                 "resources": {"gpus": 1}})
        assert st == 201, job
        db.sql("INSERT INTO jobs (name, team_id, user_id, spec, state, priority, gpus, "
               "gpus_per_node, time_limit_s, max_restarts) SELECT 'bulk-' || g, j.team_id, "
               "j.user_id, j.spec, 'QUEUED', g %% 3, j.gpus, j.gpus_per_node, j.time_limit_s, "
               "j.max_restarts FROM generate_series(1, %d) g, (SELECT * FROM jobs ORDER BY id "
               "LIMIT 1) j; ANALYZE" % (a.jobs - 1))
        srv.terminate("server")
        srv.restart()
        hdr = {"Authorization": "Bearer " + tok}

        def get(path):
            t0 = time.monotonic()
            with urllib.request.urlopen(urllib.request.Request(srv.url + path, headers=hdr),
                                        timeout=120) as r:
                raw = r.read()
            return (time.monotonic() - t0) * 1000, raw

        deadline = time.time() + 120
        while True:
            _, raw = get("/api/v1/queue?limit=1")
            q = json.loads(raw)
            n = q["total"] if "total" in q else len(q["jobs"])
            if n == a.jobs:
                break
            if time.time() > deadline:
                raise SystemExit("no forecast of %d jobs (got %d)" % (a.jobs, n))
            time.sleep(0.5)
        paged = "total" in q

        def measure(what, fn):
            times, sizes, reqs = [], [], 0
            for _ in range(a.runs):
                ms, size, reqs = fn()
                times.append(ms)
                sizes.append(size)
            print("| %s | %d | %s | %.1f | %.1f |" % (what, reqs, f"{sizes[-1]:,}",
                                                      statistics.median(times), max(times)))

        def one(path):
            def fn():
                ms, raw = get(path)
                return ms, len(raw), 1
            return fn

        def all_pages(limit):
            def fn():
                total_ms, size, reqs, cursor, ids = 0.0, 0, 0, None, []
                while True:
                    ms, raw = get("/api/v1/queue?limit=%d%s" % (
                        limit, "&cursor=" + cursor if cursor else ""))
                    total_ms += ms
                    size += len(raw)
                    reqs += 1
                    page = json.loads(raw)
                    ids += [j["id"] for j in page["jobs"]]
                    cursor = page["next_cursor"]
                    if cursor is None:
                        break
                assert len(ids) == len(set(ids)) == a.jobs, (len(ids), len(set(ids)))
                return total_ms, size, reqs
            return fn

        print("server: %s; %d queued jobs in the forecast; median and worst of %d" %
              ("paged" if paged else "before the pages (one answer)", a.jobs, a.runs))
        print()
        print("| what | requests | bytes | median ms | worst ms |")
        print("|---|---:|---:|---:|---:|")
        if paged:
            measure("page 1 (default, 50 jobs)", one("/api/v1/queue"))
            measure("page 1 at limit=500", one("/api/v1/queue?limit=500"))
            measure("whole queue, pages of 500", all_pages(500))
            measure("whole queue, pages of 50", all_pages(50))
        else:
            measure("GET /api/v1/queue (every job)", one("/api/v1/queue"))
    finally:
        srv.stop()
        db.close()


if __name__ == "__main__":
    main()
