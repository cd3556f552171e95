"""Shared helpers for bench/launch, bench/train and bench/recovery: a private
trainyard (server + workers) on 127.0.0.1, built on tests/integration/harness.py."""
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../.."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import harness  # noqa: E402
from harness import Client, Database, Server, Worker, wait_for  # noqa: E402,F401

PY = "/usr/bin/python3"
EXAMPLES = os.path.join(ROOT, "examples")


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


class Trainyard:
    """Database + server + admin client + join token; workers on demand."""

    def __init__(self, server_args=(), shared=None):
        self.own_shared = shared is None
        if shared is None:  # workers refuse work dirs outside --allowed-root
            shared = tempfile.mkdtemp(prefix="ty-bench-shared-")
            os.chmod(shared, 0o755)
        self.db = Database()
        self.shared = shared
        args = list(server_args)
        if shared:
            args += ["--storage-root", shared]
        self.server = Server(self.db, args=args)
        self.admin = Client(self.server.url)
        st, body = self.admin.login("admin", harness.ADMIN_PASSWORD)
        assert st == 200, body
        st, self.team, _ = self.admin.post("/api/v1/teams", {"name": "bench"})
        assert st == 201, self.team
        st, tok, _ = self.admin.post("/api/v1/nodes/join-tokens", {"uses": 20})
        assert st == 201, tok
        self.join = tok["token"]
        self.workers = []

    def add_worker(self, name, gpus, extra=()):
        w = Worker(self.server.url, self.join, name, gpus=gpus, allowed_root=self.shared,
                   extra=extra)
        self.workers.append(w)
        return w

    def nodes(self):
        st, body, _ = self.admin.get("/api/v1/nodes")
        if st != 200:
            raise RuntimeError("GET /api/v1/nodes: %s %s\n%s" % (st, body, self.server.log_tail(15)))
        return body["nodes"]

    def wait_ready(self, n, timeout=60):
        wait_for(lambda: len([x for x in self.nodes() if x["state"] == "ready"]) >= n,
                 timeout=timeout, what="%d ready nodes" % n)

    def submit(self, name, command, gpus=1, gpus_per_node=None, **over):
        res = {"gpus": gpus}
        if gpus_per_node:
            res["gpus_per_node"] = gpus_per_node
        spec = {"name": name, "team": "bench", "command": command, "resources": res}
        spec.update(over)
        st, job, _ = self.admin.post("/api/v1/jobs", spec)
        assert st == 201, job
        return job["id"]

    def job(self, jid):
        return self.admin.get("/api/v1/jobs/" + jid)[1]

    def metrics(self, jid):
        return self.admin.get("/api/v1/jobs/%s/metrics?limit=20000" % jid)[1]["metrics"]

    def wait_state(self, jid, states, timeout=120, interval=0.05):
        return wait_for(lambda: (lambda j: j if j["state"] in states else None)(self.job(jid)),
                        timeout=timeout, interval=interval, what="job %s in %s" % (jid, states))

    def close(self):
        for w in self.workers:
            try:
                if w.proc and w.proc.poll() is None:
                    w.stop(check=False)
            except Exception as e:  # noqa: BLE001
                print("warning: worker stop: %s" % e, file=sys.stderr)
        try:
            self.server.stop(check=False)
        finally:
            self.db.close()
            if self.own_shared:
                shutil.rmtree(self.shared, ignore_errors=True)
