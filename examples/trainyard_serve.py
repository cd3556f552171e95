"""trainyard_serve: the model server every serve script shares.

A replica of a deployment runs one serve script (serve_chat_gpt2.py,
serve_echo.py, ...) as rank 0 of a one-rank job. The script holds its model
(how to load it, how to run a batch); this module does the rest of the
contract in docs/serving.md, "The model server (one replica)". Python's
standard library only: a serve script that needs no torch (serve_echo.py)
imports none.

The env it reads:
  TRAINYARD_SERVE_HOST, TRAINYARD_SERVE_PORT   where to listen (default
      MASTER_ADDR / MASTER_PORT; port 0 picks a free one, reported in the
      TRAINYARD_SERVING line)
  TRAINYARD_SERVE_TOKEN      required; every request but GET /health must
      carry "Authorization: Bearer <token>" (compared in constant time)
  TRAINYARD_MODEL_PATH       the version's directory or checkpoint file
  TRAINYARD_MODEL_MANIFEST   the manifest, a JSON array of {"path","size",
      "sha256"}; a value that does not start with "[" names a file holding it
  TRAINYARD_MODEL_NAME       what "model" says in answers
  TRAINYARD_SERVE_KIND       must equal the script's kind when set
  TRAINYARD_SERVE_BATCH_MS   batching window, default 5 (0: no waiting)
  TRAINYARD_SERVE_MAX_BATCH  requests per batch, default 16 (1: no batching)
  TRAINYARD_SERVE_MAX_BODY   largest request body in bytes, default 4 MiB

Start-up, in this order:
  1. the env is checked (a missing token, path or manifest, a kind that is
     not the script's: TRAINYARD_SERVE_ERROR {"code":"config_invalid",...},
     exit 2);
  2. every manifest file is checked before anything is loaded: its path is
     relative, without "..", and resolves inside TRAINYARD_MODEL_PATH (a
     directory), or the manifest holds one entry and TRAINYARD_MODEL_PATH is
     that file; its size and SHA-256 equal the manifest's. Any difference:
     TRAINYARD_SERVE_ERROR {"code":"manifest_mismatch","path":...,
     "reason":"missing"|"size"|"sha256",...} (or "manifest_invalid" for a
     malformed manifest or path) and exit 3;
  3. the socket is bound (failure: "bind_failed", exit 2) and answers at
     once: GET /health is 503 until the model is loaded;
  4. the script loads its model, reading only files the manifest lists
     (Files.path refuses others); failure: "load_failed", exit 2;
  5. TRAINYARD_SERVING {"host","port","kind"} is printed (flushed) and
     /health answers 200 {"status":"ok","kind","manifest_sha256"} plus
     "requests" (others being handled now) and "batches" (run so far).
  manifest_sha256 is the SHA-256 of the canonical text, one line per entry
  "sha256 size path\\n" in the manifest's order (the registry's digest).

Routes (which exist follows from the batch functions the model defines):
  POST /v1/chat/completions, /v1/completions   Model.generate_batch
  POST /v1/embeddings                          Model.embed_batch
  POST /v1/predict                             Model.predict_batch
Answers are in OpenAI's shapes (chat.completion, chat.completion.chunk,
text_completion, the embeddings list; /v1/predict: {"object":"list",
"data":[{"index","label","score","scores"}]}), with an id, "created",
"model" = TRAINYARD_MODEL_NAME and "usage" always. Every error, including
the HTTP layer's own (malformed request line, unsupported method), is
{"error":{"message","type","param","code"}}: 400 invalid_request_error
(bad JSON, a bad field; "param" names it), 401 invalid_api_key, 404
not_found (unknown route), 405 method_not_allowed, 411 length_required,
413 request_too_large, 503 model_loading / shutting_down, 500 server_error.

Streaming ("stream": true): server-sent events in HTTP/1.1 chunked transfer
encoding (to an HTTP/1.0 request: unchunked, ended by closing the
connection), one chunk per event, each written and flushed as the model
produces it: "data: {chunk}\\n\\n" ... "data: [DONE]\\n\\n". The first chat
chunk carries the role, then one chunk per piece of text (whole UTF-8
characters only: a multi-byte character is never split across chunks; text
that may be the start of a stop string is held back until it is known not
to be), then one with finish_reason. "stream_options": {"include_usage":
true} adds "usage": null to those and a last chunk with empty "choices" and
the usage, as OpenAI does.

Dynamic batching: request handlers (one thread per connection) turn each
request into a Work and queue it; one batcher thread runs the model. It
blocks until a Work is queued, then keeps taking queued Works until it has
TRAINYARD_SERVE_MAX_BATCH of them or TRAINYARD_SERVE_BATCH_MS have passed
since the first one was queued (Works that queued while the previous batch
ran are therefore taken at once, without a new wait). The batch is split by
operation (generate, embed, predict), in the order each operation's first
Work arrived, and each part goes to the model's batch function in one call.
The model runs one batch at a time; what arrives meanwhile waits for the
next. A streamed Work's text reaches its client as the batch produces it.

SIGTERM (or SIGINT): the listening socket is closed (new connections are
refused), requests on open connections get 503 shutting_down, the batching
window ends at once (a batch forms from what is queued), every request
already being handled is finished, then the process exits 0.

Exit statuses: 0 after SIGTERM, 2 config_invalid / bind_failed /
load_failed, 3 manifest_mismatch / manifest_invalid, 1 anything unforeseen.

A serve script:

    import trainyard_serve as ts

    class Echo(ts.Model):
        kind = "echo"
        def load(self, files): ...                 # files: ts.Files
        def generate_batch(self, works): ...       # ts.GenerateWork each

    if __name__ == "__main__":
        ts.main(Echo())
"""
import codecs
import hashlib
import hmac
import http.server
import json
import os
import queue
import re
import signal
import socket
import sys
import threading
import time
import uuid

