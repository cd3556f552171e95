"""trainyard-worker --isolate-network (worker/netns.h): the ranks of an
attempt run in a network namespace that reaches only loopback and the site's
allowed networks.

- single node: the namespace has only "lo"; ranks meet at MASTER_ADDR
  127.0.0.1 (a plain socket rendezvous and, where PyTorch is installed, DDP
  over gloo with 2 ranks); a TCP listener on the host's non-loopback address
  and one on the host's loopback cannot be reached; the namespace is gone
  after the job
- multi-node (two workers on this host, only where nft or iptables is
  installed): ranks reach an allowed network (the host's address as a /32)
  but not another, and rank 1 reaches rank 0 through the rendezvous port

Needs root and a kernel that lets this process create network namespaces:
skipped otherwise (e.g. in an unprivileged container)."""
import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import unittest
import uuid

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest, Worker, wait_for  # noqa: E402

EXAMPLES = os.path.join(os.path.abspath(harness.SRC), "examples")
TOOL_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")

# The script every rank runs: a socket rendezvous over MASTER_ADDR:MASTER_PORT,
# then one connect per "host:port" argument; everything is reported on stdout.
PROBE = r'''
import errno, os, socket, sys, time
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
master, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
print("IFACES " + ",".join(sorted(n for _, n in socket.if_nameindex())), flush=True)
print("MASTER %s GLOO %s" % (master, os.environ.get("GLOO_SOCKET_IFNAME")), flush=True)
if rank == 0:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(8)
    srv.settimeout(90)
    for _ in range(world - 1):
        c, _ = srv.accept()
        print("RDV got " + c.recv(64).decode(), flush=True)
        c.close()
else:
    deadline = time.time() + 90
    while True:
        try:
            c = socket.create_connection((master, port), timeout=3)
            c.sendall(b"hello from %d" % rank)
            c.close()
            print("RDV sent", flush=True)
            break
        except OSError as e:
            if time.time() > deadline:
                print("RDV failed %s" % e, flush=True)
                sys.exit(4)
            time.sleep(0.2)
for target in sys.argv[1:]:
    host, p = target.rsplit(":", 1)
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect((host, int(p)))
        res = "ok"
    except socket.timeout:
        res = "timeout"
    except OSError as e:
        res = errno.errorcode.get(e.errno, str(e))
    s.close()
    print("CONNECT %s %s" % (target, res), flush=True)
'''


def find_tool(name):
    for d in TOOL_DIRS:
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    return None


FORWARD_SYSCTL = "/proc/sys/net/ipv4/ip_forward"


def firewall_unusable():
    """Why a NAT table cannot be made here (no nf_tables in a container's
    kernel, say), or None. The worker refuses such attempts; the test then
    has nothing to show."""
    nft = find_tool("nft")
    if nft is None:
        return None  # the worker uses iptables
    table = "ty_probe_%d" % os.getpid()
    out = subprocess.run([nft, "add table ip %s; add chain ip %s post { type nat hook "
                          "postrouting priority srcnat; }" % (table, table)],
                         capture_output=True, text=True)
    subprocess.run([nft, "delete table ip %s" % table], capture_output=True)
    return None if out.returncode == 0 else (out.stderr.strip() or "nft failed")


