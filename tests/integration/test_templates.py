"""Job templates (server/jobs/templates_*.c, GET /api/v1/templates):

- the repository's templates/ are served with their fields and a ready job
  spec whose script path is absolute under examples_dir; an unknown id is a
  JSON 404
- every template's job is accepted by POST /api/v1/jobs as offered (plus a
  team), and the DDP demo runs to SUCCEEDED on a worker whose job working
  directory is not the repository, with loss points (the script path is
  absolute because a relative one fails there with "can't open file")
- a bad template file stops the server, which logs the file and the field
- without templates_dir there are no templates
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Database, Server, ServerTest, Worker, wait_for  # noqa: E402

TEMPLATES = os.path.join(os.path.abspath(harness.SRC), "templates")
EXAMPLES = os.path.join(os.path.abspath(harness.SRC), "examples")


class TemplatesTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.storage = tempfile.mkdtemp(prefix="ty-tpl-storage-")
        os.chmod(cls.storage, 0o755)
        cls.server_args = ("--storage-root", cls.storage, "--templates-dir", TEMPLATES,
                           "--examples-dir", EXAMPLES, "--sched-interval-ms", "200")
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "ml", "gpu_quota": 2})
        assert st == 201, cls.team

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.storage, ignore_errors=True)

    def test_list_and_get(self):
        st, body, _ = self.admin.get("/api/v1/templates")
        self.assertEqual(st, 200, body)
        ids = [t["id"] for t in body["templates"]]
        # By each file's "order": the quick CPU demo first (the dashboard's
        # first button), the sleep test last.
        self.assertEqual(ids, ["ddp-mlp-demo", "defect-resnet50", "product-ddpm", "product-embed",
                               "review-textcls", "chatbot-gpt2", "bench-resnet50", "bench-gpt2",
                               "sleep-test"])
        ddp = body["templates"][0]
        self.assertEqual(ddp["name"], {"zh-CN": "DDP MLP 示例", "en": "DDP MLP demo"})
        self.assertEqual(ddp["script"], "ddp_mlp.py")
        self.assertEqual(ddp["interpreter"], "/usr/bin/python3")
        self.assertEqual(ddp["industry"], "general")
        self.assertEqual(ddp["dataset"], "synthetic")
        job = ddp["job"]
        self.assertEqual(job["command"][:2],
                         ["/usr/bin/python3", os.path.join(EXAMPLES, "ddp_mlp.py")])
        self.assertEqual(job["resources"], {"gpus": 2, "gpus_per_node": None})
        self.assertEqual(job["template"], "ddp-mlp-demo")
        self.assertNotIn("team", job)
        st, one, _ = self.admin.get("/api/v1/templates/ddp-mlp-demo")
        self.assertEqual(st, 200, one)
        self.assertEqual(one, ddp)
        sleep = body["templates"][-1]
        self.assertIsNone(sleep["script"])
        self.assertEqual(sleep["job"]["command"], ["/bin/sleep", "60"])
        self.assert_error(self.admin.get("/api/v1/templates/no-such"), 404, "not_found")

    def test_every_template_job_is_accepted_as_offered(self):
        # The site must be able to hold the largest template (4 GPUs): a job
        # larger than its site is refused at submit (docs/queue.md). A down
        # node counts for that, and the scheduler places nothing on it.
        # Its GPUs are fake ones, as the test worker's (CPU processes for the plan).
        self.db.sql("INSERT INTO nodes (name, addr, state, credential_hash, memory_mb) VALUES "
                    "('tpl-big-node', '127.0.0.1', 'down', 'h-tpl-big', 65536)")
        self.db.sql("INSERT INTO gpus (node_id, idx, uuid, model, memory_mb) SELECT id, g, "
                    "'GPU-fake-tpl-big-' || g, 'FAKE', 81920 FROM nodes, generate_series(0, 7) g "
                    "WHERE name = 'tpl-big-node'")
        st, body, _ = self.admin.get("/api/v1/templates")
        for t in body["templates"]:
            spec = dict(t["job"], team="ml")
            st, job, _ = self.admin.post("/api/v1/jobs", spec)
            self.assertEqual(st, 201, (t["id"], job))
            self.assertEqual(job["spec"]["command"], t["job"]["command"])
            self.assertEqual(job["spec"]["template"], t["id"])
            st, c, _ = self.admin.post("/api/v1/jobs/%s/cancel" % job["id"])
            self.assertEqual(st, 202, c)

    def test_ddp_template_runs_on_a_worker(self):
        st, tok, _ = self.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        self.assertEqual(st, 201, tok)
        worker = Worker(self.server.url, tok["token"], "tpl-node", gpus=2,
                        allowed_root=self.storage)
        try:
            st, t, _ = self.admin.get("/api/v1/templates/ddp-mlp-demo")
            st, job, _ = self.admin.post("/api/v1/jobs", dict(t["job"], team="ml"))
            self.assertEqual(st, 201, job)

            def ended():
                st, j, _ = self.admin.get("/api/v1/jobs/" + job["id"])
                return j if j["state"] in ("SUCCEEDED", "FAILED", "CANCELLED") else None
            final = wait_for(ended, timeout=300, interval=0.5, what="the template's job to end")
            if final["state"] != "SUCCEEDED":
                st, logs, _ = self.admin.get("/api/v1/jobs/%s/logs?limit=50" % job["id"])
                self.fail("job %s: %s\n%s" % (final["state"], final.get("reason"),
                                              json.dumps(logs, indent=1)[-3000:]))
            self.assertEqual(final["restarts"], 0)
            st, m, _ = self.admin.get("/api/v1/jobs/%s/metrics?limit=1000" % job["id"])
            steps = [p["step"] for p in m["metrics"] if "loss" in p["values"]]
            self.assertEqual(steps, list(range(1, 201)))
        finally:
            worker.stop()


class BadTemplateTest(ServerTest):
    """No admin sign-in needed: the server must not come up at all."""

    @classmethod
    def setUpClass(cls):
        cls.db = Database()

    @classmethod
    def tearDownClass(cls):
        cls.db.close()

    def test_bad_file_stops_the_server(self):
        d = tempfile.mkdtemp(prefix="ty-bad-templates-")
        try:
            shutil.copy(os.path.join(TEMPLATES, "ddp-mlp-demo.json"), d)
            with open(os.path.join(TEMPLATES, "sleep-test.json")) as f:
                doc = json.load(f)
            doc["gpus"] = 0
            bad = os.path.join(d, "sleep-test.json")
            with open(bad, "w") as f:
                json.dump(doc, f)
            with self.assertRaises(RuntimeError) as cm:
                Server(self.db, args=("--templates-dir", d, "--examples-dir", EXAMPLES))
            log = str(cm.exception)
            self.assertIn("cannot load the job templates", log)
            self.assertIn('field="gpus"', log)
            self.assertIn(bad, log)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_no_templates_dir_means_no_templates(self):
        server = Server(self.db)
        try:
            c = harness.Client(server.url)
            st, body = c.login("admin", harness.ADMIN_PASSWORD)
            self.assertEqual(st, 200, body)
            st, body, _ = c.get("/api/v1/templates")
            self.assertEqual(st, 200, body)
            self.assertEqual(body["templates"], [])
            self.assertIn("no templates_dir set", server.log_text())
        finally:
            server.stop()


if __name__ == "__main__":
    harness.main()
