#!/usr/bin/env python3
"""From "deploy" to the first answer, and the chatbot through the gateway
against the same replica directly (docs/serving.md).

  BUILD_DIR=/tmp/build-rel bench/lib/with-pg.sh deploy 1500 \\
      bench/serving/deploy_latency.py [--reps 3] [--seconds 15] [--concurrency 4]

Set-up (not timed): a server with the repository's templates and model
servers, one worker of 2 fake GPUs (the CPU), the chatbot-gpt2 template
trained tiny (24 steps) on fortunes-zh through the API and its output
registered as a model version.

Deploy latency, --reps times: POST /api/v1/deployments (1 replica), a key
made at once, then a request through the gateway every 50 ms until one is
answered 200. The time splits at what the database records:
  placement     POST -> the attempt's row (attempts.created_at: the
                scheduler placed the replica);
  worker start  -> the job RUNNING (jobs.started_at: the worker took the
                assignment and started the model server);
  model load    -> the server's TRAINYARD_SERVING line (job_logs.ts: Python
                and torch imported, the manifest checked, the weights
                loaded);
  readiness     -> serve_replicas.ready_at (the health loop's first 200);
  first answer  -> the client's first 200 through the gateway (the
                gateway's view of ready replicas refreshes every 250 ms).
Each deployment is stopped and its replica's job ended before the next.

Chatbot throughput: one replica, greedy answers of --max-tokens tokens,
C client threads each on a kept-alive connection for --seconds, to the
replica directly (its address and token read from the database) and
through the gateway (records on): answers/s, generated tokens/s and the
latency p50/p99.
"""
import argparse
import http.client
import json
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "launch"))
from common import EXAMPLES, PY, ROOT, Trainyard, pct, wait_for  # noqa: E402

import subprocess  # noqa: E402


