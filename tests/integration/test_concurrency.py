"""50 clients submit jobs at once; afterwards every acknowledged job exists,
and the audit chain verifies, recomputed here independently of the server."""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest  # noqa: E402

CLIENTS = 50
JOBS_EACH = 4


class ConcurrencyTest(ServerTest):
    def test_concurrent_submits_keep_the_chain(self):
        st, team, _ = self.admin.post("/api/v1/teams", {"name": "crowd"})
        self.assertEqual(st, 201, team)
        _, user = self.make_user("crowd-user", teams=[team])
        clients = [self.token_client(user, "c%d" % i) for i in range(CLIENTS)]
        acked, errors = [], []
        lock = threading.Lock()
        barrier = threading.Barrier(CLIENTS)

        def worker(i):
            barrier.wait()
            for k in range(JOBS_EACH):
                try:
                    st, job, _ = clients[i].post("/api/v1/jobs", self.job_spec(
                        "crowd", name="c%d-%d" % (i, k), resources={"gpus": 1024}))
                except OSError as e:
                    with lock:
                        errors.append(repr(e))
                    continue
                with lock:
                    if st == 201:
                        acked.append(job["id"])
                    else:
                        errors.append((st, job))

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(len(acked), CLIENTS * JOBS_EACH)
        in_db = {r[0] for r in self.db.sql("SELECT id FROM jobs")}
        self.assertTrue(set(acked) <= in_db)
        submits = {r[0] for r in self.db.sql(
            "SELECT target FROM audit_events WHERE action = 'job.submit'")}
        self.assertEqual({"job:" + j for j in acked}, submits & {"job:" + j for j in acked})
        rows = harness.db_audit_rows(self.db)
        self.assertEqual([int(r["id"]) for r in rows], list(range(1, len(rows) + 1)))
        self.assertEqual(harness.verify_chain_rows(rows), 0)
        st, v, _ = self.admin.get("/api/v1/audit/verify")
        self.assertEqual((v["valid"], v["checked"]), (True, len(rows)))
        # The check can fail: a changed row is found.
        rows[len(rows) // 2]["actor"] = "user:mallory"
        self.assertEqual(harness.verify_chain_rows(rows), int(rows[len(rows) // 2]["id"]))


if __name__ == "__main__":
    harness.main()
