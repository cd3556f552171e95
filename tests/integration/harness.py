"""Test harness: real PostgreSQL, real trainyard processes, plain HTTP.

scripts/test.sh starts one PostgreSQL cluster and exports
TRAINYARD_TEST_PG_URL; every test gets a fresh database of its own from
Database(), and its own trainyard-server from Server(). A server must exit 0
on SIGTERM: under AddressSanitizer a leak makes that fail, so every test
also checks the server for leaks. Under ThreadSanitizer (scripts/tsan.sh) a
report in the log of any server or worker fails the test that stopped it,
whatever its exit code; see Process.check_sanitizer().
"""
import atexit
import http.client
import json
import os
import re
import ssl
import hashlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

BUILD = os.environ.get("TRAINYARD_BUILD_DIR", os.path.join(os.path.dirname(__file__), "../../build"))
SRC = os.environ.get("TRAINYARD_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "../.."))
PG_URL = os.environ.get("TRAINYARD_TEST_PG_URL", "")
# scripts/test.sh sets it: there a missing database is a failure, not a skip
# (a skipped test counts as passed in ctest).
REQUIRE_PG = os.environ.get("TRAINYARD_TEST_REQUIRE_PG", "") not in ("", "0")
ADMIN_PASSWORD = "admin-password-for-tests"
SERVER_BIN = os.path.join(BUILD, "server", "trainyard-server")
WORKER_BIN = os.path.join(BUILD, "worker", "trainyard-worker")
CLI_BIN = os.path.join(BUILD, "cli", "trainyard")


# The account a worker started as root runs ranks as (worker/ident.h). The
# tests run as root, like a packaged worker's postinst they make it; a
# worker started by another user is given --job-user self (Worker below).
JOB_USER = "trainyard-job"


def ensure_job_user(name=JOB_USER):
    """Create the system account name when running as root and it is missing;
    returns its uid (None when not root)."""
    import pwd
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        pass
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                    name], check=False, capture_output=True)
    return pwd.getpwnam(name).pw_uid


_mkdtemp = tempfile.mkdtemp


def _mkdtemp_reachable(*args, **kwargs):
    """tempfile.mkdtemp, but 0755 when running as root: the tests hand
    their temporary dirs to jobs (storage roots, scripts, gate files), and
    the ranks run as JOB_USER, which a 0700 dir of root's would shut out,
    as a site's storage must let its job accounts in."""
    d = _mkdtemp(*args, **kwargs)
    if os.geteuid() == 0:
        os.chmod(d, 0o755)
    return d


tempfile.mkdtemp = _mkdtemp_reachable

# Every process a test starts, so that none outlives a test that failed half
# way (a failing setUpClass skips tearDownClass).
_children = []
# Every Server and Worker whose log has not been checked for a sanitizer
# report yet (Process.check_sanitizer() removes it).
_unchecked = []


