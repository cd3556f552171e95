#!/usr/bin/env python3
"""The inference gateway (docs/serving.md, "The gateway"): keys, refusals in
the OpenAI shape, pass-through of answers and streams, records and their
hashes, usage, limits, canary routing, metrics, the official openai client.

A real trainyard-server and PostgreSQL; the replica is examples/serve_echo.py
(the real model server), started by the test; its deployment, versions and
replica rows are written with psql and its jobs are real jobs of a node that
speaks the worker protocol (harness.FakeNodeTest), running, whose attempt's
address is the echo server's.
"""
import hashlib
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import harness
from harness import Client, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ECHO = os.path.join(ROOT, "examples", "serve_echo.py")
METRICS_TOKEN = "metrics-token-for-gateway-tests-0123"
REPLICA_TOKEN = "replica-token-0123456789abcdef"

RECORD_FIELDS = ("request_id ts_text key_id deployment_id version_id replica_job_id "
                 "manifest_sha256 route status error_code prompt_sha256 answer_sha256 "
                 "prompt_tokens completion_tokens latency_us ttft_us client_addr").split()


def sha(b):
    return hashlib.sha256(b if isinstance(b, bytes) else b.encode()).hexdigest()


def record_hash(row):
    """docs/serving.md, "Request records and their seal", reproduced here."""
    text = "trainyard.serve.request.v1\n"
    for f in RECORD_FIELDS:
        v = row[f]
        text += "%s=%s\n" % (f, "" if v is None else v)
    return sha(text)


def start_echo(model_dir, manifest, port):
    env = dict(os.environ, TRAINYARD_SERVE_HOST="127.0.0.1", TRAINYARD_SERVE_PORT=str(port),
               TRAINYARD_SERVE_TOKEN=REPLICA_TOKEN, TRAINYARD_MODEL_PATH=model_dir,
               TRAINYARD_MODEL_MANIFEST=json.dumps(manifest), TRAINYARD_MODEL_NAME="bot",
               TRAINYARD_SERVE_KIND="echo")
    with open(os.path.join(model_dir, "..", "echo-%d.log" % port), "wb") as log:
        proc = subprocess.Popen([sys.executable, ECHO], env=env, stdout=log, stderr=log)
    harness._children.append(proc)

    def healthy():
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/health")
            return c.getresponse().status == 200
        except OSError:
            return False
    wait_for(healthy, timeout=60, what="the echo model server")
    return proc


