"""Deployments (docs/serving.md "Deployments") on a real server, PostgreSQL
and worker:

- a create is checked (model, version or alias, counts, an incomplete
  lineage needs an admin's override) and makes its replica jobs, named
  <deployment>-r<k>, in the model's site, with one serve_replicas row each;
- a replica job runs on the worker with the model server's env: the version
  (TRAINYARD_MODEL_*, also in the spec) and, only through the assignment,
  TRAINYARD_SERVE_HOST/PORT (the attempt's master address and port) and
  TRAINYARD_SERVE_TOKEN (serve_replicas.token), which no job answer shows;
- a replica has no time limit (0, which no submit may give), is restarted
  when its process is killed although its max_restarts is 0, and each quick
  failure holds the next attempt back longer (jobs.failure_streak,
  not_before);
- a replica cannot be cancelled through the jobs API (409
  deployment_replica); scaling down cancels the newest, scaling up adds
  new ones, stop cancels all and start makes them again, each change audited;
- a replica is never preempted: a team under its quota does not take back
  the GPUs a borrowing team's replica holds;
- the command line: trainyard deploy MODEL[:VERSION|@ALIAS], trainyard
  deployments [list | show | scale | stop | start].

The model server itself (examples/serve_*.py) is not needed for any of
that: those replicas run scripts of the test's own examples_dir (one that
waits, one that ends at once), so their versions are written into the
registry's tables directly (the registry records only a template's serve
script). ServeEchoTest takes the whole path instead: a ddp-mlp-demo job
trained, its output registered through the registry API, deployed, and
examples/serve_echo.py answering: a replica is ready once its /health
passes, answers only with its token, and is ready again after its process
is killed.
"""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import urllib.error
import urllib.request
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import CLI_BIN, ServerTest, Worker, wait_for  # noqa: E402

METRICS_TOKEN = "metrics-token-for-deployments-0123456789"

# What the replicas run: waits until stopped (it is not a model server).
HOLD = "import sys, time\nprint('holding', sys.argv, flush=True)\ntime.sleep(86400)\n"
# A replica that ends at once, every time.
QUIT = "print('quitting', flush=True)\n"


def manifest_of(path):
    """The manifest and its digest as docs/serving.md ("Registry") defines them."""
    files = []
    for d, _, names in os.walk(path):
        for n in names:
            p = os.path.join(d, n)
            with open(p, "rb") as f:
                data = f.read()
            files.append({"path": os.path.relpath(p, path), "size": len(data),
                          "sha256": hashlib.sha256(data).hexdigest()})
    files.sort(key=lambda f: f["path"])
    text = "".join("%s %d %s\n" % (f["sha256"], f["size"], f["path"]) for f in files)
    return files, hashlib.sha256(text.encode()).hexdigest()


def environ(pid):
    with open("/proc/%d/environ" % pid, "rb") as f:
        items = f.read().split(b"\0")
    return dict(i.decode().split("=", 1) for i in items if b"=" in i)


