"""The lone server killed (SIGKILL) while 1,000 submits are in flight, then
started again on the same port, database and data dir.

- Every job that got a 201 exists and runs to completion.
- No job exists that did not get a 201, unless its request was cut by the
  kill (sent, and the connection died with no answer); those are counted.
- The audit chain verifies (the server's verify endpoint, and recomputed).
- Ranks that were running at the kill survive it: the workers keep the same
  processes, report again to the new server, and those attempts end
  SUCCEEDED as the first and only attempt (no restart).
- A handout the server committed but never answered (where a kill can
  land) is handed out again: the worker asks with resend=1 after a poll
  that got no answer (a proxy cuts that answer, so the case is certain).

ctest label: crash-server."""
import json
import os
import shutil
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import crash_util as cu  # noqa: E402
from harness import ADMIN_PASSWORD, Client, Database, Server, wait_for  # noqa: E402

SUBMITS = 1000
KILL_AT = 300  # acknowledged submits before the kill
WORKERS = 4
GPUS = 8
HOLDS = 4


class LoneServerCrashTest(harness.unittest.TestCase):
    def test_kill9_under_submits(self):
        db = Database()
        tmp = tempfile.mkdtemp(prefix="ty-crash-")
        os.chmod(tmp, 0o755)
        srv = Server(db, args=("--sched-interval-ms", "200", "--storage-root", tmp))
        workers = []
        try:
            admin = Client(srv.url)
            self.assertEqual(admin.login("admin", ADMIN_PASSWORD)[0], 200)
            self.assertEqual(admin.post("/api/v1/teams", {"name": "crash"})[0], 201)
            st, tok, _ = admin.post("/api/v1/tokens", {"name": "crash"})
            self.assertEqual(st, 201, tok)
            workers = cu.start_workers(self, admin, srv.url, WORKERS, GPUS, "cs", tmp)
            cu.wait_nodes_ready(db, WORKERS)

            # Ranks that will be running at the kill.
            marker = "ty-hold-" + uuid.uuid4().hex[:8]
            release = os.path.join(tmp, "release")
            holds = []
            for i in range(HOLDS):
                st, job, _ = admin.post("/api/v1/jobs", {
                    "name": "hold%d" % i, "team": "crash", "max_restarts": 0,
                    "command": cu.hold_command(release, marker), "resources": {"gpus": 1}})
                self.assertEqual(st, 201, job)
                holds.append(job["id"])
            try:
                wait_for(lambda: cu.job_states(db, holds).get("RUNNING") == HOLDS, timeout=60,
                         what="the hold jobs to run")
            except AssertionError:
                print(db.sql("SELECT id, state, reason FROM jobs"))
                raise
            ranks = wait_for(lambda: (lambda s: s if len(s) == HOLDS else None)(
                harness.processes_with_cmdline(marker)), timeout=30, what="the hold ranks")
            attempts = db.sql("SELECT job_id, id FROM attempts WHERE job_id IN (%s) ORDER BY job_id"
                              % ",".join(holds))

            specs = [{"name": "c%04d" % i, "team": "crash", "command": ["/bin/true"],
                      "resources": {"gpus": 1}, "max_restarts": 2} for i in range(SUBMITS)]
            sub = cu.Submitter([srv.url], tok["token"], specs, nclients=16, deadline_s=300)
            sub.start()
            t_submit = time.time()
            wait_for(lambda: sub.nacked() >= KILL_AT, timeout=180, interval=0.01,
                     what="%d acknowledged submits" % KILL_AT)
            srv.kill9()
            t_kill = time.time()
            acked_at_kill = sub.nacked()
            srv.restart()
            t_back = time.time()
            self.assertTrue(sub.join(300), "submitting clients did not finish")
            self.assertEqual(sub.errors, [])
            self.assertGreater(len(sub.cut), 0, "the kill hit no submit in flight")

            # The workers report again to the new server; the held ranks
            # are the same processes and their attempts the same rows.
            since = db.sql("SELECT to_timestamp(%f)" % t_back)[0][0]
            wait_for(lambda: db.sql("SELECT count(*) FROM nodes WHERE state = 'ready' AND "
                                    "last_seen_at > '%s'" % since)[0][0] == str(WORKERS),
                     timeout=30, what="every worker to heartbeat the new server")
            self.assertEqual(cu.job_states(db, holds), {"RUNNING": HOLDS})
            self.assertEqual(harness.processes_with_cmdline(marker), ranks)

            # Nothing unacknowledged exists, except what the kill cut.
            ids, extra = cu.check_acknowledged(self, db, sub, "c")
            cu.wait_all_succeeded(db, ids, timeout=300, what="every submitted job to succeed")
            t_done = time.time()
            with open(release, "w"):
                pass
            cu.wait_all_succeeded(db, holds, timeout=60, what="the hold jobs to succeed")
            self.assertEqual(db.sql("SELECT job_id, id FROM attempts WHERE job_id IN (%s) "
                                    "ORDER BY job_id" % ",".join(holds)), attempts)
            self.assertEqual(db.sql("SELECT sum(restarts) FROM jobs WHERE id IN (%s)"
                                    % ",".join(holds)), [["0"]])
            events = cu.assert_chain_verifies(self, db, admin)
            cu.record("crash-server", submits=SUBMITS, acked=len(sub.acked),
                      acked_at_kill=acked_at_kill, cut=len(sub.cut),
                      cut_that_exist=len(extra), refused=sub.refused,
                      restart_s="%.2f" % (t_back - t_kill), audit_events=events,
                      submit_to_kill_s="%.1f" % (t_kill - t_submit),
                      restart_to_all_done_s="%.1f" % (t_done - t_back))
        finally:
            for w in workers:
                if w.proc.poll() is None:
                    w.stop()
            if srv.proc.poll() is None:
                srv.stop()
            db.close()
            shutil.rmtree(tmp, ignore_errors=True)

    def test_handout_answer_lost(self):
        """The moment a kill can hit, made certain: the server commits a
        handout (allocations marked delivered) and the worker never gets
        the answer. The worker asks again with resend=1 and runs the job,
        as its first and only attempt."""
        db = Database()
        tmp = tempfile.mkdtemp(prefix="ty-crash-")
        os.chmod(tmp, 0o755)
        srv = Server(db, args=("--sched-interval-ms", "200", "--storage-root", tmp))
        proxy = cu.DropProxy(srv.port)
        workers = []
        try:
            admin = Client(srv.url)
            self.assertEqual(admin.login("admin", ADMIN_PASSWORD)[0], 200)
            self.assertEqual(admin.post("/api/v1/teams", {"name": "lost"})[0], 201)
            workers = cu.start_workers(self, admin, proxy.url, 1, 1, "cl", tmp)
            cu.wait_nodes_ready(db, 1)
            st, job, _ = admin.post("/api/v1/jobs", {"name": "lost", "team": "lost",
                                                     "command": ["/bin/true"], "max_restarts": 0,
                                                     "resources": {"gpus": 1}})
            self.assertEqual(st, 201, job)
            self.assertTrue(proxy.dropped.wait(30), "no handout went through the proxy")
            self.assertEqual(db.sql("SELECT delivered FROM allocations WHERE job_id = %s"
                                    % job["id"]), [["t"]])
            cu.wait_all_succeeded(db, [job["id"]], timeout=30,
                                  what="the job whose handout was lost to succeed")
            self.assertEqual(db.sql("SELECT count(*), max(restarts) FROM attempts t JOIN jobs j "
                                    "ON j.id = t.job_id WHERE j.id = %s" % job["id"]), [["1", "0"]])
            self.assertIn('msg="assignment poll failed" status=0', workers[0].log_text())
            # resend takes 0 or 1 only.
            with open(os.path.join(workers[0].work_dir, "node.json")) as f:
                node = Client(srv.url, token=json.load(f)["credential"])
            st, body, _ = node.get("/api/v1/agent/assignments?wait=0&resend=2")
            self.assertEqual((st, body["error"]["field"]), (400, "resend"), body)
            self.assertEqual(node.get("/api/v1/agent/assignments?wait=0&resend=0")[0], 200)
        finally:
            for w in workers:
                if w.proc.poll() is None:
                    w.stop()
            proxy.close()
            srv.stop()
            db.close()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    harness.main()
