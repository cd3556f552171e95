#!/usr/bin/env python3
"""What a /metrics scrape and the first page of GET /api/v1/jobs cost as
finished jobs pile up, before and after the job counts by state were kept by
the jobs' changes (sql/020_retention.sql) instead of counted on each scrape
(bench/RESULTS.md, "Scrape cost and job history").

  BUILD_DIR=NEW bench/lib/with-pg.sh scrape-history 3600 bench/api/scrape_history.py \\
      --old-build OLD [--sizes 10000,1000000] [--runs 41]

OLD and NEW are release builds (OLD: a build of the commit before, e.g.
`git archive REV | tar -x` and cmake -DCMAKE_BUILD_TYPE=Release). Each runs
on a database of its own with the same jobs: one submitted through the API,
then copies of it inserted by SQL (generate_series), finished (SUCCEEDED,
FAILED, CANCELLED in turn) over the last 30 days, plus 100 QUEUED. Both
servers run at once with metrics_cache_ms 0 (every scrape reads the
database), and the requests alternate between them, one of each in turn, so
both see the same machine load. Each figure is the median of R requests
over loopback (time to the last byte, client side). Then the statement that
changed, alone, on NEW's database: the old count(*) by state next to the sum
of job_state_counts (EXPLAIN ANALYZE execution time, median of 5)."""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "integration"))
import harness  # noqa: E402

TOKEN = "bench-metrics-token-0123456789abcdef"
OLD_SQL = "SELECT state, count(*)::float8 FROM jobs GROUP BY state"
NEW_SQL = "SELECT state, sum(n)::float8 FROM job_state_counts GROUP BY state HAVING sum(n) <> 0"


class Side:
    def __init__(self, name, build):
        self.name = name
        harness.SERVER_BIN = os.path.join(build, "server", "trainyard-server")
        self.db = harness.Database()
        self.srv = harness.Server(self.db, args=("--metrics-token", TOKEN, "--metrics-cache-ms",
                                                 "0", "--access-log", "false", "--cache-ttl-ms",
                                                 "0", "--sched-interval-ms", "60000"))
        admin = harness.Client(self.srv.url)
        st, body = admin.login("admin", harness.ADMIN_PASSWORD)
        assert st == 200, body
        self.tok = admin.post("/api/v1/tokens", {"name": "bench"})[1]["token"]
        st, team, _ = admin.post("/api/v1/teams", {"name": "bench"})
        assert st == 201, team
        st, job, _ = admin.post("/api/v1/jobs", {"name": "b", "team": "bench",
                                                 "command": ["/bin/true"],
                                                 "resources": {"gpus": 1}})
        assert st == 201, job
        self.db.sql("INSERT INTO jobs (name, team_id, user_id, spec, state, priority, gpus, "
                    "gpus_per_node, time_limit_s, max_restarts) SELECT 'queued-' || g, j.team_id, "
                    "j.user_id, j.spec, 'QUEUED', 1, j.gpus, j.gpus_per_node, j.time_limit_s, "
                    "j.max_restarts FROM generate_series(1, 99) g, "
                    "(SELECT * FROM jobs ORDER BY id LIMIT 1) j")
        self.jobs = 100

    def grow(self, total):
        """Add finished jobs until there are total jobs."""
        while self.jobs < total:
            n = min(total - self.jobs, 100000)
            self.insert(n)
            self.jobs += n
        sql(self.db, "ANALYZE", 600)

    def insert(self, n):
        """n finished jobs, one statement."""
        sql(self.db, "INSERT INTO jobs (name, team_id, user_id, spec, state, priority, gpus, "
                    "gpus_per_node, time_limit_s, max_restarts, created_at, started_at, "
                    "finished_at) SELECT 'done-' || g, j.team_id, j.user_id, j.spec, "
                    "(ARRAY['SUCCEEDED', 'FAILED', 'CANCELLED'])[g %% 3 + 1], 1, j.gpus, "
                    "j.gpus_per_node, j.time_limit_s, j.max_restarts, "
                    "now() - make_interval(secs => g %% 2592000 + 3600), "
                    "now() - make_interval(secs => g %% 2592000 + 1800), "
                    "now() - make_interval(secs => g %% 2592000) "
                    "FROM generate_series(1, %d) g, (SELECT * FROM jobs ORDER BY id LIMIT 1) j"
                    % n, 600)

    def get(self, path, token):
        req = urllib.request.Request(self.srv.url + path,
                                     headers={"Authorization": "Bearer " + token})
        t0 = time.monotonic()
        with urllib.request.urlopen(req, timeout=120) as r:
            raw = r.read()
        return (time.monotonic() - t0) * 1000, raw

    def close(self):
        self.srv.stop(check=False)
        self.db.close()


def sql(db, q, timeout):
    """Run q on db's database with a longer limit than the harness's."""
    subprocess.run(["psql", db.url, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", q], check=True,
                   capture_output=True, timeout=timeout)


def exec_ms(db, sql):
    """Median execution time of sql (EXPLAIN ANALYZE), 5 runs after one warm-up."""
    times = []
    for i in range(6):
        plan = "\n".join(r[0] for r in db.sql("EXPLAIN (ANALYZE) " + sql))
        if i:
            times.append(float(re.search(r"Execution Time: ([0-9.]+) ms", plan).group(1)))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old-build", required=True)
    ap.add_argument("--sizes", default="10000,1000000")
    ap.add_argument("--runs", type=int, default=41)
    a = ap.parse_args()
    new_build = os.environ["TRAINYARD_BUILD_DIR"]
    sides = [Side("before", a.old_build), Side("after", new_build)]
    rows = []
    try:
        for size in [int(s) for s in a.sizes.split(",")]:
            for s in sides:
                s.grow(size)
            times = {(s.name, what): [] for s in sides for what in ("scrape", "jobs")}
            for _ in range(a.runs):
                for s in sides:
                    ms, text = s.get("/metrics", TOKEN)
                    assert b'trainyard_jobs{state="SUCCEEDED"}' in text, text[:400]
                    times[(s.name, "scrape")].append(ms)
                    ms, _ = s.get("/api/v1/jobs?limit=50", s.tok)
                    times[(s.name, "jobs")].append(ms)
            med = {k: statistics.median(v) for k, v in times.items()}
            old_q, new_q = exec_ms(sides[1].db, OLD_SQL), exec_ms(sides[1].db, NEW_SQL)
            rows.append((size, med, old_q, new_q))
    finally:
        for s in sides:
            s.close()
    print("| jobs | scrape before (ms) | scrape after (ms) | after/before | jobs page before (ms) "
          "| jobs page after (ms) | after/before | jobs by state: count(*) (ms) | "
          "sum of job_state_counts (ms) | ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size, m, old_q, new_q in rows:
        sb, sa = m[("before", "scrape")], m[("after", "scrape")]
        jb, ja = m[("before", "jobs")], m[("after", "jobs")]
        print("| %s | %.2f | %.2f | %.3f | %.2f | %.2f | %.3f | %.3f | %.3f | %.4f |"
              % (f"{size:,}", sb, sa, sa / sb, jb, ja, ja / jb, old_q, new_q, new_q / old_q))


if __name__ == "__main__":
    main()
