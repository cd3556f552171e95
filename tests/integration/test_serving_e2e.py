"""Serving end to end (docs/serving.md), every part real: a trainyard-server,
PostgreSQL and two trainyard-workers of one fake GPU each.

1. The chatbot-gpt2 template (size tiny, 24 steps) is trained on
   fortunes-zh (examples/data/fortunes_to_sets.py) through the API; its
   output is registered as a model version; a deployment of 2 replicas is
   made, and each replica lands on its own worker (one GPU per worker).
2. A key; the official openai npm client (tests/web/openai_client.mjs)
   chats through the gateway, streamed (stream_options.include_usage) and
   not: both greedy answers equal the text chat_gpt2.py's GPT.generate
   gives with model.pt and config.json loaded by hand. Its refusals (no
   key, a key of another deployment, over the rate limit) come in the
   OpenAI error shape (the client's own error classes) and each is recorded.
3. kill -9 of one replica's worker together with its model server (a
   machine lost) while two client threads send requests steadily: every
   request that failed was in flight on the dead replica when it died.
   Counting: each thread notes its requests' start, end and x-request-id;
   the kill lasts from the worker's SIGKILL until the model server's port
   refuses connections (a dying process closes its sockets only once its
   threads are gone and its memory released, and meanwhile takes
   connections it never answers); a request is in flight on the dead
   replica at the kill when it started before that end, ended after that
   start, and its record names the dead replica's job. Every failed request must be one of those (so the
   failures are at most their number). The node
   is declared lost after the server's node timeout (3 s here), the
   replica's job gets a new attempt on a third worker, and it is ready
   again: the deployment has 2 ready replicas on two live workers.
4. The audit trail exported and checked offline by `trainyard audit
   verify`: it passes, carries the request records (one proof checked
   here with hashlib as RFC 6962 folds it) and the lineage events
   (model.version.register, deployment.create, serve.key.create).
"""
import hashlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import CLI_BIN, ServerTest, Worker, wait_for  # noqa: E402
from test_deployments import environ  # noqa: E402
from test_gateway import record_hash  # noqa: E402

SRC = os.path.abspath(harness.SRC)
EXAMPLES = os.path.join(SRC, "examples")
PY = "/usr/bin/python3"
PARAMS = {"size": "tiny", "steps": 24, "batch": 8, "lr": 0.003, "eval_every": 24,
          "checkpoint_every": 24}


def rfc6962_root(leaf, index, count, proof):
    """The root an inclusion proof leads to (RFC 9162 2.1.3.2), or None."""
    fn, sn = index, count - 1
    node = hashlib.sha256(b"\x00" + leaf).digest()
    for p in proof:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            node = hashlib.sha256(b"\x01" + p + node).digest()
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            node = hashlib.sha256(b"\x01" + node + p).digest()
        fn >>= 1
        sn >>= 1
    return node if sn == 0 else None


def refused(host, port):
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
        return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