EXIT_CONFIG = 2
EXIT_MANIFEST = 3
KINDS = ("chat", "classify", "embed", "image", "echo")
DEFAULT_MAX_BODY = 4 << 20
# Idle keep-alive connections are closed after this; a request in progress
# is not bounded by it (the handler waits on its Work, not on the socket).
IDLE_TIMEOUT_S = 120
HEX64 = re.compile(r"^[0-9a-f]{64}$")


def emit(kind, obj):
    print(kind + " " + json.dumps(obj, separators=(",", ":"), ensure_ascii=False), flush=True)


def fatal(code, status, message, **fields):
    """A start-up failure: the machine-readable line on stdout, the reason on
    stderr, and exit with status (no clean-up: nothing is served yet)."""
    emit("TRAINYARD_SERVE_ERROR", dict({"code": code, "message": message}, **fields))
    print("trainyard-serve: " + message, file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(status)


class ServeError(Exception):
    """An answer in OpenAI's error shape."""

    def __init__(self, status, message, type_="invalid_request_error", code=None, param=None):
        super().__init__(message)
        self.status, self.message, self.type, self.code, self.param = status, message, type_, code, param

    def body(self):
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def bad_param(param, message):
    return ServeError(400, message, code="invalid_value", param=param)


# ---------------------------------------------------------------- manifest

def parse_manifest(text):
    """The manifest's entries [{"path","size","sha256"}], checked for shape
    and for paths that stay inside the model path; ValueError says what is
    wrong."""
    try:
        entries = json.loads(text)
    except ValueError as e:
        raise ValueError("the manifest is not JSON: %s" % e)
    if not isinstance(entries, list) or not entries:
        raise ValueError("the manifest is not a non-empty JSON array")
    seen = set()
    for e in entries:
        if not isinstance(e, dict) or not isinstance(e.get("path"), str) or \
                not isinstance(e.get("size"), int) or isinstance(e.get("size"), bool) or e["size"] < 0 or \
                not isinstance(e.get("sha256"), str) or not HEX64.match(e["sha256"]):
            raise ValueError("a manifest entry is not {\"path\": text, \"size\": bytes, \"sha256\": hex}: %r"
                             % (e,))
        p = e["path"]
        parts = p.split("/")
        if not p or p.startswith("/") or "\\" in p or "\0" in p or "\n" in p or \
                any(x in ("", ".", "..") for x in parts):
            raise ValueError("manifest path %r is not a plain relative path" % p)
        if p in seen:
            raise ValueError("manifest path %r is listed twice" % p)
        seen.add(p)
    return entries


def manifest_sha256(entries):
    """SHA-256 of the canonical text: "sha256 size path\\n" per entry, in order."""
    h = hashlib.sha256()
    for e in entries:
        h.update(("%s %d %s\n" % (e["sha256"], e["size"], e["path"])).encode("utf-8"))
    return h.hexdigest()


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


class Files:
    """The version's verified files. is_dir: TRAINYARD_MODEL_PATH is a
    directory (the job's output) rather than one checkpoint file."""

    def __init__(self, model_path, entries, resolved):
        self.model_path, self.entries, self._resolved = model_path, entries, resolved
        self.is_dir = os.path.isdir(model_path)
        self.sha256 = manifest_sha256(entries)

    def names(self):
        return [e["path"] for e in self.entries]

    def has(self, name):
        return name in self._resolved

    def path(self, name):
        """The on-disk path of a manifest entry; a file the manifest does not
        list is never handed out (it was not verified)."""
        if name not in self._resolved:
            raise LookupError("%s is not in the version's manifest" % name)
        return self._resolved[name]

    def json(self, name):
        """A manifest entry parsed as UTF-8 JSON."""
        with open(self.path(name), encoding="utf-8") as f:
            return json.load(f)

    def single(self):
        """The checkpoint file of a version registered from a checkpoint."""
        if self.is_dir:
            raise LookupError("the version is a directory, not one checkpoint file")
        return self.model_path


def verify_manifest(model_path, entries):
    """Check every entry against the disk (size, then SHA-256) before anything
    is loaded. Returns Files; exits 3 on the first difference."""
    resolved = {}
    if os.path.isdir(model_path):
        root = os.path.realpath(model_path)
        for e in entries:
            p = os.path.join(model_path, e["path"])
            # A symlink inside the directory must not lead out of it.
            real = os.path.realpath(p)
            if os.path.commonpath([root, real]) != root:
                fatal("manifest_invalid", EXIT_MANIFEST, "manifest path %s leads outside %s" % (e["path"], model_path),
                      path=e["path"])
            resolved[e["path"]] = p
    elif os.path.isfile(model_path):
        # A checkpoint version: the manifest is that one file (registered
        # under its own name, but whatever the name, it is this file).
        if len(entries) != 1:
            fatal("manifest_invalid", EXIT_MANIFEST, "%s is a file but the manifest lists %d files"
                  % (model_path, len(entries)), path=model_path)
        resolved[entries[0]["path"]] = model_path
    else:
        fatal("manifest_mismatch", EXIT_MANIFEST, "TRAINYARD_MODEL_PATH %s does not exist" % model_path,
              path="", reason="missing")
    for e in entries:
        p = resolved[e["path"]]
        try:
            st = os.stat(p)
        except OSError:
            st = None
        if st is None or not os.path.isfile(p):
            fatal("manifest_mismatch", EXIT_MANIFEST, "%s: missing" % e["path"], path=e["path"], reason="missing")
        if st.st_size != e["size"]:
            fatal("manifest_mismatch", EXIT_MANIFEST, "%s: %d bytes, the manifest says %d"
                  % (e["path"], st.st_size, e["size"]), path=e["path"], reason="size",
                  expected=e["size"], actual=st.st_size)
        try:
            got = file_sha256(p)
        except OSError as err:
            fatal("manifest_mismatch", EXIT_MANIFEST, "%s: unreadable: %s" % (e["path"], err.strerror),
                  path=e["path"], reason="missing")
        if got != e["sha256"]:
            fatal("manifest_mismatch", EXIT_MANIFEST, "%s: SHA-256 %s, the manifest says %s"
                  % (e["path"], got, e["sha256"]), path=e["path"], reason="sha256",
                  expected=e["sha256"], actual=got)
    return Files(model_path, entries, resolved)


# ---------------------------------------------------------------- config

class Config:
    def __init__(self, model_kind, env=os.environ):
        def need(name):
            v = env.get(name, "")
            if not v:
                fatal("config_invalid", EXIT_CONFIG, "%s is not set" % name, field=name)
            return v

        def integer(name, default, lo):
            v = env.get(name, "").strip()
            if not v:
                return default
            try:
                n = int(v)
            except ValueError:
                n = lo - 1
            if n < lo:
                fatal("config_invalid", EXIT_CONFIG, "%s=%r is not an integer >= %d" % (name, v, lo), field=name)
            return n

        self.host = env.get("TRAINYARD_SERVE_HOST") or env.get("MASTER_ADDR") or "127.0.0.1"
        self.port = integer("TRAINYARD_SERVE_PORT", None, 0)
        if self.port is None:
            self.port = integer("MASTER_PORT", None, 0)
        if self.port is None or self.port > 65535:
            fatal("config_invalid", EXIT_CONFIG, "TRAINYARD_SERVE_PORT is not a port", field="TRAINYARD_SERVE_PORT")
        self.token = need("TRAINYARD_SERVE_TOKEN")
        self.model_path = need("TRAINYARD_MODEL_PATH")
        manifest = need("TRAINYARD_MODEL_MANIFEST")
        if not manifest.lstrip().startswith("["):
            try:
                with open(manifest, encoding="utf-8") as f:
                    manifest = f.read()
            except OSError as e:
                fatal("manifest_invalid", EXIT_MANIFEST, "TRAINYARD_MODEL_MANIFEST %s: %s" % (manifest, e.strerror),
                      path="")
        try:
            self.manifest = parse_manifest(manifest)
        except ValueError as e:
            fatal("manifest_invalid", EXIT_MANIFEST, str(e), path="")
        self.kind = env.get("TRAINYARD_SERVE_KIND", "") or model_kind
        if self.kind != model_kind:
            fatal("config_invalid", EXIT_CONFIG, "TRAINYARD_SERVE_KIND=%s but this script serves %s"
                  % (self.kind, model_kind), field="TRAINYARD_SERVE_KIND")
        self.model_name = env.get("TRAINYARD_MODEL_NAME", "") or model_kind
        self.batch_ms = integer("TRAINYARD_SERVE_BATCH_MS", 5, 0)
        self.max_batch = integer("TRAINYARD_SERVE_MAX_BATCH", 16, 1)
        self.max_body = integer("TRAINYARD_SERVE_MAX_BODY", DEFAULT_MAX_BODY, 1)


# ---------------------------------------------------------------- work items

class Work:
    """One request's share of a batch. The model answers it exactly once:
    a GenerateWork by end() (or push() returning True), others by answer(),
    or any of them by fail(). The handler thread waits on events."""

    op = ""

    def __init__(self):
        self.events = queue.Queue()
        self.arrived = time.monotonic()
        self.finished = False
        self.cancelled = False  # the client went away: the model may drop it
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def fail(self, message="internal error"):
        if not self.finished:
            self.finished = True
            self.events.put(("error", ServeError(500, message, "server_error", "server_error")))

    def _done(self):
        self.finished = True
        self.events.put(("end", None))


class GenerateWork(Work):
    """Text generation. The model sets prompt_tokens, then pushes each
    generated token's bytes with push() until it returns True, or calls
    end("stop") when the model itself ends (its end-of-text token).

    push() decodes UTF-8 incrementally (whole characters only), applies the
    stop strings (the text ends before the first one found; finish_reason
    "stop") and max_tokens (finish_reason "length"), counts completion
    tokens, and hands finished text to a streaming client at once."""

    op = "generate"

    def __init__(self, prompt, max_tokens, temperature, top_p, seed, stop, stream):
        super().__init__()
        self.prompt, self.max_tokens, self.temperature = prompt, max_tokens, temperature
        self.top_p, self.seed, self.stop, self.stream = top_p, seed, stop, stream
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.text = ""
        self._sent = 0  # characters of text already given to the stream
        self.finish_reason = None

    def push(self, data):
        """Add one generated token's bytes; True when the Work is finished."""
        if self.finished:
            return True
        if self.cancelled:
            self.finish_reason = "cancelled"
            self._done()
            return True
        self.completion_tokens += 1
        self.text += self._decoder.decode(data)
        if self._apply_stop():
            return True
        if self.completion_tokens >= self.max_tokens:
            self.end("length")
            return True
        self._send(self._safe_len())
        return False

    def end(self, reason):
        """The model ends the Work: "stop" (its end-of-text) or "length"."""
        if self.finished:
            return
        self.text += self._decoder.decode(b"", final=True)
        if not self._apply_stop():
            self.finish_reason = reason
            self._send(len(self.text))
            self._done()

    def _apply_stop(self):
        if not self.stop:
            return False
        longest = max(len(s) for s in self.stop)
        # Only the tail can hold a new match: what was checked before had none.
        start = max(0, self._sent - longest)
        hits = [i for i in (self.text.find(s, start) for s in self.stop) if i >= 0]
        if not hits:
            return False
        self.text = self.text[:min(hits)]
        self.finish_reason = "stop"
        self._send(len(self.text))
        self._done()
        return True

    def _safe_len(self):
        """How much of text is final: all but a tail that may begin a stop string."""
        n = len(self.text)
        for s in self.stop:
            for k in range(min(len(s) - 1, n), 0, -1):
                if self.text.endswith(s[:k]):
                    n = min(n, len(self.text) - k)
                    break
        return n

    def _send(self, upto):
        if self.stream and upto > self._sent:
            self.events.put(("delta", self.text[self._sent:upto]))
        self._sent = max(self._sent, upto)


class EmbedWork(Work):
    """Embeddings of inputs (a list of texts): answer(vectors, prompt_tokens)."""

    op = "embed"

    def __init__(self, inputs):
        super().__init__()
        self.inputs = inputs
        self.result = None

    def answer(self, vectors, prompt_tokens):
        if not self.finished:
            self.result, self.prompt_tokens = vectors, prompt_tokens
            self._done()


class PredictWork(EmbedWork):
    """Predictions for inputs: answer([{"label","score","scores"}], prompt_tokens)."""

    op = "predict"


# ---------------------------------------------------------------- the model

class Model:
    """What a serve script subclasses. kind: one of KINDS. load(files) reads
    the verified files (ts.Files); then the batch functions it defines are
    called from the batcher thread only, one batch at a time:
      generate_batch([GenerateWork]), embed_batch([EmbedWork]),
      predict_batch([PredictWork]).
    A Work the function leaves unanswered gets a 500; an exception fails
    every unanswered Work of the batch. count_tokens(text) gives usage for
    the generate routes' prompt before the model sees it (optional)."""

    kind = None

    def load(self, files):
        raise NotImplementedError

    def ops(self):
        return {op for op in ("generate", "embed", "predict") if callable(getattr(self, op + "_batch", None))}


FLUSH = object()  # ends the batching window at once (queued by Batcher.flush)


class Batcher:
    """The one thread that runs the model (the module docstring says how
    batches form)."""

    def __init__(self, model, batch_ms, max_batch):
        self.model, self.window, self.max_batch = model, batch_ms / 1000.0, max_batch
        self.q = queue.Queue()
        self.batches = 0
        self.thread = threading.Thread(target=self._run, name="batcher", daemon=True)

    def start(self):
        self.thread.start()

    def submit(self, work):
        self.q.put(work)

    def flush(self):
        """From now on a batch forms from what is queued, without waiting:
        at shutdown nothing more will come."""
        self.window = 0.0
        self.q.put(FLUSH)

    def stop(self):
        self.q.put(None)
        self.thread.join()

    def _collect(self, first):
        batch = [first]
        deadline = first.arrived + self.window
        while len(batch) < self.max_batch:
            left = deadline - time.monotonic()
            try:
                w = self.q.get(timeout=left) if left > 0 else self.q.get_nowait()
            except queue.Empty:
                break
            if w is None:
                self.q.put(None)  # stop after this batch
                break
            if w is FLUSH:
                break
            batch.append(w)
        return batch

    def _run(self):
        while True:
            first = self.q.get()
            if first is None:
                return
            if first is FLUSH:
                continue
            batch = self._collect(first)
            self.batches += 1
            by_op = {}
            for w in batch:
                by_op.setdefault(w.op, []).append(w)
            for op, works in by_op.items():
                try:
                    getattr(self.model, op + "_batch")(works)
                except Exception as e:  # a model bug must not end the server
                    print("trainyard-serve: %s batch of %d failed: %s: %s" % (op, len(works), type(e).__name__, e),
                          file=sys.stderr, flush=True)
                for w in works:
                    w.fail()


# ---------------------------------------------------------------- requests

def _int_field(body, name, default, lo, hi=None):
    v = body.get(name, default)
    if v is None:
        return default
    if not isinstance(v, int) or isinstance(v, bool) or v < lo or (hi is not None and v > hi):
        raise bad_param(name, "%s must be an integer %s" % (
            name, ">= %d" % lo if hi is None else "from %d to %d" % (lo, hi)))
    return v


def _num_field(body, name, default, lo, hi):
    v = body.get(name, default)
    if v is None:
        return default
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not lo <= v <= hi:
        raise bad_param(name, "%s must be a number from %g to %g" % (name, lo, hi))
    return float(v)


def _text_of(content, param):
    """A message's content: a string, or OpenAI's list of parts (text parts joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if not isinstance(p, dict) or p.get("type") != "text" or not isinstance(p.get("text"), str):
                raise bad_param(param, "only text content parts are supported")
            parts.append(p["text"])
        return "".join(parts)
    raise bad_param(param, "content must be a string or a list of text parts")


def chat_question(body):
    """The last user message's text: the question the chat model answers."""
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise bad_param("messages", "messages must be a non-empty array")
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise bad_param("messages[%d]" % i, "each message needs a role")
    for i in range(len(msgs) - 1, -1, -1):
        if msgs[i]["role"] == "user":
            return _text_of(msgs[i].get("content"), "messages[%d].content" % i)
    raise bad_param("messages", "no message has the role user")


def completion_prompt(body):
    p = body.get("prompt")
    if isinstance(p, list) and len(p) == 1 and isinstance(p[0], str):
        return p[0]
    if not isinstance(p, str):
        raise bad_param("prompt", "prompt must be a string (or an array of one string)")
    return p


def generate_work(body, max_tokens_cap):
    if body.get("n", 1) not in (1, None):
        raise bad_param("n", "only n = 1 is supported")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise bad_param("stream", "stream must be true or false")
    so = body.get("stream_options")
    if so is not None and (not isinstance(so, dict) or not isinstance(so.get("include_usage", False), bool)):
        raise bad_param("stream_options", "stream_options must be {\"include_usage\": true|false}")
    name = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    max_tokens = min(_int_field(body, name, 64, 1), max_tokens_cap)
    temperature = _num_field(body, "temperature", 0.0, 0.0, 2.0)
    top_p = _num_field(body, "top_p", 1.0, 0.0, 1.0)
    if top_p == 0.0:
        raise bad_param("top_p", "top_p must be above 0")
    seed = _int_field(body, "seed", None, -(1 << 63), (1 << 63) - 1)
    stop = body.get("stop")
    if stop is None:
        stop = []
    elif isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or len(stop) > 4 or not all(isinstance(s, str) and s for s in stop):
        raise bad_param("stop", "stop must be a non-empty string or an array of up to 4 of them")
    w = GenerateWork(None, max_tokens, temperature, top_p, seed, stop, stream)
    w.include_usage = bool(so and so.get("include_usage"))
    return w


def inputs_of(body, name):
    v = body.get(name)
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not v or not all(isinstance(s, str) for s in v):
        raise bad_param(name, "%s must be a string or a non-empty array of strings" % name)
    return v


ROUTES = {"/v1/chat/completions": "generate", "/v1/completions": "generate",
          "/v1/embeddings": "embed", "/v1/predict": "predict"}


class App:
    """The server's state shared by handler threads."""

    def __init__(self, cfg, model, files):
        self.cfg, self.model, self.files = cfg, model, files
        self.ready = False
        self.draining = False
        self.inflight = 0
        self.lock = threading.Condition()
        self.batcher = Batcher(model, cfg.batch_ms, cfg.max_batch)
        self.ops = set()
        self.token = ("Bearer " + cfg.token).encode()
        self.max_tokens_cap = 1 << 30


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "trainyard-serve"
    # An answer goes out as two sends (headers, then body or first chunk):
    # with Nagle's algorithm the second waits for the ACK of the first,
    # which a client delaying its ACKs holds back about 40 ms.
    disable_nagle_algorithm = True
    timeout = IDLE_TIMEOUT_S
    app = None  # set on the subclass main() makes
    _chunked = True  # this response's stream uses chunked encoding

    def version_string(self):
        return self.server_version

    def log_message(self, fmt, *args):
        pass  # one line per request would drown the job's log at any load

    # The HTTP layer's own errors (bad request line, unsupported method,
    # oversized headers) in the same OpenAI shape as everything else.
    def send_error(self, code, message=None, explain=None):
        codes = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 414: "uri_too_long",
                 431: "headers_too_large", 501: "method_not_allowed", 505: "http_version_not_supported"}
        self.close_connection = True
        err = ServeError(code, (message or "request refused").lower(), "invalid_request_error",
                         codes.get(code, "bad_request"))
        try:
            self._json(code, err.body())
        except OSError:
            pass

    def _json(self, status, obj, headers=()):
        data = (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.wfile.flush()

    def _error(self, err):
        headers = [("WWW-Authenticate", "Bearer")] if err.status == 401 else []
        self._json(err.status, err.body(), headers)

    def do_GET(self):
        self._handle()

    def do_POST(self):
        self._handle()

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_POST

    def _handle(self):
        app = self.app
        with app.lock:
            if app.draining:
                refuse = True
            else:
                refuse = False
                app.inflight += 1
        if refuse:
            self.close_connection = True
            self._error(ServeError(503, "the server is shutting down", "server_error", "shutting_down"))
            return
        try:
            self._route()
        except ServeError as e:
            self._error(e)
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            self.close_connection = True
        finally:
            with app.lock:
                app.inflight -= 1
                app.lock.notify_all()

    def _route(self):
        app = self.app
        path = self.path.split("?", 1)[0]
        if path == "/health" and self.command == "GET":
            if not app.ready:
                raise ServeError(503, "the model is loading", "server_error", "model_loading")
            with app.lock:
                others = app.inflight - 1
            self._json(200, {"status": "ok", "kind": app.cfg.kind, "manifest_sha256": app.files.sha256,
                             "requests": others, "batches": app.batcher.batches})
            return
        got = (self.headers.get("Authorization") or "").encode("utf-8", "replace")
        if not hmac.compare_digest(got, app.token):
            self._drain_body()
            raise ServeError(401, "missing or wrong bearer token", "invalid_request_error", "invalid_api_key")
        op = ROUTES.get(path)
        if op is None or (app.ready and op not in app.ops):
            self._drain_body()
            raise ServeError(404, "no route %s %s" % (self.command, path), "invalid_request_error", "not_found")
        if self.command != "POST":
            self._drain_body()
            raise ServeError(405, "%s wants POST" % path, "invalid_request_error", "method_not_allowed")
        body = self._read_json()
        if not app.ready:
            raise ServeError(503, "the model is loading", "server_error", "model_loading")
        if op == "generate":
            self._generate(path, body)
        else:
            self._embed_or_predict(op, body)

    # ------------------------------------------------------------ bodies

    def _drain_body(self):
        """Refusing before the body is read: read it when it is small, else
        close the connection (the next request would start inside it)."""
        n = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding") or (n and not n.isdigit()):
            self.close_connection = True
        elif n and int(n) > 0:
            if int(n) <= 65536:
                self.rfile.read(int(n))
            else:
                self.close_connection = True

    def _read_body(self):
        limit = self.app.cfg.max_body
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if te:
            if te != "chunked":
                self.close_connection = True
                raise ServeError(400, "unsupported transfer encoding %s" % te, code="bad_request")
            return self._read_chunked(limit)
        n = self.headers.get("Content-Length")
        if n is None:
            self.close_connection = True
            raise ServeError(411, "a body with Content-Length is required", code="length_required")
        if not n.strip().isdigit():
            self.close_connection = True
            raise ServeError(400, "Content-Length %r is not a number" % n, code="bad_request")
        if int(n) > limit:
            self.close_connection = True
            raise ServeError(413, "the body is %s bytes, more than %d" % (n.strip(), limit), code="request_too_large")
        data = self.rfile.read(int(n))
        if len(data) != int(n):
            self.close_connection = True
            raise ServeError(400, "the body ended early", code="bad_request")
        return data

    def _read_chunked(self, limit):
        out = bytearray()
        while True:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                self.close_connection = True
                raise ServeError(400, "bad chunk size", code="bad_request")
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return bytes(out)
            if len(out) + size > limit:
                self.close_connection = True
                raise ServeError(413, "the body is more than %d bytes" % limit, code="request_too_large")
            out += self.rfile.read(size)
            self.rfile.readline(1024)

    def _read_json(self):
        data = self._read_body()
        try:
            body = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise ServeError(400, "the body is not JSON: %s" % e, code="invalid_json")
        if not isinstance(body, dict):
            raise ServeError(400, "the body must be a JSON object", code="invalid_json")
        return body

    # ------------------------------------------------------------ answers

    def _base(self, prefix, obj):
        return {"id": "%s-%s" % (prefix, uuid.uuid4().hex), "object": obj, "created": int(time.time()),
                "model": self.app.cfg.model_name}

    def _wait(self, w):
        """The next event of w: ("delta", text), ("end", None); raises its error."""
        kind, val = w.events.get()
        if kind == "error":
            raise val
        return kind, val

    def _usage(self, w):
        return {"prompt_tokens": w.prompt_tokens, "completion_tokens": w.completion_tokens,
                "total_tokens": w.prompt_tokens + w.completion_tokens}

    def _generate(self, path, body):
        chat = path == "/v1/chat/completions"
        w = generate_work(body, self.app.max_tokens_cap)
        w.prompt = chat_question(body) if chat else completion_prompt(body)
        self.app.batcher.submit(w)
        if not w.stream:
            while self._wait(w)[0] != "end":
                pass
            base = self._base("chatcmpl" if chat else "cmpl", "chat.completion" if chat else "text_completion")
            if chat:
                choice = {"index": 0, "message": {"role": "assistant", "content": w.text}, "logprobs": None,
                          "finish_reason": w.finish_reason}
            else:
                choice = {"index": 0, "text": w.text, "logprobs": None, "finish_reason": w.finish_reason}
            self._json(200, dict(base, choices=[choice], usage=self._usage(w),
                                 system_fingerprint=self.app.files.sha256[:16]))
            return
        self._stream(w, chat)

    def _stream(self, w, chat):
        base = self._base("chatcmpl" if chat else "cmpl", "chat.completion.chunk" if chat else "text_completion")
        base["system_fingerprint"] = self.app.files.sha256[:16]
        started = False

        def chunk(delta=None, finish=None, usage=False):
            if usage:
                c = dict(base, choices=[], usage=self._usage(w))
            else:
                if chat:
                    ch = {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}
                else:
                    ch = {"index": 0, "text": (delta or {}).get("content", ""), "logprobs": None,
                          "finish_reason": finish}
                c = dict(base, choices=[ch])
                if w.include_usage:
                    c["usage"] = None
            self._sse(json.dumps(c, ensure_ascii=False, separators=(",", ":")))

        try:
            # The first event (text or an error) decides the status line, so
            # a model failure before any text is still a plain 500.
            kind, val = self._wait(w)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            # HTTP/1.0 has no chunked encoding: the end of the stream is the
            # end of the connection there.
            self._chunked = self.request_version != "HTTP/1.0"
            if self._chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.close_connection = True
                self.send_header("Connection", "close")
            self.end_headers()
            started = True
            if chat:
                chunk({"role": "assistant", "content": ""})
            while kind != "end":
                chunk({"content": val})
                kind, val = self._wait(w)
            chunk(finish=w.finish_reason)
            if w.include_usage:
                chunk(usage=True)
            self._sse("[DONE]")
            self._end_stream()
        except ServeError as e:
            if not started:
                raise
            self._sse(json.dumps(e.body(), separators=(",", ":")))
            self._end_stream()
        except OSError:
            w.cancelled = True  # the client went away: the model may stop early
            self.close_connection = True
            while not w.finished:
                # Still in flight: drain what the model produces so SIGTERM
                # waits for it like any request being handled.
                if w.events.get()[0] != "delta":
                    break

    def _sse(self, payload):
        data = ("data: %s\n\n" % payload).encode("utf-8")
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if self._chunked else data)
        self.wfile.flush()

    def _end_stream(self):
        if self._chunked:
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _embed_or_predict(self, op, body):
        if op == "embed":
            w = EmbedWork(inputs_of(body, "input"))
        else:
            w = PredictWork(inputs_of(body, "inputs"))
        self.app.batcher.submit(w)
        while self._wait(w)[0] != "end":
            pass
        if op == "embed":
            data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(w.result)]
            base = {"object": "list", "model": self.app.cfg.model_name}
        else:
            data = [dict(p, index=i) for i, p in enumerate(w.result)]
            base = self._base("pred", "list")
        self._json(200, dict(base, data=data, usage={"prompt_tokens": w.prompt_tokens, "completion_tokens": 0,
                                                     "total_tokens": w.prompt_tokens}))


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    # Room for a burst of connections (the default 5 drops SYNs, which the
    # client retries a second later).
    request_queue_size = 256


