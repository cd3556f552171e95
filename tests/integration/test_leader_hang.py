"""A scheduling leader whose process hangs, its host alive, is replaced.

Two replicas on one database, jobs submitted and placed on fake-GPU
workers. The leader is stopped with SIGSTOP: its sessions stay open (the
kernel still answers), so its advisory lock would be held for ever; its
lease (server/store/db_lease.h) is no longer renewed, though. Checked:

- the follower finds the lease stale (leader_lease_ms, 10 s by default),
  ends the stopped leader's session and leads with a higher epoch; the wait
  is bounded generously (60 s), never timed. (A leader stopped inside a
  transaction has its session ended by PostgreSQL sooner, after a renewal
  period idle in it; the follower then finds the lock free. Which of the
  two happened is printed.);
- placement goes on under the new leader while the old one is stopped;
- SIGCONT: the old leader finds its session ended, logs that it lost the
  lease, and follows (it does not crash, and it does not lead again);
- no job was placed twice (a second attempt only after the first ended,
  one PLACED transition and one audit event per attempt), no GPU was ever
  booked twice (no two allocations of one GPU overlap in time), every
  acknowledged job succeeded, the audit chain verifies; the old leader
  exits 0 on SIGTERM.

EpochTakenTest: the fence alone, with the leader's session alive (the
epoch moved on under it): its writes are refused, it steps down and leads
again only with a new epoch.

The submits go to the follower only: a stopped server accepts connections
and never answers them. The time from SIGSTOP to the new leader's first
placement is printed (FIGURES leader-hang ...).
"""
import datetime
import os
import re
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import crash_util as cu  # noqa: E402
from harness import ADMIN_PASSWORD, Client, Database, Server, wait_for  # noqa: E402

JOBS = 160
STOP_AT = 40
WORKERS = 2
GPUS = 4
TAKEOVER_BOUND_S = 60
LEADS = "this replica leads scheduling"
ENDED = "ended the stale scheduling leader's session"
LOST = "lost the scheduling lease"


def log_times(server, text):
    """When server's log says text (epoch seconds), each time."""
    out = []
    for line in server.log_text().splitlines():
        if text in line:
            m = re.search(r"ts=(\S+)Z", line)
            out.append(datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").replace(
                tzinfo=datetime.timezone.utc).timestamp())
    return out


def lead_epochs(server):
    """The lease epochs server's log says it took, in order."""
    return [int(m.group(1)) for m in re.finditer(LEADS + r".* epoch=(\d+)", server.log_text())]


def lease_epoch(db):
    return int(db.sql("SELECT epoch FROM leader_lease WHERE name = 'scheduler'")[0][0])


def placed_count(db):
    return int(db.sql("SELECT count(*) FROM attempts")[0][0])


