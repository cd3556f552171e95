"""HTTPS end to end: a CA, and a server certificate for
localhost/127.0.0.1 that it signs, made here with the openssl command.

- the server serves HTTPS with --tls-cert/--tls-key: a client that trusts
  the CA signs in; one that does not (the system store) fails verification;
  plain HTTP to the TLS port gets no HTTP answer; TLS 1.1 is refused
- a worker with --ca-file joins over HTTPS and runs a job to SUCCEEDED; a
  worker without it (the system store) never joins, and says why
- the CLI verifies the server against TRAINYARD_CA_FILE, and fails without it
- a bad key or a certificate without its key stops the server at start,
  naming the option
- plain HTTP on an address other machines can reach draws a warning in the
  server's log (none on loopback); so does a worker and the CLI pointed at a
  plain http:// URL that is not loopback
"""
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Client, Server, ServerTest, Worker, wait_for  # noqa: E402

WARN = "serving plain HTTP on an address other machines can reach"


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, capture_output=True,
                   timeout=60)


def make_pki(d):
    """ca.pem, server.pem (localhost + 127.0.0.1, signed by the CA),
    server.key; and other-ca.pem, a CA that signed nothing here."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=trainyard test CA",
            cwd=d)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "other-ca.key", "-out", "other-ca.pem", "-days", "2",
            "-subj", "/CN=another CA", cwd=d)
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost", cwd=d)
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                "extendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext", cwd=d)
    os.chmod(os.path.join(d, "server.key"), 0o600)


def outside_address():
    """An address of this machine that is not loopback, or None."""
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True,
                             timeout=10).stdout
    except OSError:
        return None
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 4 and not parts[3].startswith("127."):
            return parts[3].split("/")[0]
    return None


PKI = tempfile.mkdtemp(prefix="ty-tls-")
os.chmod(PKI, 0o755)
make_pki(PKI)


ROOT = os.path.join(PKI, "root")
os.mkdir(ROOT)


class TlsTest(ServerTest):
    server_args = ("--tls-cert", os.path.join(PKI, "server.pem"),
                   "--tls-key", os.path.join(PKI, "server.key"), "--storage-root", ROOT)
    server_ca_file = os.path.join(PKI, "ca.pem")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "tls"})
        assert st == 201, cls.team
        cls.workers = []

    @classmethod
    def tearDownClass(cls):
        try:
            for w in cls.workers:
                w.stop(check=False)
        finally:
            super().tearDownClass()

    def join_token(self):
        st, tok, _ = self.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        self.assertEqual(st, 201, tok)
        return tok["token"]

    def test_verified_client_signs_in(self):
        self.assertTrue(self.server.url.startswith("https://"))
        st, body, _ = self.admin.get("/api/v1/me")
        self.assertEqual(st, 200, body)
        log = self.server.log_tail(400)
        self.assertIn("tls=on", log)
        self.assertNotIn(WARN, log)

    def test_untrusted_client_fails_verification(self):
        with self.assertRaises(ssl.SSLCertVerificationError):
            Client(self.server.url).get("/healthz")
        other = Client(self.server.url, ca_file=os.path.join(PKI, "other-ca.pem"))
        with self.assertRaises(ssl.SSLCertVerificationError):
            other.get("/healthz")

    def test_plain_http_to_tls_port_gets_no_http_answer(self):
        plain = Client("http://127.0.0.1:%d" % self.server.port)
        try:
            st, _, _ = plain.get("/healthz")
        except (OSError, harness.http.client.HTTPException):
            return
        self.assertNotEqual(st, 200)

    def handshake(self, version):
        """A handshake offering exactly version; the negotiated version,
        or the ssl.SSLError."""
        import warnings
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(self.server_ca_file)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            ctx.minimum_version = version
            ctx.maximum_version = version
        ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as raw:
            try:
                with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
                    return tls.version()
            except ssl.SSLError as e:
                return e

    def test_old_tls_refused(self):
        """TLS 1.2 and 1.3 are accepted; a TLS 1.1 hello is refused by the
        server (the client did send it: a hello it could not send fails
        with NO_PROTOCOLS_AVAILABLE before any byte goes out)."""
        self.assertEqual(self.handshake(ssl.TLSVersion.TLSv1_2), "TLSv1.2")
        self.assertEqual(self.handshake(ssl.TLSVersion.TLSv1_3), "TLSv1.3")
        old = self.handshake(ssl.TLSVersion.TLSv1_1)
        self.assertIsInstance(old, ssl.SSLError, old)
        self.assertNotIn("NO_PROTOCOLS_AVAILABLE", str(old).upper(), old)

    def test_worker_with_ca_file_runs_a_job(self):
        w = Worker(self.server.url, self.join_token(), "tls-node", gpus=2, allowed_root=ROOT,
                   extra=["--ca-file", self.server_ca_file])
        self.workers.append(w)
        wait_for(lambda: any(n["name"] == "tls-node" and n["state"] == "ready"
                             for n in self.admin.get("/api/v1/nodes")[1]["nodes"]),
                 timeout=60, what="tls-node ready")
        st, job, _ = self.admin.post("/api/v1/jobs", {
            "name": "over-tls", "team": "tls", "command": ["/bin/sh", "-c", "echo hello-tls"],
            "resources": {"gpus": 1}})
        self.assertEqual(st, 201, job)
        done = wait_for(lambda: (lambda j: j if j["state"] in ("SUCCEEDED", "FAILED") else None)(
            self.admin.get("/api/v1/jobs/" + job["id"])[1]), timeout=90, what="job to end")
        self.assertEqual(done["state"], "SUCCEEDED", done)
        self.assertNotIn("plain HTTP", w.log_tail(200))

    def test_worker_without_ca_file_never_joins(self):
        w = Worker(self.server.url, self.join_token(), "untrusting-node", gpus=1,
                   allowed_root=ROOT)
        self.workers.append(w)
        wait_for(lambda: "certificate" in w.log_tail(100).lower() or
                 "ssl" in w.log_tail(100).lower(), timeout=60, what="the worker's TLS error")
        names = [n["name"] for n in self.admin.get("/api/v1/nodes")[1]["nodes"]]
        self.assertNotIn("untrusting-node", names)

    def cli(self, env_extra, *args):
        st, tok, _ = self.admin.post("/api/v1/tokens", {"name": "cli-%d" % len(env_extra)})
        self.assertEqual(st, 201, tok)
        env = dict(os.environ, TRAINYARD_TOKEN=tok["token"], LANG="C")
        env.pop("TRAINYARD_CA_FILE", None)
        env.update(env_extra)
        return subprocess.run([harness.CLI_BIN] + list(args), capture_output=True, text=True,
                              env=env, timeout=60)

    def test_cli_verifies_against_ca_file(self):
        ok = self.cli({"TRAINYARD_CA_FILE": self.server_ca_file}, "templates", "--json",
                      "--server", self.server.url)
        self.assertEqual(ok.returncode, 0, ok.stderr)
        self.assertNotIn("warning", ok.stderr)
        bad = self.cli({}, "templates", "--json", "--server", self.server.url)
        self.assertNotEqual(bad.returncode, 0, bad.stdout)


class TlsStartTest(unittest.TestCase):
    """Refused configurations: the server exits at start, naming the option."""

    @classmethod
    def setUpClass(cls):
        cls.db = harness.Database()

    @classmethod
    def tearDownClass(cls):
        cls.db.close()

    def refused(self, *args):
        with self.assertRaises(RuntimeError) as ctx:
            s = Server(self.db, args=args, ca_file=os.path.join(PKI, "ca.pem"))
            s.stop()
        return str(ctx.exception)

    def test_cert_without_key(self):
        msg = self.refused("--tls-cert", os.path.join(PKI, "server.pem"))
        self.assertIn("tls_key", msg)

    def test_key_that_is_not_pem(self):
        bad = os.path.join(PKI, "bad.key")
        with open(bad, "w") as f:
            f.write("not a key\n")
        msg = self.refused("--tls-cert", os.path.join(PKI, "server.pem"), "--tls-key", bad)
        self.assertIn("tls_key", msg)

    def test_key_of_another_certificate(self):
        msg = self.refused("--tls-cert", os.path.join(PKI, "server.pem"),
                           "--tls-key", os.path.join(PKI, "other-ca.key"))
        self.assertIn("tls=on", msg)


class PlainHttpWarningTest(unittest.TestCase):
    """Plain HTTP off loopback is allowed but warned about, by all three."""

    @classmethod
    def setUpClass(cls):
        cls.db = harness.Database()

    @classmethod
    def tearDownClass(cls):
        cls.db.close()

    def test_loopback_has_no_warning(self):
        s = Server(self.db)
        try:
            self.assertNotIn(WARN, s.log_tail(200))
        finally:
            s.stop()

    def test_outside_address_warns_everywhere(self):
        addr = outside_address()
        if addr is None:
            self.skipTest("this machine has no address besides loopback")
        s = Server(self.db, listen_host="0.0.0.0")
        w = None
        try:
            self.assertIn(WARN, s.log_tail(200))
            url = "http://%s:%d" % (addr, s.port)
            admin = Client(s.url)
            st, body = admin.login("admin", harness.ADMIN_PASSWORD)
            self.assertEqual(st, 200, body)
            st, tok, _ = admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
            self.assertEqual(st, 201, tok)
            w = Worker(url, tok["token"], "plain-node", gpus=1)
            wait_for(lambda: "plain HTTP to a server on another machine" in w.log_tail(50),
                     timeout=30, what="the worker's warning")
            out = subprocess.run([harness.CLI_BIN, "templates", "--server", url],
                                 capture_output=True, text=True, timeout=60,
                                 env=dict(os.environ, LANG="C"))
            self.assertIn("plain HTTP to another machine", out.stderr)
        finally:
            if w is not None:
                w.stop(check=False)
            s.stop()


def tearDownModule():
    shutil.rmtree(PKI, ignore_errors=True)


if __name__ == "__main__":
    harness.main()
