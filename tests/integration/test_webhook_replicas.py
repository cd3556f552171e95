"""Webhook deliveries across two server replicas on one database arrive
exactly once, also when the receiver is slow; and a sender whose claim was
taken over cannot overwrite the newer result.

A claim leases a delivery for a while; a replica that claimed more than it
can send inside the lease would let the other replica claim and send the
tail again, which is why server/loops/webhooks.c claims one delivery at a
time. Here the receiver takes 0.6 s per request and the request timeout is
2.5 s (so the lease is 6 s): sixteen deliveries in one claim would take 9.6 s.
Twenty deliveries are due at once, so one replica runs out of work while the
other still has a tail to send: any claim that outlives its lease shows up as
a delivery id the receiver got twice.

The deliveries are queued with one INSERT (what webhooks_enqueue() writes),
so they all fall due in the same instant; queueing them through job events
would spread them out and hide the race.
"""
import http.server
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import ADMIN_PASSWORD, Client, Database, Server, wait_for  # noqa: E402

SLOW_S = 0.6
TIMEOUT_MS = 2500
N = 20


class SlowReceiver(http.server.BaseHTTPRequestHandler):
    """Notes the X-Trainyard-Delivery id of every post, then answers late."""
    lock = threading.Lock()
    got = []

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with SlowReceiver.lock:
            SlowReceiver.got.append(self.headers.get("X-Trainyard-Delivery"))
        time.sleep(SLOW_S)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *a):
        pass


class HeldReceiver(http.server.BaseHTTPRequestHandler):
    """Holds each post until the test lets it go (bounded), then answers 200."""
    got = threading.Event()
    release = threading.Event()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        HeldReceiver.got.set()
        HeldReceiver.release.wait(timeout=8)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *a):
        pass


def start_receiver(handler):
    recv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    recv.daemon_threads = True
    threading.Thread(target=recv.serve_forever, daemon=True).start()
    return recv


def make_hook(db, server, recv):
    admin = Client(server.url)
    assert admin.login("admin", ADMIN_PASSWORD)[0] == 200
    assert admin.post("/api/v1/teams", {"name": "hooks"})[0] == 201
    st, hook, _ = admin.post("/api/v1/webhooks", {
        "team": "hooks", "url": "http://127.0.0.1:%d/hook" % recv.server_address[1]})
    assert st == 201, hook
    return hook


class WebhookReplicaTest(harness.unittest.TestCase):
    def test_each_delivery_arrives_once(self):
        recv = start_receiver(SlowReceiver)
        db = Database()
        args = ("--webhook-timeout-ms", str(TIMEOUT_MS))
        a = Server(db, args=args)
        b = Server(db, args=args, admin=False)
        try:
            for s in (a, b):
                self.assertIn("key=webhook_timeout_ms value=%d" % TIMEOUT_MS, s.log_text())
            hook = make_hook(db, a, recv)
            db.sql("INSERT INTO webhook_deliveries (webhook_id, event, payload) SELECT %s, "
                   "'job.failed', json_build_object('event', 'job.failed', 'message', "
                   "'delivery ' || g)::text FROM generate_series(1, %d) g" % (hook["id"], N))
            ids = sorted(r[0] for r in db.sql("SELECT id FROM webhook_deliveries"))
            self.assertEqual(len(ids), N)
            wait_for(lambda: db.sql("SELECT count(*) FROM webhook_deliveries WHERE status = "
                                    "'delivered'")[0][0] == str(N),
                     timeout=120, what="every delivery recorded as delivered")
            # Once both have stopped nothing is in flight: the receiver's list is final.
            for s in (a, b):
                s.stop()
            with SlowReceiver.lock:
                got = list(SlowReceiver.got)
            twice = sorted({i for i in got if got.count(i) > 1})
            self.assertEqual(twice, [], "deliveries sent more than once")
            self.assertEqual(sorted(got), ids)
            rows = db.sql("SELECT status, attempts, http_status, count(*) FROM "
                          "webhook_deliveries GROUP BY 1, 2, 3")
            self.assertEqual(rows, [["delivered", "1", "200", str(N)]])
        finally:
            for s in (a, b):
                if s.proc.poll() is None:
                    s.stop()
            db.close()
            recv.shutdown()
            recv.server_close()

    def test_superseded_claim_records_nothing(self):
        """While the server waits for the receiver, the delivery's claim is
        taken over (as another replica does once a lease ran out) and that
        claim's result written. The first sender's answer, a 200, must then
        leave the row as the newer claim wrote it."""
        recv = start_receiver(HeldReceiver)
        db = Database()
        s = Server(db, args=("--webhook-timeout-ms", "10000"))
        try:
            hook = make_hook(db, s, recv)
            db.sql("INSERT INTO webhook_deliveries (webhook_id, event, payload) VALUES (%s, "
                   "'job.failed', '{\"event\":\"job.failed\"}')" % hook["id"])
            wait_for(HeldReceiver.got.is_set, timeout=30, what="the post to reach the receiver")
            self.assertEqual(db.sql("SELECT attempts FROM webhook_deliveries"), [["1"]])
            db.sql("UPDATE webhook_deliveries SET attempts = 2, status = 'failed', last_error = "
                   "'the newer claim', next_at = now()")
            HeldReceiver.release.set()
            wait_for(lambda: "delivery claimed again before its result was recorded" in
                     s.log_text(), timeout=30, what="the sender to notice it lost its claim")
            self.assertEqual(db.sql("SELECT attempts, status, last_error, coalesce(http_status, 0), "
                                    "delivered_at IS NULL FROM webhook_deliveries"),
                             [["2", "failed", "the newer claim", "0", "t"]])
        finally:
            HeldReceiver.release.set()
            if s.proc.poll() is None:
                s.stop()
            db.close()
            recv.shutdown()
            recv.server_close()


if __name__ == "__main__":
    harness.main()
