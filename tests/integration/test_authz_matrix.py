"""Every route of server/api/routes.c against every kind of caller: anonymous,
a member of the job's team, a member of another team, an auditor, an admin.
The test fails when a route is added without a row here."""
import atexit
import os
import re
import shutil
import sys
import tempfile
import uuid

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Client, ServerTest, wait_for  # noqa: E402

CALLERS = ("anon", "member", "other", "auditor", "admin")
# Job outputs live under the server's storage root (exports rows).
STORAGE = tempfile.mkdtemp(prefix="ty-matrix-storage-")
atexit.register(shutil.rmtree, STORAGE, True)


def routes_in_source():
    with open(os.path.join(harness.SRC, "server", "api", "routes.c")) as f:
        src = f.read()
    return set(re.findall(r'R\("([A-Z]+)", "([^"]+)"', src))


# Where the key of each kind of audit target is found: (table, column). The
# "key" column of the document's table must agree (name or id).
TARGET_KEYS = {"user": ("users", "username"), "node": ("nodes", "name"),
               "team": ("teams", "name"), "site": ("sites", "name"),
               "dataset": ("datasets", "name"), "job": ("jobs", "id"),
               "token": ("api_tokens", "id"), "join_token": ("join_tokens", "id"),
               "webhook": ("webhooks", "id"), "export": ("export_requests", "id"),
               "model": ("models", "name"), "deployment": ("deployments", "name"),
               "serve_key": ("serve_keys", "id")}


