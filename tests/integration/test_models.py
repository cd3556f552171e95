"""The model registry (docs/serving.md, "Registry") against a real server,
PostgreSQL and a trainyard-worker that runs the jobs.

The jobs carry the serving template ddp-mlp-demo ("serve": echo) in their
spec, with a command of their own: a few lines of Python that write an
output directory (files in a subdirectory, a link to a file outside the
storage roots), print metrics and record two checkpoints, so that the test
needs no PyTorch and knows every byte the registry must hash.

- a version from a SUCCEEDED job's output: the manifest equals one computed
  here with hashlib (the link out of the roots left out), the lineage (job,
  attempt, last step, template, params, metrics at that step, the dataset's
  digest) is recorded, the registration is audited; a second one is version 2
- a version from a checkpoint (a given step and the newest): one file, the
  metrics at that step (each metric's last value at or before it)
- model_versions refuses UPDATE and DELETE even for the superuser
- aliases set, moved (from/to in the audit event) and deleted, seen through
  the audit list API
- refused, with nothing written: a FAILED job's output (job_not_succeeded),
  another team's job (404), a job of a template without "serve"
  (not_servable), an auditor (403), a version of a job of another site than
  the model's (site_mismatch), a missing checkpoint step (404)
- an output directory, or a checkpoint, that resolves outside the site's
  storage roots is refused with policy_violation and audited as
  policy.violation on the job
- a dataset that is not a local path has no digest: lineage_complete false
- the list shows each caller their teams' models, paginated
- registrations of one model at once are numbered 1, 2, ... without a gap
"""
import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Client, ServerTest, Worker, wait_for  # noqa: E402

TEMPLATES = os.path.join(harness.SRC, "templates")
EXAMPLES = os.path.abspath(os.path.join(harness.SRC, "examples"))
ENDED = ("SUCCEEDED", "FAILED", "CANCELLED")

# argv: the file outside the roots to link to, the exit status.
JOB_SCRIPT = r"""
import json, os, sys
out = os.environ["TRAINYARD_OUTPUT_DIR"]
ck = os.environ["TRAINYARD_CHECKPOINT_DIR"]
os.makedirs(os.path.join(out, "sub"), exist_ok=True)
with open(os.path.join(out, "model.bin"), "wb") as f:
    f.write(bytes(range(256)) * 40)
with open(os.path.join(out, "config.json"), "w") as f:
    f.write('{"kind": "echo"}\n')
with open(os.path.join(out, "sub", "tok.txt"), "w") as f:
    f.write("hello")
os.symlink(sys.argv[1], os.path.join(out, "leak"))
for step in (1, 2, 3, 4):
    m = {"step": step, "loss": 1.0 / step, "acc": step / 4.0}
    if step == 3:
        m["lr"] = 0.1
    print("TRAINYARD_METRIC " + json.dumps(m), flush=True)
    if step % 2 == 0:
        p = os.path.join(ck, "step-%d.pt" % step)
        with open(p, "wb") as f:
            f.write(b"checkpoint %d" % step)
        print("TRAINYARD_CHECKPOINT " + json.dumps({"step": step, "path": p}), flush=True)
sys.exit(int(sys.argv[2]))
"""


def manifest_of(path):
    """The manifest docs/serving.md defines, computed here: every regular file
    under path (a link only when it resolves to a file inside), sorted."""
    real = os.path.realpath(path)
    files = []
    for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
        for name in filenames + dirnames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, path)
            if os.path.islink(full):
                target = os.path.realpath(full)
                if not (target.startswith(real + "/") and os.path.isfile(target)):
                    continue
            elif not os.path.isfile(full):
                continue
            with open(full, "rb") as f:
                data = f.read()
            files.append({"path": rel, "size": len(data),
                          "sha256": hashlib.sha256(data).hexdigest()})
    files.sort(key=lambda f: f["path"].encode())
    return files


