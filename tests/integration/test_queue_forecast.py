"""The queue forecast end to end (docs/queue.md), on a real worker
with 4 fake GPUs and real PostgreSQL:

- the predictor learns from jobs that succeeded (three short runs of one
  command) and predicts a queued job of the same user and command;
- GET /api/v1/queue lists the queued jobs in scheduling order with the
  reason each waits: a job waiting for GPUs (it holds the reservation and
  starts when the running job is expected to end), a job behind that
  reservation (it starts when the reserved job is expected to end), a job
  of a team over its quota;
- members see their teams' jobs only, with their places in the whole queue;
- GET /api/v1/jobs/{id}/forecast: one entry, 409 when not queued, 404 when
  not visible;
- POST /api/v1/queue/what-if answers for a hypothetical job (it starts when
  a job ahead is predicted to end) and changes nothing; bad input gets a
  clear 400;
- trainyard queue and trainyard show JOB print the same forecast;
- a second server on the same database (a replica, not the leader) serves
  the leader's forecast.

Times are compared as the forecast computed them, never against a clock."""
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Client, Server, ServerTest, Worker, wait_for  # noqa: E402

SLEEP = os.path.join(os.path.abspath(harness.SRC), "examples", "sleep_rank.py")
SHORT = ["/usr/bin/python3", SLEEP, "--seconds", "0.3"]