def documented_targets():
    """The "Targets" table of docs/audit-export.md: (target, key, pattern,
    actions) per row, so that the document and this test cannot drift."""
    with open(os.path.join(harness.SRC, "docs", "audit-export.md")) as f:
        text = f.read()
    section = text.split("\n## Targets\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[2].startswith("`"):
            continue  # prose, the header and the rule under it
        actions = set(re.findall(r"`([a-z_]+(?:\.[a-z_]+)+)`", cells[3]))
        rows.append((cells[0].strip("`"), cells[1], re.compile(cells[2].strip("`")), actions))
    return rows


class AuthzMatrixTest(ServerTest):
    # The matrix's node sends no heartbeats: keep it from being declared lost.
    server_args = ("--node-timeout-s", "3600", "--storage-root", STORAGE,
                   "--templates-dir", os.path.join(harness.SRC, "templates"),
                   "--examples-dir", os.path.abspath(os.path.join(harness.SRC, "examples")),
                   # Audit retention on, so that an admin's run is answered 200.
                   "--audit-retention-days", "180")
    def test_matrix(self):
        st, alpha, _ = self.admin.post("/api/v1/teams", {"name": "alpha"})
        st, beta, _ = self.admin.post("/api/v1/teams", {"name": "beta"})
        member_u, member_c = self.make_user("mem", teams=[alpha])
        other_u, other_c = self.make_user("oth", teams=[beta])
        aud_u, aud_c = self.make_user("aud", role="auditor")
        clients = {
            "anon": Client(self.server.url),
            "member": self.token_client(member_c),
            "other": self.token_client(other_c),
            "auditor": self.token_client(aud_c),
            "admin": self.token_client(self.admin),
        }
        st, job, _ = clients["member"].post("/api/v1/jobs", self.job_spec("alpha"))
        self.assertEqual(st, 201, job)
        spare_u, _ = self.make_user("spare", teams=[])

        def uniq():
            return "n" + uuid.uuid4().hex[:8]

        def fresh_job(_caller):
            st, j, _ = clients["member"].post("/api/v1/jobs", self.job_spec("alpha"))
            return "/api/v1/jobs/%s/cancel" % j["id"], None

        def forecast_of_j(_caller):
            # J waits (the node has no GPUs); the leader forecasts it within a pass or two.
            path = "/api/v1/jobs/%s/forecast" % J
            wait_for(lambda: clients["admin"].get(path)[0] == 200, timeout=30,
                     what="a forecast of job %s" % J)
            return path, None

        def fresh_member_token(_caller):
            st, t, _ = clients["member"].post("/api/v1/tokens", {"name": "x"})
            return "/api/v1/tokens/" + t["id"], None

        def fresh_join_token(_caller):
            st, t, _ = clients["admin"].post("/api/v1/nodes/join-tokens", {"uses": 1})
            return "/api/v1/nodes/join-tokens/" + t["id"], None

        J, A, B = job["id"], alpha["id"], beta["id"]
        U = spare_u["id"]
        # A node: joined with a join token, registered with its credential.
        st, jt, _ = clients["admin"].post("/api/v1/nodes/join-tokens", {"uses": 1})
        st, joined, _ = clients["anon"].post("/api/v1/agent/join", {"join_token": jt["token"],
                                                                    "name": "matrix-node"})
        self.assertEqual(st, 201, joined)
        node = Client(self.server.url, token=joined["credential"])
        st, reg, _ = node.post("/api/v1/agent/register", {"gpus": []})
        self.assertEqual(st, 200, reg)
        N = joined["node_id"]
        # A node credential opens only the agent routes; user tokens never do.
        self.assert_error(node.get("/api/v1/me"), 401)
        self.assert_error(node.get("/api/v1/jobs"), 401)
        self.assertEqual(node.post("/api/v1/agent/heartbeat", {"gpus": []})[0], 200)
        st, hook, _ = clients["member"].post("/api/v1/webhooks", {"team": "alpha",
                                                                  "url": "http://127.0.0.1:9/h"})
        self.assertEqual(st, 201, hook)

        # Gateway keys: of the deployment "mdep" of team alpha (made below).
        def fresh_serve_key(_caller):
            st, k, _ = clients["member"].post("/api/v1/deployments/mdep/keys", {"name": "k"})
            return "/api/v1/deployments/mdep/keys/" + k["id"], None

        # Exports: J is internal (approved at once), S secret (waits for an admin).
        st, sjob, _ = clients["member"].post("/api/v1/jobs", self.job_spec("alpha"))
        S = sjob["id"]
        self.db.sql("UPDATE jobs SET classification = 'secret' WHERE id = %s" % S)
        for jid in (J, S):
            os.makedirs(os.path.join(STORAGE, "jobs", jid))
            with open(os.path.join(STORAGE, "jobs", jid, "model.pt"), "wb") as f:
                f.write(b"weights")
        export_body = {"path": "model.pt", "reason": "matrix"}
        st, pending, _ = clients["member"].post("/api/v1/jobs/%s/exports" % S, export_body)
        self.assertEqual(st, 201, pending)

        def fresh_export(action):
            def make(_caller):
                st, e, _ = clients["member"].post("/api/v1/jobs/%s/exports" % S, export_body)
                return "/api/v1/exports/%s/%s" % (e["id"], action), None
            return make

        def fresh_link(_caller):
            st, e, _ = clients["member"].post("/api/v1/jobs/%s/exports" % J, export_body)
            return e["download_url"], None

        # Models: a job of a serving template, marked SUCCEEDED, with an output
        # file; its first version is registered here, each row adds more.
        st, tjob, _ = clients["member"].post("/api/v1/jobs", {"template": "ddp-mlp-demo",
                                                              "team": "alpha"})
        self.assertEqual(st, 201, tjob)
        T = tjob["id"]
        self.db.sql("UPDATE jobs SET state = 'SUCCEEDED' WHERE id = %s" % T)
        os.makedirs(os.path.join(STORAGE, "jobs", T))
        with open(os.path.join(STORAGE, "jobs", T, "model.pt"), "wb") as f:
            f.write(b"weights")
        st, mv, _ = clients["member"].post("/api/v1/models/mmodel/versions", {"job_id": T})
        self.assertEqual(st, 201, mv)

        def fresh_alias(_caller):
            name = uniq()
            st, a, _ = clients["member"].request("PUT", "/api/v1/models/mmodel/aliases/" + name,
                                                 body={"version": 1})
            return "/api/v1/models/mmodel/aliases/" + name, None

        # Policy: a site and a dataset of alpha to read, fresh ones to delete.
        st, mside, _ = clients["admin"].post("/api/v1/sites", {"name": "mside",
                                                               "storage_roots": ["/srv/mside"]})
        self.assertEqual(st, 201, mside)
        ds_uri = os.path.join(STORAGE, "ds")
        st, mset, _ = clients["admin"].post("/api/v1/datasets", {"name": "mset", "uri": ds_uri,
                                                                 "team": "alpha"})
        self.assertEqual(st, 201, mset)

        def fresh_site(_caller):
            name = uniq()
            st, s, _ = clients["admin"].post("/api/v1/sites", {"name": name})
            return "/api/v1/sites/" + name, None

        def fresh_dataset(_caller):
            name = uniq()
            st, d, _ = clients["admin"].post("/api/v1/datasets", {"name": name, "uri": ds_uri,
                                                                  "team": "alpha"})
            return "/api/v1/datasets/" + name, None

        # Deployments: a model of alpha with one version (as the registry
        # records it), served by deployments without replicas (no GPUs here).
        self.db.sql("INSERT INTO models (name, team_id, site_id, created_by) SELECT 'mm', %s, id, "
                    "'user:admin' FROM sites WHERE name = 'default'" % A)
        self.db.sql("INSERT INTO model_versions (model_id, version, site_id, source_kind, path, "
                    "serve_kind, serve_script, manifest, manifest_sha256, lineage_complete, "
                    "created_by) SELECT id, 1, site_id, 'output', '%s', 'echo', 'sleep_rank.py', "
                    "'[]', '%s', true, 'user:admin' FROM models WHERE name = 'mm'"
                    % (STORAGE, "0" * 64))
        self.db.sql("INSERT INTO model_versions (model_id, version, site_id, source_kind, path, "
                    "serve_kind, serve_script, manifest, manifest_sha256, lineage_complete, "
                    "created_by) SELECT model_id, 2, site_id, source_kind, path, serve_kind, "
                    "serve_script, manifest, manifest_sha256, true, created_by FROM "
                    "model_versions WHERE version = 1 AND model_id = (SELECT id FROM models "
                    "WHERE name = 'mm')")

        def dep_body():
            return {"name": uniq(), "model": "mm", "version": 1, "replicas": 0,
                    "min_replicas": 0}
        st, mdep, _ = clients["member"].post("/api/v1/deployments", dict(dep_body(), name="mdep"))
        self.assertEqual(st, 201, mdep)

        def fresh_dep(action):
            def make(_caller):
                st, d, _ = clients["admin"].post("/api/v1/deployments", dep_body())
                if action == "start":
                    clients["admin"].post("/api/v1/deployments/%s/stop" % d["name"], {})
                return "/api/v1/deployments/%s/%s" % (d["name"], action), {}
            return make

        def fresh_canary(action):
            """A deployment (with a canary of version 2 for promote and
            rollback) and the route's body."""
            def make(_caller):
                st, d, _ = clients["admin"].post("/api/v1/deployments", dep_body())
                canary = {"version": 2, "weight": 10}
                if action == "canary":
                    return "/api/v1/deployments/%s/canary" % d["name"], canary
                clients["admin"].post("/api/v1/deployments/%s/canary" % d["name"], canary)
                return "/api/v1/deployments/%s/%s" % (d["name"], action), {}
            return make

        def fresh_hook(_caller):
            st, h, _ = clients["member"].post("/api/v1/webhooks", {"team": "alpha",
                                                                   "url": "http://127.0.0.1:9/h"})
            return "/api/v1/webhooks/" + h["id"], None
        rows = [
            ("GET", "/healthz", "/healthz", None, [200, 200, 200, 200, 200]),
            ("GET", "/readyz", "/readyz", None, [200, 200, 200, 200, 200]),
            # No metrics token nor listener here: metrics are off for everyone.
            ("GET", "/metrics", "/metrics", None, [404] * 5),
            # The API's description is public; no api_docs_dir here: no page.
            ("GET", "/api/v1/openapi.json", "/api/v1/openapi.json", None, [200] * 5),
            ("GET", "/api/v1/docs", "/api/v1/docs", None, [404] * 5),
            ("GET", "/api/v1/docs/{file}", "/api/v1/docs/index.html", None, [404] * 5),
            # Read-only for every signed-in user: a plan, nothing stored.
            ("POST", "/api/v1/advisor", "/api/v1/advisor",
             {"model": {"name": "gpt2"}, "global_batch": 8,
              "allocation": {"gpus": 1, "gpus_per_node": 1, "gpu_memory_bytes": 85899345920,
                             "compute_capability": "8.0"}}, [401, 200, 200, 200, 200]),
            ("GET", "/api/v1/agent/assignments", "/api/v1/agent/assignments", None, [401] * 5),
            ("POST", "/api/v1/agent/attempts/{id}/exit", "/api/v1/agent/attempts/1/exit",
             {"ranks": []}, [401] * 5),
            ("POST", "/api/v1/agent/attempts/{id}/output", "/api/v1/agent/attempts/1/output",
             {}, [401] * 5),
            ("POST", "/api/v1/agent/attempts/{id}/started", "/api/v1/agent/attempts/1/started",
             {}, [401] * 5),
            ("POST", "/api/v1/agent/heartbeat", "/api/v1/agent/heartbeat", {}, [401] * 5),
            ("POST", "/api/v1/agent/register", "/api/v1/agent/register", {}, [401] * 5),
            ("POST", "/api/v1/agent/join", "/api/v1/agent/join",
             {"join_token": "tyj_not_a_token", "name": "intruder"}, [401] * 5),
            ("GET", "/api/v1/audit/checkpoints", "/api/v1/audit/checkpoints", None,
             [401, 403, 403, 200, 200]),
            ("GET", "/api/v1/audit/events", "/api/v1/audit/events", None, [401, 403, 403, 200, 200]),
            ("GET", "/api/v1/audit/export", "/api/v1/audit/export?to=5", None,
             [401, 403, 403, 200, 200]),
            ("GET", "/api/v1/audit/public-key", "/api/v1/audit/public-key", None,
             [401, 403, 403, 200, 200]),
            ("POST", "/api/v1/audit/retention", "/api/v1/audit/retention", None,
             [401, 403, 403, 403, 200]),
            ("GET", "/api/v1/audit/verify", "/api/v1/audit/verify", None, [401, 403, 403, 200, 200]),
            ("POST", "/api/v1/auth/login", "/api/v1/auth/login",
             {"username": "ghost", "password": "not-a-password"}, [401, 401, 401, 401, 401]),
            ("POST", "/api/v1/auth/logout", "/api/v1/auth/logout", None, [401, 400, 400, 400, 400]),
            ("GET", "/api/v1/deployments/{name}/keys", "/api/v1/deployments/mdep/keys", None,
             [401, 200, 404, 404, 200]),
            ("POST", "/api/v1/deployments/{name}/keys", "/api/v1/deployments/mdep/keys",
             {"name": "m"}, [401, 201, 404, 404, 201]),
            ("DELETE", "/api/v1/deployments/{name}/keys/{id}", fresh_serve_key, None,
             [401, 200, 404, 404, 200]),
            ("GET", "/api/v1/deployments/{name}/usage", "/api/v1/deployments/mdep/usage", None,
             [401, 403, 403, 403, 200]),
            ("GET", "/api/v1/deployments/{name}/widget", "/api/v1/deployments/mdep/widget", None,
             [401, 200, 404, 404, 200]),
            ("PUT", "/api/v1/deployments/{name}/widget", "/api/v1/deployments/mdep/widget",
             {"enabled": False}, [401, 200, 404, 404, 200]),
            # The public chat widget: anyone, but mdep's widget is not enabled.
            ("GET", "/chat/{name}", "/chat/mdep", None, [404, 404, 404, 404, 404]),
            ("GET", "/chat/{name}/widget.js", "/chat/mdep/widget.js", None,
             [404, 404, 404, 404, 404]),
            ("GET", "/chat/{name}/config", "/chat/mdep/config", None, [404, 404, 404, 404, 404]),
            ("POST", "/chat/{name}/handoff", "/chat/mdep/handoff",
             {"messages": [{"role": "user", "content": "人工"}]}, [404, 404, 404, 404, 404]),
            ("GET", "/api/v1/datasets", "/api/v1/datasets", None, [401, 200, 200, 200, 200]),
            ("POST", "/api/v1/datasets", "/api/v1/datasets",
             lambda: {"name": uniq(), "uri": ds_uri, "team": "alpha"}, [401, 201, 403, 403, 201]),
            ("GET", "/api/v1/datasets/{name}", "/api/v1/datasets/mset", None,
             [401, 200, 404, 200, 200]),
            ("DELETE", "/api/v1/datasets/{name}", fresh_dataset, None, [401, 200, 404, 403, 200]),
            ("GET", "/api/v1/deployments", "/api/v1/deployments", None, [401, 200, 200, 200, 200]),
            ("POST", "/api/v1/deployments", "/api/v1/deployments", dep_body,
             [401, 201, 404, 403, 201]),
            ("GET", "/api/v1/deployments/{name}", "/api/v1/deployments/mdep", None,
             [401, 200, 404, 200, 200]),
            ("GET", "/api/v1/deployments/{name}/stats", "/api/v1/deployments/mdep/stats", None,
             [401, 200, 404, 200, 200]),
            ("PATCH", "/api/v1/deployments/{name}", "/api/v1/deployments/mdep", {"idle_s": 5},
             [401, 200, 404, 403, 200]),
            ("POST", "/api/v1/deployments/{name}/start", fresh_dep("start"), None,
             [401, 200, 404, 403, 200]),
            ("POST", "/api/v1/deployments/{name}/stop", fresh_dep("stop"), None,
             [401, 200, 404, 403, 200]),
            ("POST", "/api/v1/deployments/{name}/canary", fresh_canary("canary"), None,
             [401, 200, 404, 403, 200]),
            ("POST", "/api/v1/deployments/{name}/canary/promote", fresh_canary("canary/promote"),
             None, [401, 200, 404, 403, 200]),
            ("POST", "/api/v1/deployments/{name}/rollback", fresh_canary("rollback"), None,
             [401, 200, 404, 403, 200]),
            ("GET", "/api/v1/exports", "/api/v1/exports", None, [401, 200, 200, 200, 200]),
            ("GET", "/api/v1/exports/{id}", "/api/v1/exports/" + pending["id"], None,
             [401, 200, 404, 200, 200]),
            ("POST", "/api/v1/exports/{id}/approve", fresh_export("approve"), None,
             [401, 403, 403, 403, 200]),
            ("POST", "/api/v1/exports/{id}/deny", fresh_export("deny"), None,
             [401, 403, 403, 403, 200]),
            # The token is the credential: anyone holding the link may use it (once).
            ("GET", "/api/v1/exports/download/{token}", fresh_link, None, [200] * 5),
            ("GET", "/api/v1/jobs", "/api/v1/jobs", None, [401, 200, 200, 200, 200]),
            ("POST", "/api/v1/jobs", "/api/v1/jobs", self.job_spec("alpha"), [401, 201, 403, 403, 201]),
            ("GET", "/api/v1/jobs/{id}", "/api/v1/jobs/" + J, None, [401, 200, 404, 200, 200]),
            # Reordering the queue is the admins' (J waits: the node has no GPUs).
            ("PATCH", "/api/v1/jobs/{id}", "/api/v1/jobs/" + J, {"priority": "high"},
             [401, 403, 403, 403, 200]),
            ("POST", "/api/v1/jobs/{id}/cancel", fresh_job, None, [401, 202, 404, 403, 202]),
            ("GET", "/api/v1/jobs/{id}/events", "/api/v1/jobs/%s/events" % J, None, [401, 200, 404, 200, 200]),
            ("GET", "/api/v1/jobs/{id}/forecast", forecast_of_j, None, [401, 200, 404, 200, 200]),
            ("POST", "/api/v1/jobs/{id}/exports", "/api/v1/jobs/%s/exports" % J, export_body,
             [401, 201, 404, 403, 201]),
            ("GET", "/api/v1/jobs/{id}/outputs", "/api/v1/jobs/%s/outputs" % J, None,
             [401, 200, 404, 200, 200]),
            ("GET", "/api/v1/jobs/{id}/logs", "/api/v1/jobs/%s/logs" % J, None, [401, 200, 404, 200, 200]),
            ("GET", "/api/v1/jobs/{id}/logs/download", "/api/v1/jobs/%s/logs/download" % J, None,
             [401, 200, 404, 200, 200]),
            ("GET", "/api/v1/jobs/{id}/metrics", "/api/v1/jobs/%s/metrics" % J, None, [401, 200, 404, 200, 200]),
            ("GET", "/api/v1/jobs/{id}/checkpoints", "/api/v1/jobs/%s/checkpoints" % J, None,
             [401, 200, 404, 200, 200]),
            ("GET", "/api/v1/me", "/api/v1/me", None, [401, 200, 200, 200, 200]),
            # Everyone's own password; a new one too short is refused before any check.
            ("POST", "/api/v1/me/password", "/api/v1/me/password",
             {"current_password": "x", "new_password": "short"}, [401, 400, 400, 400, 400]),
            ("GET", "/api/v1/models", "/api/v1/models", None, [401, 200, 200, 200, 200]),
            ("GET", "/api/v1/models/{name}", "/api/v1/models/mmodel", None,
             [401, 200, 404, 200, 200]),
            ("POST", "/api/v1/models/{name}/versions", "/api/v1/models/mmodel/versions",
             {"job_id": T}, [401, 201, 404, 403, 201]),
            ("GET", "/api/v1/models/{name}/versions/{v}", "/api/v1/models/mmodel/versions/1", None,
             [401, 200, 404, 200, 200]),
            ("PUT", "/api/v1/models/{name}/aliases/{alias}", "/api/v1/models/mmodel/aliases/prod",
             {"version": 1}, [401, 200, 404, 403, 200]),
            ("DELETE", "/api/v1/models/{name}/aliases/{alias}", fresh_alias, None,
             [401, 200, 404, 403, 200]),
            ("GET", "/api/v1/nodes", "/api/v1/nodes", None, [401, 200, 200, 200, 200]),
            ("GET", "/api/v1/overview", "/api/v1/overview", None, [401, 200, 200, 200, 200]),
            ("GET", "/api/v1/nodes/join-tokens", "/api/v1/nodes/join-tokens", None,
             [401, 403, 403, 403, 200]),
            ("POST", "/api/v1/nodes/join-tokens", "/api/v1/nodes/join-tokens", {"uses": 1},
             [401, 403, 403, 403, 201]),
            ("DELETE", "/api/v1/nodes/join-tokens/{id}", fresh_join_token, None,
             [401, 403, 403, 403, 200]),
            ("POST", "/api/v1/nodes/{id}/drain", "/api/v1/nodes/%s/drain" % N, None,
             [401, 403, 403, 403, 200]),
            ("POST", "/api/v1/nodes/{id}/undrain", "/api/v1/nodes/%s/undrain" % N, None,
             [401, 403, 403, 403, 200]),
            ("GET", "/api/v1/policy", "/api/v1/policy", None, [401, 403, 403, 200, 200]),
            ("PATCH", "/api/v1/policy", "/api/v1/policy", {"audit_retention_days": 200},
             [401, 403, 403, 403, 200]),
            ("GET", "/api/v1/queue", "/api/v1/queue", None, [401, 200, 200, 200, 200]),
            # A read that changes nothing: auditors may ask; only the team's members.
            ("POST", "/api/v1/queue/what-if", "/api/v1/queue/what-if",
             {"team": "alpha", "resources": {"gpus": 1}}, [401, 200, 403, 200, 200]),
            ("GET", "/api/v1/sites", "/api/v1/sites", None, [401, 200, 200, 200, 200]),
            ("POST", "/api/v1/sites", "/api/v1/sites",
             lambda: {"name": uniq(), "storage_roots": ["/srv/x"]}, [401, 403, 403, 403, 201]),
            ("GET", "/api/v1/sites/{name}", "/api/v1/sites/default", None,
             [401, 403, 403, 200, 200]),
            ("PATCH", "/api/v1/sites/{name}", "/api/v1/sites/mside", {"networks": ["10.0.0.0/8"]},
             [401, 403, 403, 403, 200]),
            ("DELETE", "/api/v1/sites/{name}", fresh_site, None, [401, 403, 403, 403, 200]),
            ("GET", "/api/v1/teams", "/api/v1/teams", None, [401, 200, 200, 200, 200]),
            ("POST", "/api/v1/teams", "/api/v1/teams", lambda: {"name": uniq()}, [401, 403, 403, 403, 201]),
            ("GET", "/api/v1/teams/{id}", "/api/v1/teams/" + A, None, [401, 200, 404, 200, 200]),
            ("PATCH", "/api/v1/teams/{id}", "/api/v1/teams/" + A, {"gpu_quota": 2}, [401, 403, 403, 403, 200]),
            ("GET", "/api/v1/teams/{id}/members", "/api/v1/teams/%s/members" % A, None, [401, 403, 403, 403, 200]),
            ("PUT", "/api/v1/teams/{id}/members/{user_id}", "/api/v1/teams/%s/members/%s" % (B, U), None,
             [401, 403, 403, 403, 201]),
            ("DELETE", "/api/v1/teams/{id}/members/{user_id}", "/api/v1/teams/%s/members/%s" % (B, U), None,
             [401, 403, 403, 403, 200]),
            ("GET", "/api/v1/templates", "/api/v1/templates", None, [401, 200, 200, 200, 200]),
            ("GET", "/api/v1/templates/{id}", "/api/v1/templates/ddp-mlp-demo", None,
             [401, 200, 200, 200, 200]),
            ("GET", "/api/v1/tokens", "/api/v1/tokens", None, [401, 200, 200, 200, 200]),
            ("POST", "/api/v1/tokens", "/api/v1/tokens", {"name": "m"}, [401, 201, 201, 201, 201]),
            ("DELETE", "/api/v1/tokens/{id}", fresh_member_token, None, [401, 200, 404, 404, 200]),
            ("GET", "/api/v1/users", "/api/v1/users", None, [401, 403, 403, 403, 200]),
            ("POST", "/api/v1/users", "/api/v1/users", lambda: {"username": uniq(), "role": "member"},
             [401, 403, 403, 403, 201]),
            ("GET", "/api/v1/users/{id}", "/api/v1/users/" + U, None, [401, 403, 403, 403, 200]),
            ("PATCH", "/api/v1/users/{id}", "/api/v1/users/" + U, {"display_name": "S"},
             [401, 403, 403, 403, 200]),
            ("GET", "/api/v1/webhooks", "/api/v1/webhooks", None, [401, 200, 200, 200, 200]),
            ("POST", "/api/v1/webhooks", "/api/v1/webhooks",
             {"team": "alpha", "url": "http://127.0.0.1:9/h"}, [401, 201, 404, 403, 201]),
            ("DELETE", "/api/v1/webhooks/{id}", fresh_hook, None, [401, 200, 404, 403, 200]),
            ("GET", "/api/v1/webhooks/{id}/deliveries", "/api/v1/webhooks/%s/deliveries" % hook["id"],
             None, [401, 200, 404, 200, 200]),
            # The gateway: its own keys only, so a user's token or session is
            # no key (docs/serving.md); the OpenAI error shape. Last: each
            # leaves a request record that the seal loop seals into the audit
            # chain at a time of its own, which a refusal checked after them
            # would take for an audit event of its own.
            ("POST", "/v1/chat/completions", "/v1/chat/completions", {"model": "mdep"},
             [401, 401, 401, 401, 401]),
            ("POST", "/v1/completions", "/v1/completions", {"model": "mdep"},
             [401, 401, 401, 401, 401]),
            ("POST", "/v1/embeddings", "/v1/embeddings", {"model": "mdep"},
             [401, 401, 401, 401, 401]),
            ("GET", "/v1/models", "/v1/models", None, [401, 401, 401, 401, 401]),
            ("POST", "/v1/predict", "/v1/predict", {"model": "mdep"}, [401, 401, 401, 401, 401]),
        ]
        covered = {(m, p) for m, p, _, _, _ in rows}
        missing = routes_in_source() - covered
        self.assertFalse(missing, "routes without a row in the matrix: %s" % sorted(missing))
        failures = []
        for method, pattern, path, body, expect in rows:
            for caller, want in zip(CALLERS, expect):
                p, b = path(caller) if callable(path) else (path, body)
                if callable(b):
                    b = b()
                audit_before = self.db.sql("SELECT count(*) FROM audit_events")[0][0]
                st, resp, _ = clients[caller].request(method, p, body=b)
                if st != want:
                    failures.append("%s %s as %s: got %d, want %d (%s)" % (method, pattern, caller,
                                                                          st, want, resp))
                # Refused sign-ins and joins are themselves audited; nothing else is.
                if pattern.startswith("/v1/"):
                    self.assertEqual(resp["error"]["code"], "invalid_api_key", resp)
                elif st in (401, 403) and pattern not in ("/api/v1/auth/login",
                                                          "/api/v1/agent/join"):
                    self.assertEqual(resp["error"]["code"],
                                     "unauthenticated" if st == 401 else "permission_denied")
                    after = self.db.sql("SELECT count(*) FROM audit_events")[0][0]
                    if after != audit_before:
                        failures.append("%s %s as %s: a refused call changed the audit trail"
                                        % (method, pattern, caller))
        failures += self.target_problems()
        # The object a filter names is found under that one name, whoever acted.
        acts = {r[0] for r in self.db.sql("SELECT action FROM audit_events WHERE "
                                          "target = 'node:matrix-node'")}
        for want in ("node.join", "node.register", "node.drain", "node.undrain"):
            if want not in acts:
                failures.append("no %s event has the target node:matrix-node (%s)"
                                % (want, sorted(acts)))
        self.assertFalse(failures, "\n".join(failures))

    def target_problems(self):
        """Every event the walk caused: its action is in the document's table,
        its target matches a pattern documented for that action, and the key
        of a successful event's target is the named object's name or id (a
        pattern alone cannot tell node:7 the name from node:7 the id)."""
        doc = documented_targets()
        problems = []
        self.assertGreaterEqual(len(doc), 13, doc)
        for target, key, _, _ in doc:
            kind = target.split(":")[0]
            if kind in TARGET_KEYS:
                want = "id" if TARGET_KEYS[kind][1] == "id" else "name"
                self.assertEqual(key, want, "docs/audit-export.md: %s is keyed by %s" % (target,
                                                                                        want))
        keys = {kind: {r[0] for r in self.db.sql("SELECT %s FROM %s" % (col, table))}
                for kind, (table, col) in TARGET_KEYS.items()}
        events = self.db.sql("SELECT id, action, target, outcome FROM audit_events ORDER BY id")
        # Deleted objects are gone from their tables; their delete event names them.
        deleted = {t for _, a, t, o in events if a.endswith(".delete") and o == "success"}
        for eid, action, target, outcome in events:
            rows = [r for r in doc if action in r[3]]
            if not rows:
                problems.append("event %s: action %s is not in the targets table" % (eid, action))
            elif not any(pattern.fullmatch(target) for _, _, pattern, _ in rows):
                problems.append("event %s (%s): target %r has none of the forms %s" % (
                    eid, action, target, [r[0] for r in rows]))
            else:
                kind, _, key = target.partition(":")
                if (kind in TARGET_KEYS and outcome == "success" and target not in deleted
                        and key not in keys[kind]):
                    problems.append("event %s (%s): %s names no %s by its %s" % (
                        eid, action, target, kind, TARGET_KEYS[kind][1]))
        return problems


if __name__ == "__main__":
    harness.main()
