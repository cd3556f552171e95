"""Data residency: sites, the compliance policy and datasets through the API,
and the policy enforced at submit (server) and at launch (worker).

- sites, policy and datasets: create/read/update/delete, validation that
  names the bad element, who may do what (auditors read, never change),
  every change audited
- every hostile path and URI of tests/data/paths/hostile.txt, given as a
  dataset, output_dir and working_dir, is refused with 403 naming the field;
  no job is written; each refusal is a policy.violation audit event and a
  policy.violation webhook (delivered to a local receiver); the benign ones
  are accepted
- registered datasets in job specs: site and team rules, the job's
  classification, the normalized paths the worker receives
- every symlink fixture of tests/data/paths/symlinks.txt inside the storage
  root is accepted at submit (lexically inside) but refused on the node by a
  real worker: the job fails with the policy reason, audited
- a job of one site never lands on a node of another; a node's site comes
  from its "site" label and an unknown site is refused
"""
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading
import uuid

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Client, ServerTest, Worker, wait_for  # noqa: E402

PATHS = os.path.join(os.path.abspath(harness.SRC), "tests", "data", "paths")
# The roots and network the corpora are written against (test_common_pathpol.c).
CORPUS_ROOTS = ["/data", "/srv/trainyard"]
CORPUS_NETS = ["10.0.0.0/8"]


class Receiver(http.server.BaseHTTPRequestHandler):
    """Collects webhook posts."""
    got = []

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        Receiver.got.append(json.loads(body))
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *a):
        pass