class LeaderHangTest(harness.unittest.TestCase):
    def test_sigstop_leader_under_load(self):
        db = Database()
        tmp = tempfile.mkdtemp(prefix="ty-hang-")
        os.chmod(tmp, 0o755)
        args = ("--sched-interval-ms", "200", "--storage-root", tmp)
        a = Server(db, args=args)
        b = Server(db, args=args, admin=False)
        workers = []
        stopped = None
        try:
            wait_for(lambda: any(log_times(s, LEADS) for s in (a, b)), timeout=20,
                     what="a leader")
            leader, follower = (a, b) if log_times(a, LEADS) else (b, a)
            admin = Client(follower.url)
            self.assertEqual(admin.login("admin", ADMIN_PASSWORD)[0], 200)
            self.assertEqual(admin.post("/api/v1/teams", {"name": "hang"})[0], 201)
            st, tok, _ = admin.post("/api/v1/tokens", {"name": "hang"})
            self.assertEqual(st, 201, tok)
            workers = cu.start_workers(self, admin, follower.url, WORKERS, GPUS, "lh", tmp)
            cu.wait_nodes_ready(db, WORKERS)

            # Each job runs a little while, so that GPUs are busy and freed
            # throughout: a double booking would have something to meet.
            specs = [{"name": "h%03d" % i, "team": "hang",
                      "command": ["/bin/sh", "-c", "sleep 0.2"],
                      "resources": {"gpus": 1 + i % 2}} for i in range(JOBS)]
            sub = cu.Submitter([follower.url], tok["token"], specs, nclients=4, deadline_s=600)
            sub.start()
            wait_for(lambda: sub.nacked() >= STOP_AT, timeout=60, interval=0.01,
                     what="%d acknowledged submits" % STOP_AT)
            wait_for(lambda: placed_count(db) > 0, timeout=30, what="the leader to place jobs")
            self.assertEqual(log_times(follower, LEADS), [])

            t_stop = time.time()
            os.kill(leader.proc.pid, signal.SIGSTOP)
            stopped = leader
            wait_for(lambda: log_times(follower, LEADS), timeout=TAKEOVER_BOUND_S,
                     interval=0.05, what="the follower to take over from the stopped leader")
            t_lead = log_times(follower, LEADS)[0]
            # The follower ended the stale leader's session, unless the
            # leader was stopped inside a transaction: PostgreSQL ends that
            # session itself after a renewal period idle in it
            # (sched_loop.c), and the lock is free before the lease expires.
            ended_by = "follower" if log_times(follower, ENDED) else "idle_tx_timeout"
            epoch0, epoch1 = lead_epochs(leader)[0], lead_epochs(follower)[0]
            self.assertGreater(epoch1, epoch0)
            self.assertEqual(lease_epoch(db), epoch1)

            # Placement goes on while the old leader is still stopped.
            n = placed_count(db)
            wait_for(lambda: placed_count(db) > n, timeout=60,
                     what="the new leader to place a job")
            first = db.sql("SELECT extract(epoch FROM min(created_at)) FROM attempts "
                           "WHERE created_at >= to_timestamp(%f)" % t_lead)[0][0]

            os.kill(leader.proc.pid, signal.SIGCONT)
            stopped = None
            wait_for(lambda: log_times(leader, LOST), timeout=60,
                     what="the old leader to say it lost the lease")
            self.assertIn("reason=session_ended", leader.log_text())
            self.assertIsNone(leader.proc.poll(), "the old leader exited")
            self.assertTrue(sub.join(600), "submitting clients did not finish")
            self.assertEqual(sub.errors, [])

            ids, _ = cu.check_acknowledged(self, db, sub, "h")
            cu.wait_all_succeeded(db, ids, timeout=600, what="every submitted job to succeed")
            # The old leader never led again.
            self.assertEqual(len(log_times(leader, LEADS)), 1)
            self.assertEqual(lease_epoch(db), epoch1)

            # A job has a second attempt only after its first ended (a
            # restart: a node declared lost while the old leader held rows),
            # and one PLACED event per attempt.
            twice = db.sql("SELECT x.job_id FROM attempts x JOIN attempts y ON x.job_id = y.job_id "
                           "AND x.id < y.id WHERE x.ended_at IS NULL OR x.ended_at > y.created_at")
            self.assertEqual(twice, [], "a job placed twice at once")
            placed = db.sql("SELECT a.job_id FROM (SELECT job_id, count(*) n FROM attempts "
                            "GROUP BY job_id) a LEFT JOIN (SELECT job_id, count(*) n FROM job_events "
                            "WHERE to_state = 'PLACED' GROUP BY job_id) e ON e.job_id = a.job_id "
                            "WHERE e.n IS DISTINCT FROM a.n")
            self.assertEqual(placed, [], "a job placed other than once per attempt")
            restarts = int(db.sql("SELECT count(*) FROM job_events WHERE to_state = 'RESTARTING'")
                           [0][0])
            # One audit event per change: each job's PLACED transitions,
            # audited, equal its attempts.
            audited = db.sql("SELECT count(*) FROM audit_events WHERE action = 'job.state' "
                             "AND details::jsonb->>'to' = 'PLACED'")[0][0]
            self.assertEqual(int(audited), placed_count(db))
            overlap = db.sql(
                "SELECT x.attempt_id, y.attempt_id, x.node_id, g FROM allocations x "
                "JOIN attempts ax ON ax.id = x.attempt_id, unnest(x.gpu_indices) g, "
                "allocations y JOIN attempts ay ON ay.id = y.attempt_id "
                "WHERE x.node_id = y.node_id AND x.attempt_id < y.attempt_id "
                "AND g = ANY(y.gpu_indices) AND tstzrange(ax.created_at, x.released_at) "
                "&& tstzrange(ay.created_at, y.released_at)")
            self.assertEqual(overlap, [], "a GPU booked twice at once")
            nev = cu.assert_chain_verifies(self, db, admin)

            cu.record("leader-hang", jobs=JOBS, acked=len(sub.acked),
                      takeover_s="%.3f" % (t_lead - t_stop),
                      first_placement_s="%.3f" % (float(first) - t_stop),
                      epoch_from=epoch0, epoch_to=epoch1, restarts=restarts, ended_by=ended_by,
                      audit_events=nev)
        finally:
            if stopped is not None and stopped.proc.poll() is None:
                os.kill(stopped.proc.pid, signal.SIGCONT)
            cu.stop_all(workers, (a, b), db, tmp)


class EpochTakenTest(harness.unittest.TestCase):
    """The fence with the leader's session alive: the lease's epoch moves on
    under a running leader (as it would if another had taken the lease while
    this session somehow survived). Its next write is refused in its own
    transaction, it steps down saying why, and leads again only by taking the
    lease anew, with a higher epoch. The lease is long (10 min), so no
    renewal finds the change first: a refused write does."""

    def test_epoch_taken_under_a_live_session(self):
        db = Database()
        tmp = tempfile.mkdtemp(prefix="ty-epoch-")
        os.chmod(tmp, 0o755)
        a = Server(db, args=("--sched-interval-ms", "200", "--storage-root", tmp,
                             "--leader-lease-ms", "600000"))
        workers = []
        try:
            wait_for(lambda: lead_epochs(a), timeout=20, what="a leader")
            e1 = lead_epochs(a)[0]
            admin = Client(a.url)
            self.assertEqual(admin.login("admin", ADMIN_PASSWORD)[0], 200)
            self.assertEqual(admin.post("/api/v1/teams", {"name": "ep"})[0], 201)
            workers = cu.start_workers(self, admin, a.url, 1, 2, "ep", tmp)
            cu.wait_nodes_ready(db, 1)

            db.sql("UPDATE leader_lease SET epoch = epoch + 1 WHERE name = 'scheduler'")
            wait_for(lambda: "reason=taken_by_another" in a.log_text(), timeout=60,
                     what="the leader to find its epoch taken")
            wait_for(lambda: len(lead_epochs(a)) == 2, timeout=60, what="it to lead again")
            self.assertEqual(lead_epochs(a)[1], e1 + 2)
            self.assertEqual(lease_epoch(db), e1 + 2)
            self.assertIn("rc=conflict", a.log_text())  # the refused write

            st, job, _ = admin.post("/api/v1/jobs", {"name": "after", "team": "ep",
                                                     "command": ["/bin/true"],
                                                     "resources": {"gpus": 1}})
            self.assertEqual(st, 201, job)
            cu.wait_all_succeeded(db, [job["id"]], timeout=60, what="the job to succeed")
            self.assertEqual(placed_count(db), 1)
            cu.assert_chain_verifies(self, db, admin)
        finally:
            cu.stop_all(workers, (a,), db, tmp)


if __name__ == "__main__":
    harness.main()
