"""PostgreSQL restarted under load, with the server left running.

The test starts a PostgreSQL cluster of its own (scripts/pg.sh, as
scripts/test.sh starts the shared one), so that stopping it cannot break
another test running at the same time, then stops it (fast shutdown) while
clients submit, and starts it again once every client has been answered
503 at least once.

- While the database is gone the server answers 503 with the one JSON
  error shape (no hang: within the client's timeout; how long the slowest
  answer took is a figure, bench/crash/run.sh), and keeps running (no crash): submits,
  reads and /readyz answer 503, /healthz 200.
- It reconnects without a restart of its own (the same process).
- Nothing acknowledged is lost: every job that got a 201 exists and runs to
  completion; nothing unacknowledged exists unless its request was cut.
- The audit chain verifies afterwards.

ctest label: crash-db."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import crash_util as cu  # noqa: E402
from harness import ADMIN_PASSWORD, Client, Server, psql, wait_for  # noqa: E402

JOBS = 300
STOP_AT = 80
CLIENTS = 8
WORKERS = 2
GPUS = 8
# The longest a request may take while the database is gone: the pool waits
# up to 5 s for a connection, and a reconnect is refused at once.
REFUSED = 'msg="heartbeat refused" status=503'
PG_SH = os.path.join(os.path.abspath(harness.SRC), "scripts", "pg.sh")


class Cluster:
    """A PostgreSQL cluster of the test's own on a free loopback port, with
    one database; a Database for harness.Server (url, sql, close)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ty-crash-pg-")
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        self.port = harness.free_port()
        self.start()
        base = "postgresql://postgres@127.0.0.1:%d" % self.port
        psql(base + "/postgres", "CREATE DATABASE trainyard")
        self.url = base + "/trainyard"

    def start(self):
        subprocess.run([PG_SH, "start", self.data, str(self.port), "trust"], check=True,
                       timeout=120)

    def stop(self):
        subprocess.run([PG_SH, "stop", self.data], check=True, timeout=120)

    def sql(self, q):
        return psql(self.url, q)

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class DatabaseRestartTest(harness.unittest.TestCase):
    def test_postgres_restart_under_submits(self):
        try:
            db = Cluster()
        except (OSError, subprocess.SubprocessError) as e:
            if harness.REQUIRE_PG:
                raise
            raise harness.unittest.SkipTest("cannot start a PostgreSQL cluster: %s" % e)
        tmp = tempfile.mkdtemp(prefix="ty-crash-")
        os.chmod(tmp, 0o755)
        srv = Server(db, args=("--sched-interval-ms", "200", "--storage-root", tmp))
        workers = []
        try:
            admin = Client(srv.url)
            self.assertEqual(admin.login("admin", ADMIN_PASSWORD)[0], 200)
            self.assertEqual(admin.post("/api/v1/teams", {"name": "pg"})[0], 201)
            st, tok, _ = admin.post("/api/v1/tokens", {"name": "pg"})
            self.assertEqual(st, 201, tok)
            workers = cu.start_workers(self, admin, srv.url, WORKERS, GPUS, "cd", tmp)
            cu.wait_nodes_ready(db, WORKERS)
            reader = Client(srv.url, token=tok["token"])
            pid = srv.proc.pid

            specs = [{"name": "p%03d" % i, "team": "pg", "command": ["/bin/true"],
                      "resources": {"gpus": 1}, "max_restarts": 2} for i in range(JOBS)]
            sub = cu.Submitter([srv.url], tok["token"], specs, nclients=CLIENTS, deadline_s=300)
            sub.start()
            wait_for(lambda: sub.nacked() >= STOP_AT, timeout=60, interval=0.01,
                     what="%d acknowledged submits" % STOP_AT)
            refused = [w.log_text().count(REFUSED) for w in workers]
            relistens = srv.log_text().count("listening for wake-ups from other replicas again")
            t_stop = time.time()
            db.stop()
            t_down = time.time()

            # Gone: every kind of request is answered promptly, 503 + JSON.
            slowest = [0.0]

            def timed(fn):
                t0 = time.time()
                r = fn()
                slowest[0] = max(slowest[0], time.time() - t0)
                return r
            self.assert_unavailable(timed(lambda: reader.get("/api/v1/jobs")))
            self.assert_unavailable(timed(lambda: reader.get("/readyz")))
            self.assertEqual(timed(lambda: reader.get("/healthz"))[0], 200)
            # Down long enough for every client to be answered 503 a few
            # times (the pool tries to reconnect at each checkout), and well
            # short of the node timeout (10 s), which would restart jobs.
            wait_for(lambda: len(sub.unavailable) >= 5 * CLIENTS, timeout=60, interval=0.05,
                     what="the submitting clients to be answered 503")
            # ... and for every worker's heartbeat to be refused (503): the
            # workers keep their ranks and try again.
            wait_for(lambda: all(w.log_text().count(REFUSED) > n
                                 for w, n in zip(workers, refused)), timeout=30, interval=0.05,
                     what="every worker's heartbeat to be refused")
            self.assertIsNone(srv.proc.poll(), "the server exited while the database was gone")
            db.start()
            t_up = time.time()

            # Back: the same process answers again.
            wait_for(lambda: reader.get("/readyz")[0] == 200, timeout=30, what="/readyz 200")
            t_ready = time.time()
            # The wake-up listener (a connection of its own) is back too.
            wait_for(lambda: srv.log_text().count("listening for wake-ups from other replicas "
                                                  "again") > relistens, timeout=30,
                     what="the NOTIFY listener to reconnect")
            self.assertTrue(sub.join(300), "submitting clients did not finish")
            self.assertEqual(sub.errors, [], self.logged(srv, sub.errors))
            self.assertEqual(srv.proc.pid, pid)
            self.assertIsNone(srv.proc.poll())
            for _, body, dt in sub.unavailable:
                slowest[0] = max(slowest[0], dt)
                self.assertIsInstance(body, dict, body)
                self.assertEqual(body["error"]["code"], "unavailable", body)
            # A request that hung while the database was gone would have hit
            # the client's 60 s timeout above (an error, not an answer); how
            # long the slowest 503 took is a figure (bench/crash/run.sh).
            t503 = [t for t, _, _ in sub.unavailable]

            ids, extra = cu.check_acknowledged(self, db, sub, "p")
            cu.wait_all_succeeded(db, ids, timeout=300,
                                  what="every submitted job to succeed")
            events = cu.assert_chain_verifies(self, db, admin)
            cu.record("crash-db", jobs=JOBS, acked=len(sub.acked), cut=len(sub.cut),
                      cut_that_exist=len(extra), answers_503=len(sub.unavailable),
                      pg_stop_s="%.2f" % (t_down - t_stop),
                      pg_down_s="%.2f" % (t_up - t_down),
                      first_503_after_stop_s="%.2f" % (min(t503) - t_stop),
                      last_503_after_start_s="%.2f" % (max(t503) - t_up),
                      ready_after_start_s="%.2f" % (t_ready - t_up),
                      slowest_503_s="%.2f" % slowest[0], audit_events=events)
        finally:
            for w in workers:
                if w.proc.poll() is None:
                    w.stop()
            if srv.proc.poll() is None:
                srv.stop()
            db.close()
            shutil.rmtree(tmp, ignore_errors=True)

    @staticmethod
    def logged(srv, errors):
        """The server's log lines about the failed requests."""
        ids = [e[2]["error"]["request_id"] for e in errors if isinstance(e[-1], dict)
               and "error" in e[-1]]
        return "\n".join(line for line in srv.log_text().splitlines()
                         if any(i in line for i in ids))

    def assert_unavailable(self, resp):
        st, body, hdrs = resp
        self.assertEqual(st, 503, body)
        self.assertTrue(hdrs.get("content-type", "").startswith("application/json"), hdrs)
        self.assertEqual(body["error"]["code"], "unavailable", body)
        self.assertTrue(body["error"]["request_id"].startswith("r-"), body)


if __name__ == "__main__":
    harness.main()
