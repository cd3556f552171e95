#!/usr/bin/env python3
"""The public chat widget and the handoff to a person (docs/serving.md,
"Widget and handoff"), and `trainyard chat`, on a real server, PostgreSQL
and worker: a ddp-mlp-demo job trained, its output registered and deployed,
examples/serve_echo.py answering (as test_deployments' ServeEchoTest).

- PUT .../widget is validated (nothing changes on a refusal) and audited
  (deployment.widget), and makes the widget's public key once (reused by a
  later PUT); GET shows the settings without the key's secret;
- the public config and page answer only while the widget is enabled, say
  nothing internal, and the page may be framed by the allowed origins only;
- the public key is limited per visitor address (127.0.0.1 and 127.0.0.2);
- a handoff keyword queues a webhook delivery that a local HTTP receiver
  gets with the conversation (audited serve.handoff); a message without
  one is refused; handoffs are limited per visitor address;
- `trainyard chat -m` streams the answer.
"""
import http.client
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import CLI_BIN, ServerTest, Worker, wait_for  # noqa: E402


class Receiver(http.server.BaseHTTPRequestHandler):
    got = []

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        Receiver.got.append((self.headers.get("X-Trainyard-Event"), json.loads(self.rfile.read(n))))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *a):
        pass


def raw(base, method, path, body=None, headers=None, source="127.0.0.1"):
    """One request from source (a loopback address): (status, body bytes, headers)."""
    host, port = base.split("//")[1].split(":")
    c = http.client.HTTPConnection(host, int(port), timeout=60, source_address=(source, 0))
    h = dict(headers or {})
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    try:
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        return r.status, r.read(), {k.lower(): v for k, v in r.getheaders()}
    finally:
        c.close()


