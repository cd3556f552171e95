#!/usr/bin/env python3
"""What dynamic batching buys one model-server replica.

Starts examples/serve_chat_gpt2.py and serve_classify.py by hand, as the
worker would (docs/serving.md, "The model server"), each twice side by
side: batching on (the defaults, TRAINYARD_SERVE_BATCH_MS=5 and
TRAINYARD_SERVE_MAX_BATCH=16) and off (MAX_BATCH=1). Client threads, each
on its own keep-alive connection, send non-streamed requests one after
another; each cell runs --rounds times, alternating which setting goes
first. Per cell: requests, requests per second and generated tokens per
second over the cells' wall time, p50 and p99 latency (request sent to
answer read).

The chat model is chat_gpt2.py's tiny GPT (2 layers, width 64, 128
positions) after one training step on synthetic data, so that it hardly
ever ends an answer early: every request generates --max-tokens tokens
(greedy). Prompts: "same" (eight questions of 12 UTF-8 bytes: a batch's
requests share every forward pass) and "mixed" (twelve of 1 to 40 bytes:
only requests of one length share them). --model DIR serves an output
directory of chat_gpt2.py instead (answers may then end early; the tokens
column says how much was generated). The classifier is review_textcls.py's
tiny encoder after one step; each request asks for one text. --echo adds
serve_echo.py (no model: the helper's own cost).

  /usr/bin/python3 bench/serving/batching.py [--concurrency 1,8,64]
      [--requests 4] [--rounds 2] [--max-tokens 32]
      [--prompts same|mixed|both] [--model DIR] [--no-classify] [--echo]

--requests is per client thread and round (at least 16 requests per cell
and round). Prints a Markdown table. The clients run on the server's
machine: on a small one they take CPU from it, alike for both settings.
Needs PyTorch (Debian's python3-torch); nothing else, no build.
"""
import argparse
import hashlib
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.abspath(os.path.join(HERE, "..", "..", "examples"))
PY = "/usr/bin/python3"
TOKEN = "bench-token"
SAME = ["订单退货", "发票快递", "尺码颜色", "优惠库存", "保修安装", "退货发票", "颜色尺码", "库存优惠"]
MIXED = ["a", "hi", "订单", "hello!", "退货发票", "where is it?", "尺码颜色优惠", "my order has not arrived",
         "保修安装退货发票", "x" * 33, "快递" * 6, "the parcel came without the invoice"]


def log(msg):
    print("[serving %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def manifest_of(path):
    files = sorted((os.path.relpath(os.path.join(d, f), path), os.path.join(d, f))
                   for d, _, names in os.walk(path) for f in names)
    out = []
    for rel, full in files:
        h = hashlib.sha256()
        with open(full, "rb") as f:
            h.update(f.read())
        out.append({"path": rel, "size": os.path.getsize(full), "sha256": h.hexdigest()})
    return out


def train_tiny(tmp, script, name, port):
    """One training step of script's tiny size on synthetic data: an output
    directory to serve."""
    out = os.path.join(tmp, name)
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE="1", RANK="0",
               LOCAL_RANK="0", CUDA_VISIBLE_DEVICES="")
    subprocess.run([PY, os.path.join(EXAMPLES, script), "--size", "tiny", "--steps", "1", "--batch", "4",
                    "--checkpoint-every", "0", "--eval-every", "0", "--output", out], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)
    return out


class Server:
    def __init__(self, script, model_dir, max_batch, tmp):
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINYARD_")}
        env.update({"CUDA_VISIBLE_DEVICES": "", "TRAINYARD_SERVE_HOST": "127.0.0.1", "TRAINYARD_SERVE_PORT": "0",
                    "TRAINYARD_SERVE_TOKEN": TOKEN, "TRAINYARD_MODEL_PATH": model_dir,
                    "TRAINYARD_MODEL_MANIFEST": json.dumps(manifest_of(model_dir)),
                    "TRAINYARD_SERVE_MAX_BATCH": str(max_batch), "PYTHONUNBUFFERED": "1"})
        self.log = os.path.join(tmp, "%s-%d.log" % (script, max_batch))
        with open(self.log, "wb") as f:
            self.proc = subprocess.Popen([PY, os.path.join(EXAMPLES, script)], stdout=f, stderr=subprocess.STDOUT,
                                         env=env)
        deadline = time.time() + 300
        self.port = None
        while self.port is None:
            if self.proc.poll() is not None or time.time() > deadline:
                raise SystemExit("server did not start:\n" + open(self.log).read()[-2000:])
            for line in open(self.log, encoding="utf-8", errors="replace"):
                if line.startswith("TRAINYARD_SERVING "):
                    self.port = json.loads(line.split(" ", 1)[1])["port"]
            time.sleep(0.1)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(120)