def sanitizer_report(text):
    """The first ThreadSanitizer report in text (up to 80 lines), or None.
    TSan prints "WARNING: ThreadSanitizer: data race ..." and the like, and
    "ThreadSanitizer: reported N warnings" at exit; no trainyard log line
    names it."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "ThreadSanitizer" in line:
            return "\n".join(lines[i:i + 80])
    return None


def _kill_children():
    for p in _children:
        if p.poll() is None:
            p.kill()
            p.wait()
    # Processes that no test stopped (a failed set-up): a report in their
    # logs still fails the run, since no test result can carry it now.
    for proc in list(_unchecked):
        try:
            proc.check_sanitizer("%s (left running)" % proc.what)
        except AssertionError as e:
            print(e, file=sys.stderr, flush=True)
            os._exit(1)


atexit.register(_kill_children)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def psql(db_url, sql, *params):
    """Run SQL as the PostgreSQL superuser; returns rows as lists of strings."""
    args = ["psql", db_url, "-v", "ON_ERROR_STOP=1", "-qAt", "-F", "\t", "-c", sql]
    out = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    return [line.split("\t") for line in out.stdout.splitlines() if line != ""]


def psql_try(db_url, sql):
    """Run SQL; returns (ok, stderr)."""
    out = subprocess.run(["psql", db_url, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql],
                         capture_output=True, text=True, timeout=60)
    return out.returncode == 0, out.stderr.strip()


class Database:
    """A fresh database on the test cluster, dropped at close()."""

    def __init__(self):
        if not PG_URL:
            if REQUIRE_PG:
                raise RuntimeError("the test database is missing: TRAINYARD_TEST_PG_URL is not set"
                                   " (and TRAINYARD_TEST_REQUIRE_PG is)")
            raise unittest.SkipTest("TRAINYARD_TEST_PG_URL is not set (run through make test)")
        self.name = "ty_" + uuid.uuid4().hex[:12]
        psql(PG_URL + "/postgres", "CREATE DATABASE " + self.name)
        self.url = PG_URL + "/" + self.name

    def sql(self, q):
        return psql(self.url, q)

    def close(self):
        try:
            psql(PG_URL + "/postgres", "DROP DATABASE IF EXISTS %s WITH (FORCE)" % self.name)
        except RuntimeError:
            pass


class Process:
    """What servers and workers share: a log file and a checked SIGTERM stop."""

    def log_tail(self, n=60):
        try:
            with open(self.log_path, "rb") as f:
                return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-n:])
        except OSError:
            return ""

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def watch(self, what):
        """Remember this process for the sanitizer check at exit."""
        self.what = what
        if self not in _unchecked:
            _unchecked.append(self)

    def check_sanitizer(self, what):
        """Fail if the log holds a ThreadSanitizer report. Called on every
        stop, with or without check: TSan runs with halt_on_error=0 (so one
        run names every race) and exits 66, but a test that expects a
        failure, or kills the process, must not hide a race."""
        if self in _unchecked:
            _unchecked.remove(self)
        try:
            report = sanitizer_report(self.log_text())
        except OSError:
            return
        if report:
            raise AssertionError("%s: ThreadSanitizer report in %s:\n%s"
                                 % (what, self.log_path, report))

    def terminate(self, what, check=True):
        """SIGTERM and wait; a non-zero exit (a crash, or a leak under ASan)
        fails the test, and so does a ThreadSanitizer report even when check
        is False. Returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("%s did not stop on SIGTERM:\n%s" % (what, self.log_tail()))
        self.log.close()
        rc = self.proc.returncode
        self.check_sanitizer(what)
        if check and rc != 0:
            raise AssertionError("%s exited with %d:\n%s" % (what, rc, self.log_tail(120)))
        return rc


class Server(Process):
    """A trainyard-server on a free loopback port."""

    def __init__(self, db, args=(), env=None, admin=True, ca_file=None, listen_host="127.0.0.1"):
        """ca_file: the server serves HTTPS (args carry --tls-cert and
        --tls-key); clients verify it against this CA. listen_host: the
        address it binds (clients still use 127.0.0.1)."""
        self.db = db
        self.ca_file = ca_file
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="ty-server-")
        self.log_path = os.path.join(self.dir, "server.log")
        self.base_env = dict(os.environ)
        self.base_env.update(env or {})
        if admin:
            self.create_admin("admin", ADMIN_PASSWORD)
        self.cmd = [SERVER_BIN, "--listen", "%s:%d" % (listen_host, self.port), "--database-url",
                    db.url, "--data-dir", self.dir, "--http-threads", "4", "--db-pool-size",
                    "8"] + list(args)
        self.url = "%s://127.0.0.1:%d" % ("https" if ca_file else "http", self.port)
        self._launch()

    def _launch(self):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=self.log, env=self.base_env)
        _children.append(self.proc)
        self.watch("server")
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                self.log.close()  # a test may expect this (a refused configuration)
                raise RuntimeError("server exited at start:\n" + self.log_tail())
            try:
                st, _, _ = Client(self.url, ca_file=self.ca_file).get("/healthz")
                if st == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("server did not start:\n" + self.log_tail())

    def create_admin(self, name, password):
        env = dict(self.base_env)
        env["TRAINYARD_ADMIN_PASSWORD"] = password
        out = subprocess.run([SERVER_BIN, "--database-url", self.db.url, "--create-admin", name,
                              "--log-level", "warn"], capture_output=True, text=True, env=env,
                             timeout=120)
        if out.returncode not in (0, 3):
            raise RuntimeError("create-admin failed: " + out.stderr)
        return out

    def stop(self, check=True):
        rc = self.terminate("server", check)
        shutil.rmtree(self.dir, ignore_errors=True)
        return rc

    def kill9(self):
        """SIGKILL, as a crash would: nothing is flushed or released. What
        TSan printed before still fails the test."""
        self.proc.kill()
        self.proc.wait()
        self.log.close()
        self.check_sanitizer("server (killed)")

    def restart(self):
        """Start the same server again after kill9(): same port, data dir
        (signing key) and arguments, so workers and clients find it where
        they left it. Returns once /healthz answers 200."""
        self._launch()