def decode_line(line):
    """The C-style escapes of the corpora (\\xNN, \\\\, \\n, \\t, \\0) as bytes."""
    out = bytearray()
    i = 0
    while i < len(line):
        c = line[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        n = line[i + 1]
        if n == "x":
            out.append(int(line[i + 2:i + 4], 16))
            i += 4
            continue
        out += {"\\": b"\\", "n": b"\n", "t": b"\t", "0": b"\0"}[n]
        i += 2
    return bytes(out)


def corpus(name):
    with open(os.path.join(PATHS, name), encoding="utf-8") as f:
        return [decode_line(line.rstrip("\n")) for line in f if line.rstrip("\n")]


def symlink_fixtures():
    """(link, target, probe) of symlinks.txt."""
    out = []
    with open(os.path.join(PATHS, "symlinks.txt")) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and not line.startswith("#"):
                out.append(tuple(parts))
    return out


def as_json_text(raw):
    """The value as a JSON string if JSON can carry it (valid UTF-8, no NUL)."""
    if b"\0" in raw:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


class PolicyTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix="ty-policy-")
        os.chmod(cls.base, 0o755)
        cls.root = os.path.join(cls.base, "root")         # the default site's storage root
        cls.outside = os.path.join(cls.base, "outside")   # never allowed
        cls.west = os.path.join(cls.base, "west")         # site "west"
        for d in (cls.root, cls.outside, cls.west):
            os.mkdir(d)
        cls.server_args = ("--storage-root", cls.root, "--sched-interval-ms", "200")
        super().setUpClass()
        cls.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=cls.httpd.serve_forever, daemon=True).start()
        cls.hook_url = "http://127.0.0.1:%d/hook" % cls.httpd.server_address[1]
        st, cls.alpha, _ = cls.admin.post("/api/v1/teams", {"name": "alpha"})
        assert st == 201, cls.alpha
        st, cls.beta, _ = cls.admin.post("/api/v1/teams", {"name": "beta"})
        assert st == 201, cls.beta
        st, tok, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 20})
        assert st == 201, tok
        cls.join = tok["token"]
        cls.workers = []

    @classmethod
    def tearDownClass(cls):
        try:
            for w in cls.workers:
                w.stop()
            cls.httpd.shutdown()
        finally:
            super().tearDownClass()
            shutil.rmtree(cls.base, ignore_errors=True)

    def setUp(self):
        if not hasattr(PolicyTest, "ali"):
            _, c = self.make_user("ali", teams=[self.alpha])
            PolicyTest.ali = self.token_client(c)
            _, c = self.make_user("bob", teams=[self.beta])
            PolicyTest.bob = self.token_client(c)
            _, c = self.make_user("aud", role="auditor")
            PolicyTest.aud = self.token_client(c)

    # helpers ---------------------------------------------------------------
    def count(self, sql):
        return int(self.db.sql(sql)[0][0])

    def audit_count(self, action):
        return self.count("SELECT count(*) FROM audit_events WHERE action = '%s'" % action)

    def make_site(self, name, roots=(), nets=()):
        st, s, _ = self.admin.post("/api/v1/sites", {"name": name, "storage_roots": list(roots),
                                                     "networks": list(nets)})
        self.assertEqual(st, 201, s)
        return s

    def add_worker(self, name, root, labels=None, gpus=4):
        w = Worker(self.server.url, self.join, name, gpus=gpus, allowed_root=root, labels=labels)
        PolicyTest.workers.append(w)
        wait_for(lambda: any(n["name"] == name and n["state"] == "ready"
                             for n in self.admin.get("/api/v1/nodes")[1]["nodes"]),
                 what="node %s ready" % name)
        return w

    def default_worker(self):
        if not hasattr(PolicyTest, "node_a"):
            PolicyTest.node_a = self.add_worker("node-a", self.root)
        return PolicyTest.node_a

    def wait_job(self, job_id, states, timeout=60):
        def check():
            st, job, _ = self.admin.get("/api/v1/jobs/" + job_id)
            return job if job["state"] in states else None
        try:
            return wait_for(check, timeout=timeout, what="job %s in %s" % (job_id, states))
        except AssertionError:
            st, job, _ = self.admin.get("/api/v1/jobs/" + job_id)
            raise AssertionError("job %s is %s (%s)\n%s" % (
                job_id, job["state"], job["reason"],
                "\n".join(w.log_tail(20) for w in self.workers)))

    # sites -----------------------------------------------------------------
    def test_1_default_site_gets_the_storage_root(self):
        st, s, _ = self.aud.get("/api/v1/sites/default")
        self.assertEqual(st, 200, s)
        self.assertEqual(s["storage_roots"], [self.root])
        self.assertEqual(s["networks"], [])
        rows = self.db.sql("SELECT actor, outcome FROM audit_events WHERE action = 'site.update' "
                           "AND target = 'site:default'")
        self.assertEqual(rows, [["system", "success"]])
        # members see names only
        st, lst, _ = self.ali.get("/api/v1/sites")
        self.assertEqual(st, 200)
        self.assertIn({"name": "default"}, lst["sites"])
        st, lst, _ = self.aud.get("/api/v1/sites")
        self.assertIn("storage_roots", lst["sites"][0])

    def test_2_sites_crud_and_validation(self):
        before = self.audit_count("site.create")
        s = self.make_site("s-one", ["/srv//one/./a/../b", "/data"], ["10.0.0.0/8", "fd00::/8"])
        self.assertEqual(s["storage_roots"], ["/srv/one/b", "/data"])  # stored normalized
        self.assertEqual(s["networks"], ["10.0.0.0/8", "fd00::/8"])
        self.assertEqual(self.audit_count("site.create"), before + 1)
        self.assert_error(self.admin.post("/api/v1/sites", {"name": "s-one"}), 409)
        bad_roots = ["relative", "/data/%2e%2e/etc", "/data\\\\x", "/", "/..", "//../x",
                     "/data/\u2215etc", "/data/x\u200b", "", "/" + "a" * 300, "/" + "b/" * 2100]
        for r in bad_roots:
            err = self.assert_error(self.admin.post("/api/v1/sites", {
                "name": "s-bad", "storage_roots": ["/ok", r]}), 400, "invalid_argument",
                "storage_roots[1]")
            self.assertTrue(err["message"].startswith("storage_roots[1] must"), err)
        for n in ["10.0.0.0/33", "0.0.0.0/0", "::/0", "evil.com", "10.0.0.1/8/8", "", "10.0.0"]:
            self.assert_error(self.admin.post("/api/v1/sites", {
                "name": "s-bad", "networks": ["10.0.0.0/8", "192.168.0.0/16", n]}), 400,
                "invalid_argument", "networks[2]")
        for body, field in [({"name": "Bad"}, "name"), ({"name": "a/b"}, "name"),
                            ({"name": "x", "storage_roots": "/data"}, "storage_roots"),
                            ({"name": "x", "storage_roots": [1]}, "storage_roots[0]"),
                            ({"name": "x", "colour": 1}, "colour")]:
            self.assert_error(self.admin.post("/api/v1/sites", body), 400, "invalid_argument",
                              field)
        self.assertEqual(self.count("SELECT count(*) FROM sites WHERE name = 's-bad'"), 0)
        # update
        st, s2, _ = self.admin.request("PATCH", "/api/v1/sites/s-one",
                                       {"storage_roots": ["/srv/two"]})
        self.assertEqual(st, 200, s2)
        self.assertEqual(s2["storage_roots"], ["/srv/two"])
        self.assertEqual(s2["networks"], ["10.0.0.0/8", "fd00::/8"])
        self.assert_error(self.admin.request("PATCH", "/api/v1/sites/s-one",
                                             {"storage_roots": ["/a", "b"]}), 400, None,
                          "storage_roots[1]")
        self.assert_error(self.admin.request("PATCH", "/api/v1/sites/nope", {"networks": []}), 404)
        self.assert_error(self.admin.request("PATCH", "/api/v1/sites/s-one", {"name": "x"}), 400)
        st, g, _ = self.aud.get("/api/v1/sites/s-one")
        self.assertEqual(g["storage_roots"], ["/srv/two"])
        self.assert_error(self.ali.get("/api/v1/sites/s-one"), 403)
        self.assert_error(self.aud.get("/api/v1/sites/nope"), 404)
        # auditors and members change nothing
        for c in (self.aud, self.ali):
            self.assert_error(c.post("/api/v1/sites", {"name": "s-x"}), 403, "permission_denied")
            self.assert_error(c.request("PATCH", "/api/v1/sites/s-one", {"networks": []}), 403)
            self.assert_error(c.request("DELETE", "/api/v1/sites/s-one"), 403)
        # delete: not the default site, not while used
        self.assert_error(self.admin.request("DELETE", "/api/v1/sites/default"), 409)
        self.make_site("s-used", ["/srv/used"])
        st, d, _ = self.admin.post("/api/v1/datasets", {"name": "used-set", "uri": "/srv/used/x",
                                                        "site": "s-used", "team": "alpha"})
        self.assertEqual(st, 201, d)
        err = self.assert_error(self.admin.request("DELETE", "/api/v1/sites/s-used"), 409)
        self.assertIn("datasets", err["message"])
        st, _, _ = self.admin.request("DELETE", "/api/v1/datasets/used-set")
        self.assertEqual(st, 200)
        st, j, _ = self.ali.post("/api/v1/jobs", self.job_spec("alpha", site="s-used"))
        self.assertEqual(st, 201, j)
        err = self.assert_error(self.admin.request("DELETE", "/api/v1/sites/s-used"), 409)
        self.assertIn("jobs", err["message"])
        before = self.audit_count("site.delete")
        st, d, _ = self.admin.request("DELETE", "/api/v1/sites/s-one")
        self.assertEqual(st, 200, d)
        self.assertEqual(self.audit_count("site.delete"), before + 1)
        self.assert_error(self.admin.request("DELETE", "/api/v1/sites/s-one"), 404)

    # policy ----------------------------------------------------------------
    def test_3_policy(self):
        st, p, _ = self.aud.get("/api/v1/policy")
        self.assertEqual(st, 200, p)
        self.assertEqual(p["audit_retention_days"], 180)
        self.assertEqual(p["default_classification"], "internal")
        self.assertEqual(p["classifications"], ["public", "internal", "confidential", "secret"])
        self.assert_error(self.ali.get("/api/v1/policy"), 403)
        before = self.audit_count("policy.update")
        for days in (179, 0, -5):
            err = self.assert_error(self.admin.request("PATCH", "/api/v1/policy", {
                "audit_retention_days": days}), 400, "invalid_argument", "audit_retention_days")
            self.assertIn("180", err["message"])
        self.assert_error(self.admin.request("PATCH", "/api/v1/policy", {
            "audit_retention_days": "365"}), 400, None, "audit_retention_days")
        self.assert_error(self.admin.request("PATCH", "/api/v1/policy", {
            "default_classification": "top-secret"}), 400, None, "default_classification")
        self.assert_error(self.aud.request("PATCH", "/api/v1/policy", {
            "audit_retention_days": 365}), 403)
        self.assertEqual(self.audit_count("policy.update"), before)
        st, p, _ = self.admin.request("PATCH", "/api/v1/policy", {"audit_retention_days": 365})
        self.assertEqual(st, 200, p)
        self.assertEqual(p["audit_retention_days"], 365)
        self.assertEqual(self.audit_count("policy.update"), before + 1)
        st, p, _ = self.admin.request("PATCH", "/api/v1/policy", {"audit_retention_days": 180})
        self.assertEqual(p["audit_retention_days"], 180)

    # datasets --------------------------------------------------------------
    def test_4_datasets(self):
        ds_uri = os.path.join(self.root, "ds", "alpha-set")
        before = self.audit_count("dataset.create")
        st, d, _ = self.ali.post("/api/v1/datasets", {"name": "alpha-set", "uri": ds_uri,
                                                      "team": "alpha", "description": "train"})
        self.assertEqual(st, 201, d)
        self.assertEqual((d["site"], d["classification"], d["team"]), ("default", "internal",
                                                                         "alpha"))
        self.assertEqual(self.audit_count("dataset.create"), before + 1)
        self.assert_error(self.ali.post("/api/v1/datasets", {"name": "alpha-set", "uri": ds_uri,
                                                             "team": "alpha"}), 409)
        # other teams and auditors may not register for alpha
        self.assert_error(self.bob.post("/api/v1/datasets", {"name": "b1", "uri": ds_uri,
                                                             "team": "alpha"}), 403,
                          "permission_denied")
        self.assert_error(self.aud.post("/api/v1/datasets", {"name": "b1", "uri": ds_uri,
                                                             "team": "alpha"}), 403)
        for body, field in [({"name": "x"}, "uri"), ({"name": "X Y", "uri": ds_uri}, "name"),
                            ({"name": "x", "uri": ds_uri}, "team"),
                            ({"name": "x", "uri": ds_uri, "team": "alpha",
                              "classification": "top"}, "classification"),
                            ({"name": "x", "uri": ds_uri, "team": "alpha", "site": "nope"},
                             "site"),
                            ({"name": "x", "uri": ds_uri, "team": "nope"}, "team")]:
            self.assert_error(self.ali.post("/api/v1/datasets", body), 400, "invalid_argument",
                              field)
        # a URI outside the site: 403, audited
        viol = self.audit_count("policy.violation")
        for uri in ["/etc/passwd", os.path.join(self.root, "..", "outside"), "relative/x",
                    "http://8.8.8.8/x", "http://10.0.0.1/x", "s3://bucket/x"]:
            err = self.assert_error(self.ali.post("/api/v1/datasets", {
                "name": "bad-set", "uri": uri, "team": "alpha"}), 403, "policy_violation", "uri")
            self.assertTrue(err["message"])
        self.assertEqual(self.audit_count("policy.violation"), viol + 6)
        self.assertEqual(self.count("SELECT count(*) FROM datasets WHERE name = 'bad-set'"), 0)
        row = self.db.sql("SELECT target, outcome, details FROM audit_events WHERE action = "
                          "'policy.violation' ORDER BY id DESC LIMIT 1")[0]
        self.assertEqual(row[:2], ["dataset:bad-set", "denied"])
        self.assertEqual(json.loads(row[2])["field"], "uri")
        # remote URIs on the site's networks are fine
        self.make_site("s-net", ["/srv/net"], ["10.0.0.0/8"])
        st, d, _ = self.ali.post("/api/v1/datasets", {"name": "remote-set", "site": "s-net",
                                                      "uri": "http://10.1.2.3:8080/d",
                                                      "team": "alpha"})
        self.assertEqual(st, 201, d)
        # visibility: members see their teams' datasets and public ones
        st, d, _ = self.bob.post("/api/v1/datasets", {"name": "beta-pub", "uri": ds_uri,
                                                      "team": "beta", "classification": "public"})
        self.assertEqual(st, 201, d)
        st, d, _ = self.bob.post("/api/v1/datasets", {"name": "beta-secret", "uri": ds_uri,
                                                      "team": "beta", "classification": "secret"})
        self.assertEqual(st, 201, d)
        names = lambda c: {x["name"] for x in c.get("/api/v1/datasets?limit=500")[1]["datasets"]}
        self.assertTrue({"alpha-set", "beta-pub"} <= names(self.ali))
        self.assertNotIn("beta-secret", names(self.ali))
        self.assertNotIn("alpha-set", names(self.bob))
        self.assertTrue({"alpha-set", "beta-pub", "beta-secret"} <= names(self.aud))
        self.assert_error(self.ali.get("/api/v1/datasets/beta-secret"), 404)
        st, g, _ = self.ali.get("/api/v1/datasets/beta-pub")
        self.assertEqual(st, 200, g)
        st, g, _ = self.aud.get("/api/v1/datasets/beta-secret")
        self.assertEqual(g["classification"], "secret")
        # paging
        st, p1, _ = self.aud.get("/api/v1/datasets?limit=2")
        self.assertEqual(len(p1["datasets"]), 2)
        st, p2, _ = self.aud.get("/api/v1/datasets?limit=2&cursor=" + p1["next_cursor"])
        self.assertTrue(set(x["id"] for x in p2["datasets"]).isdisjoint(
            x["id"] for x in p1["datasets"]))
        # delete: the owner team or an admin; never auditors
        self.assert_error(self.ali.request("DELETE", "/api/v1/datasets/beta-pub"), 403)
        self.assert_error(self.ali.request("DELETE", "/api/v1/datasets/beta-secret"), 404)
        self.assert_error(self.aud.request("DELETE", "/api/v1/datasets/beta-secret"), 403)
        before = self.audit_count("dataset.delete")
        st, _, _ = self.ali.request("DELETE", "/api/v1/datasets/remote-set")
        self.assertEqual(st, 200)
        self.assertEqual(self.audit_count("dataset.delete"), before + 1)
        self.assert_error(self.ali.request("DELETE", "/api/v1/datasets/remote-set"), 404)

    # submit ----------------------------------------------------------------
    def test_5_hostile_paths_refused_at_submit(self):
        self.make_site("corpus", CORPUS_ROOTS, CORPUS_NETS)
        st, hook, _ = self.ali.post("/api/v1/webhooks", {"team": "alpha", "url": self.hook_url,
                                                         "events": ["policy.violation"]})
        self.assertEqual(st, 201, hook)
        hostile = corpus("hostile.txt")
        self.assertGreaterEqual(len(hostile), 60)
        jobs_before = self.count("SELECT count(*) FROM jobs")
        viol_before = self.audit_count("policy.violation")
        hooks_before = self.count("SELECT count(*) FROM webhook_deliveries WHERE event = "
                                  "'policy.violation'")
        refused_403 = refused_400 = 0
        for raw in hostile:
            text = as_json_text(raw)
            for field in ("datasets", "output_dir", "working_dir"):
                want_field = "datasets[1]" if field == "datasets" else field
                if text is None:
                    # NUL or invalid UTF-8: JSON cannot carry it; the body is refused whole.
                    body = (b'{"name":"h","team":"alpha","command":["/bin/true"],'
                            b'"resources":{"gpus":1},"site":"corpus","' + field.encode() +
                            b'":' + (b'["/data/ok","' if field == "datasets" else b'"') + raw +
                            (b'"]}' if field == "datasets" else b'"}'))
                    st, resp, _ = self.ali.request("POST", "/api/v1/jobs", raw=body)
                    self.assertEqual(st, 400, (raw, resp))
                    refused_400 += 1
                    continue
                value = ["/data/ok", text] if field == "datasets" else text
                spec = self.job_spec("alpha", name="hostile", site="corpus", **{field: value})
                st, resp, _ = self.ali.post("/api/v1/jobs", spec)
                if st == 400 and len(raw) > 4096:
                    refused_400 += 1  # longer than any spec string may be
                    continue
                self.assertEqual(st, 403, (field, raw, resp))
                self.assertEqual(resp["error"]["code"], "policy_violation", resp)
                self.assertEqual(resp["error"]["field"], want_field, (raw, resp))
                self.assertTrue(resp["error"]["message"])
                refused_403 += 1
        self.assertGreaterEqual(refused_403, 3 * 60)
        # nothing of any job was written; every refusal audited and sent
        self.assertEqual(self.count("SELECT count(*) FROM jobs"), jobs_before)
        self.assertEqual(self.audit_count("policy.violation"), viol_before + refused_403)
        self.assertEqual(self.count("SELECT count(*) FROM webhook_deliveries WHERE event = "
                                    "'policy.violation'"), hooks_before + refused_403)
        rows = self.db.sql("SELECT actor, target, outcome, details FROM audit_events WHERE "
                           "action = 'policy.violation' ORDER BY id DESC LIMIT %d" % refused_403)
        for actor, target, outcome, details in rows:
            d = json.loads(details)
            self.assertEqual((actor, target, outcome), ("user:ali", "team:alpha", "denied"))
            self.assertEqual(d["stage"], "submit")
            self.assertIn(d["field"], ("datasets[1]", "output_dir", "working_dir"))
            self.assertTrue(d["reason"])
            self.assertLessEqual(len(d["detail"]), 140)  # escaped and shortened, never raw
            self.assertEqual((d["job_name"], d["team"], d["site"]), ("hostile", "alpha", "corpus"))
        wait_for(lambda: len([p for p in Receiver.got if p["event"] == "policy.violation"])
                 >= refused_403, timeout=120, what="%d policy.violation webhooks" % refused_403)
        p = [p for p in Receiver.got if p["event"] == "policy.violation"][-1]
        self.assertEqual(p["team"], "alpha")
        self.assertEqual(p["job"]["name"], "hostile")
        self.assertIsNone(p["job"]["id"])
        self.assertIn(p["details"]["field"], ("datasets[1]", "output_dir", "working_dir"))
        print("hostile: %d entries, %d refused with 403, %d refused as bad JSON or too long"
              % (len(hostile), refused_403, refused_400))

    def test_6_benign_paths_accepted(self):
        benign = corpus("benign.txt")
        accepted = 0
        for raw in benign:
            text = raw.decode("utf-8")
            local = text.startswith("/") or text.lower().startswith("file:")
            for field in ("datasets", "output_dir", "working_dir") if local else ("datasets",):
                value = [text] if field == "datasets" else text
                st, job, _ = self.ali.post("/api/v1/jobs", self.job_spec(
                    "alpha", name="benign", site="corpus", **{field: value}))
                self.assertEqual(st, 201, (field, text, job))
                self.assertEqual(job["site"], "corpus")
                accepted += 1
        self.assertGreaterEqual(accepted, 60)
        # remote URIs are datasets only: an output_dir must be local
        self.assert_error(self.ali.post("/api/v1/jobs", self.job_spec(
            "alpha", site="corpus", output_dir="http://10.0.0.1/out")), 403, "policy_violation",
            "output_dir")
        # the paths the node gets are normalized
        st, job, _ = self.ali.post("/api/v1/jobs", self.job_spec(
            "alpha", site="corpus", datasets=["/data//a/./b/../c", "http://10.0.0.1/x",
                                              "file:///srv/trainyard/y"],
            working_dir="/data/w/../w2", output_dir="file://localhost/data/out/"))
        self.assertEqual(st, 201, job)
        paths = json.loads(self.db.sql("SELECT paths FROM jobs WHERE id = %s" % job["id"])[0][0])
        self.assertEqual(paths, {"datasets": ["/data/a/c", "/srv/trainyard/y"],
                                 "working_dir": "/data/w2", "output_dir": "/data/out"})
        self.assertEqual(job["spec"]["working_dir"], "/data/w/../w2")  # the spec as given
        self.assert_error(self.ali.post("/api/v1/jobs", self.job_spec("alpha", site="nowhere")),
                          400, "invalid_argument", "site")
        self.assert_error(self.ali.post("/api/v1/jobs", self.job_spec("alpha", site="Bad/x")),
                          400, "invalid_argument", "site")
        # a site without storage roots takes no jobs: nowhere for work and checkpoints
        self.make_site("rootless")
        self.assert_error(self.ali.post("/api/v1/jobs", self.job_spec("alpha", site="rootless")),
                          403, "policy_violation", "site")

    def test_7_registered_datasets_in_jobs(self):
        def submit(client, team, datasets, **over):
            return client.post("/api/v1/jobs", self.job_spec(team, name="reg", datasets=datasets,
                                                             **over))
        # own dataset: allowed, classification from it
        st, job, _ = submit(self.ali, "alpha", ["alpha-set"])
        self.assertEqual(st, 201, job)
        self.assertEqual((job["site"], job["classification"]), ("default", "internal"))
        paths = json.loads(self.db.sql("SELECT paths FROM jobs WHERE id = %s" % job["id"])[0][0])
        self.assertEqual(paths["datasets"], [os.path.join(self.root, "ds", "alpha-set")])
        # another team's public dataset: allowed; its secret one: refused
        st, job, _ = submit(self.ali, "alpha", ["beta-pub", "alpha-set"])
        self.assertEqual(st, 201, job)
        self.assertEqual(job["classification"], "internal")
        st, job, _ = submit(self.ali, "alpha", ["beta-pub"])
        self.assertEqual(job["classification"], "public")
        self.assert_error(submit(self.ali, "alpha", ["alpha-set", "beta-secret"]), 403,
                          "policy_violation", "datasets[1]")
        # admins get no way round the team rule: the data would flow into alpha's job
        self.assert_error(submit(self.admin, "alpha", ["beta-secret"]), 403, "policy_violation",
                          "datasets[0]")
        st, job, _ = submit(self.bob, "beta", ["beta-secret", "beta-pub"])
        self.assertEqual(st, 201, job)
        self.assertEqual(job["classification"], "secret")
        # unknown names and datasets of another site
        self.assert_error(submit(self.ali, "alpha", ["no-such-set"]), 403, "policy_violation",
                          "datasets[0]")
        st, d, _ = self.ali.post("/api/v1/datasets", {"name": "west-set", "site": "s-net",
                                                      "uri": "/srv/net/x", "team": "alpha"})
        self.assertEqual(st, 201, d)
        err = self.assert_error(submit(self.ali, "alpha", ["west-set"]), 403, "policy_violation",
                                "datasets[0]")
        self.assertIn("s-net", err["message"])
        st, job, _ = submit(self.ali, "alpha", ["west-set"], site="s-net")
        self.assertEqual(st, 201, job)
        # a registered URI is checked again: the site's roots may have changed
        st, _, _ = self.admin.request("PATCH", "/api/v1/sites/s-net", {"storage_roots": ["/srv/o"]})
        self.assertEqual(st, 200)
        self.assert_error(submit(self.ali, "alpha", ["west-set"], site="s-net"), 403,
                          "policy_violation", "datasets[0]")
        # plain paths take the policy's default classification
        st, p, _ = self.admin.request("PATCH", "/api/v1/policy",
                                      {"default_classification": "confidential"})
        self.assertEqual(st, 200, p)
        st, job, _ = submit(self.ali, "alpha", [os.path.join(self.root, "plain")])
        self.assertEqual(job["classification"], "confidential")
        st, job, _ = submit(self.ali, "alpha", [])
        self.assertEqual(job["classification"], "confidential")
        st, job, _ = submit(self.ali, "alpha", ["beta-pub"])
        self.assertEqual(job["classification"], "public")
        self.admin.request("PATCH", "/api/v1/policy", {"default_classification": "internal"})
        # the job's list row shows site and classification too
        st, lst, _ = self.ali.get("/api/v1/jobs?limit=1")
        self.assertIn("site", lst["jobs"][0])
        self.assertIn("classification", lst["jobs"][0])

    # the node --------------------------------------------------------------
    def test_8_symlinks_refused_on_the_node(self):
        self.default_worker()
        fixtures = symlink_fixtures()
        self.assertGreaterEqual(len(fixtures), 20)
        for link, target, _ in fixtures:
            path = os.path.join(self.root, link)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.symlink(target.replace("@OUT@", self.outside), path)
        cases = []
        for _, _, probe in fixtures:
            cases.append(("working_dir", {"working_dir": os.path.join(self.root, probe)},
                          "work_dir"))
        # The worker checks output_dir itself (it makes the folder for the
        # ranks' TRAINYARD_OUTPUT_DIR) before the checkpoint dir below it.
        cases.append(("output_dir", {"output_dir": os.path.join(self.root, "escape_abs")},
                      "output_dir"))
        cases.append(("datasets", {"datasets": [os.path.join(self.root, "ok-data"),
                                                os.path.join(self.root, "etc_below")]},
                      "datasets[1]"))
        cases.append(("datasets", {"datasets": [os.path.join(self.root, "chain1/data")]},
                      "datasets[0]"))
        ids = []
        viol_before = self.audit_count("policy.violation")
        for what, over, node_field in cases:
            st, job, _ = self.ali.post("/api/v1/jobs", self.job_spec(
                "alpha", name="sl-" + what, max_restarts=0, **over))
            self.assertEqual(st, 201, (over, job))  # lexically inside the root
            ids.append((job["id"], over, node_field))
        st, ok, _ = self.ali.post("/api/v1/jobs", self.job_spec(
            "alpha", name="control", working_dir=os.path.join(self.root, "ok-dir"),
            datasets=[os.path.join(self.root, "ok-data")]))
        self.assertEqual(st, 201, ok)
        for jid, over, node_field in ids:
            job = self.wait_job(jid, ("SUCCEEDED", "FAILED"))
            self.assertEqual(job["state"], "FAILED", (over, job))
            self.assertIn("policy violation: " + node_field, job["reason"], (over, job))
        self.assertEqual(self.wait_job(ok["id"], ("SUCCEEDED", "FAILED"))["state"], "SUCCEEDED")
        # nothing was created through the links
        self.assertEqual(os.listdir(self.outside), [])
        # each refusal on the node is audited against its job
        rows = [r for r in self.db.sql("SELECT target, actor, outcome, details FROM audit_events "
                                       "WHERE action = 'policy.violation'")
                if json.loads(r[3]).get("stage") == "node"]
        self.assertTrue({"job:" + jid for jid, _, _ in ids} <= {r[0] for r in rows})
        self.assertTrue(all(r[1:3] == ["node:node-a", "denied"] for r in rows), rows)
        self.assertGreaterEqual(self.audit_count("policy.violation") - viol_before, len(ids))

    def test_9_sites_keep_jobs_on_their_nodes(self):
        self.default_worker()
        self.make_site("west", [self.west])
        # a node's site comes from its "site" label; unknown sites are refused
        st, jt, _ = self.admin.post("/api/v1/nodes/join-tokens", {"uses": 2})
        anon = Client(self.server.url)
        self.assert_error(anon.post("/api/v1/agent/join", {
            "join_token": jt["token"], "name": "ghost", "labels": {"site": "atlantis"}}), 400,
            "invalid_argument", "labels.site")
        st, joined, _ = anon.post("/api/v1/agent/join", {"join_token": jt["token"],
                                                          "name": "ghost"})
        self.assertEqual(st, 201, joined)
        ghost = Client(self.server.url, token=joined["credential"])
        self.assert_error(ghost.post("/api/v1/agent/register", {
            "gpus": [], "labels": {"site": "atlantis"}}), 400, "invalid_argument", "labels.site")
        self.add_worker("west-1", self.west, labels="site=west,rack=w1")
        nodes = {n["name"]: n for n in self.admin.get("/api/v1/nodes")[1]["nodes"]}
        self.assertEqual(nodes["west-1"]["site"], "west")
        self.assertEqual(nodes["node-a"]["site"], "default")
        self.assertNotEqual(nodes["ghost"]["state"], "ready")
        # west jobs on west-1 only, default jobs on node-a only
        jobs = []
        for i in range(3):
            for site, node in (("west", "west-1"), ("default", "node-a")):
                st, job, _ = self.ali.post("/api/v1/jobs", self.job_spec(
                    "alpha", name="place-%s-%d" % (site, i), site=site,
                    command=["/bin/sh", "-c", "sleep 1"]))
                self.assertEqual(st, 201, job)
                jobs.append((job["id"], node))
        seen = {}

        def all_placed():
            for jid, node in jobs:
                st, job, _ = self.admin.get("/api/v1/jobs/" + jid)
                for a in job.get("allocations") or []:
                    seen.setdefault(jid, set()).add(a["node"])
                if job["state"] in ("FAILED", "CANCELLED"):
                    raise AssertionError("job %s: %s" % (jid, job["reason"]))
                if job["state"] != "SUCCEEDED":
                    return False
            return True
        wait_for(all_placed, timeout=90, what="placement jobs done")
        for jid, node in jobs:
            placed_on = {r[0] for r in self.db.sql(
                "SELECT n.name FROM allocations a JOIN nodes n ON n.id = a.node_id WHERE "
                "a.job_id = %s" % jid)}
            self.assertEqual(placed_on, {node}, jid)
        # a job of a site without nodes waits, although GPUs are free elsewhere
        self.make_site("east", ["/srv/east"])
        st, job, _ = self.ali.post("/api/v1/jobs", self.job_spec("alpha", site="east"))
        self.assertEqual(st, 201, job)
        self.wait_scheduler_pass(self.job_spec("alpha", name="barrier"), client=self.ali)
        st, job, _ = self.admin.get("/api/v1/jobs/" + job["id"])
        self.assertEqual(job["state"], "QUEUED")
        self.assertEqual(self.count("SELECT count(*) FROM allocations WHERE job_id = %s"
                                    % job["id"]), 0)
        self.admin.post("/api/v1/jobs/%s/cancel" % job["id"])
        # a site with nodes cannot be deleted
        err = self.assert_error(self.admin.request("DELETE", "/api/v1/sites/west"), 409)
        self.assertIn("nodes", err["message"])

    def test_zz_audit_chain_intact(self):
        self.assertEqual(harness.verify_chain_rows(harness.db_audit_rows(self.db)), 0)


if __name__ == "__main__":
    harness.main()
