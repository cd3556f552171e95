"""The leader's forecast store writes only what changed (server/store/
db_forecast.c), on real PostgreSQL, with a queue of 40 jobs and no node,
so that nothing leaves it and every forecast is the same:

- across several refreshes (queue_forecast_meta.generated_at moves on),
  no row of queue_forecast or queue_forecast_totals is written again: each
  keeps its xmin and ctid (a row deleted and inserted again, or updated,
  gets new ones), and pg_stat_user_tables counts no update or delete of
  queue_forecast;
- a job cancelled drops out of the stored forecast, the jobs behind it
  move up a place (rows updated), the counts per team and user follow, and
  GET /api/v1/queue answers as it did: every other job once, positions 0
  to 38, total 39."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest, wait_for  # noqa: E402

N = 40


class ForecastStoreTest(ServerTest):
    server_args = ("--sched-interval-ms", "100", "--forecast-interval-ms", "200")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        for name in ("fa", "fb"):
            st, body, _ = cls.admin.post("/api/v1/teams", {"name": name, "gpu_quota": 0})
            assert st == 201, body
        cls.ids = []
        for i in range(N):
            st, job, _ = cls.admin.post("/api/v1/jobs", {
                "name": "s%d" % i, "team": ("fa", "fb")[i % 2], "command": ["/bin/true"],
                "resources": {"gpus": 1}, "priority": ("low", "normal", "high")[i % 3]})
            assert st == 201, job
            cls.ids.append(job["id"])

    def generated(self):
        return self.db.sql("SELECT generated_at FROM queue_forecast_meta")[0][0]

    def refreshes(self, n):
        """Wait until the stored forecast was made anew n times."""
        seen = [self.generated()]

        def moved():
            g = self.generated()
            if g != seen[-1]:
                seen.append(g)
            return len(seen) > n
        wait_for(moved, timeout=60, what="%d forecasts stored" % n)

    def rows(self, table, key):
        return {tuple(r[:-2]): tuple(r[-2:]) for r in self.db.sql(
            "SELECT %s, xmin::text, ctid::text FROM %s" % (key, table))}

    def stat(self):
        r = self.db.sql("SELECT n_tup_upd + n_tup_del FROM pg_stat_user_tables "
                        "WHERE relname = 'queue_forecast'")
        return int(r[0][0])

    def test_1_steady_queue_is_not_rewritten(self):
        wait_for(lambda: self.db.sql("SELECT count(*) FROM queue_forecast "
                                     "WHERE kind = 'queued'")[0][0] == str(N),
                 timeout=60, what="a forecast of all %d jobs" % N)
        self.refreshes(1)  # the first forecasts may still be filling in
        before = self.rows("queue_forecast", "job_id")
        totals = self.rows("queue_forecast_totals", "team_id, user_id")
        self.assertEqual(len(before), N)
        self.assertEqual(len(totals), 2)
        self.refreshes(3)
        # The stored forecast is the same one: every row untouched.
        self.assertEqual(self.rows("queue_forecast", "job_id"), before)
        self.assertEqual(self.rows("queue_forecast_totals", "team_id, user_id"), totals)
        # The statistics agree: over ten more refreshes (seconds, long
        # enough for the server's backends to flush what they counted) no
        # row was updated or deleted.
        start = self.stat()
        self.refreshes(10)
        self.assertEqual(self.stat(), start)

    def test_2_a_change_is_written_and_served(self):
        st, whole, _ = self.admin.get("/api/v1/queue?limit=500")
        self.assertEqual(st, 200, whole)
        order = [j["id"] for j in whole["jobs"]]
        gone = order[5]
        st, body, _ = self.admin.post("/api/v1/jobs/%s/cancel" % gone)
        self.assertEqual(st, 202, body)
        want = [i for i in order if i != gone]

        def served():
            st, q, _ = self.admin.get("/api/v1/queue?limit=500")
            return q if st == 200 and [j["id"] for j in q["jobs"]] == want and [
                j["position"] for j in q["jobs"]] == list(range(N - 1)) else None
        q = wait_for(served, timeout=60, what="the queue without the cancelled job")
        self.assertEqual(q["total"], N - 1)
        # Stored as such: the row is gone, the counts follow.
        wait_for(lambda: self.db.sql("SELECT count(*) FROM queue_forecast WHERE job_id = %s"
                                     % int(gone))[0][0] == "0", timeout=60,
                 what="the cancelled job's row deleted")
        counts = self.db.sql("SELECT sum(queued) FROM queue_forecast_totals")
        self.assertEqual(counts[0][0], str(N - 1))
        st, t, _ = self.admin.get("/api/v1/queue?limit=1&team=fa")
        self.assertEqual(t["total"], sum(1 for j in q["jobs"] if j["team"] == "fa"))


if __name__ == "__main__":
    harness.main()
