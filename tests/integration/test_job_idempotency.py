"""POST /api/v1/jobs with an Idempotency-Key header (migration 017).

- the first submit with a key is a 201; the same request again (the same
  body, its fields in any order) is a 200 with the same job, and nothing is
  written: one job row, one job.submit audit event
- a repeat answers the job as it is now (cancelled since, it says so) and
  is answered even when the same request would now be refused (the user
  has left the team since)
- the key sent with another body is a 409 on the field Idempotency-Key and
  writes nothing
- keys are per user: another user's submit with the same key makes a job
- eight submits racing with one key and body make one job; all answers
  name it (one 201, seven 200)
- a key that is empty, too long or not printable ASCII is a 400 on the
  field and writes nothing; without a key every submit makes a job
- `trainyard submit FILE --idempotency-key K` run twice prints the same
  job (exit 0 both times); the key with another file is refused, naming
  the header, exit non-zero
"""
import json
import os
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest  # noqa: E402


class JobIdempotencyTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "idem"})
        assert st == 201, cls.team

    def submit(self, client, body, key):
        return client.post("/api/v1/jobs", body, headers={"Idempotency-Key": key})

    def jobs_named(self, name):
        return int(self.db.sql("SELECT count(*) FROM jobs WHERE name = '%s'" % name)[0][0])

    def submits_of(self, job_id):
        return int(self.db.sql("SELECT count(*) FROM audit_events WHERE action = 'job.submit' "
                               "AND target = 'job:%s'" % job_id)[0][0])

    def test_repeat_conflict_and_users(self):
        user, alice = self.make_user("idem-alice", teams=[self.team])
        self.alice_id = user["id"]
        _, bob = self.make_user("idem-bob", teams=[self.team])
        body = {"name": "idem-a", "team": "idem", "command": ["/bin/sleep", "600"],
                "resources": {"gpus": 1}, "priority": "high"}
        st, first, _ = self.submit(alice, body, "key-1")
        self.assertEqual(st, 201, first)
        reordered = {k: body[k] for k in reversed(list(body))}
        st, again, _ = self.submit(alice, reordered, "key-1")
        self.assertEqual(st, 200, again)
        self.assertEqual(again["id"], first["id"])
        self.assertEqual((self.jobs_named("idem-a"), self.submits_of(first["id"])), (1, 1))

        # another request with the key: refused, nothing written
        st, err, _ = self.submit(alice, dict(body, name="idem-b"), "key-1")
        self.assertEqual(st, 409, err)
        self.assertEqual(err["error"]["code"], "conflict")
        self.assertEqual(err["error"]["field"], "Idempotency-Key")
        self.assertIn("job %s" % first["id"], err["error"]["message"])
        self.assertEqual(self.jobs_named("idem-b"), 0)

        # another user's key is another key
        st, bobs, _ = self.submit(bob, body, "key-1")
        self.assertEqual(st, 201, bobs)
        self.assertNotEqual(bobs["id"], first["id"])

        # the job as it is now: cancelled since
        st, b, _ = alice.post("/api/v1/jobs/%s/cancel" % first["id"], {})
        self.assertIn(st, (200, 202), b)
        st, again, _ = self.submit(alice, body, "key-1")
        self.assertEqual((st, again["id"]), (200, first["id"]))
        self.assertIn(again["state"], ("CANCELLED",), again)
        # ... and answered although alice may no longer submit to the team
        st, b = self.admin.request("DELETE", "/api/v1/teams/%s/members/%s"
                                   % (self.team["id"], self.alice_id))[:2]
        self.assertIn(st, (200, 204), b)
        self.assertEqual(self.submit(alice, dict(body, name="idem-c"), "key-2")[0], 403)
        st, again, _ = self.submit(alice, body, "key-1")
        self.assertEqual((st, again["id"]), (200, first["id"]))
        self.assertEqual(self.jobs_named("idem-a"), 2)  # alice's and bob's
        self.assertEqual(self.admin.get("/api/v1/audit/verify")[1]["valid"], True)

    def test_racing_repeats_make_one_job(self):
        body = {"name": "idem-race", "team": "idem", "command": ["/bin/sleep", "600"],
                "resources": {"gpus": 1}}
        answers = []
        lock = threading.Lock()

        def one():
            c = harness.Client(self.server.url)
            c.cookie, c.csrf = self.admin.cookie, self.admin.csrf
            st, b, _ = self.submit(c, body, "race-key")
            with lock:
                answers.append((st, b.get("id")))
        threads = [threading.Thread(target=one) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(sorted(st for st, _ in answers), [200] * 7 + [201], answers)
        self.assertEqual(len({jid for _, jid in answers}), 1, answers)
        self.assertEqual(self.jobs_named("idem-race"), 1)

    def test_bad_keys_and_no_key(self):
        body = {"name": "idem-bad", "team": "idem", "command": ["/bin/true"],
                "resources": {"gpus": 1}}
        for key in ("", "k" * 201, "two words", "schlüssel"):
            st, err, _ = self.admin.request(
                "POST", "/api/v1/jobs", body,
                headers={"Idempotency-Key": key.encode("utf-8").decode("latin-1")})
            self.assertEqual(st, 400, (key, err))
            self.assertEqual(err["error"]["field"], "Idempotency-Key", err)
        self.assertEqual(self.jobs_named("idem-bad"), 0)
        self.assertEqual(self.submit(self.admin, body, "k" * 200)[0], 201)
        for _ in range(2):
            self.assertEqual(self.admin.post("/api/v1/jobs", body)[0], 201)
        self.assertEqual(self.jobs_named("idem-bad"), 3)

    def test_cli(self):
        tok = self.admin.post("/api/v1/tokens", {"name": "idem-cli"})[1]["token"]
        env = dict(os.environ, TRAINYARD_URL=self.server.url, TRAINYARD_TOKEN=tok, LANG="C.UTF-8",
                   HOME=tempfile.mkdtemp(prefix="ty-idem-home-"))
        spec = {"name": "idem-cli", "team": "idem", "command": ["/bin/sleep", "600"],
                "resources": {"gpus": 1}}
        path = os.path.join(tempfile.mkdtemp(prefix="ty-idem-"), "job.json")

        def submit(body, key):
            with open(path, "w") as f:
                json.dump(body, f)
            return subprocess.run([harness.CLI_BIN, "submit", path, "--idempotency-key", key,
                                   "--json"], capture_output=True, text=True, env=env,
                                  timeout=60)
        first = submit(spec, "cli-key")
        self.assertEqual(first.returncode, 0, first.stderr)
        again = submit(spec, "cli-key")
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(json.loads(again.stdout)["id"], json.loads(first.stdout)["id"])
        self.assertEqual(self.jobs_named("idem-cli"), 1)
        other = submit(dict(spec, name="idem-cli-2"), "cli-key")
        self.assertNotEqual(other.returncode, 0)
        self.assertIn("Idempotency-Key", other.stderr)
        self.assertEqual(self.jobs_named("idem-cli-2"), 0)


if __name__ == "__main__":
    harness.main()
