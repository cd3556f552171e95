"""Quota preemption end to end on a real worker: a team under its quota takes
back GPUs another team borrowed. The borrower's ranks are stopped on the
node (no process left), its job goes back to the queue without using up a
restart, the owner's job runs, and the borrower runs again once GPUs free.

Under the server's default policy (trainyard-qspf: teams under quota
first, then shortest predicted first) and again under trainyard (fair
share, submit order inside a team): quota preemption must not depend on
the order."""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest, Worker, wait_for  # noqa: E402

SLEEP = os.path.join(os.path.abspath(harness.SRC), "examples", "sleep_rank.py")


def ranks(marker):
    """The job's ranks on this host, as (pid, start time) pairs: both attempts
    run the same command line, so only the processes themselves tell the old
    attempt's ranks from the new one's."""
    return harness.processes_with_cmdline(marker)


def exactly(n, exclude=frozenset()):
    """A wait_for test: the ranks now running when they are n, none of exclude."""
    return lambda found: found if len(found) == n and not found & exclude else None


class PreemptionTest(ServerTest):
    policy = None  # the server's default
    expect_policy = "trainyard-qspf"

    @classmethod
    def setUpClass(cls):
        cls.shared = tempfile.mkdtemp(prefix="ty-preempt-")
        os.chmod(cls.shared, 0o755)
        cls.server_args = ("--storage-root", cls.shared, "--sched-interval-ms", "200") + (
            ("--sched-policy", cls.policy) if cls.policy else ())
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.shared, ignore_errors=True)

    def job(self, job_id):
        return self.admin.get("/api/v1/jobs/" + job_id)[1]

    def test_owner_takes_back_borrowed_gpus(self):
        wait_for(lambda: "this replica leads scheduling\" policy=%s " % self.expect_policy
                 in self.server.log_text(),
                 timeout=30, what="the server to lead under %s" % self.expect_policy)
        self.make_team("borrower", quota=0)
        self.make_team("owner", quota=2)
        st, tok, _ = self.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        w = Worker(self.server.url, tok["token"], "preempt-node", gpus=2,
                   allowed_root=self.shared)
        try:
            marker = "3600.%d" % os.getpid()  # a --seconds value unique on this host
            st, big, _ = self.admin.post("/api/v1/jobs", {
                "name": "borrowed", "team": "borrower", "resources": {"gpus": 2},
                "max_restarts": 0,
                "command": ["/usr/bin/python3", SLEEP, "--seconds", marker]})
            self.assertEqual(st, 201, big)
            wait_for(lambda: self.job(big["id"])["state"] == "RUNNING", timeout=60,
                     what="the borrower's job to run")
            # (a rank reported started may not have exec'd python yet)
            old = wait_for(lambda: exactly(2)(ranks(marker)), timeout=30, what="two ranks")

            st, mine, _ = self.admin.post("/api/v1/jobs", {
                "name": "owned", "team": "owner", "resources": {"gpus": 1}, "max_restarts": 0,
                "command": ["/usr/bin/python3", SLEEP, "--seconds", "1"]})
            self.assertEqual(st, 201, mine)
            # The owner's job runs on GPUs taken back from the borrower...
            wait_for(lambda: self.job(mine["id"])["state"] == "SUCCEEDED", timeout=60,
                     what="the owner's job to run and end")
            ev = self.admin.get("/api/v1/jobs/%s/events" % big["id"])[1]["events"]
            preempted = [e for e in ev if e["to_state"] == "RESTARTING"]
            self.assertTrue(preempted, ev)
            self.assertIn("preempted for job %s" % mine["id"], preempted[0]["reason"])
            self.assertIn("team quota", preempted[0]["reason"])
            # ...the borrower's ranks of that attempt are gone from the node,
            wait_for(lambda: not ranks(marker) & old, timeout=60,
                     what="the preempted attempt's ranks to end")
            # and it runs again (same job, next attempt) without a restart used.
            wait_for(lambda: self.job(big["id"])["state"] == "RUNNING" and
                     self.job(big["id"])["attempt"] >= 2, timeout=60,
                     what="the borrower to run again")
            again = self.job(big["id"])
            self.assertEqual(again["restarts"], 0, again)
            wait_for(lambda: exactly(2, exclude=old)(ranks(marker)), timeout=30,
                     what="two ranks of the new attempt, none left of the old")
            st, _, _ = self.admin.post("/api/v1/jobs/%s/cancel" % big["id"], {})
            self.assertEqual(st, 202)  # running: the workers stop the ranks
            wait_for(lambda: not ranks(marker), timeout=60, what="no rank left")
            # The job ends when its worker has reported the ranks' exit.
            wait_for(lambda: self.job(big["id"])["state"] == "CANCELLED", timeout=60,
                     what="the job to end CANCELLED")
        finally:
            w.stop()
        # Every step is in the audit chain, which still verifies.
        st, v, _ = self.admin.get("/api/v1/audit/verify")
        self.assertEqual(st, 200, v)
        self.assertTrue(v["valid"], v)


class PreemptionSubmitOrderTest(PreemptionTest):
    policy = expect_policy = "trainyard"


if __name__ == "__main__":
    harness.main()
