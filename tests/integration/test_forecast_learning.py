"""What the leader's runtime predictor learns from (docs/queue.md, server/store/db_forecast.h):
finished jobs written to PostgreSQL as the server would, then a queued job
of the same key, whose prediction the forecast shows.

- a SUCCEEDED job's run time is the sum of its attempts (placement to end):
  three jobs of 40 s + 60 s predict 100 s ("exact": same command, team,
  user and GPUs), and 100 s for another command of the team at that GPU
  count ("team");
- FAILED and CANCELLED jobs teach nothing: their key falls back to the
  time limit;
- a job whose recorded end lies ahead of the database's clock (a future
  the predictor must never read) teaches nothing either.
No node is registered: the jobs only wait, which is all the forecast needs."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest, wait_for  # noqa: E402


class ForecastLearningTest(ServerTest):
    server_args = ("--sched-interval-ms", "200", "--forecast-interval-ms", "0")

    def history(self, command, state, attempts_s, gpus=1, ended="now() - interval '1 hour'", n=3):
        """n finished jobs of team learn, user admin, gpus GPUs, running command,
        with one attempt per entry of attempts_s (seconds, oldest first) and
        the last ending at ended: each job with its attempts in one
        transaction, as the server writes a job's end."""
        for _ in range(n):
            sql = ("WITH j AS (INSERT INTO jobs (name, team_id, user_id, spec, state, priority, "
                   "gpus, time_limit_s, max_restarts, finished_at) SELECT 'old', t.id, u.id, "
                   "jsonb_build_object('command', jsonb_build_array('/bin/sleep', '%s')), '%s', 1, "
                   "%d, 600, 0, %s FROM teams t, users u WHERE t.name = 'learn' AND u.username = "
                   "'admin' RETURNING id)" % (command, state, gpus, ended))
            end, values = ended, []
            for k, secs in reversed(list(enumerate(attempts_s))):
                values.append("(%d, (%s) - interval '%d seconds', %s)" % (k + 1, end, secs, end))
                end = "(%s) - interval '%d seconds'" % (end, secs + 5)
            sql += (" INSERT INTO attempts (job_id, attempt, state, created_at, ended_at) SELECT "
                    "j.id, a.n, 'ended', a.c, a.e FROM j, (VALUES %s) AS a(n, c, e)"
                    % ", ".join(values))
            self.db.sql(sql)

    def prediction(self, job_id):
        def found():
            st, e, _ = self.admin.get("/api/v1/jobs/%s/forecast" % job_id)
            return e["prediction"] if st == 200 else None
        return wait_for(found, timeout=30, what="a forecast of job %s" % job_id)

    def submit(self, command, gpus=1):
        st, job, _ = self.admin.post("/api/v1/jobs", {
            "name": "new", "team": "learn", "resources": {"gpus": gpus}, "time_limit_s": 600,
            "command": ["/bin/sleep", command]})
        self.assertEqual(st, 201, job)
        return job["id"]

    def test_learns_from_succeeded_jobs_only(self):
        self.make_team("learn")
        self.history("101", "SUCCEEDED", [40, 60])
        # Other GPU counts, so that the team key (team and GPUs) of the
        # succeeded jobs cannot answer for them.
        self.history("102", "FAILED", [10], gpus=2)
        self.history("103", "CANCELLED", [10], gpus=3)
        self.history("104", "SUCCEEDED", [10], gpus=4, ended="now() + interval '1 hour'")
        ok = self.submit("101")
        self.assertEqual(self.prediction(ok), {"run_s": 100, "source": "exact"})
        # The team key: same team and GPU count, another command.
        self.assertEqual(self.prediction(self.submit("105")), {"run_s": 100, "source": "team"})
        for command, gpus in (("102", 2), ("103", 3), ("104", 4)):
            self.assertEqual(self.prediction(self.submit(command, gpus)),
                             {"run_s": 600, "source": "time_limit"}, command)


if __name__ == "__main__":
    harness.main()