class DeploymentTest(ServerTest):

    @classmethod
    def setUpClass(cls):
        cls.storage = tempfile.mkdtemp(prefix="ty-dep-storage-")
        os.chmod(cls.storage, 0o755)
        cls.examples = tempfile.mkdtemp(prefix="ty-dep-examples-")
        os.chmod(cls.examples, 0o755)
        cls.script = "hold_%d.py" % os.getpid()  # unique on this host: finds the ranks
        cls.quit_script = "quit_%d.py" % os.getpid()
        for name, text in ((cls.script, HOLD), (cls.quit_script, QUIT)):
            with open(os.path.join(cls.examples, name), "w") as f:
                f.write(text)
            os.chmod(os.path.join(cls.examples, name), 0o644)
        cls.server_args = ("--storage-root", cls.storage, "--examples-dir", cls.examples,
                           "--sched-interval-ms", "200", "--metrics-token", METRICS_TOKEN,
                           "--metrics-cache-ms", "0")
        super().setUpClass()
        cls.borrower = cls.make_team_cls("borrower", 0)
        cls.owner = cls.make_team_cls("owner", 2)
        st, tok, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        assert st == 201, tok
        cls.worker = Worker(cls.server.url, tok["token"], "dep-node", gpus=2,
                            allowed_root=cls.storage)
        # A version to serve: an output directory in the storage root, as the
        # registry would record it (POST /models/{name}/versions).
        cls.model_dir = os.path.join(cls.storage, "outputs", "tiny")
        os.makedirs(os.path.join(cls.model_dir, "sub"))
        for rel, data in (("config.json", b'{"kind":"echo"}'), ("sub/weights.bin", b"\0" * 100)):
            with open(os.path.join(cls.model_dir, rel), "wb") as f:
                f.write(data)
        cls.manifest, digest = manifest_of(cls.model_dir)
        team_id = cls.borrower["id"]
        cls.db.sql("INSERT INTO models (name, team_id, site_id, created_by) SELECT 'tiny', %s, "
                   "id, 'user:admin' FROM sites WHERE name = 'default'" % team_id)
        for version, complete in ((1, "true"), (2, "false")):
            cls.db.sql(
                "INSERT INTO model_versions (model_id, version, site_id, source_kind, path, "
                "serve_kind, serve_script, manifest, manifest_sha256, lineage_complete, "
                "created_by) SELECT m.id, %d, m.site_id, 'output', $p$%s$p$, 'echo', $s$%s$s$, "
                "$j$%s$j$::jsonb, '%s', %s, 'user:admin' FROM models m WHERE m.name = 'tiny'"
                % (version, cls.model_dir, cls.script, json.dumps(cls.manifest), digest, complete))
        # A model whose server exits 0 at once.
        cls.db.sql("INSERT INTO models (name, team_id, site_id, created_by) SELECT 'quits', %s, "
                   "id, 'user:admin' FROM sites WHERE name = 'default'" % team_id)
        cls.db.sql(
            "INSERT INTO model_versions (model_id, version, site_id, source_kind, path, "
            "serve_kind, serve_script, manifest, manifest_sha256, lineage_complete, "
            "created_by) SELECT m.id, 1, m.site_id, 'output', $p$%s$p$, 'echo', $s$%s$s$, "
            "$j$%s$j$::jsonb, '%s', true, 'user:admin' FROM models m WHERE m.name = 'quits'"
            % (cls.model_dir, cls.quit_script, json.dumps(cls.manifest), digest))
        cls.db.sql("INSERT INTO model_aliases (model_id, alias, version_id, updated_by) SELECT "
                   "model_id, 'prod', id, 'user:admin' FROM model_versions WHERE version = 1")

    @classmethod
    def make_team_cls(cls, name, quota):
        st, body, _ = cls.admin.post("/api/v1/teams", {"name": name, "gpu_quota": quota})
        assert st == 201, body
        return body

    @classmethod
    def tearDownClass(cls):
        try:
            cls.worker.stop()
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.storage, ignore_errors=True)
            shutil.rmtree(cls.examples, ignore_errors=True)

    # helpers -------------------------------------------------------------
    def dep(self, name):
        st, body, _ = self.admin.get("/api/v1/deployments/" + name)
        self.assertEqual(st, 200, body)
        return body

    def job(self, jid):
        return self.admin.get("/api/v1/jobs/" + str(jid))[1]

    def live(self, name):
        """The deployment's replicas whose jobs have not ended, by job id."""
        return {r["job_id"]: r for r in self.dep(name)["replicas_detail"]
                if r["state"] not in ("SUCCEEDED", "FAILED", "CANCELLED")}

    def running(self, name, n):
        """Wait until the deployment has n replicas RUNNING; returns them."""
        def check():
            reps = self.dep(name)["replicas_detail"]
            run = [r for r in reps if r["state"] == "RUNNING"]
            return run if len(run) == n else None
        return wait_for(check, timeout=90, what="%d replicas of %s running" % (n, name))

    def rank_of(self, jid):
        """The pid of job jid's rank on this host (its env names the job)."""
        def find():
            for pid, _ in harness.processes_with_cmdline(self.script):
                try:
                    if environ(pid).get("TRAINYARD_JOB_ID") == str(jid):
                        return pid
                except OSError:
                    pass
            return None
        return wait_for(find, timeout=60, what="the rank of job %s" % jid)

    def stop_and_wait(self, name):
        st, body, _ = self.admin.post("/api/v1/deployments/%s/stop" % name, {})
        self.assertEqual(st, 200, body)
        self.wait_ended(name)

    def wait_ended(self, name):
        # Retired replicas leave the deployment's answer at once: wait for their jobs.
        wait_for(lambda: self.db.sql(
            "SELECT count(*) FROM serve_replicas r JOIN jobs j ON j.id = r.job_id JOIN "
            "deployments d ON d.id = r.deployment_id WHERE d.name = '%s' AND j.state NOT IN "
            "('SUCCEEDED', 'FAILED', 'CANCELLED')" % name) == [["0"]],
            timeout=90, what="every replica of %s ended" % name)

    # tests ---------------------------------------------------------------
    def test_create_is_checked(self):
        _, member = self.make_user("mia", teams=[self.borrower])
        base = {"name": "bad", "model": "tiny", "version": 1, "team": "borrower"}
        n = int(self.db.sql("SELECT count(*) FROM jobs")[0][0])
        deps = self.db.sql("SELECT count(*) FROM deployments")
        self.assert_error(self.admin.post("/api/v1/deployments", dict(base, model="nope")),
                          404, "not_found", "model")
        self.assert_error(self.admin.post("/api/v1/deployments", dict(base, version=9)),
                          404, "not_found", "version")
        b = dict(base)
        del b["version"]
        self.assert_error(self.admin.post("/api/v1/deployments", dict(b, alias="nope")),
                          404, "not_found", "alias")
        self.assert_error(self.admin.post("/api/v1/deployments", dict(base, alias="prod")),
                          400, "invalid_argument", "alias")
        self.assert_error(self.admin.post("/api/v1/deployments", dict(base, name="Bad Name")),
                          400, "invalid_argument", "name")
        self.assert_error(self.admin.post("/api/v1/deployments",
                                          dict(base, replicas=3, max_replicas=2)),
                          400, "invalid_argument", "replicas")
        self.assert_error(self.admin.post("/api/v1/deployments", dict(base, team="owner")),
                          400, "invalid_argument", "team")
        # no vllm or triton adapter exists: a replica would run the PyTorch server anyway
        self.assert_error(self.admin.post("/api/v1/deployments", dict(base, engine="vllm")),
                          400, "invalid_argument", "engine")
        # version 2's lineage is incomplete: refused, and an override is an admin's
        self.assert_error(member.post("/api/v1/deployments", dict(base, version=2)),
                          409, "lineage_incomplete", "lineage_override")
        self.assert_error(member.post("/api/v1/deployments",
                                      dict(base, version=2, lineage_override=True)),
                          403, "permission_denied", "lineage_override")
        # a model of another team is not there for a member
        _, other = self.make_user("otto", teams=[self.owner])
        self.assert_error(other.post("/api/v1/deployments", base), 404, "not_found", "model")
        self.assertEqual(int(self.db.sql("SELECT count(*) FROM jobs")[0][0]), n)
        self.assertEqual(self.db.sql("SELECT count(*) FROM deployments"), deps)
        # the admin's override is accepted and audited (no replica wanted)
        st, d, _ = self.admin.post("/api/v1/deployments",
                                   dict(base, name="override", version=2, lineage_override=True,
                                        replicas=0, min_replicas=0))
        self.assertEqual(st, 201, d)
        self.assertTrue(d["lineage_override"], d)
        ev = self.db.sql("SELECT details::jsonb->>'lineage_override' FROM audit_events WHERE action = "
                         "'deployment.create' AND target = 'deployment:override'")
        self.assertEqual(ev, [["true"]])

    def test_replicas_run_restart_scale_stop_start(self):
        st, d, _ = self.admin.post("/api/v1/deployments", {
            "name": "bot", "model": "tiny", "alias": "prod", "replicas": 2, "max_replicas": 3,
            "gpus_per_replica": 1, "priority": "high"})
        self.assertEqual(st, 201, d)
        self.assertEqual((d["team"], d["site"], d["version"], d["alias"], d["state"]),
                         ("borrower", "default", 1, "prod", "active"), d)
        reps = self.running("bot", 2)
        self.assertEqual(sorted(r["name"] for r in reps), ["bot-r1", "bot-r2"])
        rows = self.db.sql("SELECT j.id, j.service, j.time_limit_s, j.max_restarts, r.token, "
                           "t.master_addr, t.master_port, j.priority FROM serve_replicas r JOIN "
                           "jobs j ON j.id = r.job_id JOIN attempts t ON t.job_id = j.id AND "
                           "t.attempt = j.attempt WHERE r.deployment_id = (SELECT id FROM "
                           "deployments WHERE name = 'bot') ORDER BY j.id")
        self.assertEqual(len(rows), 2)
        for jid, service, limit, max_restarts, token, addr, port, prio in rows:
            self.assertEqual((service, limit, max_restarts, prio), ("t", "0", "0", "2"))
            self.assertGreaterEqual(len(token), 40)
            job = self.job(jid)
            self.assertEqual(job["time_limit_s"], 0, job)
            self.assertEqual(job["gpus"], 1, job)
            self.assertEqual(job["spec"]["command"],
                             ["/usr/bin/python3", os.path.join(self.examples, self.script)])
            env = job["spec"]["env"]
            self.assertEqual(env["TRAINYARD_MODEL_PATH"], self.model_dir)
            self.assertEqual(json.loads(env["TRAINYARD_MODEL_MANIFEST"]), self.manifest)
            self.assertEqual(env["TRAINYARD_MODEL_NAME"], "bot")
            self.assertEqual(env["TRAINYARD_SERVE_KIND"], "echo")
            # The token is in no answer about the job or the deployment.
            self.assertNotIn(token, json.dumps(job))
            self.assertNotIn(token, json.dumps(self.admin.get("/api/v1/jobs/%s/events" % jid)[1]))
            self.assertNotIn(token, json.dumps(self.dep("bot")))
            # The rank got the model server's env (docs/serving.md).
            got = environ(self.rank_of(jid))
            self.assertEqual(got["TRAINYARD_SERVE_TOKEN"], token)
            self.assertEqual(got["TRAINYARD_SERVE_HOST"], addr)
            self.assertEqual(got["TRAINYARD_SERVE_PORT"], port)
            self.assertEqual(got["MASTER_PORT"], port)
            self.assertEqual(got["TRAINYARD_MODEL_PATH"], self.model_dir)
            self.assertEqual(json.loads(got["TRAINYARD_MODEL_MANIFEST"]), self.manifest)
            self.assertEqual(got["TRAINYARD_MODEL_NAME"], "bot")
            self.assertEqual(got["TRAINYARD_SERVE_KIND"], "echo")
        # The health loop probes each running replica's /health and records
        # the attempt it probed: nothing answers there, so none is ready.
        wait_for(lambda: self.db.sql("SELECT count(*) FROM serve_replicas WHERE attempt = 1 "
                                     "AND NOT ready AND job_id IN (%s, %s)"
                                     % (rows[0][0], rows[1][0])) == [["2"]],
                 timeout=30, what="both replicas probed (not ready)")
        self.assertEqual(self.dep("bot")["ready_replicas"], 0)
        st, text, _ = harness.Client(self.server.url, token=METRICS_TOKEN).get("/metrics")
        self.assertEqual(st, 200, text)
        self.assertIn('trainyard_deployment_replicas_ready{deployment="bot"} 0\n', text)
        self.assertIn('trainyard_deployment_replicas_wanted{deployment="bot"} 2\n', text)
        # No submit may ask for "no time limit".
        self.assert_error(self.admin.post("/api/v1/jobs", self.job_spec("borrower",
                                                                        time_limit_s=0)),
                          400, "invalid_argument", "time_limit_s")

        # A replica is not cancelled through the jobs API.
        first, second = rows[0][0], rows[1][0]
        self.assert_error(self.admin.post("/api/v1/jobs/%s/cancel" % first, {}), 409,
                          "deployment_replica")
        self.assertEqual(self.job(first)["state"], "RUNNING")

        # Killed, it comes back although max_restarts is 0; a quick failure
        # holds the next attempt back, longer each time.
        for attempt in (2, 3):
            os.kill(self.rank_of(first), signal.SIGKILL)
            wait_for(lambda: self.job(first)["attempt"] == attempt and
                     self.job(first)["state"] == "RUNNING", timeout=90,
                     what="replica %s to run again (attempt %d)" % (first, attempt))
            streak, wait = self.db.sql("SELECT failure_streak, extract(epoch FROM not_before - "
                                       "(SELECT ended_at FROM attempts WHERE job_id = %s AND "
                                       "attempt = %d))::int FROM jobs WHERE id = %s"
                                       % (first, attempt - 1, first))[0]
            self.assertEqual(int(streak), attempt - 1)
            self.assertEqual(int(wait), 2 ** (attempt - 2))
            self.assertEqual(self.job(first)["restarts"], attempt - 1)
        ev = self.admin.get("/api/v1/jobs/%s/events" % first)[1]["events"]
        self.assertTrue(any("restarted without limit" in e["reason"] for e in ev), ev)

        # Scale down: the newest replica is cancelled.
        st, body, _ = self.admin.request("PATCH", "/api/v1/deployments/bot", {"replicas": 1})
        self.assertEqual(st, 200, body)
        wait_for(lambda: self.job(second)["state"] == "CANCELLED", timeout=90,
                 what="the newest replica cancelled")
        self.assertEqual(list(self.live("bot")), [first])
        self.assertEqual(self.db.sql("SELECT retired FROM serve_replicas WHERE job_id = %s"
                                     % second), [["t"]])
        self.assert_error(self.admin.request("PATCH", "/api/v1/deployments/bot",
                                             {"replicas": 4}), 400, "invalid_argument", "replicas")
        # Scale up: a new replica, bot-r3.
        st, body, _ = self.admin.request("PATCH", "/api/v1/deployments/bot", {"replicas": 2})
        self.assertEqual(st, 200, body)
        reps = self.running("bot", 2)
        self.assertEqual(sorted(r["name"] for r in reps), ["bot-r1", "bot-r3"])

        # Stop cancels every replica; start makes the count again.
        self.stop_and_wait("bot")
        self.assertEqual(self.dep("bot")["state"], "stopped")
        self.assert_error(self.admin.post("/api/v1/deployments/bot/stop", {}), 409, "conflict")
        st, body, _ = self.admin.post("/api/v1/deployments/bot/start", {})
        self.assertEqual(st, 200, body)
        reps = self.running("bot", 2)
        self.assertEqual(sorted(r["name"] for r in reps), ["bot-r4", "bot-r5"])
        self.stop_and_wait("bot")

        acts = [r[0] for r in self.db.sql("SELECT action FROM audit_events WHERE target = "
                                          "'deployment:bot' ORDER BY id")]
        self.assertEqual(acts, ["deployment.create", "deployment.update", "deployment.update",
                                "deployment.stop", "deployment.start", "deployment.stop"])
        st, v, _ = self.admin.get("/api/v1/audit/verify")
        self.assertEqual(st, 200, v)
        self.assertTrue(v["valid"], v)

    def cli(self, *args):
        home = tempfile.mkdtemp(prefix="home-", dir=self.storage)
        env = {k: v for k, v in os.environ.items()
               if k not in ("LC_ALL", "LC_MESSAGES", "TRAINYARD_TOKEN", "XDG_CONFIG_HOME")}
        env.update(LANG="C.UTF-8", HOME=home, TRAINYARD_URL=self.server.url,
                   TRAINYARD_TOKEN=self.cli_token)
        return subprocess.run([CLI_BIN] + list(args), capture_output=True, text=True, env=env,
                              timeout=120)

    def test_cli(self):
        st, tok, _ = self.admin.post("/api/v1/tokens", {"name": "cli"})
        self.assertEqual(st, 201, tok)
        self.cli_token = tok["token"]
        bad = self.cli("deploy", "tiny:x", "--name", "clibot")
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("MODEL:VERSION", bad.stderr)
        # No version: the newest (2, whose lineage an admin may override only
        # explicitly): refused, exit 5.
        r = self.cli("deploy", "tiny", "--name", "clibot", "--replicas", "0")
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("lineage_incomplete", r.stderr)
        r = self.cli("deploy", "tiny@prod", "--name", "clibot", "--replicas", "1",
                     "--max-replicas", "2", "--priority", "low")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("deployment clibot: active, model tiny version 1, 0 of 1 replicas ready",
                      r.stdout)
        self.running("clibot", 1)
        r = self.cli("deployments")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("deployment clibot: active", r.stdout)
        r = self.cli("deployments", "show", "clibot")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("clibot-r1", r.stdout)
        self.assertIn("RUNNING", r.stdout)
        r = self.cli("deployments", "show", "clibot", "--json")
        self.assertEqual(json.loads(r.stdout)["name"], "clibot")
        self.assertEqual(self.cli("deployments", "show", "nope").returncode, 4)
        r = self.cli("deployments", "scale", "clibot", "--replicas", "3")
        self.assertEqual(r.returncode, 1, r.stderr)  # over max_replicas: 400
        r = self.cli("deployments", "scale", "clibot", "--replicas", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(self.running("clibot", 2)), 2)
        r = self.cli("deployments", "stop", "clibot")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("deployment clibot: stopped", r.stdout)
        self.wait_ended("clibot")
        self.assertEqual(self.cli("deployments", "stop", "clibot").returncode, 5)

    def test_replica_that_ends_at_once_backs_off(self):
        st, d, _ = self.admin.post("/api/v1/deployments", {
            "name": "quitter", "model": "quits", "replicas": 1})
        self.assertEqual(st, 201, d)
        jid = d["replicas_detail"][0]["job_id"]
        # Exit 0 is no success for a model server: restarted, each time later.
        wait_for(lambda: self.job(jid)["attempt"] >= 4, timeout=120,
                 what="the replica's fourth attempt")
        self.assertNotIn(self.job(jid)["state"], ("SUCCEEDED", "FAILED", "CANCELLED"))
        gaps = self.db.sql("SELECT extract(epoch FROM b.created_at - a.ended_at) FROM attempts a "
                           "JOIN attempts b ON b.job_id = a.job_id AND b.attempt = a.attempt + 1 "
                           "WHERE a.job_id = %s AND a.attempt <= 3 ORDER BY a.attempt" % jid)
        # The waits were 1, 2 and 4 s: each placement came no earlier.
        for (gap,), wait in zip(gaps, (1, 2, 4)):
            self.assertGreaterEqual(float(gap), wait, gaps)
        self.stop_and_wait("quitter")
        self.assertEqual(self.job(jid)["state"], "CANCELLED")

    def test_version_change_replaces_replicas(self):
        _, member = self.make_user("vera", teams=[self.borrower])
        st, d, _ = member.post("/api/v1/deployments", {
            "name": "ver", "model": "tiny", "version": 1, "replicas": 1})
        self.assertEqual(st, 201, d)
        old = self.running("ver", 1)[0]["job_id"]
        # version 2's lineage is incomplete: a member may not switch to it
        self.assert_error(member.request("PATCH", "/api/v1/deployments/ver", {"version": 2}),
                          409, "lineage_incomplete", "version")
        self.assert_error(member.request("PATCH", "/api/v1/deployments/ver", {"version": 7}),
                          404, "not_found", "version")
        st, body, _ = self.admin.request("PATCH", "/api/v1/deployments/ver", {"version": 2})
        self.assertEqual(st, 200, body)
        self.assertEqual(body["version"], 2, body)
        wait_for(lambda: self.job(old)["state"] == "CANCELLED", timeout=90,
                 what="the old version's replica cancelled")
        new = self.running("ver", 1)[0]
        self.assertEqual((new["name"], new["version"]), ("ver-r2", 2), new)
        ev = self.db.sql("SELECT details::jsonb->'version'->>'from', details::jsonb->'version'->>"
                         "'to' FROM audit_events WHERE target = 'deployment:ver' AND action = "
                         "'deployment.update'")
        self.assertEqual(len(ev), 1, ev)
        self.assertNotEqual(ev[0][0], ev[0][1])
        self.stop_and_wait("ver")

    def test_replica_is_never_preempted(self):
        # The borrowing team's replica holds both GPUs of the only node.
        st, d, _ = self.admin.post("/api/v1/deployments", {
            "name": "keep", "model": "tiny", "version": 1, "replicas": 1,
            "gpus_per_replica": 2, "priority": "low"})
        self.assertEqual(st, 201, d)
        rep = self.running("keep", 1)[0]
        # A team under its quota wants one: a training job would be
        # preempted for it (test_preemption.py); a replica is not.
        st, job, _ = self.admin.post("/api/v1/jobs", self.job_spec(
            "owner", name="wants-gpu", priority="high", max_restarts=0,
            command=["/bin/sleep", "1"]))
        self.assertEqual(st, 201, job)
        # The forecast is made after each pass: once it has the job, a pass
        # has decided on it with the replica running.
        wait_for(lambda: self.admin.get("/api/v1/jobs/%s/forecast" % job["id"])[0] == 200,
                 timeout=60, what="a scheduler pass with the job queued")
        wait_for(lambda: self.admin.get("/api/v1/queue")[1].get("generated_at") and
                 self.admin.get("/api/v1/jobs/%s/forecast" % job["id"])[0] == 200,
                 timeout=60, what="another pass")
        self.assertEqual(self.job(job["id"])["state"], "QUEUED")
        again = self.job(rep["job_id"])
        self.assertEqual((again["state"], again["attempt"]), ("RUNNING", 1), again)
        # Once the replica goes, the job runs.
        self.stop_and_wait("keep")
        wait_for(lambda: self.job(job["id"])["state"] == "SUCCEEDED", timeout=90,
                 what="the training job to run once the replica stopped")


