"""Exports of job outputs (docs/exports.md): listing a job's output files,
requests, four-eyes approval, one-time download links, expiry, path policy
and the audit trail of every step.

A job's output directory is <storage_root>/jobs/<id> (no output_dir in the
spec); the test writes the files itself, as a finished job would have. The
classification a job gets from its datasets is set with the superuser, so
this test does not depend on dataset registration."""
import http.client
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest  # noqa: E402

STORAGE = tempfile.mkdtemp(prefix="ty-exports-storage-")
OUTSIDE = tempfile.mkdtemp(prefix="ty-exports-outside-")


def raw_get(url, path):
    """GET returning (status, body bytes, headers) without JSON parsing."""
    host, port = url[len("http://"):].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read(), {k.lower(): v for k, v in resp.getheaders()}
    finally:
        conn.close()


class ExportsTest(ServerTest):
    server_args = ("--storage-root", STORAGE)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        t = cls.admin.post("/api/v1/teams", {"name": "vision"})[1]
        cls.admin.post("/api/v1/teams", {"name": "speech"})
        cls.mem_u, cls.mem = cls._user("mem", "member", t)
        cls.oth_u, cls.oth = cls._user("oth", "member", None)
        cls.aud_u, cls.aud = cls._user("aud", "auditor", None)
        cls.adm2_u, cls.adm2 = cls._user("admin2", "admin", None)
        cls.admin_id = cls.admin.get("/api/v1/me")[1]["id"]

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(STORAGE, ignore_errors=True)
            shutil.rmtree(OUTSIDE, ignore_errors=True)

    @classmethod
    def _user(cls, name, role, team):
        st, u, _ = cls.admin.post("/api/v1/users", {"username": name, "role": role,
                                                    "password": name + "-password-123"})
        assert st == 201, u
        if team is not None:
            st, b, _ = cls.admin.request("PUT", "/api/v1/teams/%s/members/%s" % (team["id"], u["id"]))
            assert st == 201, b
        c = harness.Client(cls.server.url)
        st, b = c.login(name, name + "-password-123")
        assert st == 200, b
        return u, c

    # helpers -------------------------------------------------------------
    def make_job(self, classification="secret", files=None):
        st, job, _ = self.mem.post("/api/v1/jobs", self.job_spec("vision"))
        self.assertEqual(st, 201, job)
        self.db.sql("UPDATE jobs SET classification = '%s' WHERE id = %s"
                    % (classification, job["id"]))
        out = os.path.join(STORAGE, "jobs", job["id"])
        os.makedirs(out, exist_ok=True)
        for rel, data in (files or {"model.pt": b"weights"}).items():
            p = os.path.join(out, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(data)
        return job["id"], out

    def request(self, client, job_id, path="model.pt", reason="ship to the product team"):
        return client.post("/api/v1/jobs/%s/exports" % job_id, {"path": path, "reason": reason})

    def audit(self, target):
        return self.db.sql("SELECT action, actor, outcome FROM audit_events WHERE target = '%s' "
                           "ORDER BY id" % target)

    def download(self, url_path):
        return raw_get(self.server.url, url_path)

    # tests ---------------------------------------------------------------
    def test_outputs_listing(self):
        job, out = self.make_job("internal", {"model.pt": b"x" * 10, "ckpt/step1.pt": b"yy",
                                              "ckpt/deep/a.bin": b"z"})
        with open(os.path.join(OUTSIDE, "secret.txt"), "wb") as f:
            f.write(b"not yours")
        os.symlink(os.path.join(OUTSIDE, "secret.txt"), os.path.join(out, "escape.txt"))
        os.symlink(OUTSIDE, os.path.join(out, "escape_dir"))
        os.symlink("model.pt", os.path.join(out, "latest.pt"))
        st, body, _ = self.mem.get("/api/v1/jobs/%s/outputs" % job)
        self.assertEqual(st, 200, body)
        files = {f["path"]: f for f in body["files"]}
        self.assertEqual(sorted(files), ["ckpt/deep/a.bin", "ckpt/step1.pt", "latest.pt",
                                         "model.pt"])
        self.assertEqual(files["model.pt"]["size"], 10)
        self.assertTrue(files["model.pt"]["mtime"].endswith("Z"))
        self.assertIsNone(body["next_cursor"])
        self.assertFalse(body["truncated"])
        # Pages follow the path order.
        st, p1, _ = self.mem.get("/api/v1/jobs/%s/outputs?limit=3" % job)
        self.assertEqual([f["path"] for f in p1["files"]],
                         ["ckpt/deep/a.bin", "ckpt/step1.pt", "latest.pt"])
        self.assertEqual(p1["next_cursor"], "latest.pt")
        st, p2, _ = self.mem.get("/api/v1/jobs/%s/outputs?limit=3&cursor=latest.pt" % job)
        self.assertEqual([f["path"] for f in p2["files"]], ["model.pt"])
        self.assertIsNone(p2["next_cursor"])
        self.assert_error(self.mem.get("/api/v1/jobs/%s/outputs?limit=0" % job), 400,
                          "invalid_argument", "limit")
        # Visibility: like the job itself.
        self.assert_error(self.oth.get("/api/v1/jobs/%s/outputs" % job), 404, "not_found")
        self.assertEqual(self.aud.get("/api/v1/jobs/%s/outputs" % job)[0], 200)
        # A job that wrote nothing has an empty list.
        st, fresh, _ = self.mem.post("/api/v1/jobs", self.job_spec("vision"))
        st, body, _ = self.mem.get("/api/v1/jobs/%s/outputs" % fresh["id"])
        self.assertEqual((st, body["files"]), (200, []), body)

    def test_secret_approval_and_one_time_download(self):
        payload = os.urandom(300000)
        job, _ = self.make_job("secret", {"final/model.safetensors": payload})
        st, req, _ = self.request(self.mem, job, "final/model.safetensors")
        self.assertEqual(st, 201, req)
        self.assertEqual(req["state"], "pending")
        self.assertEqual(req["classification"], "secret")
        self.assertEqual(req["requested_by"], "mem")
        self.assertNotIn("download_url", req)
        eid = req["id"]
        # A member cannot decide, not even on their own request.
        self.assert_error(self.mem.post("/api/v1/exports/%s/approve" % eid, {}), 403,
                          "permission_denied")
        self.assert_error(self.aud.post("/api/v1/exports/%s/approve" % eid, {}), 403,
                          "permission_denied")
        st, got, _ = self.mem.get("/api/v1/exports/" + eid)
        self.assertEqual((st, got["state"]), (200, "pending"))
        # An admin approves with a note; the link comes back once.
        st, ok, _ = self.admin.post("/api/v1/exports/%s/approve" % eid, {"note": "checked"})
        self.assertEqual(st, 200, ok)
        self.assertEqual(ok["state"], "approved")
        self.assertEqual(ok["decided_by"], "admin")
        self.assertEqual(ok["note"], "checked")
        self.assertTrue(ok["link_expires_at"])
        url = ok["download_url"]
        self.assertTrue(url.startswith("/api/v1/exports/download/tyx_"), url)
        st, again, _ = self.mem.get("/api/v1/exports/" + eid)
        self.assertNotIn("download_url", again)
        token = url.rsplit("/", 1)[1]
        stored = self.db.sql("SELECT link_hash FROM export_requests WHERE id = %s" % eid)[0][0]
        self.assertNotIn(token, stored)
        self.assertEqual(len(stored), 64)
        # A decided request cannot be decided again.
        self.assert_error(self.adm2.post("/api/v1/exports/%s/approve" % eid, {}), 409, "conflict")
        self.assert_error(self.adm2.post("/api/v1/exports/%s/deny" % eid, {}), 409, "conflict")
        # The link needs no session and works once.
        st, data, hdrs = self.download(url)
        self.assertEqual(st, 200, data[:200])
        self.assertEqual(data, payload)
        self.assertEqual(hdrs["content-type"], "application/octet-stream")
        self.assertEqual(hdrs["content-disposition"], 'attachment; filename="model.safetensors"')
        self.assertEqual(hdrs["cache-control"], "no-store")
        st, body, _ = self.admin.get(url)
        self.assertEqual(st, 410, body)
        self.assertEqual(body["error"]["code"], "gone")
        st, got, _ = self.mem.get("/api/v1/exports/" + eid)
        self.assertEqual(got["state"], "downloaded")
        self.assertTrue(got["downloaded_at"])
        self.assertEqual(self.audit("export:" + eid), [
            ["export.request", "user:mem", "success"],
            ["export.approve", "user:admin", "success"],
            ["export.download", "anonymous", "success"],
            ["export.download", "anonymous", "denied"],
        ])
        st, v, _ = self.admin.get("/api/v1/audit/verify")
        self.assertTrue(v["valid"], v)

    def test_four_eyes(self):
        job, _ = self.make_job("confidential")
        # The admin is a member of no team but sees every job.
        st, req, _ = self.request(self.admin, job)
        self.assertEqual(st, 201, req)
        self.assertEqual(req["state"], "pending")
        eid = req["id"]
        err = self.assert_error(self.admin.post("/api/v1/exports/%s/approve" % eid, {}), 403,
                                "permission_denied")
        self.assertIn("another admin", err["message"])
        st, got, _ = self.admin.get("/api/v1/exports/" + eid)
        self.assertEqual(got["state"], "pending")
        st, ok, _ = self.adm2.post("/api/v1/exports/%s/approve" % eid, {})
        self.assertEqual(st, 200, ok)
        self.assertEqual(ok["decided_by"], "admin2")
        self.assertEqual(self.audit("export:" + eid), [
            ["export.request", "user:admin", "success"],
            ["export.approve", "user:admin", "denied"],
            ["export.approve", "user:admin2", "success"],
        ])

    def test_deny(self):
        job, _ = self.make_job("secret")
        st, req, _ = self.request(self.mem, job)
        eid = req["id"]
        st, d, _ = self.admin.post("/api/v1/exports/%s/deny" % eid, {"note": "not cleared"})
        self.assertEqual(st, 200, d)
        self.assertEqual((d["state"], d["note"], d["decided_by"]),
                         ("denied", "not cleared", "admin"))
        self.assertNotIn("download_url", d)
        self.assert_error(self.adm2.post("/api/v1/exports/%s/approve" % eid, {}), 409, "conflict")
        self.assert_error(self.admin.post("/api/v1/exports/%s/deny" % eid, {"bogus": 1}), 400,
                          "invalid_argument", "bogus")
        self.assertEqual(self.audit("export:" + eid), [
            ["export.request", "user:mem", "success"],
            ["export.deny", "user:admin", "success"],
        ])

    def test_expired_link(self):
        job, _ = self.make_job("secret")
        eid = self.request(self.mem, job)[1]["id"]
        st, ok, _ = self.adm2.post("/api/v1/exports/%s/approve" % eid, {})
        self.assertEqual(st, 200, ok)
        self.db.sql("UPDATE export_requests SET link_expires_at = now() - interval '1 second' "
                    "WHERE id = %s" % eid)
        st, got, _ = self.mem.get("/api/v1/exports/" + eid)
        self.assertEqual(got["state"], "expired")
        st, lst, _ = self.mem.get("/api/v1/exports?state=expired")
        self.assertIn(eid, [e["id"] for e in lst["exports"]])
        st, body, _ = self.mem.get(ok["download_url"])
        self.assertEqual(st, 410, body)
        self.assertEqual(body["error"]["code"], "gone")
        self.assertIn("expired", body["error"]["message"])
        self.assertEqual(self.db.sql("SELECT state FROM export_requests WHERE id = %s" % eid),
                         [["expired"]])
        self.assertEqual(self.audit("export:" + eid), [
            ["export.request", "user:mem", "success"],
            ["export.approve", "user:admin2", "success"],
            ["export.expire", "system", "success"],
            ["export.download", "anonymous", "denied"],
        ])

    def test_path_policy(self):
        job, out = self.make_job("internal", {"model.pt": b"ok", "sub/a.bin": b"a"})
        with open(os.path.join(OUTSIDE, "passwd"), "wb") as f:
            f.write(b"root:x:0:0")
        os.symlink(os.path.join(OUTSIDE, "passwd"), os.path.join(out, "link_out"))
        os.symlink(OUTSIDE, os.path.join(out, "dir_out"))
        os.mkfifo(os.path.join(out, "pipe"))
        before = int(self.db.sql("SELECT count(*) FROM audit_events WHERE action = "
                                 "'policy.violation'")[0][0])
        for path in ("../../../etc/passwd", "sub/../../x", "link_out", "dir_out/passwd", "sub",
                     "pipe", "bad\x01name"):
            err = self.assert_error(self.request(self.mem, job, path), 403, "policy_violation",
                                    "path")
            self.assertNotIn(OUTSIDE, err["message"] + err.get("detail", ""))
        after = int(self.db.sql("SELECT count(*) FROM audit_events WHERE action = "
                                "'policy.violation'")[0][0])
        self.assertEqual(after - before, 7)
        row = self.db.sql("SELECT actor, target, outcome, details::json->>'what' FROM "
                          "audit_events WHERE action = 'policy.violation' ORDER BY id DESC "
                          "LIMIT 1")[0]
        self.assertEqual(row, ["user:mem", "job:" + job, "denied", "export"])
        self.assert_error(self.request(self.mem, job, "/etc/passwd"), 400, "invalid_argument",
                          "path")
        self.assert_error(self.request(self.mem, job, "missing.pt"), 404, "not_found", "path")
        self.assert_error(self.mem.post("/api/v1/jobs/%s/exports" % job, {"path": "model.pt"}),
                          400, "invalid_argument", "reason")
        self.assertEqual(self.db.sql("SELECT count(*) FROM export_requests WHERE job_id = %s"
                                     % job), [["0"]])
        # A link that was fine at approval but points out at download time.
        st, req, _ = self.request(self.mem, job, "sub/a.bin")
        self.assertEqual(st, 201, req)
        shutil.rmtree(os.path.join(out, "sub"))
        os.symlink(OUTSIDE, os.path.join(out, "sub"))
        with open(os.path.join(OUTSIDE, "a.bin"), "wb") as f:
            f.write(b"outside")
        st, body, _ = self.mem.get(req["download_url"])
        self.assertEqual(st, 403, body)
        self.assertEqual(body["error"]["code"], "policy_violation")
        # The link was not used up by the refusal.
        os.unlink(os.path.join(out, "sub"))
        os.makedirs(os.path.join(out, "sub"))
        with open(os.path.join(out, "sub", "a.bin"), "wb") as f:
            f.write(b"inside")
        st, data, _ = self.download(req["download_url"])
        self.assertEqual((st, data), (200, b"inside"))

    def test_public_job_is_approved_at_once(self):
        job, _ = self.make_job("public", {"model.pt": b"public weights"})
        st, req, _ = self.request(self.mem, job)
        self.assertEqual(st, 201, req)
        self.assertEqual(req["state"], "approved")
        self.assertEqual(req["decided_by"], "system")
        self.assertIsNone(req["decided_by_id"])
        st, data, _ = self.download(req["download_url"])
        self.assertEqual((st, data), (200, b"public weights"))
        self.assertEqual(self.audit("export:" + req["id"]), [
            ["export.request", "user:mem", "success"],
            ["export.approve", "system", "success"],
            ["export.download", "anonymous", "success"],
        ])
        # Internal too.
        job2, _ = self.make_job("internal")
        st, req2, _ = self.request(self.mem, job2)
        self.assertEqual((st, req2["state"]), (201, "approved"))

    def test_visibility_and_listing(self):
        job, _ = self.make_job("secret")
        eid = self.request(self.mem, job)[1]["id"]
        # Another team's member sees neither the job's outputs nor the request.
        self.assert_error(self.request(self.oth, job), 404, "not_found")
        self.assert_error(self.oth.get("/api/v1/exports/" + eid), 404, "not_found")
        self.assertNotIn(eid, [e["id"] for e in self.oth.get("/api/v1/exports")[1]["exports"]])
        # Auditors read everything and request nothing.
        self.assertEqual(self.aud.get("/api/v1/exports/" + eid)[0], 200)
        self.assert_error(self.request(self.aud, job), 403, "permission_denied")
        # Lists: own for members, all for admins; newest first; filters; pages.
        st, mine, _ = self.mem.get("/api/v1/exports?state=pending")
        self.assertEqual(st, 200, mine)
        self.assertIn(eid, [e["id"] for e in mine["exports"]])
        self.assertTrue(all(e["requested_by"] == "mem" for e in mine["exports"]))
        self.assertTrue(all(e["state"] == "pending" for e in mine["exports"]))
        st, page, _ = self.admin.get("/api/v1/exports?limit=1")
        self.assertEqual(len(page["exports"]), 1)
        self.assertTrue(page["next_cursor"])
        st, page2, _ = self.admin.get("/api/v1/exports?limit=1&cursor=" + page["next_cursor"])
        self.assertLess(int(page2["exports"][0]["id"]), int(page["exports"][0]["id"]))
        st, byjob, _ = self.admin.get("/api/v1/exports?job=" + job)
        self.assertEqual([e["id"] for e in byjob["exports"]], [eid])
        self.assert_error(self.admin.get("/api/v1/exports?state=bogus"), 400, "invalid_argument",
                          "state")
        self.assert_error(self.admin.get("/api/v1/exports/999999"), 404, "not_found")
        # Unknown and malformed links.
        self.assert_error(self.mem.get("/api/v1/exports/download/tyx_" + "A" * 43), 404,
                          "not_found")
        self.assert_error(self.mem.get("/api/v1/exports/download/bogus"), 404, "not_found")


if __name__ == "__main__":
    harness.main()
