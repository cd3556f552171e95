"""A database session's settings survive its reconnect: a real server and
PostgreSQL whose database's time zone is not UTC.

The server's sessions are terminated (as a database restart or failover
ends them); the pool, the scheduler's and the audit keeper's connections
and the NOTIFY listener reconnect (a pooled connection with PQreset). After
that:

- every timestamp the API writes is still UTC ("Z"), not the database's
  +08 (the sessions run with TimeZone=UTC);
- PostgreSQL's end of every reconnected session still probes a vanished
  peer within seconds (tcp_keepalives_idle 5 s), not after the kernel's two
  hours: read from the backend's socket in /proc/net/tcp, whose keepalive
  timer counts down from the idle time it was given.
"""
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ADMIN_PASSWORD, Client, Database, Server, wait_for  # noqa: E402

TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
HZ = os.sysconf("SC_CLK_TCK")


def timestamps(v):
    """Every ISO timestamp string anywhere in a JSON value."""
    if isinstance(v, dict):
        return [t for x in v.values() for t in timestamps(x)]
    if isinstance(v, list):
        return [t for x in v for t in timestamps(x)]
    return [v] if isinstance(v, str) and TS.match(v) else []


def keepalive_timer_s(local_port, remote_port):
    """The keepalive timer of the loopback TCP socket local_port ->
    remote_port, in seconds; None when it has none running now."""
    with open("/proc/net/tcp", encoding="ascii") as f:
        next(f)
        for line in f:
            fields = line.split()
            loc, rem, timer = fields[1], fields[2], fields[5]
            if (int(loc.split(":")[1], 16), int(rem.split(":")[1], 16)) != (local_port,
                                                                             remote_port):
                continue
            kind, when = timer.split(":")
            return int(when, 16) / HZ if kind == "02" else None
    return None


class DbReconnectSettingsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db = Database()
        try:
            # This test's own database only: the cluster is shared.
            cls.db.sql("ALTER DATABASE %s SET timezone = 'Asia/Shanghai'" % cls.db.name)
            cls.pg_port = int(re.search(r":(\d+)$", harness.PG_URL.rstrip("/")).group(1))
            cls.server = Server(cls.db)
        except BaseException:
            cls.db.close()
            raise
        cls.admin = Client(cls.server.url)
        st, body = cls.admin.login("admin", ADMIN_PASSWORD)
        assert st == 200, body
        st, team, _ = cls.admin.post("/api/v1/teams", {"name": "tz", "gpu_quota": 1})
        assert st == 201, team
        st, job, _ = cls.admin.post("/api/v1/jobs", {"name": "tz", "team": "tz",
                                                     "command": ["/bin/true"],
                                                     "resources": {"gpus": 1}})
        assert st == 201, job
        cls.job = job["id"]

    @classmethod
    def tearDownClass(cls):
        try:
            cls.server.stop()
        finally:
            cls.db.close()

    def server_sessions(self, since=None):
        """(pid, client_port, application_name) of the server's sessions,
        those started after since (a database timestamp) when given."""
        rows = self.db.sql(
            "SELECT pid, client_port, application_name FROM pg_stat_activity WHERE "
            "datname = current_database() AND application_name LIKE 'trainyard-server%%' AND "
            "client_port IS NOT NULL%s" % (" AND backend_start > '%s'" % since if since else ""))
        return [(int(p), int(c), a) for p, c, a in rows]

    def get_answered(self, path):
        """GET path; a pooled connection the kill left dead answers one
        request 503 and is reset (server/README.md, Invariants), and which
        pooled connection a request gets is the pool's choice, so a 503 is
        asked again, a bounded number of times (the pool's size and more)."""
        for _ in range(40):
            st, body, _ = self.admin.get(path)
            if st != 503:
                break
        return st, body

    def assert_utc(self):
        """Many requests, each on whichever pooled connection is free: every
        timestamp in UTC."""
        seen = 0
        for _ in range(20):
            for path in ("/api/v1/jobs/" + self.job, "/api/v1/jobs", "/api/v1/jobs/%s/events"
                         % self.job):
                st, body = self.get_answered(path)
                self.assertEqual(st, 200, body)
                for t in timestamps(body):
                    self.assertTrue(t.endswith("Z"), "%s: %s" % (path, t))
                    seen += 1
        self.assertGreater(seen, 0)

    def assert_keepalives(self, sessions):
        self.assertTrue(sessions)
        for pid, port, app in sessions:
            # An idle socket's timer runs; one busy a moment shows another.
            def probe():
                t = keepalive_timer_s(self.pg_port, port)
                return t if t is not None and t > 0 else None
            t = wait_for(probe, timeout=15, what="a keepalive timer on %s's socket" % app)
            self.assertLessEqual(t, 5.5, "%s (pid %d): PostgreSQL's keepalive idle %.0f s, "
                                 "not 5" % (app, pid, t))

    def test_settings_survive_a_reconnect(self):
        self.assert_utc()
        self.assert_keepalives(self.server_sessions())
        since = self.db.sql("SELECT now()")[0][0]
        killed = self.db.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                             "datname = current_database() AND "
                             "application_name LIKE 'trainyard-server%'")
        self.assertTrue(killed)

        def answers():
            # Each dead pooled connection fails one request, then is reset.
            return self.admin.get("/api/v1/jobs/" + self.job)[0] == 200 or None
        wait_for(answers, timeout=60, what="the server to reconnect")
        # The pool and the listener reconnect as they are next used; wait for
        # both rather than for time to pass.
        apps = lambda: {a for _, _, a in self.server_sessions(since)}  # noqa: E731
        wait_for(lambda: {"trainyard-server", "trainyard-server-notify"} <= apps(),
                 timeout=60, what="the pool and the listener to reconnect")
        self.assert_utc()
        self.assert_keepalives(self.server_sessions(since))


if __name__ == "__main__":
    harness.main()