def skip_reason():
    """Why this machine cannot run the test, or None."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "--isolate-network needs root; run as root to test it"
    if find_tool("ip") is None:
        return "the ip program (iproute2) is not installed"
    unshare = shutil.which("unshare")
    if unshare is None:
        return "the unshare program (util-linux) is not installed"
    out = subprocess.run([unshare, "--net", "true"], capture_output=True, text=True)
    if out.returncode != 0:
        return "cannot create a network namespace here (EPERM in an unprivileged container?): " + \
            out.stderr.strip()
    return None


def host_address():
    """A global IPv4 address of this host, or None."""
    out = subprocess.run([find_tool("ip"), "-4", "-o", "addr", "show", "scope", "global"],
                         capture_output=True, text=True)
    for line in out.stdout.splitlines():
        parts = line.split()
        if "inet" in parts:
            return parts[parts.index("inet") + 1].split("/")[0]
    return None


def torch_python():
    """A Python that imports torch (the test's own first), or None."""
    for py in (sys.executable, "/usr/bin/python3"):
        if py and subprocess.run([py, "-c", "import torch"], capture_output=True).returncode == 0:
            return py
    return None


def owner_prefix(work_dir):
    """The 4 hex digits a worker puts in its names (worker/netns.c)."""
    h = 2166136261
    for b in work_dir.encode():
        h = ((h ^ b) * 16777619) & 0xffffffff
    return "%04x" % (h & 0xffff)


def our_namespaces(workers=None):
    """trainyard's namespaces on this host; only those of workers when given."""
    prefixes = tuple("ty-%s-" % owner_prefix(w.work_dir) for w in workers) if workers else ("ty-",)
    try:
        return sorted(n for n in os.listdir("/run/netns") if n.startswith(prefixes))
    except OSError:
        return []


class Listener:
    """A TCP listener that counts the connections it accepts."""

    def __init__(self, addr):
        self.sock = socket.socket()
        self.sock.bind((addr, 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.addr = addr
        self.accepted = 0
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            c.close()

    def target(self):
        return "%s:%d" % (self.addr, self.port)

    def close(self):
        self.sock.close()


REASON = skip_reason()


@unittest.skipIf(REASON is not None, REASON or "")
class IsolateNetworkTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        # The worker turns IPv4 forwarding on for multi-node isolation; give
        # the host back as it was.
        with open(FORWARD_SYSCTL) as f:
            cls.forwarding = f.read().strip()
        cls.shared = tempfile.mkdtemp(prefix="ty-isolate-")
        os.chmod(cls.shared, 0o755)
        cls.server_args = ("--storage-root", cls.shared, "--sched-interval-ms", "200")
        super().setUpClass()
        cls.probe = os.path.join(cls.shared, "probe.py")
        with open(cls.probe, "w") as f:
            f.write(PROBE)
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "iso"})
        st, tok, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 10})
        cls.join = tok["token"]
        cls.host = host_address()
        cls.workers = []

    @classmethod
    def tearDownClass(cls):
        try:
            for w in cls.workers:
                w.stop()
        finally:
            super().tearDownClass()
            shutil.rmtree(cls.shared, ignore_errors=True)
            with open(FORWARD_SYSCTL, "w") as f:
                f.write(cls.forwarding + "\n")

    # helpers -------------------------------------------------------------
    def start_workers(self, n, extra=()):
        for w in self.workers:
            w.stop()
        group = uuid.uuid4().hex[:6]
        type(self).workers = [Worker(self.server.url, self.join, "iso-%s-%d" % (group, i), gpus=2,
                                     allowed_root=self.shared,
                                     extra=["--isolate-network"] + list(extra))
                              for i in range(n)]
        names = {w.name for w in self.workers}
        wait_for(lambda: names <= {x["name"] for x in self.admin.get("/api/v1/nodes")[1]["nodes"]
                                   if x["state"] == "ready"}, what="ready nodes")
        # Nodes of an earlier group must not take this group's jobs.
        for node in self.admin.get("/api/v1/nodes")[1]["nodes"]:
            if node["name"] not in names and node["state"] == "ready":
                self.admin.post("/api/v1/nodes/%s/drain" % node["id"])

    def run_job(self, command, gpus=2, per_node=2, timeout=180):
        spec = {"name": "iso", "team": "iso", "command": command,
                "resources": {"gpus": gpus, "gpus_per_node": per_node}, "max_restarts": 0}
        st, job, _ = self.admin.post("/api/v1/jobs", spec)
        self.assertEqual(st, 201, job)

        def done():
            j = self.admin.get("/api/v1/jobs/" + job["id"])[1]
            return j if j["state"] in ("SUCCEEDED", "FAILED", "CANCELLED") else None
        try:
            final = wait_for(done, timeout=timeout, what="job %s to end" % job["id"])
        except AssertionError:
            raise AssertionError("job did not end; workers:\n" +
                                 "\n".join(w.log_tail(30) for w in self.workers))
        logs = {}
        for rank in range(gpus):
            st, body, _ = self.admin.get("/api/v1/jobs/%s/logs?rank=%d&limit=500" % (job["id"], rank))
            logs[rank] = "".join(l["text"] for l in body["logs"])
        return final, logs

    def assert_succeeded(self, job, logs):
        self.assertEqual(job["state"], "SUCCEEDED", "%s\nlogs: %s\nworkers:\n%s" % (
            job["reason"], json.dumps(logs)[-4000:],
            "\n".join(w.log_tail(30) for w in self.workers)))

    # tests ---------------------------------------------------------------
    def test_1_single_node_loopback_only(self):
        if self.host is None:
            self.skipTest("this host has no non-loopback IPv4 address to probe")
        outside = Listener(self.host)
        loop = Listener("127.0.0.1")
        try:
            # Both listeners work from the host itself.
            socket.create_connection((self.host, outside.port), timeout=3).close()
            socket.create_connection(("127.0.0.1", loop.port), timeout=3).close()
            wait_for(lambda: outside.accepted == 1 and loop.accepted == 1, timeout=10,
                     what="host connections")
            self.start_workers(1)
            job, logs = self.run_job([sys.executable, self.probe, outside.target(),
                                      loop.target()])
            self.assert_succeeded(job, logs)
            for rank in (0, 1):
                self.assertIn("IFACES lo\n", logs[rank])
                self.assertIn("MASTER 127.0.0.1 GLOO lo\n", logs[rank])
                self.assertIn("CONNECT %s ENETUNREACH" % outside.target(), logs[rank])
                # 127.0.0.1 is the namespace's own loopback, where nobody listens.
                self.assertIn("CONNECT %s ECONNREFUSED" % loop.target(), logs[rank])
            self.assertIn("RDV got hello from 1", logs[0])
            self.assertEqual((outside.accepted, loop.accepted), (1, 1))
        finally:
            outside.close()
            loop.close()
        wait_for(lambda: our_namespaces(self.workers) == [], timeout=20, what="the namespace to go")
        self.assertIn("namespace ready", self.workers[0].log_text())

    def test_2_single_node_ddp_over_gloo(self):
        py = torch_python()
        if py is None:
            self.skipTest("no Python with torch for examples/ddp_mlp.py")
        if not self.workers or len(self.workers) != 1:
            self.start_workers(1)
        job, logs = self.run_job([py, os.path.join(EXAMPLES, "ddp_mlp.py"), "--steps", "20",
                                  "--checkpoint-every", "10", "--hidden", "32"], timeout=300)
        self.assert_succeeded(job, logs)
        st, m, _ = self.admin.get("/api/v1/jobs/%s/metrics" % job["id"])
        self.assertEqual([p["step"] for p in m["metrics"]], list(range(1, 21)))
        wait_for(lambda: our_namespaces(self.workers) == [], timeout=20, what="the namespace to go")

    def test_3_multi_node_allowed_networks(self):
        if self.host is None:
            self.skipTest("this host has no non-loopback IPv4 address")
        if find_tool("nft") is None and find_tool("iptables") is None:
            self.skipTest("multi-node isolation needs nft or iptables; neither is installed")
        why = firewall_unusable()
        if why:
            self.skipTest("this kernel or container refuses firewall tables: " + why)
        self.db.sql("UPDATE sites SET networks = '{%s/32}' WHERE id = 1" % self.host)
        allowed = Listener(self.host)
        try:
            self.start_workers(2, extra=["--addr", self.host])
            job, logs = self.run_job([sys.executable, self.probe, allowed.target(),
                                      "10.255.255.1:80"], gpus=2, per_node=1)
            self.assert_succeeded(job, logs)
            self.assertIn("RDV got hello from 1", logs[0])
            for rank in (0, 1):
                self.assertRegex(logs[rank], r"IFACES lo,tyn\w+\n")
                # the namespace's veth, not the host interface the server derived
                self.assertRegex(logs[rank], r"MASTER \S+ GLOO tyn\w+\n")
                self.assertIn("CONNECT %s ok" % allowed.target(), logs[rank])
                self.assertIn("CONNECT 10.255.255.1:80 ENETUNREACH", logs[rank])
            self.assertEqual(allowed.accepted, 2)
        finally:
            allowed.close()
            self.db.sql("UPDATE sites SET networks = '{}' WHERE id = 1")
        wait_for(lambda: our_namespaces(self.workers) == [], timeout=20, what="the namespaces to go")
        links = subprocess.run([find_tool("ip"), "-o", "link"], capture_output=True,
                               text=True).stdout
        self.assertNotIn("tyh", links)

    def test_4_worker_start_removes_leftovers(self):
        for w in self.workers:
            w.stop()
        type(self).workers = []
        work_dir = tempfile.mkdtemp(prefix="ty-worker-")
        ours, foreign = "ty-%s-999999" % owner_prefix(work_dir), "ty-%s-999999" % (
            "0000" if owner_prefix(work_dir) != "0000" else "0001")
        # What a crashed worker with this work dir left, and another worker's.
        for ns in (ours, foreign):
            subprocess.run([find_tool("ip"), "netns", "add", ns], check=True)
        try:
            type(self).workers = [Worker(self.server.url, self.join, "iso-leftover", gpus=2,
                                         work_dir=work_dir, allowed_root=self.shared,
                                         extra=["--isolate-network"])]
            wait_for(lambda: ours not in our_namespaces(), timeout=30,
                     what="the left-over namespace to go")
            self.assertIn(foreign, our_namespaces())
        finally:
            subprocess.run([find_tool("ip"), "netns", "del", foreign])


if __name__ == "__main__":
    harness.main()
