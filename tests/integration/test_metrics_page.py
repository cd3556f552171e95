"""A job's metric page (GET /api/v1/jobs/{id}/metrics?after=&limit=,
server/store/db_logs.c db_metrics_read) is read through the index on
metrics (job_id, id) (sql/021_metrics_page_index.sql), on real
PostgreSQL with 300,000 points of 100 jobs, 20 at a time, each one's
points interleaved with those of the 19 others running then (the job read
ran first: 285,000 points of later jobs follow its last one), and fresh statistics (ANALYZE; no planner setting is
changed):

- EXPLAIN of the page's statement, from the start, the middle and the
  end of a job's points, chooses an Index Scan on metrics_job_id, with no
  Sort: the page is read in order and stops at its end; a page of 5,000
  (most of the job) reads that index too, not the primary key;
- the API's pages, followed by the last id, are every point of the job
  once, in id order, and nothing of the other jobs."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest  # noqa: E402

JOBS = 100     # in turns of CONCURRENT, as a cluster runs them
CONCURRENT = 20
PER_JOB = 3000
PAGE = """EXPLAIN SELECT id, attempt, rank, step, ts, vals AS values FROM metrics
WHERE job_id = %d AND id > %d ORDER BY id LIMIT %d"""


class MetricsPageTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        st, team, _ = cls.admin.post("/api/v1/teams", {"name": "mp"})
        assert st == 201, team
        st, job, _ = cls.admin.post("/api/v1/jobs", {
            "name": "m0", "team": "mp", "command": ["/bin/true"], "resources": {"gpus": 1}})
        assert st == 201, job
        cls.job = int(job["id"])
        # The other jobs as rows of their own (ended, so nothing schedules them).
        cls.db.sql("INSERT INTO jobs (name, team_id, user_id, spec, state, priority, gpus, "
                   "time_limit_s, max_restarts) SELECT 'm' || g, team_id, user_id, spec, "
                   "'SUCCEEDED', priority, gpus, time_limit_s, max_restarts FROM jobs, "
                   "generate_series(1, %d) g WHERE id = %d" % (JOBS - 1, cls.job))
        cls.jobs = [int(r[0]) for r in cls.db.sql("SELECT id FROM jobs ORDER BY id")]
        assert len(cls.jobs) == JOBS and cls.job in cls.jobs
        cls.db.sql("INSERT INTO metrics (job_id, attempt, rank, step, ts, vals) SELECT "
                   "(ARRAY[%s])[1 + g / %d * %d + g %% %d], 1, 0, g / %d, now(), "
                   "jsonb_build_object('loss', g) FROM generate_series(0, %d) g"
                   % (",".join(map(str, cls.jobs)), CONCURRENT * PER_JOB, CONCURRENT,
                      CONCURRENT, CONCURRENT, JOBS * PER_JOB - 1))
        cls.db.sql("ANALYZE metrics")

    def ids(self, job):
        return [int(r[0]) for r in self.db.sql(
            "SELECT id FROM metrics WHERE job_id = %d ORDER BY id" % job)]

    def test_plan_uses_the_index(self):
        ids = self.ids(self.job)
        # Pages the size the web page and the CLI read: in order, no sort.
        for after, limit in ((0, 1000), (ids[len(ids) // 2], 1000), (ids[-3], 1000),
                             (ids[len(ids) // 3], 100)):
            plan = self.plan(after, limit)
            self.assertIn("Index Scan using metrics_job_id on metrics", plan, plan)
            self.assertNotIn("Sort", plan, plan)
        # The API's default of 5,000, more than the job has: through the
        # index too (a bitmap of it is as good), never a walk of every job's.
        plan = self.plan(0, 5000)
        self.assertIn("metrics_job_id", plan, plan)
        self.assertNotIn("metrics_pkey", plan, plan)

    def plan(self, after, limit):
        return "\n".join(r[0] for r in self.db.sql(PAGE % (self.job, after, limit)))

    def test_pages_are_the_job(self):
        want = self.ids(self.job)
        got, after = [], 0
        while True:
            st, page, _ = self.admin.get("/api/v1/jobs/%d/metrics?after=%d&limit=1000"
                                         % (self.job, after))
            self.assertEqual(st, 200, page)
            pts = page["metrics"]
            if not pts:
                break
            got += [int(p["id"]) for p in pts]
            after = got[-1]
            self.assertLess(len(got), 2 * PER_JOB, "pages never end")
        self.assertEqual(got, want)


if __name__ == "__main__":
    harness.main()