def digest_of(files):
    text = "".join("%s %d %s\n" % (f["sha256"], f["size"], f["path"]) for f in files)
    return hashlib.sha256(text.encode()).hexdigest()


class ModelsTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.storage = tempfile.mkdtemp(prefix="ty-models-")
        cls.outside = tempfile.mkdtemp(prefix="ty-models-outside-")
        os.chmod(cls.storage, 0o755)
        os.chmod(cls.outside, 0o755)
        cls.secret = os.path.join(cls.outside, "secret")
        with open(cls.secret, "w") as f:
            f.write("not part of any model")
        cls.server_args = ("--storage-root", cls.storage, "--templates-dir", TEMPLATES,
                           "--examples-dir", EXAMPLES, "--sched-interval-ms", "200")
        super().setUpClass()
        cls.worker = None
        try:
            cls.set_up_jobs()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def set_up_jobs(cls):
        st, cls.ml, _ = cls.admin.post("/api/v1/teams", {"name": "ml"})
        assert st == 201, cls.ml
        st, cls.other_team, _ = cls.admin.post("/api/v1/teams", {"name": "other"})
        assert st == 201, cls.other_team
        cls.mem = cls.user("mem", "member", cls.ml)
        cls.oth = cls.user("oth", "member", cls.other_team)
        cls.aud = cls.user("aud", "auditor", None)
        # Remote datasets from loopback are allowed on this site.
        st, s, _ = cls.admin.request("PATCH", "/api/v1/sites/default",
                                     body={"networks": ["127.0.0.0/8"]})
        assert st == 200, s
        cls.ds = os.path.join(cls.storage, "data", "corpus")
        os.makedirs(os.path.join(cls.ds, "part"))
        for rel, text in (("a.txt", "first\n"), ("part/b.txt", "second\n")):
            with open(os.path.join(cls.ds, rel), "w") as f:
                f.write(text)
        st, tok, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        assert st == 201, tok
        cls.worker = Worker(cls.server.url, tok["token"], "model-node", gpus=4,
                            allowed_root=cls.storage)
        cls.jobs = {
            "good": cls.submit("good", 0, datasets=[cls.ds]),
            "failed": cls.submit("failed", 1),
            "moved": cls.submit("moved", 0),
            "remote": cls.submit("remote", 0, datasets=["http://127.0.0.1:9/corpus"]),
            "plain": cls.submit("plain", 0, template="sleep-test"),
        }
        for key, job in cls.jobs.items():
            final = wait_for(lambda: (lambda j: j if j["state"] in ENDED else None)(
                cls.admin.get("/api/v1/jobs/" + job["id"])[1]), timeout=120, interval=0.3,
                what="job %s to end" % key)
            want = "FAILED" if key == "failed" else "SUCCEEDED"
            assert final["state"] == want, (key, final, cls.worker.log_tail(30))
            cls.jobs[key] = final

    @classmethod
    def user(cls, name, role, team):
        st, u, _ = cls.admin.post("/api/v1/users", {"username": name, "role": role,
                                                    "password": name + "-password-123"})
        assert st == 201, u
        if team is not None:
            st, b, _ = cls.admin.request("PUT", "/api/v1/teams/%s/members/%s"
                                         % (team["id"], u["id"]))
            assert st == 201, b
        c = Client(cls.server.url)
        st, b = c.login(name, name + "-password-123")
        assert st == 200, b
        st, t, _ = c.post("/api/v1/tokens", {"name": "t"})
        assert st == 201, t
        return Client(cls.server.url, token=t["token"])

    @classmethod
    def submit(cls, name, status, template="ddp-mlp-demo", datasets=()):
        spec = {"name": name, "team": "ml", "template": template, "params": {"steps": 4},
                "command": ["/usr/bin/python3", "-c", JOB_SCRIPT, cls.secret, str(status)],
                "resources": {"gpus": 1}, "max_restarts": 0,
                "output_dir": os.path.join(cls.storage, "out", name)}
        if datasets:
            spec["datasets"] = list(datasets)
        st, job, _ = cls.mem.post("/api/v1/jobs", spec)
        assert st == 201, (name, job)
        return job

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.worker:
                cls.worker.stop()
        finally:
            try:
                super().tearDownClass()
            finally:
                shutil.rmtree(cls.storage, ignore_errors=True)
                shutil.rmtree(cls.outside, ignore_errors=True)

    # ------------------------------------------------------------ helpers

    def out_dir(self, key):
        return os.path.join(self.storage, "out", key)

    def register(self, client, name, body):
        return client.post("/api/v1/models/%s/versions" % name, body)

    def audit(self, target, action=None):
        q = "/api/v1/audit/events?target=" + target + ("&action=" + action if action else "")
        st, body, _ = self.admin.get(q)
        self.assertEqual(st, 200, body)
        return body["events"]

    def written(self):
        """What a refused registration must leave as it was."""
        return (self.db.sql("SELECT count(*) FROM models")[0][0],
                self.db.sql("SELECT count(*) FROM model_versions")[0][0],
                self.db.sql("SELECT count(*) FROM audit_events WHERE action LIKE 'model.%'")[0][0])

    # ------------------------------------------------------------ tests

    def test_output_version_manifest_lineage_and_audit(self):
        job = self.jobs["good"]
        st, v, _ = self.register(self.mem, "echo-out", {"job_id": job["id"],
                                                         "description": "first"})
        self.assertEqual(st, 201, v)
        self.assertEqual((v["model"], v["version"], v["source_kind"]), ("echo-out", 1, "output"))
        self.assertEqual((v["serve_kind"], v["serve_script"]), ("echo", "serve_echo.py"))
        self.assertEqual(v["path"], os.path.realpath(self.out_dir("good")))
        # The manifest is exactly the one computed here; the link out is not in it.
        want = manifest_of(self.out_dir("good"))
        paths = [f["path"] for f in want]
        self.assertIn("sub/tok.txt", paths)
        self.assertIn("checkpoints/step-4.pt", paths)
        self.assertNotIn("leak", paths)
        self.assertNotIn("leak", [f["path"] for f in v["manifest"]])
        self.assertEqual(v["manifest"], want)
        self.assertEqual(v["manifest_sha256"], digest_of(want))
        self.assertEqual((v["files"], v["bytes"]), (len(want), sum(f["size"] for f in want)))
        # Lineage: the job, its last step and the metrics there, the spec's
        # template and params, the dataset with the digest of its files now.
        self.assertEqual((v["source_job_id"], v["source_attempt"], v["source_step"]),
                         (job["id"], 1, 4))
        self.assertEqual(v["template"], "ddp-mlp-demo")
        self.assertEqual(v["params"], {"steps": 4})
        self.assertEqual(v["metrics"], {"loss": 0.25, "acc": 1.0, "lr": 0.1})
        self.assertEqual(v["datasets"], [{"name": None, "uri": self.ds, "path": self.ds,
                                          "digest": digest_of(manifest_of(self.ds))}])
        self.assertTrue(v["lineage_complete"])
        self.assertEqual(v["description"], "first")
        # Audited in the registration's transaction, on the model.
        ev = self.audit("model:echo-out", "model.version.register")
        self.assertEqual(len(ev), 1, ev)
        d = ev[0]["details"]
        self.assertEqual((d["version"], d["job"], d["manifest_sha256"], ev[0]["actor"]),
                         (1, job["id"], v["manifest_sha256"], "user:mem"))
        # A second registration is version 2; the model lists both, newest first.
        st, v2, _ = self.register(self.mem, "echo-out", {"job_id": job["id"]})
        self.assertEqual((st, v2.get("version")), (201, 2), v2)
        self.assertEqual(len(self.audit("model:echo-out", "model.version.register")), 2)
        st, m, _ = self.mem.get("/api/v1/models/echo-out")
        self.assertEqual(st, 200, m)
        self.assertEqual([x["version"] for x in m["versions"]], [2, 1])
        self.assertEqual((m["team"], m["site"], m["latest_version"]), ("ml", "default", 2))
        st, got, _ = self.mem.get("/api/v1/models/echo-out/versions/1")
        self.assertEqual((st, got["manifest"]), (200, want))
        self.assert_error(self.mem.get("/api/v1/models/echo-out/versions/9"), 404, "not_found")

    def test_concurrent_registrations_number_in_turn(self):
        """Registrations of one model at once each get their own number: the
        model's row lock orders them (without it two would take the same
        max + 1 and one would fail on the unique key)."""
        jid = self.jobs["good"]["id"]
        results = []

        def one():
            results.append(self.register(self.mem, "echo-race", {"job_id": jid}))
        threads = [threading.Thread(target=one) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([r[0] for r in results], [201] * 6, [r[1] for r in results])
        self.assertEqual(sorted(r[1]["version"] for r in results), [1, 2, 3, 4, 5, 6])
        ev = self.audit("model:echo-race", "model.version.register")
        self.assertEqual(sorted(e["details"]["version"] for e in ev), [1, 2, 3, 4, 5, 6])

    def test_checkpoint_versions(self):
        job = self.jobs["good"]
        ck = os.path.join(self.out_dir("good"), "checkpoints")
        st, v, _ = self.register(self.mem, "echo-ck", {"job_id": job["id"],
                                                        "source": "checkpoint", "step": 2})
        self.assertEqual(st, 201, v)
        data = b"checkpoint 2"
        self.assertEqual(v["manifest"], [{"path": "step-2.pt", "size": len(data),
                                          "sha256": hashlib.sha256(data).hexdigest()}])
        self.assertEqual(v["manifest_sha256"], digest_of(v["manifest"]))
        self.assertEqual(v["path"], os.path.join(os.path.realpath(ck), "step-2.pt"))
        self.assertEqual((v["source_kind"], v["source_step"]), ("checkpoint", 2))
        # each metric's last value at or before step 2: no lr yet
        self.assertEqual(v["metrics"], {"loss": 0.5, "acc": 0.5})
        # without a step: the newest
        st, v, _ = self.register(self.mem, "echo-ck", {"job_id": job["id"],
                                                        "source": "checkpoint"})
        self.assertEqual((st, v.get("version"), v.get("source_step")), (201, 2, 4), v)
        self.assertEqual(v["manifest"][0]["path"], "step-4.pt")
        # a checkpoint of a FAILED job can be registered; its output cannot
        st, v, _ = self.register(self.mem, "echo-failed", {"job_id": self.jobs["failed"]["id"],
                                                            "source": "checkpoint"})
        self.assertEqual(st, 201, v)
        before = self.written()
        self.assert_error(self.register(self.mem, "echo-ck", {
            "job_id": job["id"], "source": "checkpoint", "step": 3}), 404, "not_found", "step")
        self.assert_error(self.register(self.mem, "echo-ck", {"job_id": job["id"], "step": 3}),
                          400, "invalid_argument", "step")
        self.assertEqual(self.written(), before)

    def test_versions_are_immutable(self):
        st, v, _ = self.register(self.mem, "echo-frozen", {"job_id": self.jobs["good"]["id"]})
        self.assertEqual(st, 201, v)
        for sql in ("UPDATE model_versions SET description = 'changed' WHERE id = %s" % v["id"],
                    "UPDATE model_versions SET manifest_sha256 = repeat('0', 64) WHERE id = %s"
                    % v["id"],
                    "DELETE FROM model_versions WHERE id = %s" % v["id"]):
            ok, err = harness.psql_try(self.db.url, sql)
            self.assertFalse(ok, sql)
            self.assertIn("model_versions is immutable", err)
        self.assertEqual(self.db.sql("SELECT description, manifest_sha256 FROM model_versions "
                                     "WHERE id = %s" % v["id"]), [["", v["manifest_sha256"]]])

    def test_aliases(self):
        jid = self.jobs["good"]["id"]
        for _ in range(2):
            st, v, _ = self.register(self.mem, "echo-alias", {"job_id": jid})
            self.assertEqual(st, 201, v)
        path = "/api/v1/models/echo-alias/aliases/prod"
        st, a, _ = self.mem.request("PUT", path, body={"version": 1})
        self.assertEqual((st, a), (200, {"model": "echo-alias", "alias": "prod", "version": 1,
                                         "from": None}))
        st, a, _ = self.mem.request("PUT", path, body={"version": 2})
        self.assertEqual((st, a["from"], a["version"]), (200, 1, 2))
        st, m, _ = self.mem.get("/api/v1/models/echo-alias")
        self.assertEqual(m["aliases"], {"prod": 2})
        st, v2, _ = self.mem.get("/api/v1/models/echo-alias/versions/2")
        self.assertEqual(v2["aliases"], ["prod"])
        # refused, with nothing written: no such version, an auditor, another team
        before = self.written()
        self.assert_error(self.mem.request("PUT", path, body={"version": 7}), 404, "not_found",
                          "version")
        self.assert_error(self.aud.request("PUT", path, body={"version": 1}), 403,
                          "permission_denied")
        self.assert_error(self.oth.request("PUT", path, body={"version": 1}), 404, "not_found")
        self.assert_error(self.mem.request("PUT", "/api/v1/models/echo-alias/aliases/Bad!",
                                           body={"version": 1}), 400, "invalid_argument", "alias")
        self.assert_error(self.oth.request("DELETE", path), 404, "not_found")
        self.assertEqual(self.written(), before)
        st, a, _ = self.mem.request("DELETE", path)
        self.assertEqual((st, a["version"]), (200, 2), a)
        self.assert_error(self.mem.request("DELETE", path), 404, "not_found", "alias")
        st, m, _ = self.mem.get("/api/v1/models/echo-alias")
        self.assertEqual(m["aliases"], {})
        # The audit list API shows the set, the move (from/to) and the delete.
        sets = sorted(self.audit("model:echo-alias", "model.alias.set"),
                      key=lambda e: int(e["id"]))
        self.assertEqual([(e["details"]["from"], e["details"]["to"]) for e in sets],
                         [(None, 1), (1, 2)])
        dels = self.audit("model:echo-alias", "model.alias.delete")
        self.assertEqual([(e["details"]["alias"], e["details"]["from"], e["actor"])
                          for e in dels], [("prod", 2, "user:mem")])

    def test_refusals_write_nothing(self):
        good = self.jobs["good"]["id"]
        st, v, _ = self.register(self.mem, "echo-site", {"job_id": good})
        self.assertEqual(st, 201, v)
        st, site, _ = self.admin.post("/api/v1/sites", {"name": "east",
                                                        "storage_roots": ["/srv/east"]})
        self.assertEqual(st, 201, site)
        before = self.written()
        self.assert_error(self.register(self.mem, "echo-x", {"job_id": self.jobs["failed"]["id"]}),
                          409, "job_not_succeeded", "job_id")
        self.assert_error(self.register(self.oth, "echo-x", {"job_id": good}), 404, "not_found",
                          "job_id")
        self.assert_error(self.register(self.mem, "echo-x", {"job_id": self.jobs["plain"]["id"]}),
                          409, "not_servable", "job_id")
        self.assert_error(self.register(self.aud, "echo-x", {"job_id": good}), 403,
                          "permission_denied")
        self.assert_error(self.register(self.mem, "echo-x", {"job_id": "999999"}), 404,
                          "not_found")
        self.assert_error(self.register(self.mem, "Echo_X", {"job_id": good}), 400,
                          "invalid_argument", "name")
        self.assert_error(self.register(self.mem, "echo-x", {"job_id": good, "source": "disk"}),
                          400, "invalid_argument", "source")
        # A model keeps its first site: a version from a job of another site
        # is refused (the model is moved to "east" here to stand for that).
        self.db.sql("UPDATE models SET site_id = %s WHERE name = 'echo-site'" % site["id"])
        self.assert_error(self.register(self.mem, "echo-site", {"job_id": good}), 409,
                          "site_mismatch", "job_id")
        self.assertEqual(self.written(), before)

    def test_paths_outside_the_roots_are_refused_and_audited(self):
        job = self.jobs["moved"]
        jid = job["id"]
        out = self.out_dir("moved")
        # The output directory now resolves outside the storage roots.
        away = os.path.join(self.outside, "moved")
        shutil.move(out, away)
        os.symlink(away, out)
        # And the recorded checkpoint of the good job's twin: its file is now
        # a link to a file outside.
        ck = os.path.join(away, "checkpoints", "step-4.pt")
        os.remove(ck)
        os.symlink(self.secret, ck)
        before = self.written()
        viol = len(self.audit("job:" + jid, "policy.violation"))
        self.assert_error(self.register(self.mem, "echo-moved", {"job_id": jid}), 403,
                          "policy_violation")
        self.assert_error(self.register(self.mem, "echo-moved", {"job_id": jid,
                                                                 "source": "checkpoint"}),
                          403, "policy_violation")
        self.assertEqual(self.written(), before)
        ev = self.audit("job:" + jid, "policy.violation")
        self.assertEqual(len(ev), viol + 2, ev)
        for e in ev[:2]:
            self.assertEqual((e["outcome"], e["actor"], e["details"]["what"]),
                             ("denied", "user:mem", "model registration"))
        self.assertEqual(sorted(e["details"]["source"] for e in ev[:2]), ["checkpoint", "output"])

    def test_remote_dataset_leaves_lineage_incomplete(self):
        st, v, _ = self.register(self.mem, "echo-remote", {"job_id": self.jobs["remote"]["id"]})
        self.assertEqual(st, 201, v)
        self.assertEqual(v["datasets"], [{"name": None, "uri": "http://127.0.0.1:9/corpus",
                                          "path": None, "digest": None}])
        self.assertFalse(v["lineage_complete"])
        self.assertEqual(self.db.sql("SELECT lineage_complete FROM model_versions WHERE id = %s"
                                     % v["id"]), [["f"]])

    def test_list_by_team_and_pages(self):
        for name in ("echo-list-a", "echo-list-b"):
            st, v, _ = self.register(self.mem, name, {"job_id": self.jobs["good"]["id"]})
            self.assertEqual(st, 201, v)
        st, body, _ = self.oth.get("/api/v1/models")
        self.assertEqual((st, body["models"]), (200, []))
        self.assert_error(self.oth.get("/api/v1/models/echo-list-a"), 404, "not_found")
        names, cursor = [], None
        while True:
            st, body, _ = self.mem.get("/api/v1/models?limit=1" +
                                       ("&cursor=" + cursor if cursor else ""))
            self.assertEqual(st, 200, body)
            self.assertLessEqual(len(body["models"]), 1)
            names += [m["name"] for m in body["models"]]
            cursor = body["next_cursor"]
            if not cursor:
                break
        self.assertIn("echo-list-a", names)
        self.assertIn("echo-list-b", names)
        self.assertEqual(names, sorted(names))
        st, body, _ = self.aud.get("/api/v1/models?limit=500")
        self.assertEqual(sorted(m["name"] for m in body["models"]), sorted(names))
        self.assert_error(self.mem.get("/api/v1/models?cursor=Bad!"), 400, "invalid_argument",
                          "cursor")


if __name__ == "__main__":
    harness.main()