class ServeEchoTest(ServerTest):
    """The registry, the repository's templates and model servers."""

    @classmethod
    def setUpClass(cls):
        cls.storage = tempfile.mkdtemp(prefix="ty-dep-echo-")
        os.chmod(cls.storage, 0o755)
        src = os.path.abspath(harness.SRC)
        cls.server_args = ("--storage-root", cls.storage,
                           "--templates-dir", os.path.join(src, "templates"),
                           "--examples-dir", os.path.join(src, "examples"),
                           "--sched-interval-ms", "200")
        super().setUpClass()
        st, tok, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        assert st == 201, tok
        cls.worker = Worker(cls.server.url, tok["token"], "echo-node", gpus=2,
                            allowed_root=cls.storage)

    @classmethod
    def tearDownClass(cls):
        try:
            cls.worker.stop()
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.storage, ignore_errors=True)

    def job(self, jid):
        return self.admin.get("/api/v1/jobs/" + str(jid))[1]

    def replica(self, name):
        return self.admin.get("/api/v1/deployments/" + name)[1]["replicas_detail"][0]

    def health(self, jid):
        host, port, token = self.db.sql(
            "SELECT t.master_addr, t.master_port, r.token FROM serve_replicas r JOIN jobs j ON "
            "j.id = r.job_id JOIN attempts t ON t.job_id = j.id AND t.attempt = j.attempt "
            "WHERE r.job_id = %s" % jid)[0]
        return "http://%s:%s" % (host, port), token

    def test_echo_replica_ready_and_back_after_kill9(self):
        self.make_team("ml")
        st, job, _ = self.admin.post("/api/v1/jobs", {
            "name": "tiny", "team": "ml", "template": "ddp-mlp-demo",
            "params": {"steps": 4, "checkpoint_every": 2}, "resources": {"gpus": 1}})
        self.assertEqual(st, 201, job)
        wait_for(lambda: self.job(job["id"])["state"] in ("SUCCEEDED", "FAILED"), timeout=300,
                 what="the training job to end")
        self.assertEqual(self.job(job["id"])["state"], "SUCCEEDED", self.worker.log_tail(30))
        st, v, _ = self.admin.post("/api/v1/models/tiny-echo/versions",
                                   {"job_id": job["id"], "source": "output"})
        self.assertEqual(st, 201, v)
        st, d, _ = self.admin.post("/api/v1/deployments", {
            "name": "echo", "model": "tiny-echo", "version": 1, "replicas": 1})
        self.assertEqual(st, 201, d)
        jid = d["replicas_detail"][0]["job_id"]
        # Ready once the model server's /health passed (the health loop).
        wait_for(lambda: self.replica("echo")["ready"], timeout=120,
                 what="the replica ready")
        self.assertEqual(self.admin.get("/api/v1/deployments/echo")[1]["ready_replicas"], 1)
        base, token = self.health(jid)
        with urllib.request.urlopen(base + "/health", timeout=10) as r:
            self.assertEqual(json.loads(r.read())["kind"], "echo")
        body = json.dumps({"model": "echo", "messages": [{"role": "user", "content": "hi"}]})
        req = urllib.request.Request(base + "/v1/chat/completions", data=body.encode(),
                                     headers={"Content-Type": "application/json"})
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        self.assertEqual(e.exception.code, 401)
        req.add_header("Authorization", "Bearer " + token)
        with urllib.request.urlopen(req, timeout=10) as r:
            answer = json.loads(r.read())
        self.assertEqual(answer["choices"][0]["message"]["content"], "hi")

        # kill -9 of the model server: not ready, then a new attempt, ready again.
        pids = [pid for pid, _ in harness.processes_with_cmdline("serve_echo.py")
                if environ(pid).get("TRAINYARD_JOB_ID") == jid]
        self.assertEqual(len(pids), 1, pids)
        os.kill(pids[0], signal.SIGKILL)
        wait_for(lambda: self.replica("echo")["attempt"] == 2 and self.replica("echo")["ready"],
                 timeout=120, what="the replica ready again on its second attempt")
        r = self.replica("echo")
        self.assertEqual((r["state"], r["ready_attempt"]), ("RUNNING", 2), r)
        st, body, _ = self.admin.post("/api/v1/deployments/echo/stop", {})
        self.assertEqual(st, 200, body)
        wait_for(lambda: self.job(jid)["state"] == "CANCELLED", timeout=90,
                 what="the replica cancelled")


if __name__ == "__main__":
    harness.main()
