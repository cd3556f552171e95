"""The trainyard CLI against a real server (cli/cmd_templates.c,
cli/cmd_submit.c):

- `trainyard templates` lists the server's templates in its order, the
  name in the user's language by LANG (Chinese unless it says English),
  and --json gives the server's list as it is
- `trainyard submit --template ID --param k=v --dataset --gpus --team
  --name` creates the job the API would from the same request: each
  parameter typed by the template's schema, the expanded spec stored
- without --team the job goes to the user's team when there is only one
  (GET /api/v1/me); a user in several teams is told to choose, with their
  names, exit status 2, and no job is written
- a bad parameter is the server's 400 naming params.<name>, shown with
  its field and message, exit status 1, and no job is written; an unknown
  template names template; a dataset outside the storage roots is the
  policy's 403 (exit 5); no token is a 401 (exit 3); a server that cannot
  be reached is exit status 6 (cli/README.md "Exit codes")
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import CLI_BIN, ServerTest, free_port  # noqa: E402

TEMPLATES = os.path.join(os.path.abspath(harness.SRC), "templates")
EXAMPLES = os.path.join(os.path.abspath(harness.SRC), "examples")


class CliTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.storage = tempfile.mkdtemp(prefix="ty-cli-storage-")
        os.chmod(cls.storage, 0o755)
        cls.server_args = ("--storage-root", cls.storage, "--templates-dir", TEMPLATES,
                           "--examples-dir", EXAMPLES)
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "factory", "gpu_quota": 8})
        assert st == 201, cls.team
        st, tok, _ = cls.admin.post("/api/v1/tokens", {"name": "cli"})
        assert st == 201, tok
        cls.token = tok["token"]
        cls.photos = os.path.join(cls.storage, "data", "photos")
        os.makedirs(cls.photos)

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.storage, ignore_errors=True)

    def cli(self, *args, token=True, lang="C.UTF-8", server=None):
        env = {k: v for k, v in os.environ.items()
               if k not in ("LC_ALL", "LC_MESSAGES", "LANG", "TRAINYARD_TOKEN", "TRAINYARD_URL",
                            "XDG_CONFIG_HOME")}
        env["LANG"] = lang
        env["HOME"] = self.storage  # no login file: the token is the environment's
        env["TRAINYARD_SERVER"] = server or self.server.url
        if token:
            env["TRAINYARD_TOKEN"] = self.token if token is True else token
        return subprocess.run([CLI_BIN] + list(args), capture_output=True, text=True, env=env,
                              timeout=60)

    def job_count(self):
        return int(self.db.sql("SELECT count(*) FROM jobs")[0][0])

    def test_templates_list(self):
        st, api, _ = self.admin.get("/api/v1/templates")
        self.assertEqual(st, 200, api)
        en = self.cli("templates", lang="en_US.UTF-8")
        self.assertEqual(en.returncode, 0, en.stderr)
        lines = en.stdout.splitlines()
        self.assertEqual(lines[0].split(), ["ID", "INDUSTRY", "GPUS", "NAME"])
        self.assertEqual([l.split()[0] for l in lines[1:]], [t["id"] for t in api["templates"]])
        row = [l for l in lines if l.startswith("defect-resnet50 ")][0]
        self.assertEqual(row.split()[1:3], ["manufacturing", "2"])
        self.assertTrue(row.endswith("Surface-defect classification (ResNet-50)"), row)
        zh = self.cli("templates")  # C.UTF-8: the product's first language
        self.assertEqual(zh.returncode, 0, zh.stderr)
        self.assertIn("表面缺陷分类（ResNet-50）", zh.stdout)
        self.assertNotIn("Surface-defect", zh.stdout)
        js = self.cli("templates", "--json")
        self.assertEqual(js.returncode, 0, js.stderr)
        self.assertEqual(json.loads(js.stdout), api)

    def test_submit_by_template(self):
        out = self.cli("submit", "--template", "defect-resnet50", "--param", "steps=50",
                       "--param", "arch=tiny", "--param", "lr=0.05", "--dataset", self.photos,
                       "--gpus", "1", "--team", "factory", "--name", "line 3 surface defects")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"^job \S+ submitted: line 3 surface defects "
                                     r"\(template defect-resnet50\), QUEUED\n$")
        job_id = out.stdout.split()[1]
        st, job, _ = self.admin.get("/api/v1/jobs/" + job_id)
        self.assertEqual(st, 200, job)
        spec = job["spec"]
        self.assertEqual(spec["template"], "defect-resnet50")
        self.assertEqual(spec["params"]["steps"], 50)
        self.assertEqual(spec["params"]["lr"], 0.05)
        self.assertEqual(spec["params"]["arch"], "tiny")
        self.assertEqual(spec["datasets"], [self.photos])
        self.assertEqual(spec["resources"]["gpus"], 1)
        self.assertEqual(spec["name"], "line 3 surface defects")
        # The same request through the API gives the same command.
        st, same, _ = self.admin.post("/api/v1/jobs", {
            "template": "defect-resnet50", "team": "factory",
            "params": {"steps": 50, "arch": "tiny", "lr": 0.05}, "datasets": [self.photos],
            "resources": {"gpus": 1}})
        self.assertEqual(st, 201, same)
        self.assertEqual(same["spec"]["command"], spec["command"])
        # --json: the created job; a template's defaults without --param.
        out = self.cli("submit", "--template=bench-gpt2", "--team=factory", "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        job = json.loads(out.stdout)
        self.assertEqual(job["spec"]["template"], "bench-gpt2")
        self.assertEqual(job["spec"]["resources"]["gpus"], 4)
        self.assertEqual(job["state"], "QUEUED")

    def test_submit_team_default(self):
        one = self.make_team("cli-line-a", quota=8)
        two = self.make_team("cli-line-b", quota=8)

        def token_of(name, teams):
            _, c = self.make_user(name, teams=teams)
            st, tok, _ = c.post("/api/v1/tokens", {"name": "cli"})
            self.assertEqual(st, 201, tok)
            return tok["token"]
        # The only team of the user: the job is its.
        out = self.cli("submit", "--template", "bench-gpt2", "--gpus", "1", "--json",
                       token=token_of("cli-one-team", [one]))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout)["spec"]["team"], "cli-line-a")
        # Several: the command names them and writes nothing.
        several = token_of("cli-two-teams", [one, two])
        before = self.job_count()
        out = self.cli("submit", "--template", "bench-gpt2", "--gpus", "1", token=several)
        self.assertEqual(out.returncode, 2, out.stdout + out.stderr)
        self.assertIn("you are in several teams (cli-line-a, cli-line-b): choose one with --team",
                      out.stderr)
        self.assertEqual(self.job_count(), before)
        zh = self.cli("submit", "--template", "bench-gpt2", "--gpus", "1", token=several,
                      lang="zh_CN.UTF-8")
        self.assertEqual(zh.returncode, 2, zh.stderr)
        self.assertIn("您属于多个团队（cli-line-a, cli-line-b）：请用 --team 选择一个", zh.stderr)
        out = self.cli("submit", "--template", "bench-gpt2", "--gpus", "1", "--team",
                       "cli-line-b", "--json", token=several)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout)["spec"]["team"], "cli-line-b")

    def test_refusals(self):
        before = self.job_count()
        out = self.cli("submit", "--template", "defect-resnet50", "--team", "factory",
                       "--param", "steps=0")
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("trainyard: the server refused the job: 400 invalid_argument: "
                      "params.steps: ", out.stderr)
        self.assertIn("from 1 to 1000000 (got 0)", out.stderr)
        self.assertEqual(out.stdout, "")
        out = self.cli("submit", "--template", "defect-resnet50", "--team", "factory",
                       "--param", "steps=many")
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("400 invalid_argument: params.steps: ", out.stderr)
        out = self.cli("submit", "--template", "defect-resnet50", "--team", "factory",
                       "--param", "epochs=3")
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("params.epochs: unknown parameter", out.stderr)
        out = self.cli("submit", "--template", "no-such-template", "--team", "factory")
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("400 invalid_argument: template: ", out.stderr)
        out = self.cli("submit", "--template", "defect-resnet50", "--team", "factory",
                       "--dataset", "/etc")
        self.assertEqual(out.returncode, 5, out.stderr)
        self.assertIn("403 policy_violation: datasets[0]: ", out.stderr)
        out = self.cli("submit", "--template", "defect-resnet50", token=False)
        self.assertEqual(out.returncode, 3, out.stderr)
        self.assertIn(": 401 ", out.stderr)
        self.assertIn("set TRAINYARD_TOKEN", out.stderr)
        out = self.cli("templates", token=False)
        self.assertEqual(out.returncode, 3, out.stderr)
        self.assertEqual(self.job_count(), before)
        # A usage error is exit status 2, an unreachable server 6.
        out = self.cli("submit", "--template", "defect-resnet50", "--param", "steps")
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("--param wants NAME=VALUE", out.stderr)
        out = self.cli("templates", server="http://127.0.0.1:%d" % free_port())
        self.assertEqual(out.returncode, 6, out.stderr)
        self.assertIn("cannot reach the server", out.stderr)
        self.assertEqual(self.job_count(), before)


if __name__ == "__main__":
    harness.main()
