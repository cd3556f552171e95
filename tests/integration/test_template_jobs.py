"""Jobs submitted by template (server/jobs/tpl_expand.c, POST /api/v1/jobs):

- the repository's nine templates are listed, the quick CPU demo first, each
  with its model, strategy and parameter schema
- {"template", "params", "datasets", "resources", "team"} becomes a full job:
  the command from the template's base command and every parameter (given
  or default) in the schema's order, resources and the rest from the
  template where the request has none; the stored spec keeps template,
  params and strategy and GET /jobs/{id} shows it
- a bad or unknown parameter is a 400 naming params.<name>, an unknown
  template a 400 naming template, and neither leaves a job behind
- "clone and edit": the stored spec submitted back as it is, without
  template and params, or without the command, runs the same command
- TRAINYARD_DATA, TRAINYARD_DATASETS and TRAINYARD_OUTPUT_DIR reach the rank
  of a template job (a test-only template whose script prints them, so this
  does not depend on the training scripts), and the output directory the
  worker created holds what the script wrote there
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest, Worker, wait_for  # noqa: E402

TEMPLATES = os.path.join(os.path.abspath(harness.SRC), "templates")
EXAMPLES = os.path.join(os.path.abspath(harness.SRC), "examples")
PY = "/usr/bin/python3"


class RepoTemplateJobsTest(ServerTest):
    """No worker: submitted jobs stay QUEUED, which is all these tests need."""

    @classmethod
    def setUpClass(cls):
        cls.storage = tempfile.mkdtemp(prefix="ty-tplj-storage-")
        os.chmod(cls.storage, 0o755)
        cls.server_args = ("--storage-root", cls.storage, "--templates-dir", TEMPLATES,
                           "--examples-dir", EXAMPLES)
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "factory", "gpu_quota": 8})
        assert st == 201, cls.team
        cls.photos = os.path.join(cls.storage, "data", "line3-photos")
        os.makedirs(cls.photos)

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.storage, ignore_errors=True)

    def job_count(self):
        return int(self.db.sql("SELECT count(*) FROM jobs")[0][0])

    def test_list_has_the_nine_templates(self):
        st, body, _ = self.admin.get("/api/v1/templates")
        self.assertEqual(st, 200, body)
        ids = [t["id"] for t in body["templates"]]
        self.assertEqual(ids, ["ddp-mlp-demo", "defect-resnet50", "product-ddpm", "product-embed",
                               "review-textcls", "chatbot-gpt2", "bench-resnet50", "bench-gpt2",
                               "sleep-test"])
        by_id = {t["id"]: t for t in body["templates"]}
        self.assertEqual([by_id[i]["industry"] for i in ids[1:8]],
                         ["manufacturing", "manufacturing", "ecommerce", "ecommerce", "services",
                          "benchmark", "benchmark"])
        self.assertEqual(by_id["defect-resnet50"]["model"], {"name": "resnet50"})
        self.assertEqual(by_id["chatbot-gpt2"]["dataset"], "chat-jsonl")
        self.assertEqual(by_id["review-textcls"]["model"]["transformer"]["kind"], "encoder")
        for i in ids[:8]:
            t = by_id[i]
            self.assertEqual(t["strategy"], "auto", i)
            self.assertEqual(t["launcher"], "native", i)
            self.assertTrue(t["params"], i)
            self.assertEqual(t["job"]["params"],
                             {k: p["default"] for k, p in t["params"].items()}, i)
        steps = by_id["defect-resnet50"]["params"]["steps"]
        self.assertEqual(steps["type"], "int")
        self.assertEqual(steps["arg"], "--steps")
        self.assertEqual(set(steps["label"]), {"zh-CN", "en"})
        self.assertEqual(by_id["defect-resnet50"]["params"]["arch"]["values"],
                         ["resnet50", "tiny"])
        self.assertEqual(by_id["defect-resnet50"]["base_command"],
                         [PY, os.path.join(EXAMPLES, "defect_classify.py")])

    def submit_defect(self, **over):
        body = {"template": "defect-resnet50", "team": "factory",
                "params": {"steps": 50, "arch": "tiny", "lr": 0.05},
                "datasets": [self.photos], "resources": {"gpus": 1}}
        body.update(over)
        return self.admin.post("/api/v1/jobs", body)

    def test_submit_by_template_with_params(self):
        st, job, _ = self.submit_defect(name="line 3 surface defects")
        self.assertEqual(st, 201, job)
        spec = job["spec"]
        # The template's schema order, not the request's; defaults filled in;
        # the empty weights path adds nothing.
        self.assertEqual(spec["command"],
                         [PY, os.path.join(EXAMPLES, "defect_classify.py"), "--arch", "tiny",
                          "--steps", "50", "--batch", "256", "--lr", "0.05",
                          "--checkpoint-every", "500", "--eval-every", "250", "--seed", "0"])
        self.assertEqual(spec["params"], {"arch": "tiny", "pretrained": "", "steps": 50,
                                          "batch": 256, "lr": 0.05, "checkpoint_every": 500,
                                          "eval_every": 250, "seed": 0})
        # (The order of params is the command's; the stored object, jsonb,
        # keeps none.)
        self.assertEqual(spec["template"], "defect-resnet50")
        self.assertEqual(spec["strategy"], "auto")
        self.assertEqual(spec["name"], "line 3 surface defects")
        self.assertEqual(spec["resources"], {"gpus": 1, "gpus_per_node": None})
        self.assertEqual(spec["datasets"], [self.photos])
        self.assertEqual((spec["launcher"], spec["max_restarts"], spec["time_limit_s"],
                          spec["priority"]), ("native", 3, 86400, "normal"))
        st, got, _ = self.admin.get("/api/v1/jobs/" + job["id"])
        self.assertEqual(st, 200, got)
        self.assertEqual(got["spec"], spec)
        self.assertEqual(got["state"], "QUEUED")

        # Without params or resources: the template's defaults and GPUs.
        st, job, _ = self.admin.post("/api/v1/jobs", {"template": "bench-gpt2", "team": "factory",
                                                      "priority": "low", "env": {"X": "1"}})
        self.assertEqual(st, 201, job)
        spec = job["spec"]
        self.assertEqual(spec["command"],
                         [PY, os.path.join(EXAMPLES, "bench_gpt2.py"), "--size", "full",
                          "--steps", "100", "--batch", "32", "--seed", "0"])
        self.assertEqual(spec["name"], "bench-gpt2")
        self.assertEqual(spec["resources"]["gpus"], 4)
        self.assertEqual(spec["priority"], "low")
        self.assertEqual(spec["max_restarts"], 0)
        self.assertEqual(spec["env"], {"X": "1"})
        # An explicit strategy is carried as given.
        st, job, _ = self.submit_defect(strategy="zero1")
        self.assertEqual(st, 201, job)
        self.assertEqual(job["spec"]["strategy"], "zero1")

    def test_bad_params_and_templates_are_refused(self):
        before = self.job_count()
        err = self.assert_error(self.submit_defect(params={"steps": 0}), 400, "invalid_argument",
                                "params.steps")
        self.assertIn("from 1 to 1000000", err["message"])
        self.assertEqual(err["detail"], "got 0")
        self.assert_error(self.submit_defect(params={"steps": "many"}), 400, "invalid_argument",
                          "params.steps")
        self.assert_error(self.submit_defect(params={"steps": 10.5}), 400, "invalid_argument",
                          "params.steps")
        err = self.assert_error(self.submit_defect(params={"arch": "vit"}), 400,
                                "invalid_argument", "params.arch")
        self.assertIn("resnet50, tiny", err["message"])
        err = self.assert_error(self.submit_defect(params={"epochs": 3}), 400, "invalid_argument",
                                "params.epochs")
        self.assertIn("unknown parameter", err["message"])
        self.assert_error(self.submit_defect(params=[50]), 400, "invalid_argument", "params")
        self.assert_error(self.submit_defect(template="no-such-template"), 400,
                          "invalid_argument", "template")
        self.assert_error(self.submit_defect(template="../x"), 400, "invalid_argument", "template")
        self.assert_error(self.submit_defect(template=7), 400, "invalid_argument", "template")
        # The rest of the expanded spec is checked like any submit.
        self.assert_error(self.submit_defect(bogus=1), 400, "invalid_argument", "bogus")
        self.assert_error(self.submit_defect(resources={"gpus": 0}), 400, "invalid_argument",
                          "resources.gpus")
        self.assert_error(self.submit_defect(strategy="zero9"), 400, "invalid_argument",
                          "strategy")
        self.assert_error(self.submit_defect(env={"TRAINYARD_DATA": "/etc"}), 400,
                          "invalid_argument", "env.TRAINYARD_DATA")
        self.assert_error(self.submit_defect(team="nobody"), 400, "invalid_argument", "team")
        # and so is the data residency of its paths
        self.assert_error(self.submit_defect(datasets=["/etc"]), 403, "policy_violation",
                          "datasets[0]")
        self.assertEqual(self.job_count(), before)

    def test_the_stored_spec_reproduces_the_job(self):
        st, job, _ = self.submit_defect(params={"steps": 70, "pretrained": self.photos + "/w.pt"})
        self.assertEqual(st, 201, job)
        spec = job["spec"]
        self.assertIn("--pretrained", spec["command"])
        # Clone as it is: it has a command, which is taken as is.
        st, clone, _ = self.admin.post("/api/v1/jobs", spec)
        self.assertEqual(st, 201, clone)
        self.assertEqual(clone["spec"], spec)
        # Without template and params: the same command.
        bare = {k: v for k, v in spec.items() if k not in ("template", "params")}
        st, clone, _ = self.admin.post("/api/v1/jobs", bare)
        self.assertEqual(st, 201, clone)
        self.assertEqual(clone["spec"]["command"], spec["command"])
        self.assertIsNone(clone["spec"]["template"])
        # Without the command: made again from template and params, the same.
        again = {k: v for k, v in spec.items() if k != "command"}
        st, clone, _ = self.admin.post("/api/v1/jobs", again)
        self.assertEqual(st, 201, clone)
        self.assertEqual(clone["spec"], spec)
        # Edited: one parameter changed, the rest as stored.
        again["params"] = dict(spec["params"], steps=71)
        st, clone, _ = self.admin.post("/api/v1/jobs", again)
        self.assertEqual(st, 201, clone)
        i = spec["command"].index("--steps")
        self.assertEqual(clone["spec"]["command"][i + 1], "71")
        self.assertEqual(clone["spec"]["command"][:i + 1], spec["command"][:i + 1])
        self.assertEqual(clone["spec"]["command"][i + 2:], spec["command"][i + 2:])


PROBE = r'''
import json, os, sys
out = os.environ.get("TRAINYARD_OUTPUT_DIR", "")
print("argv " + json.dumps(sys.argv[1:]), flush=True)
for k in ("TRAINYARD_DATA", "TRAINYARD_DATASETS", "TRAINYARD_OUTPUT_DIR"):
    print("env %s=%s" % (k, os.environ.get(k, "(unset)")), flush=True)
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump({"rank": int(os.environ["RANK"]), "data": os.environ["TRAINYARD_DATA"]}, f)
'''

PROBE_TEMPLATE = {
    "id": "env-probe", "name": {"zh-CN": "环境探针", "en": "Env probe"},
    "description": {"zh-CN": "打印数据和输出目录", "en": "Prints the data and output dirs"},
    "industry": "general", "script": "env_probe.py", "gpus": 1, "max_restarts": 0,
    "time_limit_s": 300, "dataset": "image-folder",
    "model": {"params": 1000, "activation_bytes_per_sample": 64},
    "params": {
        "steps": {"type": "int", "label": {"zh-CN": "步数", "en": "Steps"}, "arg": "--steps",
                  "min": 1, "max": 10, "default": 2},
        "verbose": {"type": "bool", "label": {"zh-CN": "详细", "en": "Verbose"},
                    "arg": "--verbose", "default": False},
    },
}


class TemplateEnvTest(ServerTest):
    """A test-only template directory and examples_dir (with the probe)."""

    @classmethod
    def setUpClass(cls):
        cls.storage = tempfile.mkdtemp(prefix="ty-tplj-env-")
        os.chmod(cls.storage, 0o755)
        cls.tpl_dir = os.path.join(cls.storage, "templates")
        cls.examples = os.path.join(cls.storage, "examples")
        os.makedirs(cls.tpl_dir)
        os.makedirs(cls.examples)
        with open(os.path.join(cls.tpl_dir, "env-probe.json"), "w") as f:
            json.dump(PROBE_TEMPLATE, f)
        with open(os.path.join(cls.examples, "env_probe.py"), "w") as f:
            f.write(PROBE)
        cls.server_args = ("--storage-root", cls.storage, "--templates-dir", cls.tpl_dir,
                           "--examples-dir", cls.examples, "--sched-interval-ms", "200")
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "ml", "gpu_quota": 2})
        assert st == 201, cls.team

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.storage, ignore_errors=True)

    def test_data_and_output_dir_reach_the_rank(self):
        d1 = os.path.join(self.storage, "data", "photos")
        d2 = os.path.join(self.storage, "data", "more photos")
        for d in (d1, d2):
            os.makedirs(d)
        out = os.path.join(self.storage, "out", "probe-1")  # not there yet
        st, tok, _ = self.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        self.assertEqual(st, 201, tok)
        worker = Worker(self.server.url, tok["token"], "probe-node", gpus=1,
                        allowed_root=self.storage)
        try:
            st, job, _ = self.admin.post("/api/v1/jobs", {
                "template": "env-probe", "team": "ml", "params": {"steps": 3, "verbose": True},
                "datasets": [d1, d2], "output_dir": out})
            self.assertEqual(st, 201, job)
            self.assertEqual(job["spec"]["command"],
                             [PY, os.path.join(self.examples, "env_probe.py"), "--steps", "3",
                              "--verbose"])

            def ended():
                st, j, _ = self.admin.get("/api/v1/jobs/" + job["id"])
                return j if j["state"] in ("SUCCEEDED", "FAILED", "CANCELLED") else None
            final = wait_for(ended, timeout=120, interval=0.3, what="the probe job to end")
            st, logs, _ = self.admin.get("/api/v1/jobs/%s/logs?limit=50" % job["id"])
            lines = [l["text"].rstrip("\n") for l in logs["logs"]]
            self.assertEqual(final["state"], "SUCCEEDED", (final.get("reason"), lines))
            self.assertIn('argv ["--steps", "3", "--verbose"]', lines)
            self.assertIn("env TRAINYARD_DATA=" + d1, lines)
            self.assertIn("env TRAINYARD_DATASETS=" + json.dumps([d1, d2], separators=(",", ":")),
                          lines)
            self.assertIn("env TRAINYARD_OUTPUT_DIR=" + out, lines)
            # The worker created the output directory; the script wrote there.
            with open(os.path.join(out, "summary.json")) as f:
                self.assertEqual(json.load(f), {"rank": 0, "data": d1})
        finally:
            worker.stop()


if __name__ == "__main__":
    harness.main()
