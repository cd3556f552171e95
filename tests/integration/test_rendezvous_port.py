"""The rank-0 worker confirms the rendezvous port: when another program holds
it, the attempt is refused at once, the job is re-placed without using up a
restart, and it runs once the port is free."""
import os
import shutil
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest, Worker, wait_for  # noqa: E402


class RendezvousPortTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.port = harness.free_port()
        cls.shared = tempfile.mkdtemp(prefix="ty-port-")
        os.chmod(cls.shared, 0o755)
        cls.server_args = ("--storage-root", cls.shared, "--sched-interval-ms", "200",
                           "--rendezvous-port-min", str(cls.port),
                           "--rendezvous-port-max", str(cls.port))
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.shared, ignore_errors=True)

    def test_busy_port_is_refused_and_not_counted(self):
        blocker = socket.socket()
        blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        blocker.bind(("0.0.0.0", self.port))
        blocker.listen(1)
        self.admin.post("/api/v1/teams", {"name": "p"})
        st, tok, _ = self.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        w = Worker(self.server.url, tok["token"], "port-node", gpus=1, allowed_root=self.shared)
        try:
            st, job, _ = self.admin.post("/api/v1/jobs", {
                "name": "p", "team": "p", "resources": {"gpus": 1}, "max_restarts": 0,
                "command": ["/usr/bin/python3", os.path.join(os.path.abspath(harness.SRC),
                                                             "examples", "sleep_rank.py"),
                            "--seconds", "0.2"]})
            self.assertEqual(st, 201, job)

            def refused():
                ev = self.admin.get("/api/v1/jobs/%s/events" % job["id"])[1]["events"]
                return [e for e in ev if "rendezvous port %d is in use" % self.port in e["reason"]]
            try:
                wait_for(refused, timeout=30, what="a refusal for the busy port")
            except AssertionError:
                print(w.log_tail(40))
                raise
            blocker.close()
            done = wait_for(lambda: (lambda j: j if j["state"] in ("SUCCEEDED", "FAILED") else None)(
                self.admin.get("/api/v1/jobs/" + job["id"])[1]), timeout=60, what="the job to end")
            # max_restarts is 0: only a refusal that does not count lets it succeed.
            self.assertEqual(done["state"], "SUCCEEDED", done)
            self.assertEqual(done["restarts"], 0)
            self.assertGreaterEqual(done["attempt"], 2)
        finally:
            blocker.close()
            w.stop()


if __name__ == "__main__":
    harness.main()
