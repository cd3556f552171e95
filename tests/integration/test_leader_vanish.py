"""A scheduling leader whose host vanishes is replaced in seconds, not hours.

Two replicas on one database; the leader holds the advisory lock on one
session. That session vanishes: an nftables rule drops every packet
between its two ends (its client port and PostgreSQL's port), both ways, so
neither end sees a FIN or an RST (what a powered-off machine or a pulled
cable does to it). With Linux's defaults PostgreSQL would keep the session,
and with it the lock, for about two hours. The server's sessions probe both
ways (server/store/db.c: idle 5 s, a probe every 2 s, 3 lost), so:

- a new session takes the lock within the test's bound of 60 s (about 11 s
  expected; the figure is printed): the other replica's, or the old
  leader's own new one (only one session is cut here; the rest of its host
  still reaches PostgreSQL, where a real vanished host would not);
- the old leader notices its lock's session is gone and says so;
- scheduling goes on: a job submitted after the cut is placed, and no GPU
  is booked twice.

The rule names the session's exact pair of ports and is removed as soon as
the lock has moved, so that no other test's connection can fall into it.

Needs root and nft (scripts/deps.sh test installs nftables); elsewhere it
is skipped with the reason.
"""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ADMIN_PASSWORD, Client, Database, Server, wait_for  # noqa: E402

LEADS = "this replica leads scheduling"
LOST = "lost the scheduling lease"
LEADER_KEY = 7243002  # server/loops/sched_loop.c SCHED_LEADER_KEY


def nft_path():
    for d in ("/usr/sbin", "/sbin", "/usr/bin", "/bin"):
        p = os.path.join(d, "nft")
        if os.access(p, os.X_OK):
            return p
    return shutil.which("nft")


def skip_reason():
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "dropping a session's packets needs root"
    nft = nft_path()
    if nft is None:
        return "nft (nftables) is not installed"
    table = "ty_probe_%d" % os.getpid()
    out = subprocess.run([nft, "add table inet %s" % table], capture_output=True, text=True)
    subprocess.run([nft, "delete table inet %s" % table], capture_output=True)
    if out.returncode != 0:
        return "nft cannot make a table here: " + out.stderr.strip()
    return None


class LeaderVanishTest(harness.unittest.TestCase):
    def lock_holder(self, db):
        """(pid, client_port) of the session that holds the leader's lock in
        this test's database (tests running beside it have leaders of their
        own), or None."""
        rows = db.sql("SELECT a.pid, a.client_port FROM pg_locks l JOIN pg_stat_activity a "
                      "ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND "
                      "l.classid = 0 AND l.objid = %d AND l.database = (SELECT oid FROM "
                      "pg_database WHERE datname = current_database())" % LEADER_KEY)
        return (int(rows[0][0]), int(rows[0][1])) if rows else None

    def test_vanished_leader_host(self):
        reason = skip_reason()
        if reason:
            self.skipTest(reason)
        nft = nft_path()
        table = "ty_vanish_%d" % os.getpid()
        db = Database()
        args = ("--sched-interval-ms", "200", "--node-timeout-s", "3600")
        a = Server(db, args=args)
        b = None
        cut = False
        try:
            # a leads first (alone), then b starts as the follower
            wait_for(lambda: LEADS in a.log_text(), timeout=30, what="a to lead")
            b = Server(db, args=args, admin=False)
            old = wait_for(lambda: self.lock_holder(db), timeout=10, what="the lock's session")
            self.assertNotEqual(old[1], -1, "the test database must be reached over TCP")
            admin = Client(b.url)
            self.assertEqual(admin.login("admin", ADMIN_PASSWORD)[0], 200)
            self.assertEqual(admin.post("/api/v1/teams", {"name": "vanish"})[0], 201)
            db.sql("INSERT INTO nodes (name, addr, state, credential_hash) VALUES "
                   "('v1', '127.0.0.1', 'ready', 'xv1')")
            db.sql("INSERT INTO gpus (node_id, idx, uuid, model, memory_mb) SELECT id, g, "
                   "'V' || g, 'FAKE', 1 FROM nodes, generate_series(0, 1) g WHERE name = 'v1'")

            # The lock's session vanishes: its packets go nowhere, both ways.
            port, pg_port = old[1], int(db.sql("SELECT inet_server_port()")[0][0])
            rules = ("add table inet {t}; add chain inet {t} in {{ type filter hook input "
                     "priority 0; }}; add rule inet {t} in tcp sport {p} tcp dport {s} drop; "
                     "add rule inet {t} in tcp sport {s} tcp dport {p} drop").format(
                         t=table, p=port, s=pg_port)
            out = subprocess.run([nft, rules], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            cut = True
            t0 = time.time()

            def moved():
                h = self.lock_holder(db)
                return h if h is not None and h[0] != old[0] else None
            try:
                new = wait_for(moved, timeout=60, interval=0.1,
                               what="a new session to take the lock after the old one vanished")
            except AssertionError as e:
                raise AssertionError("%s\nlock holder now %r (cut %r)\nsessions %r\n"
                                     "a: %s\nb: %s" % (
                                         e, self.lock_holder(db), old, db.sql(
                                             "SELECT pid, client_port, state, backend_start, "
                                             "left(query, 60) FROM pg_stat_activity WHERE "
                                             "application_name = 'trainyard-server'"),
                                         a.log_tail(15), b.log_tail(15)))
            took = time.time() - t0
            subprocess.run([nft, "delete table inet %s" % table], capture_output=True)
            cut = False
            self.assertNotEqual(new[0], old[0], "the lock moved to another session")
            wait_for(lambda: LEADS in b.log_text() or a.log_text().count(LEADS) >= 2,
                     timeout=30, what="a replica to say it leads on the new session")
            print("FIGURES leader_vanish takeover_s=%.1f" % took, file=sys.stderr, flush=True)

            # The new leader schedules; nothing is booked twice.
            st, job, _ = admin.post("/api/v1/jobs", {"name": "after", "team": "vanish",
                                                     "command": ["/bin/true"],
                                                     "resources": {"gpus": 1}})
            self.assertEqual(st, 201, job)
            wait_for(lambda: db.sql("SELECT state FROM jobs WHERE id = %s" % job["id"])[0][0]
                     == "PLACED", timeout=30, what="the new leader to place a job")
            wait_for(lambda: LOST in a.log_text(), timeout=60,
                     what="the old leader to notice its lock's session is gone")
            booked = db.sql("SELECT node_id, g, count(*) FROM allocations, unnest(gpu_indices) g "
                            "WHERE released_at IS NULL GROUP BY node_id, g HAVING count(*) > 1")
            self.assertEqual(booked, [], "a GPU booked twice")
        finally:
            if cut:
                subprocess.run([nft, "delete table inet %s" % table], capture_output=True)
            for s in (b, a):
                if s is not None:
                    s.stop()
            db.close()


if __name__ == "__main__":
    harness.main()