def post_chat(conn, token, text, max_tokens):
    body = json.dumps({"model": "bot", "messages": [{"role": "user", "content": text}],
                       "max_tokens": max_tokens, "temperature": 0})
    conn.request("POST", "/v1/chat/completions", body=body,
                 headers={"Authorization": "Bearer " + token,
                          "Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    return r.status, data


def epoch(ty, sql):
    v = ty.db.sql("SELECT extract(epoch FROM (%s))" % sql)
    return float(v[0][0]) if v and v[0][0] else None


def deploy_once(ty, name, port):
    t0 = time.time()
    st, d, _ = ty.admin.post("/api/v1/deployments", {"name": name, "model": "chat",
                                                     "version": 1, "replicas": 1})
    assert st == 201, d
    st, key, _ = ty.admin.post("/api/v1/deployments/%s/keys" % name,
                               {"name": "k", "rate_per_min": 1000000})
    assert st == 201, key
    jid = d["replicas_detail"][0]["job_id"]
    body = json.dumps({"model": name, "messages": [{"role": "user", "content": "你好"}],
                       "max_tokens": 4}).encode()
    while True:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            c.request("POST", "/v1/chat/completions", body=body,
                      headers={"Authorization": "Bearer " + key["secret"],
                               "Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            if r.status == 200:
                break
        except OSError:
            pass
        finally:
            c.close()
        time.sleep(0.05)
    t_first = time.time()
    placed = epoch(ty, "SELECT created_at FROM attempts WHERE job_id = %s AND attempt = 1" % jid)
    started = epoch(ty, "SELECT started_at FROM jobs WHERE id = %s" % jid)
    serving = epoch(ty, "SELECT min(ts) FROM job_logs WHERE job_id = %s AND text LIKE "
                        "'TRAINYARD_SERVING %%'" % jid)
    ready = epoch(ty, "SELECT ready_at FROM serve_replicas WHERE job_id = %s" % jid)
    st, b, _ = ty.admin.post("/api/v1/deployments/%s/stop" % name, {})
    assert st == 200, b
    ty.wait_state(jid, ("CANCELLED", "FAILED", "SUCCEEDED"), timeout=120)
    return {"placement": placed - t0, "worker start": started - placed,
            "model load": serving - started, "readiness": ready - serving,
            "first answer": t_first - ready, "total": t_first - t0}


def load(host, port, token, text, max_tokens, conns, seconds):
    lat, toks, errs = [], [0], [0]
    lock = threading.Lock()
    deadline = time.time() + seconds

    def one():
        c = http.client.HTTPConnection(host, port, timeout=120)
        while time.time() < deadline:
            t0 = time.perf_counter()
            st, data = post_chat(c, token, text, max_tokens)
            dt = time.perf_counter() - t0
            with lock:
                if st == 200:
                    lat.append(dt)
                    toks[0] += json.loads(data)["usage"]["completion_tokens"]
                else:
                    errs[0] += 1
        c.close()
    post_chat(http.client.HTTPConnection(host, port, timeout=120), token, text, max_tokens)
    threads = [threading.Thread(target=one) for _ in range(conns)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.time() - t0
    return {"answers/s": len(lat) / took, "tokens/s": toks[0] / took,
            "p50": pct(lat, 50) * 1e3, "p99": pct(lat, 99) * 1e3, "n": len(lat),
            "errors": errs[0]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=32)
    a = ap.parse_args()
    ty = Trainyard(server_args=("--templates-dir", os.path.join(ROOT, "templates"),
                                "--examples-dir", EXAMPLES, "--access-log", "false",
                                "--log-level", "warn"))
    try:
        data = os.path.join(ty.shared, "fortunes")
        subprocess.run([PY, os.path.join(EXAMPLES, "data", "fortunes_to_sets.py"), data,
                        "--max-per-class", "100", "--max-pairs", "300"], check=True,
                       capture_output=True, timeout=120)
        ty.add_worker("bench-a", 2)
        st, job, _ = ty.admin.post("/api/v1/jobs", {
            "template": "chatbot-gpt2", "team": "bench", "resources": {"gpus": 1},
            "params": {"size": "tiny", "steps": 24, "batch": 8, "eval_every": 24,
                       "checkpoint_every": 24},
            "datasets": [data], "output_dir": os.path.join(ty.shared, "out")})
        assert st == 201, job
        j = ty.wait_state(job["id"], ("SUCCEEDED", "FAILED", "CANCELLED"), timeout=600)
        assert j["state"] == "SUCCEEDED", j
        st, v, _ = ty.admin.post("/api/v1/models/chat/versions",
                                 {"job_id": job["id"], "source": "output"})
        assert st == 201, v
        rows = [deploy_once(ty, "lat-%d" % i, ty.server.port) for i in range(a.reps)]

        st, d, _ = ty.admin.post("/api/v1/deployments", {"name": "bot", "model": "chat",
                                                         "version": 1, "replicas": 1})
        assert st == 201, d
        st, key, _ = ty.admin.post("/api/v1/deployments/bot/keys",
                                   {"name": "k", "rate_per_min": 1000000})
        assert st == 201, key
        wait_for(lambda: ty.admin.get("/api/v1/deployments/bot")[1]["ready_replicas"] == 1,
                 timeout=120, what="the replica ready")
        jid = d["replicas_detail"][0]["job_id"]
        host, port, token = ty.db.sql(
            "SELECT t.master_addr, t.master_port, r.token FROM serve_replicas r JOIN jobs j ON "
            "j.id = r.job_id JOIN attempts t ON t.job_id = j.id AND t.attempt = j.attempt "
            "WHERE r.job_id = %s" % jid)[0]
        text = "请问发票什么时候寄出"
        direct = load(host, int(port), token, text, a.max_tokens, a.concurrency, a.seconds)
        gw = load("127.0.0.1", ty.server.port, key["secret"], text, a.max_tokens,
                  a.concurrency, a.seconds)
    finally:
        ty.close()

    parts = ["placement", "worker start", "model load", "readiness", "first answer", "total"]
    print("\nDeploy to first answer (tiny chatbot-gpt2, 1 replica, CPU), seconds\n")
    print("| run | " + " | ".join(parts) + " |")
    print("|---|" + "---:|" * len(parts))
    for i, r in enumerate(rows, 1):
        print("| %d | " % i + " | ".join("%.2f" % r[p] for p in parts) + " |")
    print("| median | " + " | ".join("%.2f" % pct([r[p] for r in rows], 50) for p in parts)
          + " |")
    print("\nChatbot, greedy, max_tokens %d, %d connections, %g s each\n"
          % (a.max_tokens, a.concurrency, a.seconds))
    print("| path | answers/s | tokens/s | p50 ms | p99 ms | answers | errors |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in (("direct", direct), ("gateway (records on)", gw)):
        print("| %s | %.2f | %.1f | %.1f | %.1f | %d | %d |" % (
            name, r["answers/s"], r["tokens/s"], r["p50"], r["p99"], r["n"], r["errors"]))


if __name__ == "__main__":
    tempfile.tempdir = os.environ.get("BENCH_TMP") or None
    main()
