"""The whole trainyard CLI against a real server, a real PostgreSQL and a
worker with fake GPUs (cli/cmd_*.c):

- login reads the password from stdin, stores the URL and a new API token
  in ~/.config/trainyard/config (file 0600, directory 0700), and every
  other command then works with no environment; a wrong password is exit
  3 and writes nothing; a login file others can read is refused (exit 3);
  TRAINYARD_URL and TRAINYARD_TOKEN override the stored login, and the
  stored token is not sent to another server; logout revokes the token on
  the server and removes the file
- submit FILE, ls, show, logs (paged, --rank, -f until the job ends),
  cancel: the human table and --json (the API's own JSON) for each
- nodes, drain, undrain by node name; tokens list/create/revoke; advisor;
  audit export, then audit verify of what it wrote
- exit codes: usage 2, auth 3 (no token, a revoked token, a member
  draining), not found 4, refused 5 (a dataset outside the storage roots:
  403 policy; cancelling an ended job, revoking a revoked token: 409),
  server unreachable 6
- LANG=zh_CN.UTF-8: Chinese messages and headers, columns aligned by
  display width; LC_ALL=en_US wins over it
"""
import json
import os
import pty
import select
import shutil
import stat
import subprocess
import sys
import tempfile
import unicodedata

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ADMIN_PASSWORD, CLI_BIN, ServerTest, Worker, free_port, wait_for  # noqa: E402

ADVICE = {"model": {"name": "gpt2"}, "global_batch": 64, "optimizer": "adamw",
          "allocation": {"gpus": 8, "gpus_per_node": 8, "gpu_memory_bytes": 42949672960,
                         "compute_capability": "8.0", "intra_node": {"link": "nvlink", "gbps": 300}},
          "strategy": "auto"}


def width(s):
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in s)


class CliOpsTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ty-cli-ops-")
        os.chmod(cls.tmp, 0o755)
        cls.storage = os.path.join(cls.tmp, "storage")
        os.makedirs(cls.storage)
        os.chmod(cls.storage, 0o755)
        cls.server_args = ("--storage-root", cls.storage)
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "ops", "gpu_quota": 8})
        assert st == 201, cls.team
        st, tok, _ = cls.admin.post("/api/v1/tokens", {"name": "ops-admin"})
        assert st == 201, tok
        cls.token = tok["token"]
        st, join, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 2})
        assert st == 201, join
        cls.worker = Worker(cls.server.url, join["token"], "cli-node-1", gpus=2,
                            allowed_root=cls.storage)
        wait_for(lambda: any(n["state"] == "ready" for n in
                             cls.admin.get("/api/v1/nodes")[1]["nodes"]),
                 timeout=60, what="the worker to be ready")

    @classmethod
    def tearDownClass(cls):
        try:
            cls.worker.stop()
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    # helpers ----------------------------------------------------------
    def home(self):
        return tempfile.mkdtemp(prefix="home-", dir=self.tmp)

    def cli(self, *args, token=True, url=True, lang="C.UTF-8", home=None, stdin=None,
            extra_env=None, timeout=120):
        env = {k: v for k, v in os.environ.items()
               if k not in ("LC_ALL", "LC_MESSAGES", "LANG", "TRAINYARD_TOKEN", "TRAINYARD_URL",
                            "TRAINYARD_SERVER", "XDG_CONFIG_HOME")}
        env["LANG"] = lang
        env["HOME"] = home or self.home()
        if url:
            env["TRAINYARD_URL"] = self.server.url if url is True else url
        if token:
            env["TRAINYARD_TOKEN"] = self.token if token is True else token
        env.update(extra_env or {})
        return subprocess.run([CLI_BIN] + list(args), capture_output=True, text=True, env=env,
                              input=stdin, timeout=timeout)

    def ok(self, *args, **kw):
        out = self.cli(*args, **kw)
        self.assertEqual(out.returncode, 0, "%s: %s%s" % (args, out.stdout, out.stderr))
        return out

    def spec_file(self, name, command, **over):
        spec = {"name": name, "team": "ops", "command": command, "resources": {"gpus": 1}}
        spec.update(over)
        path = os.path.join(self.tmp, name + ".json")
        with open(path, "w") as f:
            json.dump(spec, f, ensure_ascii=False)
        return path

    def job(self, jid):
        return self.admin.get("/api/v1/jobs/" + jid)[1]

    def wait_state(self, jid, states):
        return wait_for(lambda: (lambda j: j if j["state"] in states else None)(self.job(jid)),
                        timeout=90, what="job %s in %s" % (jid, states))

    def submit(self, name, command, **over):
        out = self.ok("submit", self.spec_file(name, command, **over), "--json")
        return json.loads(out.stdout)["id"]

    # login ------------------------------------------------------------
    def test_login_logout_and_overrides(self):
        home = self.home()
        bad = self.cli("login", self.server.url, "--user", "admin", token=False, url=False,
                       home=home, stdin="not-the-password\n")
        self.assertEqual(bad.returncode, 3, bad.stderr)
        self.assertIn("cannot sign in: 401", bad.stderr)
        self.assertFalse(os.path.exists(os.path.join(home, ".config", "trainyard", "config")))

        out = self.cli("login", self.server.url, "--user", "admin", token=False, url=False,
                       home=home, stdin=ADMIN_PASSWORD + "\n")
        self.assertEqual(out.returncode, 0, out.stderr)
        cfg = os.path.join(home, ".config", "trainyard", "config")
        self.assertIn("signed in to %s as admin (admin); the token is in %s" % (
            self.server.url, cfg), out.stdout)
        self.assertNotIn(ADMIN_PASSWORD, out.stdout + out.stderr)
        self.assertEqual(stat.S_IMODE(os.stat(cfg).st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.dirname(cfg)).st_mode), 0o700)
        with open(cfg) as f:
            text = f.read()
        self.assertIn("url=%s\n" % self.server.url, text)
        stored = [l.split("=", 1)[1] for l in text.splitlines() if l.startswith("token=")][0]
        token_id = [l.split("=", 1)[1] for l in text.splitlines() if l.startswith("token_id=")][0]
        self.assertTrue(stored.startswith("tyt_"))
        self.assertNotIn(ADMIN_PASSWORD, text)
        # The session used to make the token is gone; the token is listed.
        st, toks, _ = harness.Client(self.server.url, token=stored).get("/api/v1/tokens")
        self.assertEqual(st, 200, toks)
        mine = [t for t in toks["tokens"] if t["id"] == token_id][0]
        self.assertTrue(mine["name"].startswith("trainyard login ("), mine)

        # Every command now works from the login file alone.
        ls = self.ok("ls", token=False, url=False, home=home)
        self.assertEqual(ls.stdout.split("\n")[0].split()[:3], ["ID", "NAME", "TEAM"])
        # TRAINYARD_TOKEN wins over the stored token (a bad one: 401, exit 3).
        out = self.cli("ls", token="tyt_not_a_token", url=False, home=home)
        self.assertEqual(out.returncode, 3, out.stderr)
        # TRAINYARD_URL wins: a server that is down is exit 6.
        down = "http://127.0.0.1:%d" % free_port()
        out = self.cli("ls", token=False, url=down, home=home)
        self.assertEqual(out.returncode, 6, out.stderr)
        self.assertIn("cannot reach the server at " + down, out.stderr)
        # Another live server gets no stored token: 401 there, not a leak.
        other = self.cli("ls", token=False, url=self.server.url + "/", home=home)
        self.assertEqual(other.returncode, 0, other.stderr)  # same server, slash aside
        # --json login output.
        home2 = self.home()
        js = self.cli("login", "--user", "admin", "--json", token=False, home=home2,
                      stdin=ADMIN_PASSWORD)
        self.assertEqual(js.returncode, 0, js.stderr)
        info = json.loads(js.stdout)
        self.assertEqual((info["url"], info["user"], info["role"]),
                         (self.server.url, "admin", "admin"))
        # Signing in again revokes the token of the login it replaces.
        js2 = json.loads(self.ok("login", "--user", "admin", "--json", token=False, home=home2,
                                 stdin=ADMIN_PASSWORD).stdout)
        self.assertNotEqual(js2["token_id"], info["token_id"])
        revoked = {t["id"]: t["revoked_at"] for t in self.admin.get("/api/v1/tokens")[1]["tokens"]}
        self.assertIsNotNone(revoked[info["token_id"]])
        self.assertIsNone(revoked[js2["token_id"]])

        # A login file others can read is refused, with the fix.
        os.chmod(cfg, 0o644)
        out = self.cli("ls", token=False, url=False, home=home)
        self.assertEqual(out.returncode, 3, out.stderr)
        self.assertIn("can be read by others (mode 644): run chmod 600 " + cfg, out.stderr)
        os.chmod(cfg, 0o600)

        out = self.ok("logout", token=False, url=False, home=home)
        self.assertIn("signed out of %s: the token is revoked" % self.server.url, out.stdout)
        self.assertFalse(os.path.exists(cfg))
        st, toks, _ = self.admin.get("/api/v1/tokens")
        mine = [t for t in toks["tokens"] if t["id"] == token_id][0]
        self.assertIsNotNone(mine["revoked_at"], mine)
        self.assertEqual(harness.Client(self.server.url, token=stored).get("/api/v1/jobs")[0], 401)
        out = self.cli("ls", token=False, url=self.server.url, home=home)
        self.assertEqual(out.returncode, 3, out.stderr)
        self.assertIn("run 'trainyard login'", out.stderr)
        out = self.ok("logout", token=False, url=False, home=home)
        self.assertIn("not signed in", out.stderr)

    def test_login_prompt_without_echo(self):
        """On a terminal the password is asked for and not echoed."""
        home = self.home()
        master, slave = pty.openpty()
        env = {k: v for k, v in os.environ.items()
               if k not in ("LC_ALL", "LC_MESSAGES", "TRAINYARD_TOKEN", "TRAINYARD_URL")}
        env.update(LANG="C.UTF-8", HOME=home)
        p = subprocess.Popen([CLI_BIN, "login", self.server.url, "--user", "admin"], stdin=slave,
                             stdout=slave, stderr=slave, env=env, close_fds=True)
        os.close(slave)
        seen = b""

        def read_some():
            # Bounded: a CLI that waits for ever fails the test, not the suite.
            ready, _, _ = select.select([master], [], [], 60)
            self.assertTrue(ready, "no output from the CLI in 60 s: %r" % seen)
            try:
                return os.read(master, 4096)
            except OSError:  # EIO: the CLI closed the terminal
                return b""
        try:
            while b"password for admin at " not in seen:
                chunk = read_some()
                self.assertTrue(chunk, seen)
                seen += chunk
            # At once: the prompt is up, so echo is off and nothing is flushed.
            os.write(master, (ADMIN_PASSWORD + "\n").encode())
            while True:
                chunk = read_some()
                if not chunk:
                    break
                seen += chunk
            self.assertEqual(p.wait(timeout=60), 0, seen)
        finally:
            os.close(master)
            if p.poll() is None:
                p.kill()
                p.wait()
        text = seen.decode("utf-8", "replace")
        self.assertIn("signed in to %s as admin" % self.server.url, text)
        self.assertNotIn(ADMIN_PASSWORD, text)
        self.assertTrue(os.path.exists(os.path.join(home, ".config", "trainyard", "config")))

    # jobs -------------------------------------------------------------
    def test_jobs_both_modes(self):
        path = self.spec_file("hello-cli", ["/bin/sh", "-c", "echo line-one; echo 第二行"])
        out = self.ok("submit", path)
        self.assertRegex(out.stdout, r"^job (\d+) submitted: hello-cli, QUEUED\n$")
        jid = out.stdout.split()[1]
        job = self.wait_state(jid, ("SUCCEEDED", "FAILED"))
        self.assertEqual(job["state"], "SUCCEEDED", job)

        ls = self.ok("ls", "--team", "ops")
        lines = ls.stdout.splitlines()
        self.assertEqual(lines[0].split(), ["ID", "NAME", "TEAM", "USER", "STATE", "GPUS",
                                            "CREATED"])
        row = [l for l in lines[1:] if l.split()[0] == jid][0]
        self.assertEqual(row.split()[1:6], ["hello-cli", "ops", "admin", "SUCCEEDED", "1"])
        st, api, _ = self.admin.get("/api/v1/jobs?limit=50&team=ops")
        js = json.loads(self.ok("ls", "--team", "ops", "--json").stdout)
        self.assertEqual([j["id"] for j in js["jobs"]], [j["id"] for j in api["jobs"]])

        show = self.ok("show", jid).stdout
        self.assertRegex(show, r"(?m)^STATE\s+SUCCEEDED$")
        self.assertRegex(show, r"(?m)^command\s+/bin/sh -c echo line-one; echo 第二行$")
        self.assertEqual(json.loads(self.ok("show", jid, "--json").stdout), self.job(jid))

        logs = self.ok("logs", jid).stdout
        self.assertEqual(logs, "[0] line-one\n[0] 第二行\n")
        self.assertEqual(self.ok("logs", jid, "--rank", "0").stdout, "line-one\n第二行\n")
        rows = [json.loads(l) for l in self.ok("logs", jid, "--json").stdout.splitlines()]
        self.assertEqual([r["text"] for r in rows], ["line-one\n", "第二行\n"])
        st, api, _ = self.admin.get("/api/v1/jobs/%s/logs" % jid)
        self.assertEqual(rows, api["logs"])
        # -f on an ended job: what there is, then the end.
        f = self.ok("logs", "-f", jid)
        self.assertEqual(f.stdout, "[0] line-one\n[0] 第二行\n")
        self.assertIn("job %s ended: SUCCEEDED" % jid, f.stderr)

    def test_follow_and_cancel(self):
        # -f follows a running job to its end: lines printed after it started.
        gate = os.path.join(self.tmp, "go-follow")
        jid = self.submit("follow-cli", ["/bin/sh", "-c",
                                         "echo start; while [ ! -e %s ]; do sleep 0.1; done; "
                                         "echo after" % gate])
        env = {k: v for k, v in os.environ.items() if not k.startswith("LC_")}
        env.update(LANG="C.UTF-8", HOME=self.home(), TRAINYARD_URL=self.server.url,
                   TRAINYARD_TOKEN=self.token)
        p = subprocess.Popen([CLI_BIN, "logs", "-f", jid, "--json"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
        try:
            first = json.loads(p.stdout.readline())
            self.assertEqual(first["text"], "start\n")
            # The rank waits for the gate: "after" comes once -f is following.
            open(gate, "w").close()
            rest, err = p.communicate(timeout=90)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual([json.loads(l)["text"] for l in rest.splitlines()], ["after\n"])
        self.assertIn("job %s ended: SUCCEEDED" % jid, err)

        jid = self.submit("cancel-cli", ["/bin/sh", "-c", "sleep 600"])
        self.wait_state(jid, ("RUNNING",))
        out = self.ok("cancel", jid, "--reason", "from the cli")
        self.assertRegex(out.stdout, r"^job %s: cancel requested, \S+\n$" % jid)
        self.assertEqual(self.wait_state(jid, ("CANCELLED",))["state"], "CANCELLED")
        again = self.cli("cancel", jid)
        self.assertEqual(again.returncode, 5, again.stderr)
        self.assertIn("cannot cancel the job: 409 conflict: the job has already ended", again.stderr)
        js = self.cli("cancel", jid, "--json")
        self.assertEqual(js.returncode, 5)
        self.assertEqual(js.stdout, "")

    # nodes, tokens, advisor, audit ------------------------------------
    def test_nodes_drain_undrain(self):
        out = self.ok("nodes").stdout.splitlines()
        self.assertEqual(out[0].split()[:5], ["NAME", "HOST", "STATE", "GPUS", "USED"])
        row = [l for l in out if l.startswith("cli-node-1 ")][0]
        self.assertEqual(row.split()[2:4], ["ready", "2"])
        st, api, _ = self.admin.get("/api/v1/nodes")
        self.assertEqual([n["id"] for n in json.loads(self.ok("nodes", "--json").stdout)["nodes"]],
                         [n["id"] for n in api["nodes"]])
        out = self.ok("drain", "cli-node-1")
        self.assertEqual(out.stdout, "node cli-node-1 is draining: no new work is placed on it\n")
        node = [n for n in self.admin.get("/api/v1/nodes")[1]["nodes"] if n["name"] == "cli-node-1"]
        self.assertEqual(node[0]["state"], "draining")
        js = json.loads(self.ok("undrain", node[0]["id"], "--json").stdout)
        self.assertEqual(js, {"from": "draining", "state": "ready"})
        out = self.cli("drain", "no-such-node")
        self.assertEqual(out.returncode, 4, out.stderr)
        self.assertIn("no node named no-such-node", out.stderr)
        # A member may list nodes but not drain one: 403 permission_denied.
        _, member = self.make_user("cli-member", teams=[self.team])
        mtok = self.token_client(member).token
        self.ok("nodes", token=mtok)
        out = self.cli("drain", "cli-node-1", token=mtok)
        self.assertEqual(out.returncode, 3, out.stderr)
        self.assertIn("cannot change the node: 403 permission_denied", out.stderr)
        out = self.cli("audit", "export", token=mtok)
        self.assertEqual(out.returncode, 3, out.stderr)

    def test_tokens(self):
        out = self.ok("tokens", "create", "ci-pipeline")
        lines = out.stdout.splitlines()
        self.assertRegex(lines[0], r"^token \d+ created \(ci-pipeline\); it is shown this once:$")
        tok, tid = lines[1], lines[0].split()[1]
        self.assertTrue(tok.startswith("tyt_"))
        self.ok("ls", token=tok)
        table = self.ok("tokens").stdout.splitlines()
        self.assertEqual(table[0].split()[:2], ["ID", "NAME"])
        self.assertTrue(any(l.split()[:2] == [tid, "ci-pipeline"] for l in table), table)
        st, api, _ = self.admin.get("/api/v1/tokens")
        self.assertEqual(json.loads(self.ok("tokens", "list", "--json").stdout), api)
        self.assertEqual(self.ok("tokens", "revoke", tid).stdout, "token %s revoked\n" % tid)
        out = self.cli("ls", token=tok)
        self.assertEqual(out.returncode, 3, out.stderr)
        out = self.cli("tokens", "revoke", tid)
        self.assertEqual(out.returncode, 5, out.stderr)
        out = self.cli("tokens", "revoke", "999999")
        self.assertEqual(out.returncode, 4, out.stderr)
        js = json.loads(self.ok("tokens", "create", "ci-2", "--expires-in-s", "3600",
                                "--json").stdout)
        self.assertTrue(js["token"].startswith("tyt_"))
        self.assertIsNotNone(js["expires_at"])

    def test_advisor(self):
        path = os.path.join(self.tmp, "advice.json")
        with open(path, "w") as f:
            json.dump(ADVICE, f)
        st, api, _ = self.admin.post("/api/v1/advisor", ADVICE)
        self.assertEqual(st, 200, api)
        out = self.ok("advisor", path).stdout
        self.assertRegex(out, r"(?m)^strategy\s+%s \(%s\)$" % (api["strategy"], api["engine"]))
        self.assertIn(api["reason"]["en"], out)
        zh = self.ok("advisor", path, lang="zh_CN.UTF-8").stdout
        self.assertIn(api["reason"]["zh-CN"], zh)
        self.assertRegex(zh, r"(?m)^并行策略\s+%s" % api["strategy"])
        self.assertEqual(json.loads(self.ok("advisor", "-", "--json", stdin=json.dumps(ADVICE))
                                    .stdout), api)
        bad = dict(ADVICE, global_batch=0)
        out = self.cli("advisor", "-", stdin=json.dumps(bad))
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("the advisor refused the request: 400 invalid_argument: global_batch",
                      out.stderr)

    def test_audit_export_then_verify(self):
        self.submit("audited", ["/bin/true"])
        export = os.path.join(self.tmp, "audit.jsonl")
        out = self.ok("audit", "export", "-o", export)
        self.assertIn("audit export written to " + export, out.stderr)
        st, key, _ = self.admin.get("/api/v1/audit/public-key")
        self.assertEqual(st, 200, key)
        keyfile = os.path.join(self.tmp, "key.json")
        with open(keyfile, "w") as f:
            json.dump(key, f)
        v = self.ok("audit", "verify", export, "--public-key", keyfile)
        self.assertRegex(v.stdout, r"^OK \d+ events")
        csv = self.ok("audit", "export", "--format", "csv").stdout
        self.assertTrue(csv.startswith("id,"), csv[:80])
        out = self.cli("audit", "export", "--format", "xml", "-o", export + ".x")
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("format must be jsonl or csv", out.stderr)
        self.assertFalse(os.path.exists(export + ".x"))

    # exit codes, languages --------------------------------------------
    def test_exit_codes(self):
        for args in (["ls", "--bogus"], ["show"], ["logs", "1", "--rank", "x"],
                     ["submit", os.path.join(self.tmp, "missing.json")], ["nope"],
                     ["tokens", "frobnicate"], ["drain"], ["advisor"]):
            out = self.cli(*args)
            self.assertEqual(out.returncode, 2, "%s: %s" % (args, out.stderr))
            self.assertEqual(out.stdout, "")
        notjson = os.path.join(self.tmp, "not.json")
        with open(notjson, "w") as f:
            f.write("{nope")
        out = self.cli("submit", notjson)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("is not a JSON object", out.stderr)
        for args in (["show", "999999"], ["logs", "999999"], ["cancel", "999999"]):
            out = self.cli(*args)
            self.assertEqual(out.returncode, 4, "%s: %s" % (args, out.stderr))
            self.assertIn("404 not_found", out.stderr)
        for args in (["ls"], ["show", "1"], ["nodes"], ["tokens"], ["templates"]):
            out = self.cli(*args, token=False)
            self.assertEqual(out.returncode, 3, "%s: %s" % (args, out.stderr))
        # A policy refusal: a dataset outside the site's storage roots.
        before = self.db.sql("SELECT count(*) FROM jobs")[0][0]
        out = self.cli("submit", self.spec_file("outside", ["/bin/true"], datasets=["/etc"]))
        self.assertEqual(out.returncode, 5, out.stderr)
        self.assertIn("403 policy_violation", out.stderr)
        self.assertEqual(self.db.sql("SELECT count(*) FROM jobs")[0][0], before)
        down = "http://127.0.0.1:%d" % free_port()
        for args in (["ls"], ["show", "1"], ["nodes"], ["tokens"], ["logs", "-f", "1"],
                     ["submit", self.spec_file("down", ["/bin/true"])]):
            out = self.cli(*args, url=down, timeout=60)
            self.assertEqual(out.returncode, 6, "%s: %s" % (args, out.stderr))
            # A server that never answered: no retries of a "cut" stream.
            self.assertNotIn("reconnecting", out.stderr)
        # help lists the same numbers.
        self.assertRegex(self.ok("help").stdout, r"(?m)^  6  the server cannot be reached")

    def test_chinese(self):
        zh = dict(lang="zh_CN.UTF-8")
        out = self.cli("show", "999999", **zh)
        self.assertEqual(out.returncode, 4)
        self.assertIn("trainyard: 无法读取作业: 404 not_found", out.stderr)
        out = self.cli("ls", "--limit", "0", **zh)
        self.assertIn("--limit 必须是 1 到 500 之间的整数（收到 0）", out.stderr)
        self.assertIn("'trainyard ls --help' 列出全部选项", out.stderr)
        out = self.cli("submit", "--template", "t", "--param", "steps", **zh)
        self.assertEqual(out.returncode, 2)
        self.assertIn("--param 需要 NAME=VALUE 格式（收到 steps）", out.stderr)
        self.submit("中文作业名", ["/bin/true"])
        ls = self.ok("ls", "--team", "ops", **zh).stdout.splitlines()
        self.assertEqual(ls[0].split()[:5], ["编号", "名称", "团队", "用户", "状态"])
        # Columns line up on screen: the STATE column starts at the same
        # display column in every row, Chinese names included.
        starts = set()
        for line in ls:
            cells = line.split()
            i = line.index(cells[4], len(" ".join(cells[:2])))
            starts.add(width(line[:i]))
        self.assertEqual(len(starts), 1, ls)
        self.assertIn("退出码", self.ok("help", **zh).stdout)
        out = self.cli("audit", "verify", "/nonexistent.jsonl", "--public-key", "/nonexistent.pem",
                       **zh)
        self.assertEqual(out.returncode, 2)
        self.assertIn("trainyard: 无法打开公钥 /nonexistent.pem：", out.stderr)
        out = self.cli("show", "999999", lang="zh_CN.UTF-8",
                       extra_env={"LC_ALL": "en_US.UTF-8"})
        self.assertIn("trainyard: cannot read the job: 404", out.stderr)
        out = self.cli("nodes", **zh)
        self.assertTrue(out.stdout.startswith("名称"), out.stdout)


class CliFollowRestartTest(ServerTest):
    """logs -f across a restart of the server: the CLI reconnects after the
    last line it showed (Last-Event-ID), so no line is lost or repeated. The
    rank prints all along, while the server is down too, and the job keeps
    its one attempt: a new server that took the downtime for the node's
    silence restarted the job, whose rank printed every line again
    (server/loops/monitor.c)."""

    @classmethod
    def setUpClass(cls):
        cls.storage = tempfile.mkdtemp(prefix="ty-cli-restart-storage-")
        os.chmod(cls.storage, 0o755)
        cls.server_args = ("--storage-root", cls.storage)
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "restart", "gpu_quota": 2})
        assert st == 201, cls.team
        st, tok, _ = cls.admin.post("/api/v1/tokens", {"name": "restart"})
        assert st == 201, tok
        cls.token = tok["token"]
        st, join, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        assert st == 201, join
        cls.worker = Worker(cls.server.url, join["token"], "restart-node", gpus=1,
                            allowed_root=cls.storage)
        wait_for(lambda: any(n["state"] == "ready" for n in
                             cls.admin.get("/api/v1/nodes")[1]["nodes"]),
                 timeout=60, what="the worker to be ready")

    @classmethod
    def tearDownClass(cls):
        try:
            cls.worker.stop()
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.storage, ignore_errors=True)

    def test_follow_survives_a_server_restart(self):
        tmp = tempfile.mkdtemp(prefix="ty-cli-restart-")
        gate = os.path.join(tmp, "go")
        spec = {"name": "restart-follow", "team": "restart", "resources": {"gpus": 1},
                "command": ["/bin/sh", "-c", "echo before; i=0; while [ ! -e %s ]; do "
                            "i=$((i+1)); echo tick $i; sleep 0.02; done; i=0; while [ $i -lt 300 ]; "
                            "do i=$((i+1)); echo after $i; done" % gate]}
        st, job, _ = self.admin.post("/api/v1/jobs", spec)
        self.assertEqual(st, 201, job)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LC_")}
        env.update(LANG="C.UTF-8", HOME=tmp, TRAINYARD_URL=self.server.url,
                   TRAINYARD_TOKEN=self.token)
        # Unbuffered, and the first line read a byte at a time: communicate()
        # reads the pipe itself, so lines a buffered readline() had taken
        # with the first would be lost to it.
        p = subprocess.Popen([CLI_BIN, "logs", "-f", job["id"]], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, bufsize=0, env=env)
        try:
            first = b""
            while not first.endswith(b"\n"):
                c = os.read(p.stdout.fileno(), 1)
                if not c:
                    break
                first += c
            if first != b"[0] before\n":
                p.kill()
                self.fail("logs -f: %r, stderr %r" % (first, p.communicate()[1]))
            # The same server again, on the same port and database.
            port = self.server.port
            self.server.stop()
            real = harness.free_port
            harness.free_port = lambda: port
            try:
                type(self).server = harness.Server(self.db, args=self.server_args)
            finally:
                harness.free_port = real
            open(gate, "w").close()
            out, err = (b.decode() for b in p.communicate(timeout=120))
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            shutil.rmtree(tmp, ignore_errors=True)
        self.assertEqual(p.returncode, 0, err)
        # Every line the server holds, each once, in its order: the
        # reconnect went on after the last line shown (Last-Event-ID).
        st, logs, _ = self.admin.get("/api/v1/jobs/%s/logs?limit=5000" % job["id"])
        self.assertEqual(st, 200, logs)
        self.assertEqual("[0] before\n" + out, "".join("[0] " + r["text"] for r in logs["logs"]))
        # One attempt: no line was printed twice, not even by a rerun.
        self.assertEqual({r["attempt"] for r in logs["logs"]}, {1})
        shown = ("[0] before\n" + out).splitlines()
        self.assertEqual(len(shown), len(set(shown)), "a line shown twice")
        self.assertEqual(shown[-1], "[0] after 300")
        self.assertIn("the log stream was cut", err)
        self.assertIn("job %s ended: SUCCEEDED" % job["id"], err)


if __name__ == "__main__":
    harness.main()
