"""A node whose join answer was lost can join again (migration 016).

The worker retries a join that got no answer; the server may have committed
it, so the retry comes with a used-up one-use token:

- the same name with the same token, before the node registered: 201 with a
  fresh credential, no use of the token spent, the first credential dead,
  audited as node.join with retry true
- once the node registered with its credential, the same retry is a 401
  (audited as a failure), and the node keeps working
- another name with that used-up token is a 401, and creates no node
- a token with uses left is spent as before (retry false)
- a real trainyard-worker whose first join answer never arrives (a proxy
  that lets the join reach the server and cuts the answer) still joins and
  becomes ready
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import crash_util  # noqa: E402
import harness  # noqa: E402
from harness import Client, ServerTest, Worker, wait_for  # noqa: E402


def register(node):
    return node.post("/api/v1/agent/register", {"gpus": []})


class JoinAnswerDropProxy(crash_util.DropProxy):
    """crash_util's proxy, cutting the first answer that hands out a node
    credential: the server committed the join, the worker never hears it."""

    MARK = b'"credential":"tyn_'


class JoinRetryTest(ServerTest):
    def token(self, uses):
        st, jt, _ = self.admin.post("/api/v1/nodes/join-tokens", {"uses": uses})
        self.assertEqual(st, 201, jt)
        return jt["token"]

    def join(self, token, name):
        return Client(self.server.url).post("/api/v1/agent/join", {
            "join_token": token, "name": name, "addr": "127.0.0.1"})

    def joins(self, name):
        return [(r[0], json.loads(r[1]) if r[1] else None) for r in self.db.sql(
            "SELECT outcome, details FROM audit_events WHERE action = 'node.join' AND "
            "target = 'node:%s' ORDER BY id" % name)]

    def test_lost_answer_then_retry(self):
        tok = self.token(1)
        st, first, _ = self.join(tok, "lost-1")
        self.assertEqual(st, 201, first)
        # the answer is "lost": the worker retries with the same token
        st, again, _ = self.join(tok, "lost-1")
        self.assertEqual(st, 201, again)
        self.assertEqual(again["node_id"], first["node_id"])
        self.assertNotEqual(again["credential"], first["credential"])
        self.assertEqual(register(Client(self.server.url, token=first["credential"]))[0], 401)
        node = Client(self.server.url, token=again["credential"])
        self.assertEqual(register(node)[0], 200)
        self.assertEqual(self.db.sql("SELECT uses_left FROM join_tokens WHERE token_hash = "
                                     "encode(sha256('%s'::bytea), 'hex')" % tok), [["0"]])
        # registered: the credential is held, so the token joins nobody now
        st, err, _ = self.join(tok, "lost-1")
        self.assertEqual(st, 401, err)
        self.assertEqual(err["error"]["field"], "join_token")
        self.assertEqual(register(node)[0], 200, "the node keeps working")
        self.assertEqual([(o, (d or {}).get("retry")) for o, d in self.joins("lost-1")],
                         [("success", False), ("success", True), ("failure", None)])

    def test_other_name_and_spare_uses(self):
        tok = self.token(1)
        self.assertEqual(self.join(tok, "lost-2")[0], 201)
        st, err, _ = self.join(tok, "intruder-2")
        self.assertEqual(st, 401, err)
        self.assertEqual(self.db.sql("SELECT count(*) FROM nodes WHERE name = 'intruder-2'"),
                         [["0"]])
        # a token with uses left is spent as before
        tok2 = self.token(2)
        self.assertEqual(self.join(tok2, "lost-3")[0], 201)
        self.assertEqual(self.join(tok2, "lost-3")[0], 201)
        self.assertEqual(self.join(tok2, "lost-3")[0], 201)  # no use left: taken as a retry
        self.assertEqual([d["retry"] for _, d in self.joins("lost-3")], [False, False, True])
        self.assertEqual(self.admin.get("/api/v1/audit/verify")[1]["valid"], True)

    def test_real_worker_whose_join_answer_is_lost(self):
        proxy = JoinAnswerDropProxy(self.server.port)
        w = None
        try:
            w = Worker(proxy.url, self.token(1), "lost-worker", gpus=1)
            wait_for(lambda: any(n["name"] == "lost-worker" and n["state"] == "ready"
                                 for n in self.admin.get("/api/v1/nodes")[1]["nodes"]),
                     timeout=60, what="the worker to join and be ready")
            self.assertTrue(proxy.dropped.is_set(), "the first join's answer was dropped")
            self.assertEqual([d["retry"] for _, d in self.joins("lost-worker")], [False, True])
        finally:
            if w is not None:
                w.stop()
            proxy.close()


if __name__ == "__main__":
    harness.main()
