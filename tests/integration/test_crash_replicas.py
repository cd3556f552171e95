"""Two replicas on one database; the scheduling leader is killed (SIGKILL)
while 200 jobs are submitted (through both replicas) and run.

- Leadership moves to the follower. The leader holds a session advisory lock
  (sched_loop.c); a killed leader's session ends with its socket, and the
  follower tries the lock at every pass (--sched-interval-ms) and at every
  wake-up, so the time is that interval plus PostgreSQL noticing the
  closed socket. It is a figure, not an assertion (a loaded machine
  stretches it; bench/crash/run.sh tables it): the test waits for the new
  leader with a bound that only catches a hang. The figure is measured
  from just before the kill to the follower's own log line (its
  timestamp), and printed; twice: under load
  (submits wake the follower) and, after the killed replica came back as
  a follower, with nothing submitted (only the periodic pass).
- Every acknowledged job completes; nothing unacknowledged exists unless
  its request was cut by the kill.
- The audit chain verifies.

The workers talk to the replica that survives: a worker takes one --server
URL (behind a load balancer in a real deployment).

ctest label: crash-replicas."""
import datetime
import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import crash_util as cu  # noqa: E402
from harness import ADMIN_PASSWORD, Client, Database, Server, wait_for  # noqa: E402

JOBS = 200
KILL_AT = 60
WORKERS = 2
GPUS = 8
# How long the follower may take to lead before the test calls it a hang.
# The failover times themselves are figures (bench/crash/run.sh), not
# assertions: a loaded machine stretches them.
HANG_S = 120
LEADS = "this replica leads scheduling"


def lead_times(server):
    """When server's log says it took the lead (epoch seconds), each time."""
    out = []
    for line in server.log_text().splitlines():
        if LEADS in line:
            m = re.search(r"ts=(\S+)Z", line)
            out.append(datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").replace(
                tzinfo=datetime.timezone.utc).timestamp())
    return out


def lead_time(server):
    """When server's log first says it leads, or None."""
    t = lead_times(server)
    return t[0] if t else None


class ReplicaCrashTest(harness.unittest.TestCase):
    def test_kill9_leader_under_load(self):
        db = Database()
        tmp = tempfile.mkdtemp(prefix="ty-crash-")
        os.chmod(tmp, 0o755)
        args = ("--sched-interval-ms", "200", "--storage-root", tmp)
        a = Server(db, args=args)
        b = Server(db, args=args, admin=False)
        workers = []
        try:
            wait_for(lambda: any(lead_time(s) for s in (a, b)), timeout=20, what="a leader")
            leader, follower = (a, b) if lead_time(a) else (b, a)
            admin = Client(follower.url)
            self.assertEqual(admin.login("admin", ADMIN_PASSWORD)[0], 200)
            self.assertEqual(admin.post("/api/v1/teams", {"name": "rep"})[0], 201)
            st, tok, _ = admin.post("/api/v1/tokens", {"name": "rep"})
            self.assertEqual(st, 201, tok)
            workers = cu.start_workers(self, admin, follower.url, WORKERS, GPUS, "cr", tmp)
            cu.wait_nodes_ready(db, WORKERS)

            specs = [{"name": "r%03d" % i, "team": "rep", "command": ["/bin/true"],
                      "resources": {"gpus": 1}, "max_restarts": 2} for i in range(JOBS)]
            sub = cu.Submitter([leader.url, follower.url], tok["token"], specs, nclients=8,
                               deadline_s=300)
            sub.start()
            wait_for(lambda: sub.nacked() >= KILL_AT, timeout=60, interval=0.01,
                     what="%d acknowledged submits" % KILL_AT)
            # Some jobs have been placed by the old leader.
            wait_for(lambda: int(db.sql("SELECT count(*) FROM jobs WHERE state <> 'QUEUED'")[0][0])
                     > 0, timeout=30, what="the leader to place jobs")
            self.assertIsNone(lead_time(follower))
            t_kill = time.time()
            leader.kill9()
            wait_for(lambda: lead_time(follower), timeout=HANG_S, interval=0.05,
                     what="the follower to lead")
            failover_s = lead_time(follower) - t_kill
            self.assertTrue(sub.join(300), "submitting clients did not finish")
            self.assertEqual(sub.errors, [])

            ids, extra = cu.check_acknowledged(self, db, sub, "r")
            cu.wait_all_succeeded(db, ids, timeout=300,
                                  what="every submitted job to succeed")
            booked = db.sql("SELECT node_id, g, count(*) FROM allocations, unnest(gpu_indices) g "
                            "WHERE released_at IS NULL GROUP BY node_id, g HAVING count(*) > 1")
            self.assertEqual(booked, [], "a GPU booked twice")
            events = cu.assert_chain_verifies(self, db, admin)

            # The killed replica comes back as a follower; now the new
            # leader is killed with nothing submitted, so no wake-up helps:
            # the follower finds the lock free at its next periodic pass.
            leader.restart()
            self.assertEqual(len(lead_times(leader)), 1, "the restarted replica took the lead")
            t_kill = time.time()
            follower.kill9()
            wait_for(lambda: len(lead_times(leader)) == 2, timeout=HANG_S,
                     interval=0.05, what="the restarted replica to lead")
            idle_failover_s = lead_times(leader)[1] - t_kill
            cu.record("crash-replicas", jobs=JOBS, acked=len(sub.acked), cut=len(sub.cut),
                      cut_that_exist=len(extra), failover_s="%.3f" % failover_s,
                      idle_failover_s="%.3f" % idle_failover_s, audit_events=events)
        finally:
            for w in workers:
                if w.proc.poll() is None:
                    w.stop()
            for s in (a, b):
                if s.proc.poll() is None:
                    s.stop()
            db.close()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    harness.main()