def ts(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ")


class QueueForecastTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.shared = tempfile.mkdtemp(prefix="ty-forecast-")
        os.chmod(cls.shared, 0o755)
        cls.server_args = ("--storage-root", cls.shared, "--sched-interval-ms", "200",
                           "--forecast-interval-ms", "0")
        super().setUpClass()
        cls.worker = None
        try:
            cls.build_queue()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.worker is not None:
                for j in getattr(cls, "ids", {}).values():
                    cls.admin.post("/api/v1/jobs/%s/cancel" % j)
                cls.worker.stop()
        finally:
            super().tearDownClass()
            shutil.rmtree(cls.shared, ignore_errors=True)

    @classmethod
    def post_job(cls, name, team, gpus, command, prio="normal", limit=600):
        st, job, _ = cls.admin.post("/api/v1/jobs", {
            "name": name, "team": team, "resources": {"gpus": gpus}, "priority": prio,
            "time_limit_s": limit, "max_restarts": 0, "command": command})
        assert st == 201, job
        return job["id"]

    @classmethod
    def state(cls, job_id):
        return cls.admin.get("/api/v1/jobs/" + job_id)[1]["state"]

    @classmethod
    def build_queue(cls):
        for name, quota in (("ml", 2), ("free", 0)):
            st, body, _ = cls.admin.post("/api/v1/teams", {"name": name, "gpu_quota": quota})
            assert st == 201, body
        st, tok, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        cls.worker = Worker(cls.server.url, tok["token"], "fc-node", gpus=4,
                            allowed_root=cls.shared)
        # Three short runs of one command teach the predictor (min 3 samples).
        learned = [cls.post_job("learn%d" % i, "ml", 1, SHORT) for i in range(3)]
        for j in learned:
            wait_for(lambda: cls.state(j) == "SUCCEEDED", timeout=90,
                     what="learning job %s to succeed" % j)
        cls.ids = {}
        # R runs on 2 of the 4 GPUs until its limit (600 s) as far as anyone knows.
        cls.ids["R"] = cls.post_job("R", "ml", 2, ["/usr/bin/python3", SLEEP, "--seconds",
                                                   "3600.%d" % os.getpid()])
        wait_for(lambda: cls.state(cls.ids["R"]) == "RUNNING", timeout=60, what="R to run")
        # W needs all 4: it waits for GPUs and holds the reservation.
        cls.ids["W"] = cls.post_job("W", "free", 4, ["/bin/true"], prio="high", limit=300)
        # B fits the 2 free GPUs, but they are W's and B's limit outlasts R.
        cls.ids["B"] = cls.post_job("B", "free", 1, ["/bin/true"], limit=3600)
        # Q's team uses its whole quota (R) and Q does not fit what is free.
        cls.ids["Q"] = cls.post_job("Q", "ml", 3, SHORT)

        def ready():
            q = cls.admin.get("/api/v1/queue")[1]
            by = {j["id"]: j for j in q["jobs"]}
            if set(by) != {cls.ids[k] for k in "WBQ"}:
                return None
            if by[cls.ids["Q"]]["prediction"]["source"] != "user":
                return None  # the predictor reads jobs a second after they end
            return q
        cls.queue = wait_for(ready, timeout=60, what="a forecast of W, B and Q")

    def entry(self, key, queue=None):
        queue = queue or self.queue
        return next(j for j in queue["jobs"] if j["id"] == self.ids[key])

    def test_order_and_reasons(self):
        q = self.queue
        self.assertTrue(q["generated_at"].endswith("Z"), q)
        self.assertEqual([j["position"] for j in q["jobs"]], [0, 1, 2])
        self.assertEqual(q["jobs"][0]["id"], self.ids["W"])  # high priority first
        w, b, qq = self.entry("W"), self.entry("B"), self.entry("Q")
        running = {r["id"]: r for r in q["running"]}
        r_end = running[self.ids["R"]]["expected_end"]
        self.assertEqual(running[self.ids["R"]]["prediction"]["source"], "time_limit")

        self.assertEqual(w["reason"]["code"], "gpus")
        self.assertEqual(w["reason"]["params"]["need_gpus"], 4)
        self.assertEqual(w["reason"]["params"]["free_gpus"], 2)
        # The reserved job starts when the running job is expected to end.
        self.assertEqual(w["estimated_start"], r_end)
        self.assertEqual((w["team"], w["user"], w["priority"], w["gpus"]),
                         ("free", "admin", "high", 4))
        self.assertEqual(w["prediction"], {"run_s": 300, "source": "time_limit"})

        self.assertEqual(b["reason"]["code"], "reserved")
        self.assertEqual(b["reason"]["params"]["other_job_id"], self.ids["W"])
        # Next behind the reservation: when the reserved job is expected to end.
        self.assertEqual(ts(b["estimated_start"]) - ts(w["estimated_start"]),
                         datetime.timedelta(seconds=300))

        self.assertEqual(qq["reason"]["code"], "quota")
        self.assertEqual(qq["reason"]["params"]["need_gpus"], 3)
        # Learned from the three succeeded runs of its user's command (other GPU count).
        self.assertEqual(qq["prediction"]["source"], "user")
        self.assertLess(qq["prediction"]["run_s"], 60)
        self.assertIsNotNone(qq["estimated_start"])

    def test_member_sees_own_teams_jobs(self):
        _, c = self.make_user("fc-free", teams=[{"id": self.team_id("free")}])
        q = c.get("/api/v1/queue")[1]
        mine = {j["id"]: j for j in q["jobs"]}
        self.assertEqual(set(mine), {self.ids["W"], self.ids["B"]})
        self.assertEqual(q["running"], [])  # R is ml's
        by_admin = {j["id"]: j["position"] for j in self.admin.get("/api/v1/queue")[1]["jobs"]}
        for i, j in mine.items():
            self.assertEqual(j["position"], by_admin[i])
        st, body, _ = c.get("/api/v1/jobs/%s/forecast" % self.ids["Q"])
        self.assertEqual(st, 404, body)

    def test_job_forecast(self):
        st, e, _ = self.admin.get("/api/v1/jobs/%s/forecast" % self.ids["B"])
        self.assertEqual(st, 200, e)
        self.assertEqual(e["id"], self.ids["B"])
        self.assertEqual(e["reason"]["code"], "reserved")
        self.assertIn("generated_at", e)
        err = self.assert_error(self.admin.get("/api/v1/jobs/%s/forecast" % self.ids["R"]),
                                409, "not_queued")
        self.assertEqual(err["params"], {"state": "RUNNING"})
        self.assert_error(self.admin.get("/api/v1/jobs/999999/forecast"), 404)

    def team_id(self, name):
        return self.db.sql("SELECT id FROM teams WHERE name = '%s'" % name)[0][0]

    def test_what_if(self):
        jobs = self.db.sql("SELECT count(*) FROM jobs")
        audit = self.db.sql("SELECT count(*) FROM audit_events")
        st, e, _ = self.admin.post("/api/v1/queue/what-if", {
            "team": "free", "resources": {"gpus": 1}, "priority": "normal",
            "site": "default", "time_limit_s": 3600})
        self.assertEqual(st, 200, e)
        self.assertIsNone(e["id"])
        self.assertEqual(e["reason"]["code"], "reserved")
        self.assertEqual(e["reason"]["params"]["other_job_id"], self.ids["W"])
        b = self.admin.get("/api/v1/jobs/%s/forecast" % self.ids["B"])[1]
        qq = self.admin.get("/api/v1/jobs/%s/forecast" % self.ids["Q"])[1]
        # When W ends, B (1 GPU) and Q (3) take the 4 GPUs; the hypothetical
        # job, behind them, starts when Q is predicted to end: a run time
        # learned from the succeeded jobs, not Q's 600 s limit.
        self.assertEqual(qq["estimated_start"], b["estimated_start"])
        self.assertEqual(ts(e["estimated_start"]) - ts(qq["estimated_start"]),
                         datetime.timedelta(seconds=qq["prediction"]["run_s"]))
        self.assertEqual(e["position"], 3)
        self.assertEqual(e["prediction"], {"run_s": 3600, "source": "time_limit"})
        # A job larger than the site: never.
        st, big, _ = self.admin.post("/api/v1/queue/what-if", {
            "team": "free", "resources": {"gpus": 8}})
        self.assertEqual(st, 200, big)
        self.assertEqual(big["reason"]["code"], "site_too_small")
        self.assertIsNone(big["estimated_start"])
        # Nothing changed.
        self.assertEqual(self.db.sql("SELECT count(*) FROM jobs"), jobs)
        self.assertEqual(self.db.sql("SELECT count(*) FROM audit_events"), audit)

    def test_what_if_bad_input(self):
        wi = "/api/v1/queue/what-if"
        self.assert_error(self.admin.post(wi, {"team": "free", "resources": {"gpus": 0}}),
                          400, "invalid_argument", "resources.gpus")
        self.assert_error(self.admin.post(wi, {"team": "free"}), 400, "invalid_argument",
                          "resources")
        self.assert_error(self.admin.post(wi, {"resources": {"gpus": 1}}), 400,
                          "invalid_argument", "team")
        self.assert_error(self.admin.post(wi, {"team": "nope", "resources": {"gpus": 1}}), 400,
                          "invalid_argument", "team")
        self.assert_error(self.admin.post(wi, {"team": "free", "resources": {"gpus": 1},
                                               "priority": "urgent"}), 400, None, "priority")
        self.assert_error(self.admin.post(wi, {"team": "free", "resources": {"gpus": 1},
                                               "site": "mars"}), 400, None, "site")
        self.assert_error(self.admin.post(wi, {"team": "free", "resources": {"gpus": 1},
                                               "command": ["x"]}), 400, None, "command")
        _, c = self.make_user("fc-other")
        self.assert_error(c.post(wi, {"team": "free", "resources": {"gpus": 1}}), 403, None,
                          "team")

    def test_cli_queue_and_show(self):
        tok = self.admin.post("/api/v1/tokens", {"name": "fc-cli"})[1]["token"]
        env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES")}
        env.update(TRAINYARD_URL=self.server.url, TRAINYARD_TOKEN=tok, LANG="C.UTF-8",
                   HOME=tempfile.mkdtemp(prefix="ty-fc-home-"))

        def cli(*args, lang="C.UTF-8"):
            return subprocess.run([harness.CLI_BIN] + list(args), capture_output=True,
                                  text=True, env=dict(env, LANG=lang), timeout=60)
        out = cli("queue", "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual([j["id"] for j in json.loads(out.stdout)["jobs"]],
                         [self.ids[k] for k in "WBQ"])
        out = cli("queue")
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertTrue(lines[0].startswith("forecast of "), lines)
        self.assertIn("ESTIMATED START", lines[1])
        w = next(line for line in lines if line.split()[1:2] == [self.ids["W"]])
        self.assertIn("waiting for GPUs: needs 4, 2 free where it fits", w)
        self.assertIn(self.entry("W")["estimated_start"], w)
        b = next(line for line in lines if line.split()[1:2] == [self.ids["B"]])
        self.assertIn("reserved for job %s" % self.ids["W"], b)
        # Under a Chinese locale: the headers, the forecast line and the reasons.
        out = cli("queue", lang="zh_CN.UTF-8")
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertTrue(lines[0].startswith("预测时间 "), lines)
        self.assertEqual(lines[1].split(), ["位置", "编号", "名称", "团队", "用户", "优先级", "GPU",
                                            "预计开始", "预计运行", "等待原因"])
        w = next(line for line in lines if line.split()[1:2] == [self.ids["W"]])
        self.assertIn("等待 GPU：需要 4 张，可放置处空闲 2 张", w)
        b = next(line for line in lines if line.split()[1:2] == [self.ids["B"]])
        self.assertIn("它可用的 GPU 已为作业 %s 预留" % self.ids["W"], b)
        out = cli("show", self.ids["B"])
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"(?i)state\s+QUEUED")
        self.assertIn("queue position 1", out.stdout)
        self.assertIn("reserved for job %s" % self.ids["W"], out.stdout)
        # A running job has no forecast lines; --json is the job as the API has it.
        out = cli("show", self.ids["R"])
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertNotIn("queue position", out.stdout)
        out = cli("show", self.ids["R"], "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout)["state"], "RUNNING")
        out = cli("show", "999999")
        self.assertEqual(out.returncode, 4, out.stdout)  # not found (cli.h)
        self.assertIn("404", out.stderr)
        self.assertEqual(cli("show").returncode, 2)

    def test_replica_serves_the_leaders_forecast(self):
        replica = Server(self.db, args=self.server_args, admin=False)
        try:
            tok = self.admin.post("/api/v1/tokens", {"name": "fc-replica"})[1]["token"]
            leader, follower = Client(self.server.url, token=tok), Client(replica.url, token=tok)

            def same():
                a = leader.get("/api/v1/queue")[1]
                b = follower.get("/api/v1/queue")[1]
                return b if a == b and len(b["jobs"]) == 3 else None
            q = wait_for(same, timeout=30, what="the replica to serve the leader's forecast")
            self.assertEqual(self.entry("W", q)["reason"]["code"], "gpus")
            with open(replica.log_path) as f:
                self.assertNotIn("this replica leads scheduling", f.read())
        finally:
            replica.stop()


if __name__ == "__main__":
    harness.main()