def by_hand(out_dir, question, max_tokens):
    """The greedy answer of the trained model, loaded by hand as
    serve_chat_gpt2.py loads it."""
    sys.path.insert(0, EXAMPLES)
    try:
        import chat_gpt2
        import torch
        with open(os.path.join(out_dir, "config.json"), encoding="utf-8") as f:
            cfg = chat_gpt2.GPTConfig(**json.load(f)["model"])
        model = chat_gpt2.GPT(cfg)
        model.load_state_dict(torch.load(os.path.join(out_dir, "model.pt"), map_location="cpu"))
        model.eval()
        prompt = [chat_gpt2.EOT] + list(question.encode("utf-8"))[: cfg.n_ctx // 2] + \
            [chat_gpt2.SEP]
        with torch.no_grad():
            ids = model.generate(prompt, min(max_tokens, cfg.n_ctx))
        return bytes(ids).decode("utf-8", errors="replace")
    finally:
        sys.path.remove(EXAMPLES)


class ServingE2ETest(ServerTest):
    @classmethod
    def setUpClass(cls):
        cls.storage = tempfile.mkdtemp(prefix="ty-serve-e2e-")
        os.chmod(cls.storage, 0o755)
        cls.server_args = ("--storage-root", cls.storage,
                           "--templates-dir", os.path.join(SRC, "templates"),
                           "--examples-dir", EXAMPLES, "--sched-interval-ms", "200",
                           "--node-timeout-s", "3")
        super().setUpClass()
        cls.workers = []
        try:
            cls.fortunes = os.path.join(cls.storage, "fortunes")
            out = subprocess.run([PY, os.path.join(EXAMPLES, "data", "fortunes_to_sets.py"),
                                  cls.fortunes, "--max-per-class", "100", "--max-pairs", "300"],
                                 capture_output=True, text=True, timeout=120)
            assert out.returncode == 0, out.stderr
            st, tok, _ = cls.admin.post("/api/v1/nodes/join-tokens", {"uses": 3})
            assert st == 201, tok
            cls.join = tok["token"]
            for name in ("serve-a", "serve-b"):
                cls.workers.append(Worker(cls.server.url, cls.join, name, gpus=1,
                                          allowed_root=cls.storage))
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            for w in cls.workers:
                if w.proc.poll() is None:
                    w.stop()
        finally:
            try:
                super().tearDownClass()
            finally:
                shutil.rmtree(cls.storage, ignore_errors=True)

    # helpers -------------------------------------------------------------
    def job(self, jid):
        return self.admin.get("/api/v1/jobs/" + str(jid))[1]

    def dep(self, name):
        st, body, _ = self.admin.get("/api/v1/deployments/" + name)
        self.assertEqual(st, 200, body)
        return body

    def replica_nodes(self, name):
        """{job id: node name} of the deployment's live replicas' attempts."""
        rows = self.db.sql(
            "SELECT r.job_id, n.name FROM serve_replicas r JOIN deployments d ON d.id = "
            "r.deployment_id JOIN jobs j ON j.id = r.job_id JOIN attempts t ON t.job_id = j.id "
            "AND t.attempt = j.attempt JOIN allocations a ON a.attempt_id = t.id JOIN nodes n "
            "ON n.id = a.node_id WHERE d.name = '%s' AND NOT r.retired" % name)
        return {int(j): n for j, n in rows}

    def chat(self, key, text, max_tokens=8, timeout=60):
        req = urllib.request.Request(
            self.server.url + "/v1/chat/completions",
            data=json.dumps({"model": "bot", "messages": [{"role": "user", "content": text}],
                             "max_tokens": max_tokens}).encode(),
            headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.headers.get("x-request-id")
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("x-request-id")
        except OSError:
            return 0, None

    def records(self, where):
        return self.db.sql("SELECT request_id, status, error_code, key_id, replica_job_id FROM "
                           "serve_requests WHERE " + where)

    def make_key(self, dep, name, **kw):
        st, body, _ = self.admin.post("/api/v1/deployments/%s/keys" % dep,
                                      dict({"name": name}, **kw))
        self.assertEqual(st, 201, body)
        return body

    # the test ------------------------------------------------------------
    def test_train_register_deploy_chat_failover_audit(self):
        # 1. Train through the API, register, deploy.
        st, team, _ = self.admin.post("/api/v1/teams", {"name": "support"})
        self.assertEqual(st, 201, team)
        out_dir = os.path.join(self.storage, "out", "chat")
        st, job, _ = self.admin.post("/api/v1/jobs", {
            "template": "chatbot-gpt2", "team": "support", "params": PARAMS,
            "resources": {"gpus": 1}, "datasets": [self.fortunes], "output_dir": out_dir})
        self.assertEqual(st, 201, job)
        final = wait_for(lambda: (lambda j: j if j["state"] in ("SUCCEEDED", "FAILED",
                                                               "CANCELLED") else None)(
            self.job(job["id"])), timeout=600, interval=0.5, what="the training job to end")
        self.assertEqual(final["state"], "SUCCEEDED", final)
        st, v, _ = self.admin.post("/api/v1/models/support-bot/versions",
                                   {"job_id": job["id"], "source": "output"})
        self.assertEqual(st, 201, v)
        self.assertEqual((v["serve_kind"], v["serve_script"]), ("chat", "serve_chat_gpt2.py"))
        self.assertTrue(v["lineage_complete"], v)
        st, d, _ = self.admin.post("/api/v1/deployments", {
            "name": "bot", "model": "support-bot", "version": 1, "replicas": 2})
        self.assertEqual(st, 201, d)
        # A second deployment, without replicas: its key is "another deployment's".
        st, other, _ = self.admin.post("/api/v1/deployments", {
            "name": "other", "model": "support-bot", "version": 1, "replicas": 0,
            "min_replicas": 0})
        self.assertEqual(st, 201, other)
        wait_for(lambda: self.dep("bot")["ready_replicas"] == 2, timeout=300,
                 what="both replicas ready")
        nodes = self.replica_nodes("bot")
        self.assertEqual(len(nodes), 2, nodes)
        self.assertEqual(len(set(nodes.values())), 2, "replicas on one worker: %s" % nodes)

        # 2. The official openai client; greedy answers equal the model's own.
        key = self.make_key("bot", "main", rate_per_min=1000000)
        other_key = self.make_key("other", "o")
        rate_key = self.make_key("bot", "slow", rate_per_min=1)
        script = os.path.join(SRC, "tests", "web", "openai_client.mjs")
        res = subprocess.run(["node", script, self.server.url + "/v1", key["secret"],
                              other_key["secret"], rate_key["secret"]],
                             capture_output=True, text=True, timeout=180)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        got = json.loads(res.stdout.strip().splitlines()[-1])
        self.assertEqual(got["models"], ["bot"])
        self.assertEqual(got["chat"], by_hand(out_dir, "openai says hi", 100))
        self.assertEqual(got["stream"], by_hand(out_dir, "streamed by openai", 100))
        self.assertGreater(got["stream_usage"]["completion_tokens"], 0)
        self.assertEqual(got["errors"], {"none": "AuthenticationError",
                                         "other": "PermissionDeniedError",
                                         "first": "no error", "rate": "RateLimitError"})
        # Each refusal is recorded, with the code the client saw.
        wait_for(lambda: len(self.records("status >= 400")) >= 3, timeout=30,
                 what="the refusals' records")
        refusals = sorted((r[1], r[2], r[3]) for r in self.records("status >= 400"))
        self.assertEqual(refusals, sorted([("401", "invalid_api_key", ""),
                                          ("403", "model_not_allowed", other_key["id"]),
                                          ("429", "rate_limit_exceeded", rate_key["id"])]))

        # 3. A worker and its replica lost under steady traffic.
        secret = key["secret"]
        stop = threading.Event()
        log = []  # (start, end, status, request id)
        lock = threading.Lock()

        def client():
            while not stop.is_set():
                t0 = time.monotonic()
                status, rid = self.chat(secret, "你好", max_tokens=4)
                with lock:
                    log.append((t0, time.monotonic(), status, rid))
        threads = [threading.Thread(target=client) for _ in range(2)]
        for t in threads:
            t.start()
        try:
            wait_for(lambda: sum(1 for e in log if e[2] == 200) >= 6, timeout=60,
                     what="steady traffic")
            victim_job, victim_node = sorted(self.replica_nodes("bot").items())[0]
            worker = [w for w in self.workers if w.name == victim_node][0]
            pids = [pid for pid, _ in harness.processes_with_cmdline("serve_chat_gpt2.py")
                    if environ(pid).get("TRAINYARD_JOB_ID") == str(victim_job)]
            self.assertEqual(len(pids), 1, pids)
            addr = self.db.sql("SELECT t.master_addr, t.master_port FROM jobs j JOIN attempts t "
                               "ON t.job_id = j.id AND t.attempt = j.attempt WHERE j.id = %s"
                               % victim_job)[0]
            first_attempt = self.job(victim_job)["attempt"]
            # The machine goes: its worker and the model server it started
            # (in a process group of its own) die together.
            t_kill0 = time.monotonic()
            worker.kill9()
            os.killpg(os.getpgid(pids[0]), signal.SIGKILL)
            # A killed process closes its sockets only once every thread has
            # exited and its memory is released (tens of ms for torch): until
            # then its listening socket still takes connections, later reset.
            # The kill ends when its port refuses connections.
            wait_for(lambda: refused(*addr), timeout=60, interval=0.005,
                     what="the killed model server's port closed")
            t_kill = time.monotonic()
            self.workers.append(Worker(self.server.url, self.join, "serve-c", gpus=1,
                                       allowed_root=self.storage))
            wait_for(lambda: self.job(victim_job)["attempt"] > first_attempt and
                     self.dep("bot")["ready_replicas"] == 2, timeout=300,
                     what="the lost replica ready again elsewhere")
            n = len(log)
            wait_for(lambda: len(log) >= n + 6, timeout=60, what="traffic after the recovery")
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=120)
        # The training path's recovery: the node declared down, the
        # replica's job placed again on the worker that joined.
        self.assertEqual(self.db.sql("SELECT state FROM nodes WHERE name = '%s'" % victim_node),
                         [["down"]])
        nodes = self.replica_nodes("bot")
        self.assertEqual(nodes[victim_job], "serve-c", nodes)
        self.assertEqual(len(set(nodes.values())), 2, nodes)
        def replica_of(e):
            self.assertIsNotNone(e[3], "a request answered without x-request-id: %r" % (e,))
            rec = wait_for(lambda: self.records("request_id = '%s'" % e[3]), timeout=30,
                           what="the record of " + e[3])
            return int(rec[0][4]) if rec[0][4] else None
        # In flight on the dead replica at the kill: started before the
        # model server's port closed, ended after its worker was killed,
        # and recorded as sent to the dead replica's job.
        on_dead = [e for e in log if e[0] < t_kill and e[1] > t_kill0 and
                   replica_of(e) == victim_job]
        failed = [e for e in log if e[2] != 200]
        print("  failover: %d requests, %d failed, %d in flight on the dead replica at the kill"
              % (len(log), len(failed), len(on_dead)), file=sys.stderr)
        for e in failed:
            self.assertIn(e, on_dead, "a failed request not in flight on the dead replica at "
                          "the kill: %r (kill at %.3f..%.3f); the gateway's log:\n%s" % (
                              e, t_kill0, t_kill, "\n".join(
                                  line for line in self.server.log_text().splitlines()
                                  if "gateway" in line)[-3000:]))
        self.assertLessEqual(len(failed), len(on_dead))
        self.assertTrue(any(e[0] > t_kill and e[2] == 200 for e in log))

        # 4. The audit trail, verified offline with its request records.
        wait_for(lambda: self.db.sql("SELECT count(*) FROM serve_requests WHERE batch_id IS "
                                     "NULL") == [["0"]], timeout=60, what="every record sealed")
        st, pub, _ = self.admin.get("/api/v1/audit/public-key")
        self.assertEqual(st, 200, pub)
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=120)
        conn.request("GET", "/api/v1/audit/export?format=jsonl",
                     headers={"Cookie": self.admin.cookie})
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        self.assertEqual(resp.status, 200, data[:300])
        d = tempfile.mkdtemp(prefix="ty-e2e-audit-")
        try:
            exp, keyf = os.path.join(d, "export.jsonl"), os.path.join(d, "key.json")
            with open(exp, "wb") as f:
                f.write(data)
            with open(keyf, "w") as f:
                json.dump(pub, f)
            out = subprocess.run([CLI_BIN, "audit", "verify", exp, "--public-key", keyf,
                                  "--json"], capture_output=True, text=True, timeout=120)
        finally:
            shutil.rmtree(d, ignore_errors=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        verdict = json.loads(out.stdout)
        self.assertTrue(verdict["ok"], verdict)
        total = int(self.db.sql("SELECT count(*) FROM serve_requests")[0][0])
        self.assertEqual(verdict["serve_records"], total)
        events, records = {}, []
        for line in data.decode().splitlines():
            obj = json.loads(line)
            if "serve_record" in obj:
                records.append(obj["serve_record"])
            elif "event" in obj:
                events[str(obj["event"]["id"])] = obj["event"]
        actions = {e["action"] for e in events.values()}
        for a in ("model.version.register", "deployment.create", "serve.key.create",
                  "serve.requests.seal"):
            self.assertIn(a, actions)
        self.assertEqual(len(records), total)
        # One record (the last, of a batch of several when there is one)
        # proven with hashlib alone against its seal event's root.
        r = max(records, key=lambda x: (x["count"], x["index"]))
        leaf = bytes.fromhex(record_hash(r))
        self.assertEqual(leaf.hex(), r["record_sha256"])
        seal = events[r["event"]]
        self.assertEqual(seal["action"], "serve.requests.seal")
        details = seal["details"] if isinstance(seal["details"], dict) else \
            json.loads(seal["details"])
        root = rfc6962_root(leaf, r["index"], r["count"], [bytes.fromhex(p) for p in r["proof"]])
        self.assertIsNotNone(root)
        self.assertEqual(root.hex(), details["root"])


if __name__ == "__main__":
    harness.main()
