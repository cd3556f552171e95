"""`trainyard models` against a real server (cli/cmd_models.c):

- `register NAME --job ID` makes version 1 from the job's output and prints
  it with its manifest digest; `--checkpoint STEP` and `--checkpoint` (the
  newest) register the checkpoint; `--json` prints the server's version
- `models` lists the models, `models show NAME` the versions and aliases,
  in English or Chinese by LANG
- `alias NAME ALIAS VERSION` points and moves an alias (the move names the
  old version), `--delete` removes it
- refusals keep the CLI's exit codes (cli/README.md): a job that did not
  succeed is the server's 409 job_not_succeeded (exit 5), an unknown model
  404 (exit 4), a missing --job or a bad VERSION a usage error (exit 2),
  and nothing is written

The job is made SUCCEEDED in the database and its output written here: the
API's own checks of a real run are test_models.py's.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import CLI_BIN, ServerTest  # noqa: E402

TEMPLATES = os.path.join(os.path.abspath(harness.SRC), "templates")
EXAMPLES = os.path.join(os.path.abspath(harness.SRC), "examples")


class CliModelsTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.storage = tempfile.mkdtemp(prefix="ty-cli-models-")
        os.chmod(cls.storage, 0o755)
        cls.server_args = ("--storage-root", cls.storage, "--templates-dir", TEMPLATES,
                           "--examples-dir", EXAMPLES)
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "ml"})
        assert st == 201, cls.team
        st, tok, _ = cls.admin.post("/api/v1/tokens", {"name": "cli"})
        assert st == 201, tok
        cls.token = tok["token"]
        cls.job = cls.made_job(state="SUCCEEDED")
        cls.queued = cls.made_job(state=None)

    @classmethod
    def made_job(cls, state):
        st, job, _ = cls.admin.post("/api/v1/jobs", {
            "name": "m", "team": "ml", "template": "ddp-mlp-demo", "command": ["/bin/true"],
            "resources": {"gpus": 1}})
        assert st == 201, job
        jid = job["id"]
        if state is None:
            return jid
        out = os.path.join(cls.storage, "jobs", jid)
        os.makedirs(os.path.join(out, "checkpoints"))
        with open(os.path.join(out, "model.bin"), "wb") as f:
            f.write(b"weights" * 10)
        for step in (2, 4):
            p = os.path.join(out, "checkpoints", "step-%d.pt" % step)
            with open(p, "wb") as f:
                f.write(b"ck%d" % step)
            cls.db.sql("INSERT INTO checkpoints (job_id, attempt, step, path) VALUES "
                       "(%s, 1, %d, '%s')" % (jid, step, p))
        cls.db.sql("UPDATE jobs SET state = '%s' WHERE id = %s" % (state, jid))
        return jid

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.storage, ignore_errors=True)

    def cli(self, *args, lang="C.UTF-8"):
        env = {k: v for k, v in os.environ.items()
               if k not in ("LC_ALL", "LC_MESSAGES", "LANG", "TRAINYARD_TOKEN", "TRAINYARD_URL",
                            "XDG_CONFIG_HOME")}
        env["LANG"] = lang
        env["HOME"] = self.storage
        env["TRAINYARD_SERVER"] = self.server.url
        env["TRAINYARD_TOKEN"] = self.token
        return subprocess.run([CLI_BIN] + list(args), capture_output=True, text=True, env=env,
                              timeout=60)

    def versions(self):
        return int(self.db.sql("SELECT count(*) FROM model_versions")[0][0])

    def test_register_list_show_and_aliases(self):
        r = self.cli("models", "register", "bot", "--job", self.job, "--description", "first")
        self.assertEqual(r.returncode, 0, r.stderr)
        files = [(b"ck2", "checkpoints/step-2.pt"), (b"ck4", "checkpoints/step-4.pt"),
                 (b"weights" * 10, "model.bin")]
        digest = hashlib.sha256("".join("%s %d %s\n" % (hashlib.sha256(d).hexdigest(), len(d), p)
                                        for d, p in files).encode()).hexdigest()
        self.assertEqual(r.stdout.strip(), "model bot version 1 registered: 3 files, manifest %s"
                         % digest)
        r = self.cli("models", "register", "bot", "--job", self.job, "--checkpoint", "2",
                     "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        v = json.loads(r.stdout)
        self.assertEqual((v["version"], v["source_kind"], v["source_step"]), (2, "checkpoint", 2))
        self.assertEqual([f["path"] for f in v["manifest"]], ["step-2.pt"])
        r = self.cli("models", "register", "bot", "--job", self.job, "--checkpoint")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("version 3 registered: 1 files", r.stdout)
        self.assertEqual(self.db.sql("SELECT source_step FROM model_versions v JOIN models m ON "
                                     "m.id = v.model_id WHERE m.name = 'bot' AND version = 3"),
                         [["4"]])

        r = self.cli("models", "alias", "bot", "prod", "1")
        self.assertEqual((r.returncode, r.stdout.strip()),
                         (0, "alias prod of bot now points at version 1"), r.stderr)
        r = self.cli("models", "alias", "bot", "prod", "3")
        self.assertEqual((r.returncode, r.stdout.strip()),
                         (0, "alias prod of bot moved to version 3 (was 1)"), r.stderr)

        r = self.cli("models")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0].split(), ["NAME", "TEAM", "SITE", "LATEST", "VERSIONS",
                                            "ALIASES"])
        self.assertEqual(lines[1].split(), ["bot", "ml", "default", "3", "3", "prod=3"])
        r = self.cli("models", "show", "bot")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "model bot (team ml, site default), aliases: prod=3")
        self.assertEqual(lines[1].split()[:4], ["VERSION", "SOURCE", "JOB", "STEP"])
        self.assertEqual([l.split()[0] for l in lines[2:]], ["3", "2", "1"])
        self.assertEqual(lines[4].split()[:2], ["1", "output"])
        self.assertIn(digest[:12], lines[4])
        r = self.cli("models", "show", "bot", lang="zh_CN.UTF-8")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("模型 bot（团队 ml，站点 default），别名：prod=3"),
                        r.stdout)
        self.assertIn("版本", r.stdout.splitlines()[1])

        r = self.cli("models", "alias", "bot", "prod", "--delete")
        self.assertEqual((r.returncode, r.stdout.strip()),
                         (0, "alias prod of bot removed (it pointed at version 3)"), r.stderr)
        acts = [a[0] for a in self.db.sql("SELECT action FROM audit_events WHERE target = "
                                          "'model:bot' ORDER BY id")]
        self.assertEqual(acts, ["model.version.register"] * 3 +
                         ["model.alias.set", "model.alias.set", "model.alias.delete"])

    def test_refusals_and_exit_codes(self):
        before = self.versions()
        r = self.cli("models", "register", "bot2", "--job", self.queued)
        self.assertEqual(r.returncode, 5, (r.stdout, r.stderr))
        self.assertIn("job_id", r.stderr)
        self.assertIn("SUCCEEDED", r.stderr)
        r = self.cli("models", "show", "nosuch")
        self.assertEqual(r.returncode, 4, (r.stdout, r.stderr))
        r = self.cli("models", "alias", "nosuch", "prod", "1")
        self.assertEqual(r.returncode, 4, (r.stdout, r.stderr))
        for args in (("models", "register", "bot2"), ("models", "alias", "bot", "prod", "x"),
                     ("models", "alias", "bot", "prod"), ("models", "show"),
                     ("models", "list", "extra"), ("models", "frobnicate"),
                     ("models", "show", "bot", "--job", "1")):
            r = self.cli(*args)
            self.assertEqual(r.returncode, 2, (args, r.stdout, r.stderr))
            self.assertIn("trainyard models --help", r.stderr)
        self.assertEqual(self.versions(), before)
        r = self.cli("models", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("trainyard models register NAME --job ID [--checkpoint [STEP]]", r.stdout)


if __name__ == "__main__":
    harness.main()