class Client:
    """A small HTTP client that keeps the session cookie and CSRF token."""

    def __init__(self, base, token=None, ca_file=None):
        """ca_file: verify an https:// base against this CA (else the
        system's store)."""
        m = re.match(r"(https?)://([^:/]+):(\d+)", base)
        self.tls, self.host, self.port = m.group(1) == "https", m.group(2), int(m.group(3))
        self.ca_file = ca_file
        self.base = base
        self.cookie = None
        self.csrf = None
        self.token = token

    def request(self, method, path, body=None, headers=None, raw=None,
                content_type="application/json", csrf=True):
        h = {}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if self.cookie:
            h["Cookie"] = self.cookie
        if self.csrf and csrf and method not in ("GET", "HEAD"):
            h["X-CSRF-Token"] = self.csrf
        data = None
        if raw is not None:
            data = raw if isinstance(raw, bytes) else raw.encode()
        elif body is not None:
            data = json.dumps(body).encode()
        if data is not None and content_type:
            h["Content-Type"] = content_type
        h.update(headers or {})
        if self.tls:
            ctx = ssl.create_default_context(cafile=self.ca_file)
            conn = http.client.HTTPSConnection(self.host, self.port, timeout=60, context=ctx)
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            try:
                conn.request(method, path, body=data, headers=h)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server answered early (413) and stopped reading
            resp = conn.getresponse()
            payload = resp.read()
            hdrs = {k.lower(): v for k, v in resp.getheaders()}
            status = resp.status
        finally:
            conn.close()
        try:
            parsed = json.loads(payload) if payload else None
        except ValueError:
            parsed = payload.decode("utf-8", "replace")
        return status, parsed, hdrs

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body=body, **kw)

    def login(self, username, password):
        st, body, hdrs = self.post("/api/v1/auth/login", {"username": username, "password": password})
        if st == 200:
            self.cookie = hdrs["set-cookie"].split(";")[0]
            self.csrf = body["csrf_token"]
        return st, body


def canonical(ev):
    """The canonical audit form of common/audit_canon.h, reproduced independently."""
    obj = {k: ev[k] for k in ("id", "ts", "actor", "source", "action", "target", "outcome",
                              "prev_hash")}
    obj["id"] = str(obj["id"])
    obj["details"] = ev["details"]
    s = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    # jansson writes \u escapes with upper-case hex digits.
    return re.sub(r"\\u([0-9a-f]{4})", lambda m: "\\u" + m.group(1).upper(), s)


def verify_chain_rows(rows):
    """rows: dicts ordered by id. Returns the first bad id or 0."""
    prev = "0" * 64
    expect = 1
    for ev in rows:
        if int(ev["id"]) != expect or ev["prev_hash"] != prev:
            return expect
        if hashlib.sha256(canonical(ev).encode()).hexdigest() != ev["hash"]:
            return int(ev["id"])
        prev = ev["hash"]
        expect += 1
    return 0


def db_audit_rows(db):
    rows = db.sql("SELECT id, ts_text, actor, source, action, target, outcome, details, "
                  "prev_hash, hash FROM audit_events ORDER BY id")
    keys = ["id", "ts", "actor", "source", "action", "target", "outcome", "details",
            "prev_hash", "hash"]
    out = []
    for r in rows:
        d = dict(zip(keys, r))
        d["details"] = json.loads(d["details"])
        out.append(d)
    return out


