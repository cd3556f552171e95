"""Cancels racing the scheduler's placements of the same jobs.

The scheduler writes a whole pass in one transaction: every placed job's row
and the audit head. A cancel locks one job row and the audit head. Both take
job rows before the audit head (lock order, server/store/db.h): taken in
different orders the two would deadlock, and PostgreSQL's answer (40P01)
would reach the user as a 503.

The race: two nodes registered through the agent API take a batch of queued
jobs in one pass while threads cancel the same jobs, and an agent loop takes
the assignments, reports them started and reports the cancelled ones'
exits, in rounds bounded in count and time. No request may answer 5xx, no
deadlock may happen, every job must end CANCELLED with its GPUs back, every
job event must have its audit event, and the audit chain must verify.

The retry: a deadlock made by hand, every time, with the cancel as
PostgreSQL's victim; the cancel runs again and answers 202."""
import os
import random
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Client, ServerTest, wait_for  # noqa: E402

NODES = 2
GPUS = 64          # per node: a batch of 1-GPU jobs fits in one pass
JOBS = 48          # per round
ROUNDS = 8
TIME_BUDGET_S = 120  # rounds stop starting after this; the checks still run
CANCELLERS = 3


class LockRaceTest(ServerTest):
    server_args = ("--sched-interval-ms", "20", "--node-timeout-s", "3600",
                   "--http-threads", "12", "--db-pool-size", "24", "--access-log", "false")
    # PostgreSQL looks for a deadlock once, deadlock_timeout after a wait
    # begins. The hand-made deadlock needs the cancel's look to come after
    # the holder's request for the job row, which a loaded machine can delay
    # past the default 1 s; the rounds expect no deadlock at all, so a longer
    # look costs them nothing.
    server_env = {"PGOPTIONS": "-c deadlock_timeout=10s"}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        st, team, _ = cls.admin.post("/api/v1/teams", {"name": "race", "gpu_quota": NODES * GPUS})
        assert st == 201, team

    def setUp(self):
        self.failures = []  # (what, status, body): any 5xx or unexpected answer
        self.lock = threading.Lock()

    def record(self, what, st, body):
        with self.lock:
            self.failures.append((what, st, body))

    def join_nodes(self):
        st, tok, _ = self.admin.post("/api/v1/nodes/join-tokens", {"uses": NODES})
        self.assertEqual(st, 201, tok)
        nodes = []
        for i in range(NODES):
            name = "race-%d" % i
            st, j, _ = Client(self.server.url).post("/api/v1/agent/join", {
                "join_token": tok["token"], "name": name, "addr": "127.0.0.1"})
            self.assertEqual(st, 201, j)
            agent = Client(self.server.url, token=j["credential"])
            st, r, _ = agent.post("/api/v1/agent/register", {
                "hostname": name, "addr": "127.0.0.1", "cpus": 8, "memory_mb": 1024,
                "version": "test", "running": [],
                "gpus": [{"index": g, "uuid": "GPU-%s-%d" % (name, g), "model": "FAKE",
                          "memory_mb": 1024} for g in range(GPUS)]})
            self.assertEqual(st, 200, r)
            nodes.append((j["node_id"], agent))
        return nodes

    def agent_loop(self, agent, stop):
        """A worker's side of the protocol, without processes: take
        assignments, say they started, and report the cancelled ones ended."""
        while not stop.is_set():
            try:
                st, body, _ = agent.get("/api/v1/agent/assignments?wait=0")
                if st != 200:
                    self.record("assignments", st, body)
                    time.sleep(0.05)
                    continue
                for a in body["assignments"]:
                    path = "/api/v1/agent/attempts/%s/started" % a["attempt_id"]
                    st, b, _ = agent.post(path, {"node_rank": a["node_rank"], "pids": [1]})
                    if st != 200:
                        self.record("started", st, b)
                for aid in body["cancel"]:
                    path = "/api/v1/agent/attempts/%s/exit" % aid
                    st, b, _ = agent.post(path, {"node_rank": 0, "reason": "stopped",
                                                 "ranks": [{"rank": 0, "exit_code": -1,
                                                            "signal": 15}]})
                    if st != 200:
                        self.record("exit", st, b)
            except OSError as e:
                self.record("agent", 0, repr(e))
            time.sleep(0.01)

    def cancel_all(self, ids, order, barrier):
        barrier.wait()
        for job_id in order(ids):
            try:
                st, b, _ = self.admin.post("/api/v1/jobs/%s/cancel" % job_id)
            except OSError as e:
                self.record("cancel", 0, repr(e))
                continue
            # 409: another canceller (or the job's end) came first.
            if st not in (202, 409) or (st == 409 and b["error"]["code"] != "conflict"):
                self.record("cancel", st, b)

    def test_cancels_race_placements_without_5xx(self):
        nodes = self.join_nodes()
        log_start = len(self.server.log_text())
        stop = threading.Event()
        agents = [threading.Thread(target=self.agent_loop, args=(a, stop)) for _, a in nodes]
        for t in agents:
            t.start()
        all_ids = []
        start = time.time()
        rounds = 0
        try:
            while rounds < ROUNDS and time.time() - start < TIME_BUDGET_S:
                rounds += 1
                # The jobs queue up while the nodes drain, so that the next
                # pass places the whole batch in one transaction.
                for node_id, _ in nodes:
                    st, b, _ = self.admin.post("/api/v1/nodes/%s/drain" % node_id)
                    self.assertEqual(st, 200, b)
                ids = []
                for k in range(JOBS):
                    st, job, _ = self.admin.post("/api/v1/jobs", self.job_spec(
                        "race", name="r%d-%d" % (rounds, k)))
                    self.assertEqual(st, 201, job)
                    ids.append(job["id"])
                all_ids += ids
                # Highest ids first meet the pass, which goes in id order.
                orders = [lambda x: sorted(x, key=int, reverse=True),
                          lambda x: random.sample(x, len(x)),
                          lambda x: sorted(x, key=int)]
                barrier = threading.Barrier(CANCELLERS + 1)
                cancellers = [threading.Thread(target=self.cancel_all,
                                               args=(ids, orders[i % len(orders)], barrier))
                              for i in range(CANCELLERS)]
                for t in cancellers:
                    t.start()
                for node_id, _ in nodes:
                    st, b, _ = self.admin.post("/api/v1/nodes/%s/undrain" % node_id)
                    self.assertEqual(st, 200, b)
                barrier.wait()
                for t in cancellers:
                    t.join()
                q = ",".join(ids)
                try:
                    wait_for(lambda: self.db.sql(
                        "SELECT count(*) FROM jobs WHERE id IN (%s) AND state <> 'CANCELLED'"
                        % q) == [["0"]], timeout=60, what="round %d's jobs to end" % rounds)
                except AssertionError as e:
                    left = self.db.sql("SELECT id, state, cancel_requested FROM jobs WHERE id IN "
                                       "(%s) AND state <> 'CANCELLED'" % q)
                    warn = [x for x in self.server.log_text().splitlines()
                            if "level=warn" in x or "level=error" in x]
                    raise AssertionError("%s: %r; answers: %r; server: %s" % (
                        e, left, self.failures, "\n".join(warn[-30:])))
        finally:
            stop.set()
            for t in agents:
                t.join()
        # What happened, for the record: a retry here is handled, but means
        # two transactions met in an order "Lock order" (server/store/db.h) rules out.
        log = self.server.log_text()[log_start:]
        print("rounds=%d jobs=%d placed=%s deadlocks=%d retried=%d" % (
            rounds, len(all_ids),
            self.db.sql("SELECT count(*) FROM job_events WHERE to_state = 'PLACED'")[0][0],
            log.count("sqlstate=40P01"), log.count("transaction retried")), file=sys.stderr)
        self.assertEqual(self.failures, [])
        # The retry is the safety net; these paths take their locks in the
        # one order, so PostgreSQL never had to break a cycle among them.
        self.assertEqual([x for x in log.splitlines() if "sqlstate=40P01" in x], [])
        # Every job ended cancelled, with nothing left booked or running.
        mine = ",".join(all_ids)
        self.assertEqual(self.db.sql("SELECT state, count(*) FROM jobs WHERE id IN (%s) GROUP BY "
                                     "state" % mine), [["CANCELLED", str(len(all_ids))]])
        self.assertEqual(self.db.sql(
            "SELECT count(*) FROM allocations WHERE released_at IS NULL"), [["0"]])
        # (An attempt whose ranks stopped for a cancel keeps its last state:
        # lifecycle_settle_cancel ends the job, not the attempt.)
        self.assertEqual(self.db.sql(
            "SELECT count(*) FROM attempts t JOIN jobs j ON j.id = t.job_id WHERE t.state <> "
            "'ended' AND NOT j.cancel_requested"), [["0"]])
        # Each job's events form one path of the state machine, ending once.
        paths = self.db.sql(
            "SELECT job_id, string_agg(coalesce(from_state, '') || '>' || to_state, ' ' "
            "ORDER BY id) FROM job_events GROUP BY job_id")
        for job_id, path in paths:
            steps = [s.split(">") for s in path.split(" ")]
            self.assertEqual(steps[0], ["", "QUEUED"], (job_id, path))
            self.assertEqual(steps[-1][1], "CANCELLED", (job_id, path))
            self.assertEqual([s[1] for s in steps].count("CANCELLED"), 1, (job_id, path))
            for a, b in zip(steps, steps[1:]):
                self.assertEqual(a[1], b[0], (job_id, path))
        # Every transition was audited once, in its own transaction.
        transitions = self.db.sql(
            "SELECT count(*) FROM job_events WHERE from_state IS NOT NULL")[0][0]
        audited = self.db.sql(
            "SELECT count(*) FROM audit_events WHERE action = 'job.state'")[0][0]
        self.assertEqual(transitions, audited)
        cancelled = {r[0] for r in self.db.sql(
            "SELECT DISTINCT target FROM audit_events WHERE action = 'job.cancel'")}
        self.assertTrue({"job:" + i for i in all_ids} <= cancelled)
        st, v, _ = self.admin.get("/api/v1/audit/verify")
        self.assertEqual(st, 200, v)
        self.assertTrue(v["valid"], v)
        rows = harness.db_audit_rows(self.db)
        self.assertEqual(harness.verify_chain_rows(rows), 0)

    def server_waits_for_a_lock(self):
        return self.db.sql(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
            "application_name = 'trainyard-server' AND wait_event_type = 'Lock'") != [["0"]]

    def holder_state(self):
        rows = self.db.sql("SELECT state, query FROM pg_stat_activity WHERE application_name = "
                           "'ty-lock-holder' AND datname = current_database()")
        return rows[0] if rows else None

    def test_a_cancel_picked_as_deadlock_victim_is_run_again(self):
        """Made by hand, so that it happens every time: a session holds the
        audit head, the cancel locks its job and waits for the head, then the
        session asks for the job's row. PostgreSQL aborts the cancel (its
        deadlock_timeout, 10 s, runs out long before the holder's 60 s); the
        cancel runs again once the session lets go, and answers 202."""
        st, job, _ = self.admin.post("/api/v1/jobs", self.job_spec(
            "race", name="victim", resources={"gpus": 1024}))  # never placed
        self.assertEqual(st, 201, job)
        env = dict(os.environ, PGAPPNAME="ty-lock-holder")
        holder = subprocess.Popen(["psql", self.db.url, "-qAt", "-v", "ON_ERROR_STOP=1"],
                                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, env=env)
        answer = []
        try:
            holder.stdin.write("SET deadlock_timeout = '60s';\nBEGIN;\n"
                               "SELECT seq FROM audit_head FOR UPDATE;\n")
            holder.stdin.flush()
            wait_for(lambda: (self.holder_state() or ["", ""])[0] == "idle in transaction"
                     and "audit_head" in self.holder_state()[1], timeout=30,
                     what="the session to hold the audit head")
            t = threading.Thread(target=lambda: answer.append(
                self.admin.post("/api/v1/jobs/%s/cancel" % job["id"])))
            t.start()
            wait_for(self.server_waits_for_a_lock, timeout=30,
                     what="the cancel to wait for the audit head")
            holder.stdin.write("SELECT id FROM jobs WHERE id = %d FOR UPDATE;\n" % int(job["id"]))
            holder.stdin.flush()
            # The session gets the row once PostgreSQL has aborted the cancel.
            wait_for(lambda: (self.holder_state() or ["", ""])[0] == "idle in transaction"
                     and "FROM jobs" in self.holder_state()[1], timeout=30,
                     what="the deadlock to be broken")
            holder.stdin.write("ROLLBACK;\n")
            holder.stdin.close()
            t.join(timeout=60)
            self.assertEqual(holder.wait(timeout=30), 0, holder.stderr.read())
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait()
        self.assertEqual(len(answer), 1)
        st, body, hdrs = answer[0]
        self.assertEqual(st, 202, body)
        self.assertEqual(body["state"], "CANCELLED")
        log = [x for x in self.server.log_text().splitlines()
               if "req_id=%s " % hdrs["x-request-id"] in x]
        self.assertTrue(any("sqlstate=40P01" in x for x in log), log)
        self.assertTrue(any("transaction retried" in x for x in log), log)
        # The aborted run left nothing behind: one cancel audited, one end.
        self.assertEqual(self.db.sql(
            "SELECT action FROM audit_events WHERE target = 'job:%s' ORDER BY id" % job["id"]),
            [["job.submit"], ["job.cancel"], ["job.state"]])
        st, v, _ = self.admin.get("/api/v1/audit/verify")
        self.assertTrue(v["valid"], v)


if __name__ == "__main__":
    harness.main()
