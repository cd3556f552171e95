"""Long-lived requests are capped per user and per address, never a worker's.

The server runs with --stream-max-per-user 3 and --stream-max-per-address 5
(every client of the test calls from 127.0.0.1):

- a member's fourth log follow is refused at once: 429 too_many_streams,
  params {"limit": 3}, a Retry-After header; another member from the same
  address gets two more and is refused past five ({"limit": 5})
- with every user slot of the address taken, a node still joins, and its
  assignments long-poll (counted per node, apart from users and addresses)
  gets through and delivers the job placed on it
- once the member closes its follows, the slots come back: it opens three
  again, and the fourth is refused again (the count is exact)
"""
import http.client
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ServerTest, wait_for  # noqa: E402


class StreamCapsTest(ServerTest):
    server_args = ("--stream-max-per-user", "3", "--stream-max-per-address", "5",
                   "--sched-interval-ms", "200", "--node-timeout-s", "120")

    def token(self, client, name):
        st, body, _ = client.post("/api/v1/tokens", {"name": name})
        self.assertEqual(st, 201, body)
        return body["token"]

    def follow(self, token, jid):
        """A follow of job jid: (connection, None) while open with 200, else
        (None, (status, body, headers))."""
        c = harness.Client(self.server.url)
        conn = http.client.HTTPConnection(c.host, c.port, timeout=30)
        conn.request("GET", "/api/v1/jobs/%s/logs?follow=1" % jid,
                     headers={"Authorization": "Bearer " + token})
        resp = conn.getresponse()
        if resp.status == 200:
            conn.resp = resp  # keep the response, and so the socket, open
            return conn, None
        body = json.loads(resp.read())
        hdrs = {k.lower(): v for k, v in resp.getheaders()}
        conn.close()
        return None, (resp.status, body, hdrs)

    def refused(self, token, jid, limit):
        conn, got = self.follow(token, jid)
        self.assertIsNone(conn, "a follow past the cap was let in")
        err = self.assert_error(got, 429, "too_many_streams")
        self.assertEqual(err["params"], {"limit": limit}, err)
        self.assertEqual(got[2].get("retry-after"), "5", got[2])

    def test_caps(self):
        team = self.make_team("ml")
        _, m1 = self.make_user("mem1", teams=[team])
        _, m2 = self.make_user("mem2", teams=[team])
        t1, t2 = self.token(m1, "follow1"), self.token(m2, "follow2")
        st, job, _ = self.admin.post("/api/v1/jobs", self.job_spec("ml", name="followed"))
        self.assertEqual(st, 201, job)
        jid = job["id"]

        open1 = []
        for _ in range(3):
            conn, got = self.follow(t1, jid)
            self.assertIsNotNone(conn, got)
            open1.append(conn)
        self.refused(t1, jid, 3)
        open2 = []
        for _ in range(2):
            conn, got = self.follow(t2, jid)
            self.assertIsNotNone(conn, got)
            open2.append(conn)
        self.refused(t2, jid, 5)
        # Short requests are not counted.
        self.assertEqual(m1.get("/api/v1/jobs/" + jid)[0], 200)

        # Every user slot of 127.0.0.1 is taken: a node's long-poll from the
        # same address still gets through and delivers its assignment.
        node = harness.join_fake_node(self.server.url, self.admin, "capped-node")
        got = {}

        def poll():
            got["answer"] = node.get("/api/v1/agent/assignments?wait=30")
        th = threading.Thread(target=poll)
        th.start()
        th.join(60)
        self.assertFalse(th.is_alive(), "the node's long-poll never answered")
        st, body, _ = got["answer"]
        self.assertEqual(st, 200, body)
        self.assertEqual([a["job_id"] for a in body["assignments"]], [jid], body)
        self.refused(t1, jid, 3)

        # Closed follows give their slots back (the server notices at the
        # stream's next write: a keep-alive within 15 s, or new output, as
        # here).
        for conn in open1:
            conn.close()
        aid = body["assignments"][0]["attempt_id"]
        seq = [0]
        reopened = []

        def reopen():
            seq[0] += 1
            st, b, _ = node.post("/api/v1/agent/attempts/%s/output" % aid, {"logs": [
                {"rank": 0, "stream": "stdout", "seq": seq[0], "ts_ms": 1764400000000,
                 "text": "line %d" % seq[0]}]})
            self.assertEqual(st, 200, b)
            conn, _ = self.follow(t1, jid)
            if conn is not None:
                reopened.append(conn)
            return len(reopened) == 3
        wait_for(reopen, timeout=90, interval=0.5, what="the closed follows' slots")
        self.refused(t1, jid, 3)
        for conn in reopened + open2:
            conn.close()


if __name__ == "__main__":
    harness.main()
