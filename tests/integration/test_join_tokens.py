"""Join tokens: listed and revoked by admins, never a licence to take over a
node, and never on a worker's command line.

- GET /nodes/join-tokens lists every token (who made it, when it expires,
  uses, the bound node name, its state) and never its text or hash
- DELETE /nodes/join-tokens/{id} revokes a token (audited); a revoked or
  expired token joins nobody (401), a second revoke is a 409, an unknown id
  a 404
- a join under the name of a node that exists with another token is a 409
  node_name_taken, audited as denied: the node keeps its credential and no
  use of the token is spent
- a token bound to a node name (an admin's deliberate act) joins only as
  that name, and re-joins that node: its old credential is retired
- trainyard nodes join-tokens lists (no text), creates (the text once, on
  the last line) and revokes; a member is refused
- a real trainyard-worker reads its token from a mode 0600 file
  (--join-token-file) and joins: neither its command line nor its
  environment holds the token; a file open to others is refused, and so is
  --join-token on the command line
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import Client, ServerTest, Worker, wait_for  # noqa: E402

PATH = "/api/v1/nodes/join-tokens"


def register(node):
    return node.post("/api/v1/agent/register", {"gpus": []})


class JoinTokensTest(ServerTest):
    def tmpdir(self):
        d = tempfile.mkdtemp(prefix="ty-jt-")
        self.addCleanup(shutil.rmtree, d, True)
        return d

    def token(self, **body):
        st, jt, _ = self.admin.post(PATH, body or {"uses": 1})
        self.assertEqual(st, 201, jt)
        return jt

    def join(self, token, name):
        return Client(self.server.url).post("/api/v1/agent/join", {
            "join_token": token, "name": name, "addr": "127.0.0.1"})

    def joined_node(self, name):
        """A node joined with its own one-use token and registered."""
        st, joined, _ = self.join(self.token()["token"], name)
        self.assertEqual(st, 201, joined)
        node = Client(self.server.url, token=joined["credential"])
        self.assertEqual(register(node)[0], 200)
        return joined, node

    def listed(self, token_id):
        st, body, _ = self.admin.get(PATH)
        self.assertEqual(st, 200, body)
        return next(t for t in body["join_tokens"] if t["id"] == token_id)

    def uses_left(self, token_id):
        return self.db.sql("SELECT uses_left FROM join_tokens WHERE id = %d" % int(token_id))

    def audit(self, action, target):
        return [(r[0], json.loads(r[1]) if r[1] else None) for r in self.db.sql(
            "SELECT outcome, details FROM audit_events WHERE action = '%s' AND target = '%s' "
            "ORDER BY id" % (action, target))]

    def test_list_shows_tokens_without_secrets(self):
        plain = self.token(uses=3, ttl_s=600)
        bound = self.token(node="list-bound")
        st, body, _ = self.admin.get(PATH)
        self.assertEqual(st, 200, body)
        raw = json.dumps(body)
        for t in (plain, bound):
            self.assertNotIn(t["token"], raw)
            h = self.db.sql("SELECT token_hash FROM join_tokens WHERE id = %s" % t["id"])[0][0]
            self.assertNotIn(h, raw)
        got = self.listed(plain["id"])
        self.assertEqual(set(got), {"id", "created_at", "created_by", "expires_at", "uses",
                                    "uses_left", "used", "revoked_at", "node", "state"})
        self.assertEqual((got["created_by"], got["uses"], got["uses_left"], got["used"],
                          got["revoked_at"], got["node"], got["state"]),
                         ("admin", 3, 3, 0, None, None, "active"))
        self.assertEqual(self.listed(bound["id"])["node"], "list-bound")
        self.assertEqual(bound["node"], "list-bound")
        # a bad node name makes nothing
        n = self.db.sql("SELECT count(*) FROM join_tokens")
        st, err, _ = self.admin.post(PATH, {"node": "Bad Name!"})
        self.assertEqual((st, err["error"]["field"]), (400, "node"), err)
        self.assertEqual(self.db.sql("SELECT count(*) FROM join_tokens"), n)

    def test_revoked_token_cannot_join(self):
        jt = self.token(uses=2)
        st, body, _ = self.admin.request("DELETE", PATH + "/" + jt["id"])
        self.assertEqual(st, 200, body)
        self.assertEqual(body["state"], "revoked")
        self.assertIsNotNone(body["revoked_at"])
        self.assertEqual(self.listed(jt["id"])["state"], "revoked")
        st, err, _ = self.join(jt["token"], "revoked-1")
        self.assertEqual(st, 401, err)
        self.assertEqual(err["error"]["field"], "join_token")
        self.assertIn("revoked", err["error"]["message"])
        self.assertEqual(self.db.sql("SELECT count(*) FROM nodes WHERE name = 'revoked-1'"),
                         [["0"]])
        self.assertEqual([o for o, _ in self.audit("node.join_token.revoke",
                                                    "join_token:" + jt["id"])], ["success"])
        # again, unknown, malformed: clear errors, nothing changes
        st, err, _ = self.admin.request("DELETE", PATH + "/" + jt["id"])
        self.assertEqual((st, err["error"]["code"]), (409, "conflict"), err)
        st, err, _ = self.admin.request("DELETE", PATH + "/999999")
        self.assertEqual((st, err["error"]["code"]), (404, "not_found"), err)
        st, err, _ = self.admin.request("DELETE", PATH + "/abc")
        self.assertEqual((st, err["error"]["message"]), (404, "no such join token"), err)
        self.assertEqual(len(self.audit("node.join_token.revoke", "join_token:" + jt["id"])), 1)
        # an expired token joins nobody either
        old = self.token(uses=2)
        self.db.sql("UPDATE join_tokens SET expires_at = now() - interval '1 second' "
                    "WHERE id = %s" % old["id"])
        self.assertEqual(self.listed(old["id"])["state"], "expired")
        st, err, _ = self.join(old["token"], "expired-1")
        self.assertEqual((st, err["error"]["field"]), (401, "join_token"), err)

    def test_second_join_under_existing_name_is_refused(self):
        joined, node = self.joined_node("victim-1")
        other = self.token()
        st, err, _ = self.join(other["token"], "victim-1")
        self.assertEqual(st, 409, err)
        self.assertEqual((err["error"]["code"], err["error"]["field"]), ("node_name_taken", "name"))
        self.assertEqual(register(node)[0], 200, "the first node keeps its credential")
        self.assertEqual(node.post("/api/v1/agent/heartbeat", {"gpus": []})[0], 200)
        self.assertEqual(self.uses_left(other["id"]), [["1"]], "no use spent")
        self.assertEqual([o for o, _ in self.audit("node.join", "node:victim-1")],
                         ["success", "denied"])
        self.assertEqual(self.audit("node.join", "node:victim-1")[1][1]["reason"],
                         "node_name_taken")
        # a node joined but not registered yet is no more free to another token
        st, first, _ = self.join(self.token()["token"], "victim-2")
        self.assertEqual(st, 201, first)
        st, err, _ = self.join(self.token(uses=2)["token"], "victim-2")
        self.assertEqual((st, err["error"]["code"]), (409, "node_name_taken"), err)
        self.assertEqual(register(Client(self.server.url, token=first["credential"]))[0], 200)
        self.assertEqual(self.admin.get("/api/v1/audit/verify")[1]["valid"], True)

    def test_bound_token_rejoins_its_node(self):
        joined, old = self.joined_node("reinstalled-1")
        jt = self.token(node="reinstalled-1")
        st, err, _ = self.join(jt["token"], "elsewhere-1")
        self.assertEqual(st, 401, err)
        self.assertEqual(self.db.sql("SELECT count(*) FROM nodes WHERE name = 'elsewhere-1'"),
                         [["0"]])
        st, again, _ = self.join(jt["token"], "reinstalled-1")
        self.assertEqual(st, 201, again)
        self.assertEqual(again["node_id"], joined["node_id"])
        self.assertEqual(register(old)[0], 401, "the old credential is retired")
        self.assertEqual(register(Client(self.server.url, token=again["credential"]))[0], 200)
        self.assertEqual([(o, (d or {}).get("bound")) for o, d in
                          self.audit("node.join", "node:reinstalled-1")],
                         [("success", False), ("success", True)])
        self.assertEqual(self.listed(jt["id"])["state"], "used_up")

    def test_worker_reads_token_file(self):
        jt = self.token()
        w = Worker(self.server.url, jt["token"], "file-node", gpus=1, token_file=True)
        try:
            wait_for(lambda: any(n["name"] == "file-node" and n["state"] == "ready"
                                 for n in self.admin.get("/api/v1/nodes")[1]["nodes"]),
                     timeout=60, what="the worker to join with its token file")
            with open("/proc/%d/cmdline" % w.proc.pid, "rb") as f:
                argv = f.read()
            self.assertIn(b"--join-token-file", argv)
            self.assertNotIn(jt["token"].encode(), argv)
            with open("/proc/%d/environ" % w.proc.pid, "rb") as f:
                self.assertNotIn(jt["token"].encode(), f.read())
        finally:
            w.stop()

    def cli(self, *args, token):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TRAINYARD_", "LC_"))}
        env.update(LANG="C.UTF-8", TRAINYARD_URL=self.server.url, TRAINYARD_TOKEN=token,
                   HOME=self.tmpdir())
        return subprocess.run([harness.CLI_BIN, "nodes", "join-tokens"] + list(args),
                              capture_output=True, text=True, env=env, timeout=60)

    def test_cli(self):
        admin = self.token_client(self.admin, "jt-cli")
        r = self.cli("create", "--uses", "2", "--node", "cli-node", token=admin.token)
        self.assertEqual(r.returncode, 0, r.stderr)
        secret = r.stdout.splitlines()[-1]
        self.assertTrue(secret.startswith("tyj_"), r.stdout)
        tid = self.db.sql("SELECT id FROM join_tokens WHERE token_hash = "
                          "encode(sha256('%s'::bytea), 'hex')" % secret)[0][0]
        self.assertIn("join token %s created" % tid, r.stdout)
        self.assertEqual(self.listed(tid)["node"], "cli-node")
        r = self.cli("list", token=admin.token)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn(secret, r.stdout)
        row = next(l.split() for l in r.stdout.splitlines() if l.split()[:1] == [tid])
        self.assertEqual(row[-3:], ["0/2", "cli-node", "active"], r.stdout)
        r = self.cli("--json", token=admin.token)
        self.assertIn(tid, [t["id"] for t in json.loads(r.stdout)["join_tokens"]])
        r = self.cli("revoke", tid, token=admin.token)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "join token %s revoked" % tid),
                         r.stderr)
        self.assertEqual(self.listed(tid)["state"], "revoked")
        r = self.cli("revoke", tid, token=admin.token)
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("already revoked", r.stderr)
        r = self.cli("revoke", token=admin.token)
        self.assertEqual(r.returncode, 2, r.stderr)
        r = self.cli("list", "--node", "x", token=admin.token)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.make_user("jt-member")
        member = harness.Client(self.server.url)
        self.assertEqual(member.login("jt-member", "jt-member-password-123")[0], 200)
        r = self.cli("list", token=self.token_client(member, "m").token)
        self.assertEqual(r.returncode, 3, r.stderr)

    def run_worker(self, *args, env=None):
        work = self.tmpdir()
        return subprocess.run([harness.WORKER_BIN, "--server", self.server.url, "--work-dir",
                               work, "--fake-gpus", "1", "--name", "refused-node"] + list(args),
                              capture_output=True, text=True, timeout=60,
                              env=env or dict(os.environ))

    def test_token_file_open_to_others_is_refused(self):
        jt = self.token()
        path = os.path.join(self.tmpdir(), "join-token")
        with open(path, "w") as f:
            f.write(jt["token"] + "\n")
        for mode in (0o644, 0o640):
            os.chmod(path, mode)
            r = self.run_worker("--join-token-file", path)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("chmod 600", r.stderr)
            self.assertNotIn(jt["token"], r.stderr)
        r = self.run_worker("--join-token", jt["token"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--join-token-file", r.stderr)
        self.assertEqual(self.uses_left(jt["id"]), [["1"]])
        self.assertEqual(self.db.sql("SELECT count(*) FROM nodes WHERE name = 'refused-node'"),
                         [["0"]])


if __name__ == "__main__":
    harness.main()