class _Server6(_Server):
    address_family = socket.AF_INET6


# ---------------------------------------------------------------- main

def main(model, env=os.environ):
    """Run the model server for model (a Model) until SIGTERM; never returns."""
    if model.kind not in KINDS:
        fatal("config_invalid", EXIT_CONFIG, "the script's kind %r is not one of %s" % (model.kind, KINDS))
    cfg = Config(model.kind, env)
    files = verify_manifest(cfg.model_path, cfg.manifest)
    app = App(cfg, model, files)
    handler = type("BoundHandler", (Handler,), {"app": app})
    stop = threading.Event()

    def on_signal(signum, frame):
        if not app.ready:
            # Nothing is in flight before the model is loaded.
            sys.stdout.flush()
            os._exit(0)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        server = (_Server6 if ":" in cfg.host else _Server)((cfg.host, cfg.port), handler)
    except OSError as e:
        fatal("bind_failed", EXIT_CONFIG, "cannot listen on %s:%d: %s" % (cfg.host, cfg.port, e.strerror or e))
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
    try:
        model.load(files)
    except Exception as e:
        fatal("load_failed", EXIT_CONFIG, "cannot load the model: %s: %s" % (type(e).__name__, e))
    app.ops = model.ops()
    app.max_tokens_cap = getattr(model, "max_tokens_cap", app.max_tokens_cap)
    app.batcher.start()
    app.ready = True
    emit("TRAINYARD_SERVING", {"host": cfg.host, "port": server.server_address[1], "kind": cfg.kind})
    print("serving %s (%s) from %s, manifest %s, batches of up to %d within %d ms"
          % (cfg.model_name, cfg.kind, cfg.model_path, files.sha256, cfg.max_batch, cfg.batch_ms), flush=True)
    while not stop.wait(3600):
        pass
    # Stop accepting: no new connections, and open ones get 503 from here on.
    with app.lock:
        app.draining = True
    app.batcher.flush()
    server.shutdown()
    server.server_close()
    with app.lock:
        while app.inflight:
            app.lock.wait()
    app.batcher.stop()
    print("stopped: every request in flight answered (%d batches run)" % app.batcher.batches, flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