class ChatWidgetTest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.storage = tempfile.mkdtemp(prefix="ty-widget-")
        os.chmod(cls.storage, 0o755)
        src = os.path.abspath(harness.SRC)
        cls.server_args = ("--storage-root", cls.storage,
                           "--templates-dir", os.path.join(src, "templates"),
                           "--examples-dir", os.path.join(src, "examples"),
                           "--web-dir", os.path.join(src, "web"),
                           "--sched-interval-ms", "200")
        super().setUpClass()
        cls.recv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        cls.recv.daemon_threads = True
        threading.Thread(target=cls.recv.serve_forever, daemon=True).start()
        st, tok, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 1})
        assert st == 201, tok
        cls.worker = Worker(cls.server.url, tok["token"], "widget-node", gpus=1,
                            allowed_root=cls.storage)

    @classmethod
    def tearDownClass(cls):
        try:
            cls.recv.shutdown()
            cls.worker.stop()
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.storage, ignore_errors=True)

    def audits(self, action):
        return self.db.sql("SELECT target, source, details FROM audit_events WHERE action = '%s' "
                           "ORDER BY id" % action)

    def deploy_echo(self):
        self.make_team("ml")
        st, job, _ = self.admin.post("/api/v1/jobs", {
            "name": "tiny", "team": "ml", "template": "ddp-mlp-demo",
            "params": {"steps": 2, "checkpoint_every": 2}, "resources": {"gpus": 1}})
        self.assertEqual(st, 201, job)
        wait_for(lambda: self.admin.get("/api/v1/jobs/" + job["id"])[1]["state"]
                 in ("SUCCEEDED", "FAILED"), timeout=300, what="the training job to end")
        st, v, _ = self.admin.post("/api/v1/models/helper/versions",
                                   {"job_id": job["id"], "source": "output"})
        self.assertEqual(st, 201, v)
        st, d, _ = self.admin.post("/api/v1/deployments", {
            "name": "helpdesk", "model": "helper", "version": 1, "replicas": 1})
        self.assertEqual(st, 201, d)
        wait_for(lambda: self.admin.get("/api/v1/deployments/helpdesk")[1]["ready_replicas"] == 1,
                 timeout=120, what="the replica ready")
        # A key of its own for the command line; the gateway's view has the
        # replica once this key gets an answer.
        st, key, _ = self.admin.post("/api/v1/deployments/helpdesk/keys", {"name": "cli"})
        self.assertEqual(st, 201, key)
        self.cli_key = key["secret"]
        hi = {"model": "helpdesk", "messages": [{"role": "user", "content": "hi"}]}
        wait_for(lambda: raw(self.server.url, "POST", "/v1/chat/completions", hi,
                             {"Authorization": "Bearer " + self.cli_key})[0] == 200,
                 timeout=60, what="the gateway to route to the replica")
        st, hook, _ = self.admin.post("/api/v1/webhooks", {
            "team": "ml", "url": "http://127.0.0.1:%d/hook" % self.recv.server_address[1],
            "format": "generic", "events": ["job.failed"]})
        self.assertEqual(st, 201, hook)
        return hook["id"]

    def put(self, body):
        return self.admin.request("PUT", "/api/v1/deployments/helpdesk/widget", body)

    def test_widget_handoff_and_cli(self):
        hook_id = self.deploy_echo()
        base = self.server.url

        # Not enabled yet: nothing public answers.
        for path in ("/chat/helpdesk", "/chat/helpdesk/config", "/chat/helpdesk/widget.js",
                     "/chat/nosuch/config"):
            self.assertEqual(raw(base, "GET", path)[0], 404, path)

        # Validated: each refusal names its field and changes nothing.
        good = {"enabled": True, "title": "帮助中心",
                "greeting": {"zh-CN": "您好，我是智能助手。", "en": "Hi, I am the assistant."},
                "suggestions": ["怎么退货？", "营业时间"],
                "allowed_origins": ["http://127.0.0.1:9"],
                "handoff": {"keywords": ["人工", "转人工", "human"], "webhook_id": hook_id},
                "rate_per_min": 3}
        bad = [({"enabled": "yes"}, "enabled"),
               (dict(good, allowed_origins=["https://a.example/path"]), "allowed_origins"),
               (dict(good, allowed_origins=["*"]), "allowed_origins"),
               (dict(good, suggestions=["x"] * 7), "suggestions"),
               (dict(good, greeting={"fr": "salut"}), "greeting"),
               (dict(good, handoff={"keywords": [], "webhook_id": hook_id}), "handoff.keywords"),
               (dict(good, handoff={"webhook_id": "999999"}), "handoff.webhook_id"),
               (dict(good, rate_per_min=0), "rate_per_min"),
               (dict(good, extra=1), None)]
        for body, field in bad:
            st, err, _ = self.put(body)
            self.assertEqual(st, 400, (body, err))
            if field:
                self.assertEqual(err["error"]["field"], field, err)
        self.assertEqual(self.audits("deployment.widget"), [])
        self.assertEqual(self.db.sql("SELECT widget::text FROM deployments"), [["{}"]])

        st, w, _ = self.put(good)
        self.assertEqual(st, 200, w)
        self.assertNotIn("key_secret", w)
        key_id = w["key_id"]
        self.assertEqual(self.db.sql("SELECT public, rate_per_min FROM serve_keys WHERE id = %s"
                                     % key_id), [["t", "3"]])
        st, w2, _ = self.put(good)  # the same key again
        self.assertEqual((st, w2["key_id"]), (200, key_id))
        self.assertEqual(len(self.db.sql("SELECT id FROM serve_keys WHERE public")), 1)
        ev = self.audits("deployment.widget")
        self.assertEqual(len(ev), 2)
        self.assertEqual(ev[0][0], "deployment:helpdesk")
        self.assertTrue(json.loads(ev[0][2])["key_created"])
        self.assertFalse(json.loads(ev[1][2])["key_created"])
        st, got, _ = self.admin.get("/api/v1/deployments/helpdesk/widget")
        self.assertEqual((st, got["title"], got["key_id"]), (200, "帮助中心", key_id))
        self.assertNotIn("key_secret", got)

        # The public config: what the page shows, and nothing internal.
        st, body, _ = raw(base, "GET", "/chat/helpdesk/config")
        self.assertEqual(st, 200, body)
        cfg = json.loads(body)
        self.assertEqual(cfg["greeting"]["zh-CN"], "您好，我是智能助手。")
        self.assertEqual(cfg["suggestions"], ["怎么退货？", "营业时间"])
        self.assertTrue(cfg["key"].startswith("tysk_"))
        self.assertEqual(set(cfg), {"deployment", "title", "greeting", "suggestions", "key",
                                    "handoff", "handoff_keywords"})
        for word in ("version", "node", "job", "path", "manifest", "webhook", self.storage):
            self.assertNotIn(word, body.decode(), word)

        # The page: framed by the allowed origins only.
        st, page, h = raw(base, "GET", "/chat/helpdesk")
        self.assertEqual(st, 200)
        self.assertIn(b"/widget/chat.js", page)
        self.assertIn("frame-ancestors http://127.0.0.1:9", h["content-security-policy"])
        self.assertNotIn("'none'", h["content-security-policy"])
        st, js, h = raw(base, "GET", "/chat/helpdesk/widget.js")
        self.assertEqual((st, h["content-type"].split(";")[0]), (200, "text/javascript"))

        # The gateway with the public key: streamed, and 3 a minute per visitor.
        auth = {"Authorization": "Bearer " + cfg["key"]}
        ask = {"model": "helpdesk", "stream": True,
               "messages": [{"role": "user", "content": "怎么退货？"}]}
        st, body, _ = raw(base, "POST", "/v1/chat/completions", ask, auth)
        self.assertEqual(st, 200, body)
        events = [e[len("data: "):] for e in body.decode().split("\n\n") if e]
        self.assertEqual(events[-1], "[DONE]")
        text = "".join(json.loads(e)["choices"][0]["delta"].get("content", "")
                       for e in events[:-1])
        self.assertEqual(text, "怎么退货？")
        for _ in range(2):
            self.assertEqual(raw(base, "POST", "/v1/chat/completions", ask, auth)[0], 200)
        st, body, h = raw(base, "POST", "/v1/chat/completions", ask, auth)
        self.assertEqual(st, 429, body)
        self.assertEqual(json.loads(body)["error"]["code"], "rate_limit_exceeded")
        st, body, _ = raw(base, "POST", "/v1/chat/completions", ask, auth, source="127.0.0.2")
        self.assertEqual(st, 200, body)  # another visitor has its own bucket

        # Handoff: the server checks the keyword itself.
        conv = [{"role": "user", "content": "怎么退货？"},
                {"role": "assistant", "content": "请在订单页申请。"}]
        st, body, _ = raw(base, "POST", "/chat/helpdesk/handoff",
                          {"messages": conv + [{"role": "user", "content": "谢谢"}]})
        self.assertEqual(st, 400, body)
        self.assertEqual(json.loads(body)["error"]["code"], "handoff_not_requested")
        st, body, _ = raw(base, "POST", "/chat/helpdesk/handoff",
                          {"messages": [{"role": "user", "content": "x" * 3000}]})
        self.assertEqual(st, 400, body)
        self.assertEqual(self.db.sql("SELECT count(*) FROM webhook_deliveries"), [["0"]])
        st, body, _ = raw(base, "POST", "/chat/helpdesk/handoff",
                          {"messages": conv + [{"role": "user", "content": "我要转人工"}],
                           "lang": "zh-CN"})
        self.assertEqual(st, 202, body)
        self.assertIn("人工客服", json.loads(body)["message"])
        wait_for(lambda: Receiver.got, timeout=60, what="the handoff webhook delivered")
        event, payload = Receiver.got[0]
        self.assertEqual(event, "serve.handoff")
        self.assertEqual(payload["deployment"], "helpdesk")
        self.assertEqual(payload["conversation"][-1], {"role": "user", "content": "我要转人工"})
        self.assertEqual(len(payload["conversation"]), 3)
        ev = self.audits("serve.handoff")
        self.assertEqual((len(ev), ev[0][0], ev[0][1]), (1, "deployment:helpdesk", "127.0.0.1"))
        # At most 5 in 10 minutes from one address; another address still may.
        for _ in range(4):
            self.assertEqual(raw(base, "POST", "/chat/helpdesk/handoff",
                                 {"messages": [{"role": "user", "content": "Human please"}]})[0],
                             202)
        st, body, h = raw(base, "POST", "/chat/helpdesk/handoff",
                          {"messages": [{"role": "user", "content": "人工"}]})
        self.assertEqual(st, 429, body)
        self.assertIn("retry-after", h)
        self.assertEqual(raw(base, "POST", "/chat/helpdesk/handoff",
                             {"messages": [{"role": "user", "content": "人工"}]},
                             source="127.0.0.2")[0], 202)

        # trainyard chat -m, with a key of its own.
        env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES")}
        env.update(LANG="C.UTF-8", HOME=self.storage, TRAINYARD_URL=base,
                   TRAINYARD_API_KEY=self.cli_key)
        r = subprocess.run([CLI_BIN, "chat", "helpdesk", "-m", "你好，世界"], capture_output=True,
                           text=True, env=env, timeout=120)
        self.assertEqual((r.returncode, r.stdout), (0, "你好，世界\n"), r.stderr)
        r = subprocess.run([CLI_BIN, "chat", "helpdesk"], input="one\ntwo\n",
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split("\n")[0], "one", r.stdout)
        r = subprocess.run([CLI_BIN, "chat", "helpdesk", "-m", "hi", "--key", "tysk_wrong"],
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(r.returncode, 3, (r.stdout, r.stderr))
        self.assertIn("invalid_api_key", r.stderr)

        # Disabled again: nothing public answers, the key's settings stay.
        st, _, _ = self.put(dict(good, enabled=False))
        self.assertEqual(st, 200)
        for path in ("/chat/helpdesk", "/chat/helpdesk/config", "/chat/helpdesk/widget.js"):
            self.assertEqual(raw(base, "GET", path)[0], 404, path)
        self.assertEqual(raw(base, "POST", "/chat/helpdesk/handoff",
                             {"messages": [{"role": "user", "content": "人工"}]},
                             source="127.0.0.3")[0], 404)


if __name__ == "__main__":
    harness.main()
