"""A job cannot act as its node: a real server, PostgreSQL and worker, the
worker as root, its ranks as the job account (worker/ident.h).

- a rank runs as trainyard-job, with no capability left: `id -u` and CapEff
  from inside, and what it writes in its output_dir belongs to that account
- the rank tries to act as the node: reading WORK_DIR/node.json and
  state.json fails with EACCES (the work dir lets nobody list it), so does
  the worker's /proc/PID/environ; the agent API answers 401 to whatever it
  can present (nothing, a made-up token, its own env's values)
- a user mapped to a Unix account (PATCH /users/{id} unix_account, audited)
  runs as that account; a team mapped to one the worker's --job-users does
  not list is refused with the reason in the job; bad names get a 400
  naming the field and change nothing
- the worker as the packaged unit runs it: not root, with only
  CAP_SETUID CAP_SETGID CAP_KILL CAP_CHOWN CAP_DAC_READ_SEARCH (setpriv):
  the same probe is refused the same way, its checkpoints dir is made, and
  a cancel kills the rank that runs under another uid
- a --job-user that does not exist, root, or the worker itself stops the
  worker at start with the fix in the message

Needs root (to switch ids and create the account): otherwise it says
SKIP: and skips, as test_isolate_network does.
"""
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest, Worker, wait_for  # noqa: E402

PY = "/usr/bin/python3"
MAPPED = "ty-mapped-job"  # a second job account, allowed by the worker's --job-users

# What the rank runs: it reports who it is and what it could reach, one
# "key=value" line each.
PROBE = r"""
import errno, json, os, urllib.request, urllib.error
def say(k, v):
    print("%s=%s" % (k, v), flush=True)
say("uid", os.getuid())
say("euid", os.geteuid())
with open("/proc/self/status") as f:
    say("capeff", [l.split()[1] for l in f if l.startswith("CapEff:")][0])
def try_read(key, path):
    try:
        with open(path) as f:
            f.read()
        say(key, "READ")
    except OSError as e:
        say(key, errno.errorcode.get(e.errno, str(e.errno)))
try_read("node_json", os.environ["PROBE_NODE_JSON"])
try_read("state_json", os.environ["PROBE_STATE_JSON"])
try_read("worker_environ", "/proc/%s/environ" % os.environ["PROBE_WORKER_PID"])
try:
    os.listdir(os.environ["PROBE_WORK_DIR"])
    say("work_dir_list", "LISTED")
except OSError as e:
    say("work_dir_list", errno.errorcode.get(e.errno, str(e.errno)))
# Whatever looks like a secret in its own environment, and a made-up one.
cands = ["", "made-up"] + [v for k, v in os.environ.items() if "TOKEN" in k or "CRED" in k]
codes = []
for c in cands:
    req = urllib.request.Request(os.environ["PROBE_SERVER"] + "/api/v1/agent/assignments?wait=0")
    if c:
        req.add_header("Authorization", "Bearer " + c)
    try:
        codes.append(urllib.request.urlopen(req, timeout=10).status)
    except urllib.error.HTTPError as e:
        codes.append(e.code)
say("agent_codes", ",".join(str(c) for c in codes))
out = os.environ["TRAINYARD_OUTPUT_DIR"]
with open(os.path.join(out, "written-by-rank.txt"), "w") as f:
    f.write("hello\n")
say("wrote", "ok")
"""


def skip_reason():
    if os.geteuid() != 0:
        return "SKIP: needs root to switch the ranks' ids and create the job account"
    return None


REASON = skip_reason()
if REASON:
    print(REASON)