class GatewayTest(harness.FakeNodeTest):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(ECHO):
            raise RuntimeError("%s is missing: the test needs the echo model server" % ECHO)
        # FakeNodeTest's set-up, with the metrics token.
        cls.root = tempfile.mkdtemp(prefix="ty-fake-node-")
        cls.server_args = ("--storage-root", cls.root, "--sched-interval-ms", "200",
                           "--node-timeout-s", "3600", "--metrics-token", METRICS_TOKEN,
                           "--metrics-cache-ms", "0")
        harness.ServerTest.setUpClass.__func__(cls)
        st, cls.team, _ = cls.admin.post("/api/v1/teams", {"name": "ml"})
        assert st == 201, cls.team
        cls.node = harness.join_fake_node(cls.server.url, cls.admin, cls.node_name)
        cls.tmp = tempfile.mkdtemp(prefix="ty-gateway-")
        model_dir = os.path.join(cls.tmp, "model")
        os.makedirs(model_dir)
        data = b"echo weights\n"
        with open(os.path.join(model_dir, "weights.bin"), "wb") as f:
            f.write(data)
        manifest = [{"path": "weights.bin", "size": len(data), "sha256": sha(data)}]
        cls.manifest_sha = sha("%s %d %s\n" % (sha(data), len(data), "weights.bin"))
        cls.echo_port = harness.free_port()
        cls.echo = start_echo(model_dir, manifest, cls.echo_port)
        cls.node_b = harness.join_fake_node(cls.server.url, cls.admin, "fake-b")
        jobs = [cls.running_job(cls.node, "bot-r1"), cls.running_job(cls.node_b, "bot-r2")]
        q = cls.db.sql
        admin_id = q("SELECT id FROM users WHERE username = 'admin'")[0][0]
        team_id = cls.team["id"]
        site_id = q("SELECT site_id FROM teams WHERE id = %s" % team_id)[0][0] \
            if q("SELECT 1 FROM information_schema.columns WHERE table_name = 'teams' "
                 "AND column_name = 'site_id'") else q("SELECT min(id) FROM sites")[0][0]
        model_id = q("INSERT INTO models (name, team_id, site_id, created_by) VALUES "
                     "('echo', %s, %s, 'admin') RETURNING id" % (team_id, site_id))[0][0]
        versions = []
        for v in (1, 2):
            versions.append(q(
                "INSERT INTO model_versions (model_id, version, site_id, source_kind, path, "
                "serve_kind, serve_script, manifest, manifest_sha256, lineage_complete, "
                "created_by) VALUES (%s, %d, %s, 'output', '%s', 'echo', 'serve_echo.py', "
                "'%s', '%s', true, 'admin') RETURNING id"
                % (model_id, v, site_id, model_dir, json.dumps(manifest), cls.manifest_sha))[0][0])
        cls.v1, cls.v2 = versions
        deps = []
        for name, canary in (("bot", cls.v2), ("other", None)):
            deps.append(q(
                "INSERT INTO deployments (name, model_id, version_id, canary_version_id, team_id, "
                "user_id, site_id, gpus_per_replica, min_replicas, max_replicas, replicas, "
                "priority) VALUES ('%s', %s, %s, %s, %s, %s, %s, 1, 1, 2, 1, 0) RETURNING id"
                % (name, model_id, cls.v1, canary or "NULL", team_id, admin_id, site_id))[0][0])
        cls.dep_bot, cls.dep_other = deps
        for jid, ver in zip(jobs, (cls.v1, cls.v2)):
            q("UPDATE attempts SET master_addr = '127.0.0.1', master_port = %d WHERE job_id = %s"
              % (cls.echo_port, jid))
            q("INSERT INTO serve_replicas (job_id, deployment_id, version_id, token, attempt, "
              "ready, ready_at) SELECT %s, %s, %s, '%s', attempt, true, now() FROM jobs "
              "WHERE id = %s" % (jid, cls.dep_bot, ver, REPLICA_TOKEN, jid))
        cls.replica_jobs = jobs
        cls.key = cls.make_key("bot", "main", rate_per_min=1000000)["secret"]
        cls.other_key = cls.make_key("other", "o")["secret"]

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.echo.poll() is None:
                cls.echo.terminate()
                cls.echo.wait(timeout=30)
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def running_job(cls, node, name):
        st, job, _ = cls.admin.post("/api/v1/jobs", {"name": name, "team": "ml",
                                                     "command": ["/bin/sleep", "600"],
                                                     "resources": {"gpus": 1}})
        assert st == 201, job

        def take():
            st, body, _ = node.get("/api/v1/agent/assignments?wait=2")
            mine = [a for a in body.get("assignments", []) if a["job_id"] == job["id"]]
            return mine[0] if mine else None
        a = wait_for(take, timeout=60, what="an assignment of " + name)
        st, b, _ = node.post("/api/v1/agent/attempts/%s/started" % a["attempt_id"],
                             {"node_rank": 0, "pids": [4242]})
        assert st == 200, b
        wait_for(lambda: cls.admin.get("/api/v1/jobs/" + job["id"])[1]["state"] == "RUNNING",
                 what=name + " running")
        return job["id"]

    @classmethod
    def make_key(cls, deployment, name, **kw):
        st, body, _ = cls.admin.post("/api/v1/deployments/%s/keys" % deployment,
                                     dict({"name": name}, **kw))
        assert st == 201, body
        assert body["secret"].startswith("tysk_"), body
        return body

    # helpers -------------------------------------------------------------
    def call(self, key, body, route="/v1/chat/completions", method="POST"):
        c = Client(self.server.url, token=key)
        raw = json.dumps(body).encode() if body is not None else None
        return c.request(method, route, raw=raw), raw

    def chat(self, text, **kw):
        return dict({"model": "bot", "messages": [{"role": "user", "content": text}],
                     "max_tokens": 4096}, **kw)

    def record(self, request_id):
        cols = RECORD_FIELDS + ["record_sha256", "prompt_text", "answer_text"]

        def row():
            rows = self.db.sql("SELECT row_to_json(r) FROM (SELECT %s FROM serve_requests WHERE "
                               "request_id = '%s') r" % (", ".join(cols), request_id))
            return json.loads(rows[0][0]) if rows else None
        r = wait_for(row, timeout=30, what="the record of " + request_id)
        self.assertEqual(r["record_sha256"], record_hash(r), r)
        return r

    def assert_openai_error(self, resp, status, code):
        st, body, hdrs = resp
        self.assertEqual(st, status, body)
        self.assertEqual(set(body), {"error"}, body)
        self.assertEqual(set(body["error"]), {"message", "type", "param", "code"}, body)
        self.assertEqual(body["error"]["code"], code, body)
        self.assertTrue(body["error"]["message"])
        rec = self.record(hdrs["x-request-id"])
        self.assertEqual(rec["status"], status)
        self.assertEqual(rec["error_code"], code)
        return rec

    # tests ---------------------------------------------------------------
    def test_1_refusals(self):
        (resp, raw) = self.call(None, self.chat("hi"))
        rec = self.assert_openai_error(resp, 401, "invalid_api_key")
        self.assertIsNone(rec["key_id"])
        self.assertEqual(rec["prompt_sha256"], sha(raw))
        (resp, _) = self.call("tysk_not-a-key", self.chat("hi"))
        self.assert_openai_error(resp, 401, "invalid_api_key")
        (resp, _) = self.call(self.other_key, self.chat("hi"))
        rec = self.assert_openai_error(resp, 403, "model_not_allowed")
        self.assertIsNotNone(rec["key_id"])
        (resp, _) = self.call(self.key, dict(self.chat("hi"), model="nope"))
        self.assert_openai_error(resp, 404, "model_not_found")
        (resp, _) = self.call(self.other_key, dict(self.chat("hi"), model="other"))
        rec = self.assert_openai_error(resp, 503, "no_replica_ready")
        self.assertEqual(rec["deployment_id"], int(self.dep_other))

    def test_2_revoked_key(self):
        k = self.make_key("bot", "short-lived")
        (resp, _) = self.call(k["secret"], self.chat("hi"))
        self.assertEqual(resp[0], 200, resp[1])
        st, body, _ = self.admin.request("DELETE", "/api/v1/deployments/bot/keys/%s" % k["id"])
        self.assertEqual(st, 200, body)
        audit = self.db.sql("SELECT action, target FROM audit_events WHERE action LIKE "
                            "'serve.key.%%' AND target = 'serve_key:%s' ORDER BY id" % k["id"])
        self.assertEqual([a[0] for a in audit], ["serve.key.create", "serve.key.revoke"])
        # Refused within the key cache's time to live (gw_limits.h).
        wait_for(lambda: self.call(k["secret"], self.chat("hi"))[0][0] == 401, timeout=30,
                 what="the revoked key refused")
        (resp, _) = self.call(k["secret"], self.chat("hi"))
        self.assert_openai_error(resp, 401, "invalid_api_key")

    def test_3_pass_through(self):
        (resp, raw) = self.call(self.key, self.chat("hello gateway"))
        st, body, hdrs = resp
        self.assertEqual(st, 200, body)
        self.assertEqual(body["choices"][0]["message"]["content"], "hello gateway")
        self.assertEqual(hdrs["x-trainyard-deployment"], "bot")
        self.assertEqual(hdrs["x-trainyard-version"], str(self.v1))
        rec = self.record(hdrs["x-request-id"])
        self.assertEqual(rec["status"], 200)
        self.assertEqual(rec["route"], "/v1/chat/completions")
        self.assertEqual(rec["prompt_sha256"], sha(raw))
        self.assertEqual(rec["answer_sha256"], sha("hello gateway"))
        self.assertEqual(rec["prompt_tokens"], body["usage"]["prompt_tokens"])
        self.assertEqual(rec["completion_tokens"], body["usage"]["completion_tokens"])
        self.assertEqual(rec["manifest_sha256"], self.manifest_sha)
        self.assertIn(rec["replica_job_id"], [int(j) for j in self.replica_jobs])
        self.assertIsNone(rec["prompt_text"])  # keep_texts_days is 0
        # Embeddings: the body is relayed as it is, and its hash recorded.
        (resp, _) = self.call(self.key, {"model": "bot", "input": "abc"}, "/v1/embeddings")
        self.assertEqual(resp[0], 200, resp[1])
        self.assertEqual(len(resp[1]["data"][0]["embedding"]), 16)
        # models: the key's deployment.
        (resp, _) = self.call(self.key, None, "/v1/models", "GET")
        self.assertEqual(resp[0], 200, resp[1])
        self.assertEqual([m["id"] for m in resp[1]["data"]], ["bot"])

    def test_3b_failover(self):
        # A third replica of the primary version whose address takes no
        # connection: every request still succeeds, on the live replica
        # (the gateway tries another ready replica once when it cannot
        # connect).
        node_c = harness.join_fake_node(self.server.url, self.admin, "fake-c")
        dead = self.running_job(node_c, "bot-r3")
        self.db.sql("UPDATE attempts SET master_addr = '127.0.0.1', master_port = %d WHERE "
                    "job_id = %s" % (harness.free_port(), dead))
        self.db.sql("INSERT INTO serve_replicas (job_id, deployment_id, version_id, token, attempt, "
                    "ready, ready_at) SELECT %s, %s, %s, 'x', attempt, true, now() FROM jobs "
                    "WHERE id = %s" % (dead, self.dep_bot, self.v1, dead))
        try:
            # Until the gateway has tried the dead one (its log says so),
            # every answer is a 200 from the live replica.
            seen = set()

            def one():
                (resp, _) = self.call(self.key, self.chat("fo", max_tokens=2))
                self.assertEqual(resp[0], 200, resp[1])
                seen.add(self.record(resp[2]["x-request-id"])["replica_job_id"])
                return "replica call failed" in self.server.log_text()
            wait_for(one, timeout=60, interval=0, what="a request to the dead replica")
            for _ in range(10):
                one()
            self.assertEqual(seen, {int(self.replica_jobs[0])})
        finally:
            self.db.sql("UPDATE serve_replicas SET retired = true WHERE job_id = %s" % dead)

    def test_5b_public_key_per_visitor(self):
        k = self.make_key("bot", "widget", public=True, rate_per_min=1)

        def from_addr(addr):
            c = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60,
                                           source_address=(addr, 0))
            c.request("POST", "/v1/chat/completions", body=json.dumps(self.chat("w")),
                      headers={"Authorization": "Bearer " + k["secret"],
                               "Content-Type": "application/json"})
            st = c.getresponse().status
            c.close()
            return st
        self.assertEqual(from_addr("127.0.0.1"), 200)
        self.assertEqual(from_addr("127.0.0.1"), 429)
        self.assertEqual(from_addr("127.0.0.2"), 200)  # another visitor, its own bucket

    def read_sse(self, key, body):
        c = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60)
        raw = json.dumps(body).encode()
        c.request("POST", "/v1/chat/completions", body=raw,
                  headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
        return c, c.getresponse(), raw

    def test_4_stream(self):
        c, r, raw = self.read_sse(self.key, self.chat("streamed!", stream=True,
                                                      stream_options={"include_usage": True}))
        self.assertEqual(r.status, 200)
        self.assertTrue(r.getheader("Content-Type").startswith("text/event-stream"))
        text, usage, done = "", None, False
        for line in r.read().decode().split("\n"):
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                done = True
                continue
            chunk = json.loads(line[6:])
            for ch in chunk.get("choices", []):
                text += ch.get("delta", {}).get("content") or ""
            usage = chunk.get("usage") or usage
        c.close()
        self.assertTrue(done)
        self.assertEqual(text, "streamed!")
        rec = self.record(r.getheader("x-request-id"))
        self.assertEqual(rec["answer_sha256"], sha("streamed!"))
        self.assertEqual(rec["prompt_sha256"], sha(raw))
        self.assertEqual(rec["completion_tokens"], usage["completion_tokens"])
        self.assertGreater(rec["ttft_us"], 0)

    def test_4b_long_stream(self):
        # 120,000 characters, one chunk each, about 18 MB of events: more
        # than the gateway keeps of an answer (16 MiB), relayed whole since
        # what the client took is dropped and a replica ahead of its client
        # is held back (paused), not cut off.
        n = 120000
        c, r, _ = self.read_sse(self.key, self.chat("y" * n, stream=True, max_tokens=n))
        self.assertEqual(r.status, 200)
        text, done = [], False
        for line in r:
            if line.startswith(b"data: {"):
                for ch in json.loads(line[6:])["choices"]:
                    text.append(ch["delta"].get("content") or "")
            done = done or line.startswith(b"data: [DONE]")
        c.close()
        self.assertTrue(done)
        self.assertEqual("".join(text), "y" * n)
        rec = self.record(r.getheader("x-request-id"))
        self.assertEqual((rec["status"], rec["completion_tokens"]), (200, n))

    def test_5_usage_and_limits(self):
        k = self.make_key("bot", "limited", rate_per_min=2)
        for _ in range(2):
            (resp, _) = self.call(k["secret"], self.chat("abcd"))
            self.assertEqual(resp[0], 200, resp[1])
        (resp, _) = self.call(k["secret"], self.chat("abcd"))
        rec = self.assert_openai_error(resp, 429, "rate_limit_exceeded")
        self.assertGreaterEqual(int(resp[2]["retry-after"]), 1)
        self.assertEqual(rec["key_id"], int(k["id"]))

        def usage():
            st, body, _ = self.admin.get("/api/v1/deployments/bot/keys")
            mine = [x for x in body["keys"] if x["id"] == k["id"]][0]
            return mine if mine["requests"] == 3 else None
        mine = wait_for(usage, what="the usage of the limited key")
        self.assertEqual(mine["errors"], 1)
        self.assertEqual(mine["prompt_tokens"], 8)
        self.assertEqual(mine["completion_tokens"], 8)
        st, csv, hdrs = self.admin.get("/api/v1/deployments/bot/usage?format=csv")
        self.assertEqual(st, 200)
        self.assertTrue(hdrs["content-type"].startswith("text/csv"))
        self.assertIn('%s,"limited",' % k["id"], csv)
        # Quota: 10 tokens; a first request of 12 uses them up.
        q = self.make_key("bot", "quota", token_quota=10)
        (resp, _) = self.call(q["secret"], self.chat("abcdef"))
        self.assertEqual(resp[0], 200, resp[1])
        self.record(resp[2]["x-request-id"])
        (resp, _) = self.call(q["secret"], self.chat("abcdef"))
        self.assert_openai_error(resp, 429, "insufficient_quota")
        # Members of other teams see no such deployment.
        _, stranger = self.make_user("stranger")
        st, body, _ = stranger.post("/api/v1/deployments/bot/keys", {"name": "x"})
        self.assertEqual(st, 404, body)

    def route_versions(self, n):
        counts = {}
        for _ in range(n):
            (resp, _) = self.call(self.key, self.chat("c", max_tokens=1))
            self.assertEqual(resp[0], 200, resp[1])
            v = resp[2]["x-trainyard-version"]
            counts[v] = counts.get(v, 0) + 1
        return counts

    def wait_view(self, keep):
        """Wait until the gateway's view has the deployment's latest row:
        the same UPDATE changed keep_texts_days, which each record shows."""
        def seen():
            (resp, _) = self.call(self.key, self.chat("probe", max_tokens=1))
            rec = self.record(resp[2]["x-request-id"])
            return (rec["prompt_text"] is not None) == keep
        wait_for(seen, timeout=30, what="the gateway to see the new canary weight")

    def test_6_canary(self):
        self.db.sql("UPDATE deployments SET canary_weight = 10, keep_texts_days = 1 "
                    "WHERE name = 'bot'")
        self.wait_view(True)
        counts = self.route_versions(1000)
        canary = counts.get(str(self.v2), 0)
        self.assertTrue(70 <= canary <= 130, counts)
        self.db.sql("UPDATE deployments SET canary_weight = 0, keep_texts_days = 0 "
                    "WHERE name = 'bot'")
        self.wait_view(False)
        counts = self.route_versions(300)
        self.assertEqual(counts, {str(self.v1): 300})

    def test_7_metrics(self):
        c = Client(self.server.url, token=METRICS_TOKEN)
        st, text, _ = c.get("/metrics")
        self.assertEqual(st, 200)
        line = 'trainyard_gateway_requests_total{deployment="bot",version="%s"}' % self.v1
        self.assertIn(line, text)
        self.assertIn('trainyard_gateway_latency_seconds_bucket{deployment="bot"', text)
        self.assertIn('trainyard_gateway_ttft_seconds_count{deployment="bot"', text)
        self.assertIn('trainyard_gateway_completion_tokens_total{deployment="bot"', text)
        self.assertIn('trainyard_gateway_inflight{deployment="bot"', text)

    def test_8_openai_client(self):
        script = os.path.join(ROOT, "tests", "web", "openai_client.mjs")
        mods = os.path.join(ROOT, "tests", "web", "node_modules", "openai")
        if not os.path.isdir(mods):
            self.skipTest("the openai npm package is not installed (scripts/deps.sh)")
        rate_key = self.make_key("bot", "node-rate", rate_per_min=1)["secret"]
        out = subprocess.run(["node", script, self.server.url + "/v1", self.key, self.other_key,
                              rate_key],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        res = json.loads(out.stdout.strip().splitlines()[-1])
        self.assertEqual(res["models"], ["bot"])
        self.assertEqual(res["chat"], "openai says hi")
        self.assertEqual(res["stream"], "streamed by openai")
        self.assertGreater(res["stream_usage"]["completion_tokens"], 0)
        self.assertEqual(res["errors"], {"none": "AuthenticationError",
                                         "other": "PermissionDeniedError",
                                         "first": "no error",
                                         "rate": "RateLimitError"})

    def test_9_stream_is_relayed_as_it_comes(self):
        # A long answer; the replica is killed once the first piece reached
        # the client. A gateway that relays pieces as they come has passed on
        # only part of it: the stream ends cut off, recorded as a 502. One
        # that waited for the whole answer would deliver it all, [DONE] too.
        c, r, _ = self.read_sse(self.key, self.chat("x" * 50000, stream=True, max_tokens=50000))
        self.assertEqual(r.status, 200)
        first = r.readline()
        self.assertTrue(first.startswith(b"data: "), first)
        self.echo.send_signal(signal.SIGKILL)
        self.echo.wait()
        rest = b""
        try:
            rest = r.read()
        except http.client.IncompleteRead as e:
            rest = e.partial
        except OSError:
            pass
        c.close()
        self.assertNotIn(b"data: [DONE]", rest)
        rec = self.record(r.getheader("x-request-id"))
        self.assertEqual(rec["status"], 502)
        self.assertEqual(rec["error_code"], "upstream_error")


if __name__ == "__main__":
    harness.main()
