#!/usr/bin/env python3
"""GET /api/v1/queue at about 10,000 queued jobs: the size and time of the
first page and of the whole queue, and what POST /api/v1/queue/what-if
(the wizard's "when would it start?") takes over that queue
(bench/RESULTS.md, "Queue pages").

  bench/lib/with-pg.sh queue-page 900 bench/api/queue_page.py [--jobs N] [--runs R]
      [--explain SRC]... [--stores K]

with-pg.sh builds the committed HEAD (release) or takes BUILD_DIR, starts a
private PostgreSQL and runs this. The fixture: one job through the API, then
N - 1 copies of it by SQL (priorities mixed), and a restart of the server,
whose first pass stores a forecast of all of them; --forecast-interval-ms
600000 holds that forecast still while it is measured. Each figure is the
median of R requests over loopback (time to the last byte, client side).

A server from before the pages (no "total" in the answer) answers every job
at once: its "page 1" is the whole queue, and it has no paged rows.

--explain SRC also prints EXPLAIN ANALYZE of the page statement (PAGE_SQL of
SRC, the db_forecast.c the build came from: `git show REV:server/db_forecast.c`
for another commit; one from before sql/014 needs a build from before it, as
its statement does not run on the new columns), at limit 500: the first page,
the page after position 5,000, and the first page of team=bench. Every run
prints what the leader's first forecast took (simulation; with the store, in
its "forecast stored" debug line); --stores K then restarts the server with
--forecast-interval-ms 0 and reports K forecasts stored back to back."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "integration"))
import harness  # noqa: E402


def page_sql(src):
    """PAGE_SQL of db_forecast.c src as the server sends it: its #define
    blocks through the C preprocessor, the string literals joined."""
    with open(src) as f:
        lines = f.read().splitlines()
    defs, i = [], 0
    while i < len(lines):
        if lines[i].startswith("#define"):
            while lines[i].endswith("\\"):
                defs.append(lines[i])
                i += 1
            defs.append(lines[i])
        i += 1
    out = subprocess.run(["cpp", "-P"], input="\n".join(defs) + "\nTY_SQL PAGE_SQL\n",
                         capture_output=True, text=True, check=True).stdout
    expr = out[out.index("TY_SQL") + len("TY_SQL"):]
    return "".join(m.replace('\\"', '"') for m in re.findall(r'"((?:[^"\\]|\\.)*)"', expr))


def explain(db, sql, args):
    """EXPLAIN ANALYZE of sql with args ($1..$9, SQL literals), as a custom
    plan (the first executions of a prepared statement), as PQexecParams'
    unnamed statements are planned."""
    types = "bigint, bigint, text, text, bigint, bigint, bigint, int, bool"
    rows = db.sql("PREPARE ty_page(%s) AS %s; EXPLAIN (ANALYZE, BUFFERS) EXECUTE ty_page(%s)"
                  % (types, sql, ", ".join(args)))
    return "\n".join(r[0] if isinstance(r, (list, tuple)) else str(r) for r in rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--stores", type=int, default=0,
                    help="then restart with --forecast-interval-ms 0 and report what this many "
                         "forecasts took to store")
    ap.add_argument("--explain", metavar="SRC", action="append", default=[],
                    help="db_forecast.c whose PAGE_SQL to explain (may be repeated)")
    a = ap.parse_args()
    db = harness.Database()
    srv = harness.Server(db, args=("--forecast-interval-ms", "600000", "--access-log", "false",
                                   "--log-debug", "sched"))
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

        def what_if(body):
            def fn():
                data = json.dumps(body).encode()
                req = urllib.request.Request(
                    srv.url + "/api/v1/queue/what-if", data=data, method="POST",
                    headers=dict(hdr, **{"Content-Type": "application/json"}))
                t0 = time.monotonic()
                with urllib.request.urlopen(req, timeout=120) as r:
                    raw = r.read()
                return (time.monotonic() - t0) * 1000, len(raw), 1
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
            # the wizard's question before the user presses start: the
            # server reads the state and runs one forecast with the job added
            measure("POST /api/v1/queue/what-if, 1 GPU",
                    what_if({"team": "bench", "resources": {"gpus": 1}}))
            measure("POST /api/v1/queue/what-if, 8 GPUs on one node, high",
                    what_if({"team": "bench", "resources": {"gpus": 8, "gpus_per_node": 8},
                             "priority": "high"}))
        else:
            measure("GET /api/v1/queue (every job)", one("/api/v1/queue"))
        gen = db.sql("SELECT (extract(epoch FROM generated_at) * 1000)::bigint, duration_us "
                     "FROM queue_forecast_meta")[0]
        stored = [ln for ln in srv.log_text().splitlines() if 'msg="forecast stored"' in ln]
        print()
        print("forecast: %s us before the store (queue_forecast_meta.duration_us); the leader's "
              "log: %s" % (gen[1], " ".join(stored[-1].split()[-5:]) if stored else "none"))
        team = "'bench'"
        for src in a.explain:
            sql = page_sql(src)
            for what, args in (("first page", ["0", "0", "NULL", "NULL", "0", "0", "0", "500",
                                               "true"]),
                               ("page after position 5000", ["0", "0", "NULL", "NULL", "0",
                                                             str(gen[0]), "5000", "500", "false"]),
                               ("first page, team=bench", ["0", "0", team, "NULL", "0", "0", "0",
                                                           "500", "true"])):
                plan = explain(db, sql, args)
                print()
                print("EXPLAIN ANALYZE of %s, %s (limit 500):" % (src, what))
                print(plan)
        if a.stores > 0:
            # Forecasts back to back (at most one per 4x what the last took).
            srv.terminate("server")
            srv.cmd[srv.cmd.index("600000")] = "0"
            start = len(srv.log_text().splitlines())
            srv.restart()

            def stores():
                lines = srv.log_text().splitlines()[start:]
                return [dict(kv.split("=", 1) for kv in ln.split() if "=" in kv)
                        for ln in lines if 'msg="forecast stored"' in ln]
            deadline = time.time() + 120
            while len(stores()) < a.stores + 1 and time.time() < deadline:
                time.sleep(0.5)
            got = stores()[1:a.stores + 1]  # the first after a start has cold caches
            sim = [int(x["simulate_us"]) for x in got]
            store = [int(x["duration_us"]) - int(x["simulate_us"]) for x in got]
            print()
            print("forecasts stored back to back: %d; simulation median %d us, store (write, "
                  "totals, statistics) median %d us, worst %d us" % (
                      len(got), statistics.median(sim), statistics.median(store), max(store)))
    finally:
        srv.stop()
        db.close()


if __name__ == "__main__":
    main()
