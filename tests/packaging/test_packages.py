"""The Debian packages, built by packaging/build-debs.sh and
installed with dpkg -i on this machine, then purged.

- make a release build of this tree (its own build directory) and the four
  packages; each has the files, modes and dependencies it should
- dpkg -i installs them; the system users exist (the worker's and the
  ranks' trainyard-job in the GPU groups that exist here, the worker's
  state dir 0700); the conffiles are registered; the worker's unit holds
  only the capabilities that running ranks as trainyard-job takes
- systemd-analyze verify accepts both installed units, and
  systemd-analyze security rates the server's unit at most "MEDIUM"
- the installed binaries run: trainyard-server with the installed
  config, dashboard and templates against the test PostgreSQL
  (--create-admin, sign-in, the 9 templates, the dashboard's index), the
  installed trainyard-worker joins it and trains the ddp-mlp-demo template
  with the installed examples to SUCCEEDED, and the installed CLI lists the
  templates
- dpkg --purge removes the files, the worker's state and the users (the
  ranks' trainyard-job only when the package made it: one that was there
  before, e.g. made by `make run` or the integration harness, stays)

Needs root (dpkg). Refuses to run when trainyard packages that this test did
not install are on the machine, instead of replacing them.
"""
import glob
import os
import pwd
import grp
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import harness  # noqa: E402
from harness import Client, wait_for  # noqa: E402

SRC = os.path.abspath(harness.SRC)
PKGS = ("trainyard-cli", "trainyard-worker", "trainyard-server", "trainyard-examples")
MARK = "/var/lib/trainyard-package-test"  # this test installed what is there


def run(*cmd, check=True, timeout=900, **kw):
    p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError("%s exited %d:\n%s\n%s" % (" ".join(cmd), p.returncode,
                                                        p.stdout[-3000:], p.stderr[-3000:]))
    return p


def installed(pkg):
    p = run("dpkg-query", "-W", "-f=${Status}", pkg, check=False)
    return "install ok installed" in p.stdout


def purge_all():
    present = [p for p in PKGS if run("dpkg-query", "-W", p, check=False).returncode == 0]
    if present:
        run("dpkg", "--purge", *present)


class PackagesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            # Visible, and a failure under make test unless the packages
            # label is allowed to skip (tests/README.md, "Skipped tests").
            raise unittest.SkipTest("the package test installs with dpkg -i: run it as root")
        if any(installed(p) for p in PKGS) and not os.path.exists(MARK):
            raise AssertionError("trainyard packages are installed on this machine and this "
                                 "test did not install them; it will not replace them")
        purge_all()  # what an interrupted earlier run left
        # The ranks' account may exist already (made by `make run`, the
        # integration harness or the site); then the package keeps it.
        try:
            cls.job_account_before = pwd.getpwnam("trainyard-job").pw_gecos
        except KeyError:
            cls.job_account_before = None
        cls.build = os.path.join(harness.BUILD, "package-build")
        cls.out = tempfile.mkdtemp(prefix="ty-debs-")
        os.chmod(cls.out, 0o755)
        env = dict(os.environ, CC=os.environ.get("CC", "clang"))
        run("cmake", "-S", SRC, "-B", cls.build, "-DCMAKE_BUILD_TYPE=Release",
            "-DBUILD_TESTING=OFF", env=env)
        run("cmake", "--build", cls.build, "-j%d" % os.cpu_count(), "--target",
            "trainyard-server", "trainyard-worker", "trainyard", "trainyard-nccl-probe")
        p = run(os.path.join(SRC, "packaging", "build-debs.sh"), cls.out,
                env=dict(env, TRAINYARD_PACKAGE_BUILD_DIR=cls.build))
        cls.debs = sorted(glob.glob(os.path.join(cls.out, "*.deb")))
        assert len(cls.debs) == 4, (cls.debs, p.stdout, p.stderr)
        os.makedirs(MARK, exist_ok=True)
        run("dpkg", "-i", *cls.debs)
        cls.db = harness.Database()
        cls.procs = []

    @classmethod
    def tearDownClass(cls):
        try:
            for p in cls.procs:
                if p.poll() is None:
                    p.terminate()
                    try:
                        p.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        p.kill()
            cls.db.close()
        finally:
            purge_all()
            shutil.rmtree(MARK, ignore_errors=True)
            shutil.rmtree(cls.out, ignore_errors=True)

    def deb(self, name):
        return next(d for d in self.debs if os.path.basename(d).startswith(name + "_"))

    def test_contents_and_metadata(self):
        files = run("dpkg-deb", "-c", self.deb("trainyard-server")).stdout
        for path in ("./usr/bin/trainyard-server", "./usr/share/trainyard/web/index.html",
                     "./usr/share/trainyard/templates/ddp-mlp-demo.json",
                     "./lib/systemd/system/trainyard-server.service",
                     "./etc/trainyard/server.conf", "./usr/share/doc/trainyard-server/operations.md"):
            self.assertIn(path, files)
        self.assertIn("root/root", files)  # not the builder's uid
        worker = run("dpkg-deb", "-c", self.deb("trainyard-worker")).stdout
        self.assertIn("./usr/bin/trainyard-worker", worker)
        self.assertIn("./lib/systemd/system/trainyard-worker.service", worker)
        examples = run("dpkg-deb", "-c", self.deb("trainyard-examples")).stdout
        self.assertIn("./usr/share/trainyard/examples/ddp_mlp.py", examples)
        self.assertNotIn("__pycache__", examples)
        dep = run("dpkg-deb", "-f", self.deb("trainyard-server"), "Depends").stdout
        self.assertIn("libmicrohttpd12", dep)
        self.assertIn("trainyard-examples (=", dep)
        self.assertEqual(os.stat("/etc/default/trainyard-server").st_mode & 0o777, 0o600)
        conf = run("dpkg-query", "-W", "-f=${Conffiles}", "trainyard-server").stdout
        self.assertIn("/etc/trainyard/server.conf", conf)

    def test_users_and_groups(self):
        srv = pwd.getpwnam("trainyard")
        self.assertLess(srv.pw_uid, 1000)  # a system user
        self.assertEqual(srv.pw_shell, "/usr/sbin/nologin")
        wrk = pwd.getpwnam("trainyard-worker")
        for g in ("video", "render"):
            try:
                members = grp.getgrnam(g).gr_mem
            except KeyError:
                continue
            self.assertIn("trainyard-worker", members)
        # The ranks' account: a system user without login, never the worker.
        job = pwd.getpwnam("trainyard-job")
        self.assertLess(job.pw_uid, 1000)
        self.assertNotEqual(job.pw_uid, wrk.pw_uid)
        self.assertEqual(job.pw_shell, "/usr/sbin/nologin")
        self.assertFalse(os.path.isdir(job.pw_dir), job.pw_dir)
        st = os.stat("/var/lib/trainyard-worker")
        self.assertEqual(st.st_uid, wrk.pw_uid)
        self.assertEqual(st.st_mode & 0o777, 0o700)  # holds the node credential

    def test_units_verify(self):
        for unit in ("trainyard-server.service", "trainyard-worker.service"):
            p = run("systemd-analyze", "verify", "/lib/systemd/system/" + unit, check=False)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stderr.strip(), "", p.stderr)
        # The worker holds exactly the capabilities that switching the
        # ranks to the job account takes, none that writes as anyone.
        with open("/lib/systemd/system/trainyard-worker.service") as f:
            unit = f.read()
        caps = "CAP_SETUID CAP_SETGID CAP_KILL CAP_CHOWN CAP_DAC_READ_SEARCH"
        self.assertIn("\nCapabilityBoundingSet=%s\n" % caps, unit)
        self.assertIn("\nAmbientCapabilities=%s\n" % caps, unit)
        self.assertIn("\nNoNewPrivileges=yes\n", unit)
        self.assertNotIn("CAP_DAC_OVERRIDE", unit)
        p = run("systemd-analyze", "security", "--offline=true",
                "/lib/systemd/system/trainyard-server.service", check=False)
        last = (p.stdout.strip().splitlines() or [""])[-1]
        print("trainyard-server.service: " + last, file=sys.stderr)
        self.assertRegex(last, r"Overall exposure level .*: \d+\.\d+ (OK|SAFE|MEDIUM)", p.stdout)

    def test_installed_binaries_run(self):
        port = harness.free_port()
        data = tempfile.mkdtemp(prefix="ty-pkg-server-")
        root = tempfile.mkdtemp(prefix="ty-pkg-root-")
        for d in (data, root):
            os.chmod(d, 0o755)
        args = ["--config", "/etc/trainyard/server.conf", "--database-url", self.db.url,
                "--listen", "127.0.0.1:%d" % port, "--data-dir", data, "--storage-root", root]
        env = dict(os.environ, TRAINYARD_ADMIN_PASSWORD=harness.ADMIN_PASSWORD)
        run("/usr/bin/trainyard-server", *args, "--create-admin", "admin", env=env)
        log = open(os.path.join(data, "server.log"), "ab")
        srv = subprocess.Popen(["/usr/bin/trainyard-server"] + args, stdout=log, stderr=log)
        self.procs.append(srv)
        url = "http://127.0.0.1:%d" % port

        def up():
            try:
                return Client(url).get("/healthz")[0] == 200
            except OSError:
                return False
        wait_for(up, timeout=60, what="the installed server")
        admin = Client(url)
        st, body = admin.login("admin", harness.ADMIN_PASSWORD)
        self.assertEqual(st, 200, body)
        st, tpl, _ = admin.get("/api/v1/templates")
        self.assertEqual(st, 200, tpl)
        self.assertEqual(len(tpl["templates"]), len(os.listdir("/usr/share/trainyard/templates")))
        st, page, hdrs = admin.get("/")
        self.assertEqual(st, 200)
        self.assertIn("text/html", hdrs.get("content-type", ""))
        # The front-end code from npm, shipped in the package: ECharts and
        # the API reference page.
        st, _, hdrs = admin.get("/vendor/echarts/echarts.min.js")
        self.assertEqual(st, 200)
        self.assertIn("javascript", hdrs.get("content-type", ""))
        st, _, hdrs = admin.get("/api/v1/docs/swagger-ui-bundle.js")
        self.assertEqual(st, 200)
        self.assertFalse(os.path.exists("/usr/share/trainyard/web/vendor/package.json"))
        # The API reference page from the installed files, and its document.
        for path, kind in (("/api/v1/docs", "text/html"),
                           ("/api/v1/docs/swagger-ui-bundle.js", "text/javascript"),
                           ("/api/v1/openapi.json", "application/json")):
            st, _, hdrs = admin.get(path)
            self.assertEqual(st, 200, path)
            self.assertIn(kind, hdrs.get("content-type", ""), path)

        st, team, _ = admin.post("/api/v1/teams", {"name": "pkg", "gpu_quota": 1})
        self.assertEqual(st, 201, team)
        st, tok, _ = admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        self.assertEqual(st, 201, tok)
        work = tempfile.mkdtemp(prefix="ty-pkg-worker-")
        wlog = open(os.path.join(work, "worker.log"), "ab")
        # the token in a mode 0600 file, never on the command line
        token_file = os.path.join(work, "join-token")
        with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(tok["token"] + "\n")
        wrk = subprocess.Popen(["/usr/bin/trainyard-worker", "--server", url, "--join-token-file",
                                token_file, "--name", "pkg-node", "--fake-gpus", "1",
                                "--work-dir", work, "--addr", "127.0.0.1", "--allowed-root", root,
                                "--python", "/usr/bin/python3", "--heartbeat-ms", "500"],
                               stdout=wlog, stderr=wlog)
        self.procs.append(wrk)
        wait_for(lambda: any(n["state"] == "ready" for n in admin.get("/api/v1/nodes")[1]["nodes"]),
                 timeout=60, what="the installed worker")
        st, job, _ = admin.post("/api/v1/jobs", {"template": "ddp-mlp-demo", "team": "pkg",
                                                 "params": {"steps": 20},
                                                 "resources": {"gpus": 1}})
        self.assertEqual(st, 201, job)

        def ended():
            j = admin.get("/api/v1/jobs/" + job["id"])[1]
            return j if j["state"] in ("SUCCEEDED", "FAILED", "CANCELLED") else None
        done = wait_for(ended, timeout=300, what="the template job")
        self.assertEqual(done["state"], "SUCCEEDED", done)
        self.assertIn("/usr/share/trainyard/examples/", " ".join(done["spec"]["command"]))

        st, tk, _ = admin.post("/api/v1/tokens", {"name": "pkg-cli"})
        self.assertEqual(st, 201, tk)
        cli = run("/usr/bin/trainyard", "templates", "--json", "--server", url,
                  env=dict(os.environ, TRAINYARD_TOKEN=tk["token"]))
        self.assertIn("ddp-mlp-demo", cli.stdout)
        self.assertIn("0.", run("/usr/bin/trainyard", "version").stdout)
        for p in (wrk, srv):
            p.terminate()
            p.wait(timeout=60)
        log.close()
        wlog.close()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)

    def test_zz_purge_removes_everything(self):
        purge_all()
        for p in PKGS:
            self.assertFalse(installed(p), p)
        for path in ("/usr/bin/trainyard-server", "/usr/bin/trainyard-worker", "/usr/bin/trainyard",
                     "/usr/share/trainyard", "/lib/systemd/system/trainyard-server.service",
                     "/etc/trainyard/server.conf", "/var/lib/trainyard-worker"):
            self.assertFalse(os.path.exists(path), path)
        for user in ("trainyard", "trainyard-worker"):
            with self.assertRaises(KeyError):
                pwd.getpwnam(user)
        # The ranks' account goes only when the package made it; one that
        # was there before stays, with what it was.
        if self.job_account_before is None:
            with self.assertRaises(KeyError):
                pwd.getpwnam("trainyard-job")
        else:
            self.assertEqual(pwd.getpwnam("trainyard-job").pw_gecos, self.job_account_before)


if __name__ == "__main__":
    harness.main()