class ServerTest(unittest.TestCase):
    """Base class: one fresh database and server per test class, admin
    signed in. (Per class, not per test: every sign-in costs a 600,000-round
    PBKDF2, so tests share the set-up and use distinct names.)"""

    server_args = ()
    server_ca_file = None  # set with --tls-cert/--tls-key in server_args: HTTPS
    server_env = None  # extra environment of the server process

    @classmethod
    def setUpClass(cls):
        cls.db = Database()
        cls.server = Server(cls.db, args=cls.server_args, env=cls.server_env,
                            ca_file=cls.server_ca_file)
        cls.admin = Client(cls.server.url, ca_file=cls.server_ca_file)
        st, body = cls.admin.login("admin", ADMIN_PASSWORD)
        assert st == 200, body

    @classmethod
    def tearDownClass(cls):
        try:
            cls.server.stop()
        finally:
            cls.db.close()

    def token_client(self, client, name="t"):
        """An API-token client acting as the user of client."""
        st, body, _ = client.post("/api/v1/tokens", {"name": name})
        self.assertEqual(st, 201, body)
        return Client(self.server.url, token=body["token"])

    # helpers -------------------------------------------------------------
    def make_team(self, name, quota=0):
        st, body, _ = self.admin.post("/api/v1/teams", {"name": name, "gpu_quota": quota})
        self.assertEqual(st, 201, body)
        return body

    def make_user(self, name, role="member", teams=()):
        st, body, _ = self.admin.post("/api/v1/users", {"username": name, "role": role,
                                                        "password": name + "-password-123"})
        self.assertEqual(st, 201, body)
        for t in teams:
            st, b2, _ = self.admin.request("PUT", "/api/v1/teams/%s/members/%s" % (t["id"], body["id"]))
            self.assertEqual(st, 201, b2)
        c = Client(self.server.url)
        st, b3 = c.login(name, name + "-password-123")
        self.assertEqual(st, 200, b3)
        return body, c

    def job_spec(self, team, **over):
        spec = {"name": "t", "team": team, "command": ["/bin/true"], "resources": {"gpus": 1}}
        spec.update(over)
        return spec

    def wait_scheduler_pass(self, spec, client=None, timeout=30):
        """Submit spec, a job the scheduler can place at once, and wait until it
        has left QUEUED. The pass that placed it read a queue holding every
        job submitted before it, so a job still QUEUED afterwards is one a
        pass left waiting: assert that instead of sleeping through "a few"
        passes. Returns the placed job."""
        client = client or self.admin
        st, job, _ = client.post("/api/v1/jobs", spec)
        self.assertEqual(st, 201, job)

        def placed():
            j = client.get("/api/v1/jobs/" + job["id"])[1]
            return j if j["state"] != "QUEUED" else None
        return wait_for(placed, timeout=timeout, what="job %s (a scheduler pass) to be placed"
                        % job["id"])

    def assert_error(self, resp, status, code=None, field=None):
        st, body, hdrs = resp
        self.assertEqual(st, status, body)
        self.assertIsInstance(body, dict, body)
        self.assertIn("error", body)
        err = body["error"]
        self.assertTrue(err["message"])
        self.assertTrue(err["request_id"].startswith("r-"))
        if code:
            self.assertEqual(err["code"], code, body)
        if field is not None:
            self.assertEqual(err.get("field"), field, body)
        return err


# The exit status of a driver that passed but skipped something (a test, a
# step of one, or a class whose set-up skipped): ctest reports it as
# "Skipped" (SKIP_RETURN_CODE in tests/CMakeLists.txt) and scripts/test.sh
# fails the run unless the test is allowed to skip (tests/README.md). Exit 0
# would count the skip as a pass.
SKIP_EXIT = 77


def main():
    """Run this module's tests. Exits 1 on a failure or error, SKIP_EXIT when
    everything that ran passed but something was skipped (one line per skip,
    "SKIPPED: <test>: <reason>", closes the output), else 0."""
    prog = unittest.main(verbosity=2, exit=False)
    result = prog.result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.skipped:
        for test, reason in result.skipped:
            print("SKIPPED: %s: %s" % (test.id(), reason), flush=True)
        sys.exit(SKIP_EXIT)
    sys.exit(0)