@unittest.skipIf(REASON is not None, REASON or "")
class JobIdentityTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.job_uid = harness.ensure_job_user()
        cls.mapped_uid = harness.ensure_job_user(MAPPED)
        cls.base = tempfile.mkdtemp(prefix="ty-ident-")
        os.chmod(cls.base, 0o755)
        cls.root = os.path.join(cls.base, "root")
        os.mkdir(cls.root, 0o755)
        if harness.WORKER_BIN != harness.os.path.join(harness.BUILD, "worker", "trainyard-worker"):
            nobody = pwd.getpwnam("nobody")  # the worker's own storage root (UnitCapsWorkerTest)
            os.chown(cls.root, nobody.pw_uid, nobody.pw_gid)
        cls.server_args = ("--storage-root", cls.root, "--sched-interval-ms", "200")
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "ml"})
        assert st == 201, cls.team
        st, tok, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 2})
        assert st == 201, tok
        cls.token = tok["token"]
        cls.worker = Worker(cls.server.url, cls.token, "node-a", gpus=2, allowed_root=cls.root,
                            extra=("--job-users", MAPPED))
        wait_for(lambda: any(n["state"] == "ready"
                             for n in cls.admin.get("/api/v1/nodes")[1]["nodes"]),
                 what="node-a ready")

    @classmethod
    def tearDownClass(cls):
        try:
            cls.worker.stop()
        finally:
            super().tearDownClass()
            shutil.rmtree(cls.base, ignore_errors=True)

    def wait_job(self, jid, states=("SUCCEEDED", "FAILED")):
        def check():
            st, job, _ = self.admin.get("/api/v1/jobs/" + jid)
            return job if job["state"] in states else None
        try:
            return wait_for(check, timeout=90, what="job %s in %s" % (jid, states))
        except AssertionError:
            raise AssertionError("job %s: %s\nworker:\n%s" % (
                jid, self.admin.get("/api/v1/jobs/" + jid)[1], self.worker.log_tail(30)))

    def lines(self, jid):
        st, logs, _ = self.admin.get("/api/v1/jobs/%s/logs?limit=200" % jid)
        self.assertEqual(st, 200, logs)
        got = {}
        for l in logs["logs"]:
            k, _, v = l["text"].rstrip("\n").partition("=")
            got[k] = v
        return got

    def test_rank_cannot_act_as_its_node(self):
        work = self.worker.work_dir
        out = os.path.join(self.root, "out-probe")
        spec = {"name": "probe", "team": "ml", "command": [PY, "-c", PROBE],
                "resources": {"gpus": 1}, "max_restarts": 0, "output_dir": out,
                "env": {"PROBE_NODE_JSON": os.path.join(work, "node.json"),
                        "PROBE_STATE_JSON": os.path.join(work, "state.json"),
                        "PROBE_WORK_DIR": work,
                        "PROBE_WORKER_PID": str(self.worker.proc.pid),
                        "PROBE_SERVER": self.server.url}}
        st, job, _ = self.admin.post("/api/v1/jobs", spec)
        self.assertEqual(st, 201, job)
        done = self.wait_job(job["id"])
        got = self.lines(job["id"])
        self.assertEqual(done["state"], "SUCCEEDED", (done, got, self.worker.log_tail(20)))
        self.assertEqual(got.get("uid"), str(self.job_uid), got)
        self.assertEqual(got.get("euid"), str(self.job_uid), got)
        self.assertEqual(int(got.get("capeff", "ff"), 16), 0, got)
        self.assertEqual(got.get("node_json"), "EACCES", got)
        self.assertEqual(got.get("state_json"), "EACCES", got)
        self.assertEqual(got.get("worker_environ"), "EACCES", got)
        self.assertEqual(got.get("work_dir_list"), "EACCES", got)
        codes = got.get("agent_codes", "").split(",")
        self.assertTrue(codes and all(c in ("401", "403") for c in codes), got)
        self.assertEqual(got.get("wrote"), "ok", got)
        # What the rank wrote, and its output dir, belong to the job account.
        f = os.path.join(out, "written-by-rank.txt")
        self.assertEqual(os.stat(f).st_uid, self.job_uid)
        self.assertEqual(os.stat(out).st_uid, self.job_uid)
        # The credential itself: the worker's, 0600, in a dir nobody lists.
        st_node = os.stat(os.path.join(work, "node.json"))
        self.assertEqual(stat.S_IMODE(st_node.st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(os.stat(work).st_mode), 0o700)
        # The storage root, an allowed root, is not handed to the job.
        self.assertNotEqual(os.stat(self.root).st_uid, self.job_uid)

    def patch(self, path, body):
        return self.admin.request("PATCH", path, body=body)

    def run_whoami(self, name):
        out = os.path.join(self.root, "out-" + name)
        spec = {"name": name, "team": "ml", "resources": {"gpus": 1}, "max_restarts": 0,
                "output_dir": out,
                "command": ["/bin/sh", "-c", 'echo "uid=$(id -u)"; echo hi > "$TRAINYARD_OUTPUT_DIR/f"']}
        st, job, _ = self.admin.post("/api/v1/jobs", spec)
        self.assertEqual(st, 201, job)
        return self.wait_job(job["id"]), out

    def test_mapped_accounts(self):
        st, users, _ = self.admin.get("/api/v1/users")
        me = [u for u in users["users"] if u["username"] == "admin"][0]
        upath = "/api/v1/users/%s" % me["id"]
        tpath = "/api/v1/teams/%s" % self.team["id"]
        self.assertIsNone(me["unix_account"])
        try:
            st, row, _ = self.patch(upath, {"unix_account": MAPPED})
            self.assertEqual(st, 200, row)
            self.assertEqual(row["unix_account"], MAPPED)
            ev = [e for e in harness.db_audit_rows(self.db) if e["action"] == "user.update"][-1]
            self.assertEqual(ev["details"].get("unix_account"), MAPPED, ev)
            # Bad names: a clear error on the field, nothing changed.
            for bad in ("Bad Name", "root", "a/b", "x" * 33, 5, ["a"], "self"):
                for path in (upath, tpath):
                    st, body, _ = self.patch(path, {"unix_account": bad})
                    self.assertEqual(st, 400, (bad, body))
                    self.assertEqual(body["error"]["field"], "unix_account", body)
            self.assertEqual(self.admin.get(upath)[1]["unix_account"], MAPPED)
            self.assertIsNone(self.admin.get(tpath)[1]["unix_account"])

            done, out = self.run_whoami("mapped")
            got = self.lines(done["id"])
            self.assertEqual(done["state"], "SUCCEEDED", (done, self.worker.log_tail(20)))
            self.assertEqual(got.get("uid"), str(self.mapped_uid), got)
            self.assertEqual(os.stat(os.path.join(out, "f")).st_uid, self.mapped_uid)

            # The user's mapping cleared, the team's applies; this node does
            # not allow it: refused with the reason, never run as the default.
            st, row, _ = self.patch(upath, {"unix_account": None})
            self.assertEqual(st, 200, row)
            self.assertIsNone(row["unix_account"])
            st, row, _ = self.patch(tpath, {"unix_account": "ty-not-allowed"})
            self.assertEqual(st, 200, row)
            self.assertEqual(row["unix_account"], "ty-not-allowed")
            done, _ = self.run_whoami("refused")
            self.assertEqual(done["state"], "FAILED", done)
            self.assertIn("ty-not-allowed", done["reason"], done)
            self.assertIn("does not allow", done["reason"], done)
            self.assertNotIn("uid", self.lines(done["id"]))
        finally:
            self.patch(upath, {"unix_account": None})
            self.patch(tpath, {"unix_account": ""})
        self.assertIsNone(self.admin.get(tpath)[1]["unix_account"])

    def start_refused(self, *extra):
        d = tempfile.mkdtemp(prefix="ty-ident-w-")
        try:
            env = dict(os.environ)
            env["TRAINYARD_JOIN_TOKEN"] = self.token
            p = subprocess.run([harness.WORKER_BIN, "--server", self.server.url, "--name", "x",
                                "--fake-gpus", "1", "--work-dir", d, "--addr", "127.0.0.1"] +
                               list(extra), env=env, capture_output=True, text=True, timeout=60)
            return p.returncode, p.stderr
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_worker_refuses_a_bad_job_user(self):
        rc, err = self.start_refused("--job-user", "ty-no-such-account")
        self.assertEqual(rc, 2, err)
        self.assertIn("does not exist", err)
        self.assertIn("useradd --system", err)
        rc, err = self.start_refused("--job-user", "root")
        self.assertEqual(rc, 2, err)
        self.assertIn("root", err)
        rc, err = self.start_refused("--job-user", "Bad Name")
        self.assertEqual(rc, 2, err)
        self.assertIn("not an account name", err)
        rc, err = self.start_refused("--job-users", "alice,,bob")
        self.assertEqual(rc, 2, err)
        self.assertIn("--job-users", err)


UNIT_CAPS = "+setuid,+setgid,+kill,+chown,+dac_read_search"


@unittest.skipIf(REASON is not None or shutil.which("setpriv") is None,
                 REASON or "SKIP: setpriv (util-linux) is not installed")
class UnitCapsWorkerTest(JobIdentityTest):
    """The worker as trainyard-worker.service starts it: an unprivileged
    user (nobody here) holding exactly the unit's ambient capabilities."""

    @classmethod
    def setUpClass(cls):
        cls.wrapper_dir = tempfile.mkdtemp(prefix="ty-ident-caps-")
        wrapper = os.path.join(cls.wrapper_dir, "worker")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\nexec setpriv --reuid=nobody --regid=nogroup --clear-groups "
                    "--inh-caps %s --ambient-caps %s %s \"$@\"\n"
                    % (UNIT_CAPS, UNIT_CAPS, harness.WORKER_BIN))
        os.chmod(wrapper, 0o755)
        cls.real_bin = harness.WORKER_BIN
        harness.WORKER_BIN = wrapper
        nobody = pwd.getpwnam("nobody")
        cls.worker_work = os.path.join(cls.wrapper_dir, "work")
        os.mkdir(cls.worker_work, 0o700)
        os.chown(cls.worker_work, nobody.pw_uid, nobody.pw_gid)
        orig = harness.Worker

        def worker(*a, **kw):
            kw["work_dir"] = cls.worker_work
            return orig(*a, **kw)
        global Worker
        Worker = worker
        try:
            # The storage root is the worker's to write, as a site sets it up.
            super().setUpClass()
        finally:
            Worker = orig
            harness.WORKER_BIN = cls.real_bin

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.wrapper_dir, ignore_errors=True)

    def test_cancel_kills_a_rank_of_another_uid(self):
        spec = {"name": "sleeper", "team": "ml", "resources": {"gpus": 1}, "max_restarts": 0,
                "command": ["/bin/sh", "-c", "echo started; exec sleep 617"]}
        st, job, _ = self.admin.post("/api/v1/jobs", spec)
        self.assertEqual(st, 201, job)
        wait_for(lambda: "started" in self.lines(job["id"]), timeout=90,
                 what="the sleeper to start")
        st, body, _ = self.admin.post("/api/v1/jobs/%s/cancel" % job["id"], {})
        self.assertIn(st, (200, 202), body)
        done = self.wait_job(job["id"], ("CANCELLED", "FAILED", "SUCCEEDED"))
        self.assertEqual(done["state"], "CANCELLED", done)
        self.assertEqual(harness.processes_with_cmdline("sleep\x00617"), set())


if __name__ == "__main__":
    harness.main()
