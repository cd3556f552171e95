"""The model servers (examples/serve_*.py on trainyard_serve.py), started by hand.

No platform and no database: the tiny chatbot (examples/chat_gpt2.py,
fortunes-zh pairs with short answers) and the text classifier
(review_textcls.py, fortunes-zh lines) are trained by hand on the CPU, one
rank each; their files are hashed into a manifest with hashlib, and each
server is started with the env the worker gives a replica (docs/serving.md,
"The model server"); the test reads its TRAINYARD_SERVING line and talks
HTTP to it. What the tests prove:

- /health (503 never seen here: the line comes after loading; 200 with the
  kind and the manifest's digest as the registry computes it), 401 without
  or with a wrong token, and every error in OpenAI's shape (bad JSON, an
  unknown route, a wrong method, a body too large);
- chat and completions answers in OpenAI's shapes; greedy answers equal
  what GPT.generate gives with the weights loaded by hand, from the output
  directory and from a checkpoint file;
- streaming: server-sent events, one per HTTP chunk, the role first, the
  text in pieces that join to the unstreamed answer, the finish reason, the
  usage chunk of stream_options.include_usage, then [DONE];
- max_tokens and stop strings, streamed and not;
- 16 concurrent requests that form one batch (a window longer than the
  test, closed by the 16th request) answer exactly as the same requests one
  at a time, greedy and seeded sampling alike;
- a changed, grown or missing file, or a manifest path leading out, makes
  the server exit 3 with its TRAINYARD_SERVE_ERROR line before it listens;
- SIGTERM while a request waits in the batching window: it is answered in
  full and the server exits 0;
- serve_echo.py: the same contract without torch;
- serve_classify.py (review_textcls.py trained beside the chatbot): labels
  and every label's probability equal the classifier loaded by hand, from
  the output directory and from a checkpoint, batched or not.
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
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import wait_for  # noqa: E402

PY = "/usr/bin/python3"
EXAMPLES = os.path.join(os.path.abspath(harness.SRC), "examples")
TOKEN = "serve-token-for-tests"
# Questions: the first eight are 4 characters of 3 bytes each (one length,
# so they share forward passes in a batch), the rest vary.
QUESTIONS = ["订单退货", "发票快递", "尺码颜色", "优惠库存", "保修安装", "退货发票", "颜色尺码", "库存优惠",
             "hello", "床前明月光", "a", "你好吗?", "Where is my order?", "天下", "春眠不觉晓处处闻啼鸟", "x" * 80]


def manifest_of(path):
    """The registry's manifest of path: every regular file, sorted, relative
    (a file: itself under its own name)."""
    if os.path.isfile(path):
        files = [(os.path.basename(path), path)]
    else:
        files = sorted((os.path.relpath(os.path.join(d, f), path), os.path.join(d, f))
                       for d, _, names in os.walk(path) for f in names)
    out = []
    for rel, full in files:
        with open(full, "rb") as f:
            data = f.read()
        out.append({"path": rel, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    return out


def canonical_sha256(manifest):
    return hashlib.sha256("".join("%s %d %s\n" % (e["sha256"], e["size"], e["path"])
                                  for e in manifest).encode()).hexdigest()


class Served:
    """One model server process; its output goes to <tmp>/<name>.log."""

    def __init__(self, tmp, script, model_path, name, manifest=None, env=None):
        self.log = os.path.join(tmp, name + ".log")
        e = {k: v for k, v in os.environ.items() if not k.startswith("TRAINYARD_")}
        e.update({"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "CUDA_VISIBLE_DEVICES": "",
                  "PYTHONUNBUFFERED": "1", "TRAINYARD_SERVE_HOST": "127.0.0.1", "TRAINYARD_SERVE_PORT": "0",
                  "TRAINYARD_SERVE_TOKEN": TOKEN, "TRAINYARD_MODEL_PATH": model_path,
                  "TRAINYARD_MODEL_MANIFEST": json.dumps(manifest if manifest is not None
                                                         else manifest_of(model_path)),
                  "TRAINYARD_MODEL_NAME": "support-bot"})
        e.update(env or {})
        with open(self.log, "wb") as f:
            self.proc = subprocess.Popen([PY, os.path.join(EXAMPLES, script)], stdout=f,
                                         stderr=subprocess.STDOUT, env=e, cwd=tmp)
        harness._children.append(self.proc)  # killed at exit if a test leaves it running
        self.port = None

    def text(self):
        with open(self.log, encoding="utf-8", errors="replace") as f:
            return f.read()

    def line(self, kind):
        for line in self.text().splitlines():
            if line.startswith(kind + " "):
                return json.loads(line[len(kind) + 1:])
        return None

    def wait_serving(self):
        def ready():
            if self.proc.poll() is not None:
                raise AssertionError("server exited %s:\n%s" % (self.proc.returncode, self.text()[-3000:]))
            return self.line("TRAINYARD_SERVING")
        got = wait_for(ready, timeout=120, what="TRAINYARD_SERVING")
        self.port = got["port"]
        return got

    def wait_exit(self, timeout=120):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("server still running:\n" + self.text()[-3000:])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.wait_exit()

    def request(self, method, path, body=None, token=TOKEN, headers=None, raw=None):
        """(status, headers, parsed JSON body)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        h = dict(headers or {})
        if token is not None:
            h["Authorization"] = "Bearer " + token
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        payload = r.read()
        c.close()
        return r.status, r.headers, json.loads(payload) if payload else None

    def post(self, path, body, **kw):
        return self.request("POST", path, body, **kw)

    def stream(self, path, body):
        """(HTTP chunks, [parsed SSE data]) of a streamed answer, read off the
        socket so that the chunk framing is seen as sent."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=120)
        data = json.dumps(body).encode()
        s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n%s" % (path.encode(), TOKEN.encode(), len(data), data))
        f = s.makefile("rb")
        status = f.readline()
        assert b" 200 " in status, status + f.read(2000)
        headers = {}
        while True:
            line = f.readline().strip()
            if not line:
                break
            k, v = line.decode().split(":", 1)
            headers[k.lower()] = v.strip()
        assert headers.get("transfer-encoding") == "chunked", headers
        assert headers.get("content-type", "").startswith("text/event-stream"), headers
        chunks = []
        while True:
            n = int(f.readline().strip(), 16)
            if n == 0:
                f.readline()
                break
            chunks.append(f.read(n))
            assert f.readline() == b"\r\n"
        s.close()
        events = []
        for c in chunks:
            text = c.decode("utf-8")  # raises if a character were split across chunks
            assert text.startswith("data: ") and text.endswith("\n\n") and text.count("data: ") == 1, c
            payload = text[len("data: "):-2]
            events.append(payload if payload == "[DONE]" else json.loads(payload))
        return chunks, events


def chat(q, **kw):
    return dict({"model": "support-bot", "messages": [{"role": "system", "content": "be brief"},
                                                      {"role": "user", "content": q}]}, **kw)


class ServeScriptsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp_obj = tempfile.TemporaryDirectory(prefix="trainyard-serve-")
        cls.tmp = cls.tmp_obj.name
        data = os.path.join(cls.tmp, "fortunes")
        out = subprocess.run([PY, os.path.join(EXAMPLES, "data", "fortunes_to_sets.py"), data,
                              "--max-per-class", "100", "--max-pairs", "300"],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        # Pairs with short answers: a few steps teach the model to end its
        # answers (<|endoftext|>), so answers end by "stop" as well as "length".
        short = os.path.join(cls.tmp, "short.jsonl")
        with open(os.path.join(data, "chat.jsonl"), encoding="utf-8") as f, \
                open(short, "w", encoding="utf-8") as g:
            g.writelines(line for line in f if len(json.loads(line)["answer"].encode()) <= 30)
        cls.out = os.path.join(cls.tmp, "chat-out")
        ck = os.path.join(cls.tmp, "ck")
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINYARD_")}
        env.update({"WORLD_SIZE": "1", "RANK": "0", "LOCAL_RANK": "0", "CUDA_VISIBLE_DEVICES": ""})
        # The chatbot and the classifier train side by side.
        runs = [cls.train(env, "chat_gpt2.py", ck, ["--steps", "24", "--batch", "8", "--checkpoint-every", "12",
                                                    "--data", short, "--output", cls.out])]
        cls.cls_out = os.path.join(cls.tmp, "textcls-out")
        cls_ck = os.path.join(cls.tmp, "cls-ck")
        runs.append(cls.train(env, "review_textcls.py", cls_ck,
                              ["--steps", "10", "--batch", "16", "--checkpoint-every", "5",
                               "--data", os.path.join(data, "textcls.tsv"), "--output", cls.cls_out]))
        for proc, log in runs:
            rc = proc.wait(600)
            with open(log, encoding="utf-8", errors="replace") as f:
                assert rc == 0, f.read()[-3000:]
        cls.cls_ckpt = os.path.join(cls_ck, "step-5.pt")
        # The step-12 checkpoint: other weights than the output's (step 24).
        cls.ckpt = os.path.join(ck, "step-12.pt")
        assert os.path.isfile(cls.ckpt), os.listdir(ck)
        cls.expected = cls.by_hand_answers(os.path.join(cls.out, "model.pt"))
        cls.expected_ckpt = cls.by_hand_answers(cls.ckpt)
        cls.server = Served(cls.tmp, "serve_chat_gpt2.py", cls.out, "chat")
        cls.server.wait_serving()

    @classmethod
    def train(cls, env, script, ck, args):
        """One rank of script, tiny, started by hand: (process, its log)."""
        log = os.path.join(cls.tmp, script + ".log")
        env = dict(env, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(harness.free_port()), TRAINYARD_CHECKPOINT_DIR=ck)
        with open(log, "wb") as f:
            proc = subprocess.Popen([PY, os.path.join(EXAMPLES, script), "--size", "tiny", "--eval-every", "0",
                                     "--keep-checkpoints", "0"] + args, stdout=f, stderr=subprocess.STDOUT, env=env)
        return proc, log

    @classmethod
    def by_hand_answers(cls, weights):
        """{question: (ids, text)} from chat_gpt2's GPT loaded by hand."""
        sys.path.insert(0, EXAMPLES)
        try:
            import chat_gpt2
            import torch
            with open(os.path.join(cls.out, "config.json"), encoding="utf-8") as f:
                cfg = chat_gpt2.GPTConfig(**json.load(f)["model"])
            model = chat_gpt2.GPT(cfg)
            sd = torch.load(weights)
            model.load_state_dict(sd["model"] if "optimizer" in sd else sd)
            model.eval()
            answers = {}
            for q in QUESTIONS:
                prompt = [chat_gpt2.EOT] + list(q.encode("utf-8"))[: cfg.n_ctx // 2] + [chat_gpt2.SEP]
                ids = model.generate(prompt, 64)
                answers[q] = (len(prompt), ids, bytes(ids).decode("utf-8", errors="replace"))
            return answers
        finally:
            sys.path.remove(EXAMPLES)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.tmp_obj.cleanup()

    def assert_error(self, status, got, code):
        self.assertEqual(got[0], status, got)
        err = got[2]["error"]
        self.assertEqual(set(err), {"message", "type", "param", "code"}, got)
        self.assertEqual(err["code"], code, got)

    # ------------------------------------------------------------ contract

    def test_health_auth_and_errors(self):
        s = self.server
        status, _, body = s.request("GET", "/health", token=None)
        self.assertEqual(status, 200)
        self.assertEqual(body["status"], "ok")
        self.assertEqual(body["kind"], "chat")
        self.assertEqual(body["manifest_sha256"], canonical_sha256(manifest_of(self.out)))
        self.assertEqual(s.line("TRAINYARD_SERVING")["kind"], "chat")
        self.assert_error(401, s.post("/v1/chat/completions", chat("hi"), token=None), "invalid_api_key")
        self.assert_error(401, s.post("/v1/chat/completions", chat("hi"), token=TOKEN + "x"), "invalid_api_key")
        self.assert_error(401, s.post("/v1/nowhere", {}, token=None), "invalid_api_key")
        self.assert_error(400, s.post("/v1/chat/completions", None, raw=b"{not json"), "invalid_json")
        self.assert_error(400, s.post("/v1/chat/completions", None, raw=b"[1]"), "invalid_json")
        got = s.post("/v1/chat/completions", {"messages": [{"role": "system", "content": "x"}]})
        self.assert_error(400, got, "invalid_value")
        self.assertEqual(got[2]["error"]["param"], "messages")
        self.assertEqual(s.post("/v1/chat/completions", chat("hi", temperature=9))[2]["error"]["param"],
                         "temperature")
        self.assert_error(404, s.post("/v1/nowhere", {}), "not_found")
        self.assert_error(404, s.post("/v1/embeddings", {"input": "x"}), "not_found")
        self.assert_error(405, s.request("GET", "/v1/chat/completions"), "method_not_allowed")
        # Refused on its Content-Length alone, before the body is read.
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
        c.putrequest("POST", "/v1/chat/completions")
        c.putheader("Authorization", "Bearer " + TOKEN)
        c.putheader("Content-Length", str(5 << 20))
        c.endheaders()
        r = c.getresponse()
        self.assert_error(413, (r.status, r.headers, json.loads(r.read())), "request_too_large")
        c.close()

    def test_greedy_chat_equals_generate(self):
        for q in QUESTIONS:
            n_prompt, ids, text = self.expected[q]
            status, _, body = self.server.post("/v1/chat/completions", chat(q))
            self.assertEqual(status, 200, body)
            self.assertEqual(body["object"], "chat.completion")
            self.assertTrue(body["id"].startswith("chatcmpl-"))
            self.assertEqual(body["model"], "support-bot")
            self.assertIsInstance(body["created"], int)
            choice = body["choices"][0]
            self.assertEqual(choice["message"], {"role": "assistant", "content": text}, q)
            self.assertEqual(choice["finish_reason"], "length" if len(ids) == 64 else "stop")
            self.assertEqual(body["usage"], {"prompt_tokens": n_prompt, "completion_tokens": len(ids),
                                             "total_tokens": n_prompt + len(ids)})
        lengths = [len(self.expected[q][1]) for q in QUESTIONS]
        self.assertTrue(any(0 < n < 64 for n in lengths), "some answers end by <|endoftext|>: %s" % lengths)

    def test_completions_equal_generate(self):
        q = QUESTIONS[9]
        n_prompt, ids, text = self.expected[q]
        status, _, body = self.server.post("/v1/completions", {"model": "m", "prompt": q})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["object"], "text_completion")
        self.assertEqual(body["choices"][0]["text"], text)
        self.assertEqual(body["usage"]["completion_tokens"], len(ids))

    def test_stream(self):
        q = max(QUESTIONS, key=lambda q: len(self.expected[q][1]))
        n_prompt, ids, text = self.expected[q]
        chunks, events = self.server.stream("/v1/chat/completions",
                                            chat(q, stream=True, stream_options={"include_usage": True}))
        self.assertEqual(events[-1], "[DONE]")
        body = events[:-1]
        self.assertEqual({e["object"] for e in body}, {"chat.completion.chunk"})
        self.assertEqual(len({e["id"] for e in body}), 1)
        self.assertEqual(body[0]["choices"][0]["delta"], {"role": "assistant", "content": ""})
        pieces = [e["choices"][0]["delta"].get("content", "") for e in body[1:-2]]
        self.assertEqual("".join(pieces), text)
        self.assertGreater(len(pieces), 1, "the text came in pieces")
        self.assertEqual(body[-2]["choices"][0]["finish_reason"], "length" if len(ids) == 64 else "stop")
        self.assertTrue(all(e["usage"] is None for e in body[:-1]))
        self.assertEqual(body[-1]["choices"], [])
        self.assertEqual(body[-1]["usage"], {"prompt_tokens": n_prompt, "completion_tokens": len(ids),
                                             "total_tokens": n_prompt + len(ids)})
        # Without include_usage: no usage chunk; completions stream as text_completion.
        _, events = self.server.stream("/v1/completions", {"prompt": q, "stream": True})
        self.assertEqual(events[-1], "[DONE]")
        self.assertEqual({e["object"] for e in events[:-1]}, {"text_completion"})
        self.assertEqual("".join(e["choices"][0]["text"] for e in events[:-1]), text)
        self.assertNotIn("usage", events[-2])

    def test_max_tokens_and_stop(self):
        q = max(QUESTIONS, key=lambda q: len(self.expected[q][2]))
        _, ids, text = self.expected[q]
        self.assertGreaterEqual(len(text), 4, "an answer long enough to cut")
        status, _, body = self.server.post("/v1/chat/completions", chat(q, max_tokens=3))
        self.assertEqual(body["choices"][0]["finish_reason"], "length")
        self.assertEqual(body["usage"]["completion_tokens"], 3)
        self.assertEqual(body["choices"][0]["message"]["content"],
                         bytes(ids[:3]).decode("utf-8", errors="replace"))
        stop = text[2:4]
        cut = text[:text.find(stop)]
        status, _, body = self.server.post("/v1/chat/completions", chat(q, stop=[stop, "never-seen"]))
        self.assertEqual(body["choices"][0]["message"]["content"], cut)
        self.assertEqual(body["choices"][0]["finish_reason"], "stop")
        _, events = self.server.stream("/v1/chat/completions", chat(q, stop=stop, stream=True))
        self.assertEqual("".join(e["choices"][0]["delta"].get("content", "") for e in events[:-1]), cut)
        self.assertEqual(events[-2]["choices"][0]["finish_reason"], "stop")

    def test_concurrent_batch_equals_sequential(self):
        sampled = {}
        for q in QUESTIONS:
            sampled[q] = self.server.post("/v1/chat/completions", chat(q, temperature=0.9, seed=7))[2]
        self.assertEqual(self.server.post("/v1/chat/completions", chat(QUESTIONS[0], temperature=0.9, seed=7))[2]
                         ["choices"], sampled[QUESTIONS[0]]["choices"], "the same seed, the same text")
        # A window no test waits out: the batch closes when the 16th request arrives.
        s = Served(self.tmp, "serve_chat_gpt2.py", self.out, "chat-batch",
                   env={"TRAINYARD_SERVE_BATCH_MS": "600000", "TRAINYARD_SERVE_MAX_BATCH": str(len(QUESTIONS))})
        try:
            s.wait_serving()
            for sample in (False, True):
                got = {}

                def ask(q):
                    got[q] = s.post("/v1/chat/completions",
                                    chat(q, temperature=0.9, seed=7) if sample else chat(q))[2]

                before = s.request("GET", "/health")[2]["batches"]
                threads = [threading.Thread(target=ask, args=(q,)) for q in QUESTIONS]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                self.assertEqual(s.request("GET", "/health")[2]["batches"], before + 1, "one batch")
                for q in QUESTIONS:
                    if sample:
                        self.assertEqual(got[q]["choices"], sampled[q]["choices"], q)
                    else:
                        self.assertEqual(got[q]["choices"][0]["message"]["content"], self.expected[q][2], q)
        finally:
            self.assertEqual(s.stop(), 0, s.text()[-2000:])

    def test_checkpoint_file(self):
        s = Served(self.tmp, "serve_chat_gpt2.py", self.ckpt, "chat-ckpt")
        try:
            s.wait_serving()
            self.assertEqual(s.request("GET", "/health")[2]["manifest_sha256"],
                             canonical_sha256(manifest_of(self.ckpt)))
            differ = 0
            for q in QUESTIONS:
                status, _, body = s.post("/v1/chat/completions", chat(q))
                self.assertEqual(body["choices"][0]["message"]["content"], self.expected_ckpt[q][2], q)
                differ += self.expected_ckpt[q][2] != self.expected[q][2]
            self.assertGreater(differ, 0, "the checkpoint's weights, not the output's")
        finally:
            self.assertEqual(s.stop(), 0, s.text()[-2000:])

    # ------------------------------------------------------------ refusals

    def refused(self, name, model_path, manifest, code, **fields):
        s = Served(self.tmp, "serve_chat_gpt2.py", model_path, name, manifest=manifest)
        self.assertEqual(s.wait_exit(), 3, s.text()[-2000:])
        err = s.line("TRAINYARD_SERVE_ERROR")
        self.assertIsNotNone(err, s.text())
        self.assertEqual(err["code"], code, err)
        for k, v in fields.items():
            self.assertEqual(err[k], v, err)
        self.assertIsNone(s.line("TRAINYARD_SERVING"))
        self.assertNotIn("model {", s.text(), "nothing loaded")

    def test_tampered_files_exit_3(self):
        bad = os.path.join(self.tmp, "tampered")
        shutil.copytree(self.out, bad)
        manifest = manifest_of(bad)
        weights = os.path.join(bad, "model.pt")
        with open(weights, "r+b") as f:  # one byte changed, size kept
            f.seek(-100, os.SEEK_END)
            b = f.read(1)
            f.seek(-100, os.SEEK_END)
            f.write(bytes([b[0] ^ 1]))
        self.refused("tampered-byte", bad, manifest, "manifest_mismatch", path="model.pt", reason="sha256")
        with open(os.path.join(bad, "config.json"), "a") as f:
            f.write(" ")
        self.refused("tampered-size", bad, manifest, "manifest_mismatch", path="config.json", reason="size")
        shutil.copy(os.path.join(self.out, "config.json"), os.path.join(bad, "config.json"))
        os.unlink(weights)
        self.refused("tampered-missing", bad, manifest_of(self.out), "manifest_mismatch", path="model.pt",
                     reason="missing")
        ck = manifest_of(self.ckpt)
        ck[0]["sha256"] = "0" * 64
        self.refused("tampered-ckpt", self.ckpt, ck, "manifest_mismatch", reason="sha256")
        outside = manifest_of(self.out) + [dict(manifest_of(self.ckpt)[0], path="../ck/step-12.pt")]
        self.refused("path-outside", self.out, outside, "manifest_invalid")
        link = os.path.join(self.tmp, "linked")
        shutil.copytree(self.out, link)
        os.symlink(self.ckpt, os.path.join(link, "extra.pt"))
        linked = manifest_of(self.out) + [dict(manifest_of(self.ckpt)[0], path="extra.pt")]
        self.refused("link-outside", link, sorted(linked, key=lambda e: e["path"]), "manifest_invalid",
                     path="extra.pt")

    def test_sigterm_finishes_in_flight(self):
        s = Served(self.tmp, "serve_chat_gpt2.py", self.out, "chat-term",
                   env={"TRAINYARD_SERVE_BATCH_MS": "600000"})
        s.wait_serving()
        got = []
        t = threading.Thread(target=lambda: got.append(s.post("/v1/chat/completions", chat(QUESTIONS[8]))))
        t.start()
        # Held in the batching window until SIGTERM ends it.
        wait_for(lambda: s.request("GET", "/health")[2]["requests"] == 1, what="a request in flight")
        s.proc.send_signal(signal.SIGTERM)
        t.join()
        self.assertEqual(s.wait_exit(), 0, s.text()[-2000:])
        self.assertEqual(got[0][0], 200, got)
        self.assertEqual(got[0][2]["choices"][0]["message"]["content"], self.expected[QUESTIONS[8]][2])
        self.assertIn("stopped: every request in flight answered", s.text())
        with self.assertRaises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", s.port), timeout=5)

    # ------------------------------------------------------------ echo

    def test_echo(self):
        s = Served(self.tmp, "serve_echo.py", self.out, "echo", env={"TRAINYARD_SERVE_KIND": "echo"})
        try:
            s.wait_serving()
            self.assertEqual(s.request("GET", "/health")[2]["kind"], "echo")
            self.assert_error(401, s.post("/v1/chat/completions", chat("hi"), token="x"), "invalid_api_key")
            q = "你好, echo"
            status, _, body = s.post("/v1/chat/completions", chat(q))
            self.assertEqual(body["choices"][0]["message"]["content"], q)
            n = len(q.encode())
            self.assertEqual(body["usage"], {"prompt_tokens": n, "completion_tokens": n, "total_tokens": 2 * n})
            _, events = s.stream("/v1/chat/completions", chat(q, stream=True))
            pieces = [e["choices"][0]["delta"].get("content", "") for e in events[1:-2]]
            self.assertEqual(pieces, list(q), "one whole character per chunk")
            # HTTP/1.0 has no chunked encoding: the stream ends with the connection.
            sock = socket.create_connection(("127.0.0.1", s.port), timeout=60)
            data = json.dumps(chat(q, stream=True)).encode()
            sock.sendall(b"POST /v1/chat/completions HTTP/1.0\r\nAuthorization: Bearer %s\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (TOKEN.encode(), len(data), data))
            raw = b""
            while True:
                b = sock.recv(65536)
                if not b:
                    break
                raw += b
            sock.close()
            head, _, sse = raw.partition(b"\r\n\r\n")
            self.assertIn(b" 200 ", head.split(b"\r\n")[0])
            self.assertNotIn(b"chunked", head.lower())
            events = [e[len("data: "):] for e in sse.decode().split("\n\n") if e]
            self.assertEqual(events[-1], "[DONE]")
            self.assertEqual("".join(json.loads(e)["choices"][0]["delta"].get("content", "") for e in events[:-1]), q)
            self.assertEqual(s.post("/v1/completions", {"prompt": q, "max_tokens": 4})[2]["choices"][0]["text"],
                             "你\ufffd", "4 bytes: a whole character, then a cut one as GPT answers decode")
            status, _, body = s.post("/v1/embeddings", {"input": ["a", "b", "a"]})
            self.assertEqual(body["object"], "list")
            vecs = [d["embedding"] for d in body["data"]]
            self.assertEqual(len(vecs[0]), 16)
            self.assertEqual(vecs[0], vecs[2])
            self.assertNotEqual(vecs[0], vecs[1])
            self.assertAlmostEqual(sum(x * x for x in vecs[0]), 1.0, places=6)
            self.assertEqual(body["usage"]["prompt_tokens"], 3)
        finally:
            self.assertEqual(s.stop(), 0, s.text()[-2000:])
        self.assertNotIn("torch", subprocess.run(
            [PY, "-c", "import sys; sys.path.insert(0, %r); import serve_echo; print(sorted(sys.modules))" % EXAMPLES],
            capture_output=True, text=True, timeout=60).stdout)
        bad = manifest_of(self.out)
        bad[0]["size"] += 1
        s = Served(self.tmp, "serve_echo.py", self.out, "echo-bad", manifest=bad)
        self.assertEqual(s.wait_exit(), 3)
        self.assertEqual(s.line("TRAINYARD_SERVE_ERROR")["code"], "manifest_mismatch")
        s = Served(self.tmp, "serve_echo.py", self.out, "echo-kind", env={"TRAINYARD_SERVE_KIND": "chat"})
        self.assertEqual(s.wait_exit(), 2)
        self.assertEqual(s.line("TRAINYARD_SERVE_ERROR")["code"], "config_invalid")


    # ------------------------------------------------------------ classify

    def by_hand_predictions(self, texts, from_checkpoint):
        """[(label, scores)] of review_textcls's Classifier loaded by hand,
        each text alone, padded to max_len as in training."""
        sys.path.insert(0, EXAMPLES)
        try:
            import review_textcls as rt
            import torch
            with open(os.path.join(self.cls_out, "vocab.json"), encoding="utf-8") as f:
                vocab = json.load(f)
            tok = rt.Tokenizer(vocab["tokenizer"], list(vocab["chars"]))
            model = rt.Classifier(tok.size, len(vocab["labels"]), **vocab["config"])
            sd = torch.load(self.cls_ckpt)["model"] if from_checkpoint else \
                torch.load(os.path.join(self.cls_out, "model.pt"))
            model.load_state_dict(sd)
            model.eval()
            out = []
            with torch.no_grad():
                for t in texts:
                    x, _ = rt.collate([(torch.tensor(tok.encode(t, vocab["config"]["max_len"])), 0)],
                                      vocab["config"]["max_len"])
                    p = torch.softmax(model(x).float(), -1)[0].tolist()
                    out.append((vocab["labels"][max(range(len(p)), key=p.__getitem__)],
                                dict(zip(vocab["labels"], p))))
            return out
        finally:
            sys.path.remove(EXAMPLES)

    def test_classify(self):
        texts = QUESTIONS[:12]
        want = self.by_hand_predictions(texts, False)
        s = Served(self.tmp, "serve_classify.py", self.cls_out, "classify",
                   env={"TRAINYARD_SERVE_KIND": "classify", "TRAINYARD_SERVE_BATCH_MS": "600000",
                        "TRAINYARD_SERVE_MAX_BATCH": str(len(texts))})
        try:
            s.wait_serving()
            self.assertEqual(s.request("GET", "/health")[2]["kind"], "classify")
            self.assert_error(400, s.post("/v1/predict", {"inputs": [1]}), "invalid_value")
            self.assert_error(404, s.post("/v1/chat/completions", chat("x")), "not_found")
            got = {}

            def ask(i):
                got[i] = s.post("/v1/predict", {"inputs": texts[i]})[2]

            # One batch of 12 requests (the window closes on the 12th).
            threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(texts))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(s.request("GET", "/health")[2]["batches"], 1)
            for i, (label, scores) in enumerate(want):
                d = got[i]["data"][0]
                self.assertEqual((d["label"], d["scores"]), (label, scores), texts[i])
                self.assertEqual(d["score"], scores[label])
                self.assertGreater(got[i]["usage"]["prompt_tokens"], 0)
        finally:
            self.assertEqual(s.stop(), 0, s.text()[-2000:])
        s = Served(self.tmp, "serve_classify.py", self.cls_ckpt, "classify-ckpt")
        try:
            s.wait_serving()
            want = self.by_hand_predictions(texts, True)
            status, _, body = s.post("/v1/predict", {"inputs": texts})
            self.assertEqual(status, 200, body)
            self.assertEqual(body["object"], "list")
            self.assertEqual([d["index"] for d in body["data"]], list(range(len(texts))))
            self.assertEqual([(d["label"], d["scores"]) for d in body["data"]], want)
        finally:
            self.assertEqual(s.stop(), 0, s.text()[-2000:])


class NoDelayTest(unittest.TestCase):
    """An answer is written as two sends (headers, then body); with Nagle's
    algorithm on, the body waits for the client's ACK of the headers, which
    a client delaying its ACKs sends about 40 ms later. The handler of
    every model server must turn it off on each connection it serves."""

    def test_handler_sets_tcp_nodelay(self):
        sys.path.insert(0, EXAMPLES)
        try:
            import trainyard_serve
        finally:
            sys.path.remove(EXAMPLES)

        class Quiet(trainyard_serve.Handler):
            def handle(self):
                pass  # only setup() matters here: it configures the socket
        with socket.socket() as lst:
            lst.bind(("127.0.0.1", 0))
            lst.listen(1)
            with socket.create_connection(lst.getsockname()):
                conn, addr = lst.accept()
                with conn:
                    self.assertEqual(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), 0)
                    Quiet(conn, addr, None)
                    self.assertNotEqual(
                        conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), 0)


if __name__ == "__main__":
    harness.main()