class Worker(Process):
    """A trainyard-worker with fake GPUs, joined to a server."""

    def __init__(self, server_url, join_token, name, gpus=2, work_dir=None, allowed_root=None,
                 labels=None, extra=(), token_file=False):
        self.name = name
        self.server_url = server_url
        self.join_token = join_token
        # The token never goes on the command line (every local user reads
        # /proc/PID/cmdline): TRAINYARD_JOIN_TOKEN, or with token_file a
        # mode 0600 file named by --join-token-file.
        self.token_file = token_file
        self.work_dir = work_dir or tempfile.mkdtemp(prefix="ty-worker-")
        self.allowed_root = allowed_root
        self.gpus = gpus
        self.labels = labels
        self.extra = list(extra)
        self.log_path = os.path.join(self.work_dir, "worker.log")
        self.proc = None
        self.start()

    def start(self):
        if ensure_job_user() is None and not any(a.startswith("--job-user") for a in self.extra):
            self.extra.append("--job-user=self")  # cannot switch ids: a developer's run
        cmd = [WORKER_BIN, "--server", self.server_url,
               "--name", self.name, "--fake-gpus", str(self.gpus), "--work-dir", self.work_dir,
               "--addr", "127.0.0.1", "--heartbeat-ms", "500", "--grace-s", "5"] + self.extra
        if self.allowed_root:
            cmd += ["--allowed-root", self.allowed_root]
        if self.labels:
            cmd += ["--labels", self.labels]
        env = dict(os.environ)
        env.pop("TRAINYARD_JOIN_TOKEN", None)
        if self.token_file:
            path = os.path.join(self.work_dir, "join-token")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(self.join_token + "\n")
            cmd += ["--join-token-file", path]
        else:
            env["TRAINYARD_JOIN_TOKEN"] = self.join_token
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log, env=env)
        _children.append(self.proc)
        self.watch("worker " + self.name)

    def kill9(self):
        """SIGKILL: no exit code to check, but what TSan printed before
        still fails the test."""
        self.proc.kill()
        self.proc.wait()
        self.log.close()
        self.check_sanitizer("worker " + self.name)

    def stop(self, check=True):
        self.terminate("worker " + self.name, check)


def processes_with_env(marker):
    """PIDs whose environment contains marker (to prove nothing was left behind)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                if marker.encode() in f.read():
                    pids.append(int(d))
        except OSError:
            pass
    return pids


def processes_with_cmdline(marker):
    """The processes whose command line holds marker, as a set of (pid, start
    time): a PID the kernel hands out again is not the same process, so two
    such sets tell one attempt's ranks from the next one's. A child that such
    a process forked and that has not exec'd yet carries the same command
    line for that instant (a shell rank's `sleep`, say): it is not a rank of
    its own, so a match whose parent also matches is left out."""
    found = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                if marker.encode() not in f.read():
                    continue
            with open("/proc/%s/stat" % d) as f:
                # comm (field 2) may hold spaces: count from its closing paren.
                fields = f.read().rsplit(")", 1)[1].split()
            found[int(d)] = (int(fields[1]), int(fields[19]))  # ppid, start time
        except (OSError, IndexError):
            pass
    return {(pid, start) for pid, (ppid, start) in found.items() if ppid not in found}


def join_fake_node(server_url, admin, name):
    """A node that speaks the worker protocol itself (no trainyard-worker):
    joined with a fresh one-use token and registered with one fake GPU.
    Returns a Client holding the node's credential."""
    st, jt, _ = admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
    assert st == 201, jt
    st, joined, _ = Client(server_url).post("/api/v1/agent/join", {
        "join_token": jt["token"], "name": name, "hostname": name, "addr": "127.0.0.1"})
    assert st == 201, joined
    node = Client(server_url, token=joined["credential"])
    st, reg, _ = node.post("/api/v1/agent/register", {
        "hostname": name, "addr": "127.0.0.1", "cpus": 4, "memory_mb": 8192,
        "version": "0.1.0", "running": [],
        "gpus": [{"index": 0, "uuid": "GPU-%s-0" % name, "model": "FAKE", "memory_mb": 16384}]})
    assert st == 200, reg
    return node


class FakeNodeTest(ServerTest):
    """ServerTest with a storage root, a team "ml" and one node that speaks
    the worker protocol itself (join_fake_node, one fake GPU): cls.node.
    node_name names it."""

    node_name = "fake-a"

    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="ty-fake-node-")
        cls.server_args = ("--storage-root", cls.root, "--sched-interval-ms", "200",
                           "--node-timeout-s", "120")
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "ml"})
        assert st == 201, cls.team
        cls.node = join_fake_node(cls.server.url, cls.admin, cls.node_name)

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.root, ignore_errors=True)

    def take(self, jid, attempt=None):
        """Long-poll the node's assignments until one of job jid (of that
        attempt, if given) comes; returns it."""
        def poll():
            st, body, _ = self.node.get("/api/v1/agent/assignments?wait=2")
            self.assertEqual(st, 200, body)
            mine = [a for a in body["assignments"] if a["job_id"] == jid and
                    (attempt is None or a["attempt"] == attempt)]
            return mine[0] if mine else None
        return wait_for(poll, timeout=60, what="an assignment of job %s" % jid)


def wait_for(fn, timeout=60, interval=0.2, what="condition"):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))