def cell(port, concurrency, per_client, route, bodies):
    """concurrency client threads, each sending per_client requests one after
    another on its own connection: (latencies in s, completion tokens, wall s)."""
    lat, tokens, errors = [], [], []
    lock = threading.Lock()
    start = threading.Barrier(concurrency + 1)

    def client(k):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        start.wait()
        for i in range(per_client):
            body = json.dumps(bodies[(k * per_client + i) % len(bodies)])
            t0 = time.perf_counter()
            c.request("POST", route, body=body,
                      headers={"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
            r = c.getresponse()
            data = r.read()
            dt = time.perf_counter() - t0
            with lock:
                if r.status != 200:
                    errors.append((r.status, data[:200]))
                else:
                    lat.append(dt)
                    tokens.append(json.loads(data)["usage"]["completion_tokens"])
        c.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(concurrency)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if errors:
        raise SystemExit("errors: %s" % errors[:5])
    return lat, tokens, wall


def summary(parts):
    lat = sorted(x for p in parts for x in p[0])
    tokens = [x for p in parts for x in p[1]]
    wall = sum(p[2] for p in parts)
    return {"n": len(lat), "rps": len(lat) / wall, "tps": sum(tokens) / wall, "tokens": sum(tokens) / len(tokens),
            "p50": statistics.median(lat) * 1000,
            "p99": lat[min(len(lat) - 1, int(round(0.99 * (len(lat) - 1))))] * 1000}


SETTINGS = (("on (16, 5 ms)", 16), ("off (1)", 1))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--concurrency", default="1,8,64")
    p.add_argument("--requests", type=int, default=4, help="per client thread and round (16 per cell at least)")
    p.add_argument("--rounds", type=int, default=2, help="rounds per cell, alternating which setting runs first")
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--prompts", choices=("same", "mixed", "both"), default="both")
    p.add_argument("--model", default="", help="a chat_gpt2.py output directory (default: train a tiny one)")
    p.add_argument("--no-classify", action="store_true", help="leave out serve_classify.py")
    p.add_argument("--echo", action="store_true", help="also serve_echo.py (the cost without a model)")
    a = p.parse_args()
    levels = [int(x) for x in a.concurrency.split(",")]
    tmp_obj = tempfile.TemporaryDirectory(prefix="bench-serving-")
    tmp = tmp_obj.name
    model = a.model
    if not model:
        log("training the tiny chatbot for one step")
        model = train_tiny(tmp, "chat_gpt2.py", "chat-out", 29731)

    def chat_bodies(prompts):
        return [{"messages": [{"role": "user", "content": q}], "max_tokens": a.max_tokens} for q in prompts]

    # (server script, model path, prompts label, route, request bodies)
    runs = [("serve_chat_gpt2.py", model, name, "/v1/chat/completions", chat_bodies(SAME if name == "same" else MIXED))
            for name in (("same", "mixed") if a.prompts == "both" else (a.prompts,))]
    if not a.no_classify:
        log("training the tiny text classifier for one step")
        cls_model = train_tiny(tmp, "review_textcls.py", "textcls-out", 29732)
        runs.append(("serve_classify.py", cls_model, "mixed, 1 text", "/v1/predict",
                     [{"inputs": [q]} for q in MIXED]))
    if a.echo:
        runs.append(("serve_echo.py", model, "mixed", "/v1/chat/completions", chat_bodies(MIXED)))
    rows = []
    for script, path, prompt_set, route, bodies in runs:
        # Both settings' servers run side by side (the idle one costs
        # nothing); every cell alternates which of them goes first.
        servers = [Server(script, path, max_batch, tmp) for _, max_batch in SETTINGS]
        try:
            for srv in servers:
                cell(srv.port, 1, 2, route, bodies)  # warm-up
            for c in levels:
                per = max(a.requests, -(-16 // c))
                parts = {label: [] for label, _ in SETTINGS}
                for r in range(a.rounds):
                    order = list(zip(SETTINGS, servers))
                    for (label, _), srv in (order if r % 2 == 0 else order[::-1]):
                        log("%s, %s, batching %s, concurrency %d, round %d: %d requests"
                            % (script, prompt_set, label, c, r + 1, per * c))
                        parts[label].append(cell(srv.port, c, per, route, bodies))
                for label, _ in SETTINGS:
                    rows.append((script, prompt_set, label, c, summary(parts[label])))
        finally:
            for srv in servers:
                srv.stop()
    print("| server | prompts | batching | concurrency | requests | tokens/answer | req/s | tokens/s "
          "| p50 ms | p99 ms |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for script, prompt_set, label, c, r in rows:
        print("| %s | %s | %s | %d | %d | %.1f | %.1f | %.0f | %.0f | %.0f |"
              % (script, prompt_set, label, c, r["n"], r["tokens"], r["rps"], r["tps"], r["p50"], r["p99"]))
    tmp_obj.cleanup()


if __name__ == "__main__":
    main()
