#!/usr/bin/env bash
# GPU check, for a machine with NVIDIA GPUs: build, start PostgreSQL, the
# server and one worker with real NVML discovery (no --fake-gpus), run the
# DDP example on the GPU (nccl backend) through the platform, run the NCCL
# probe, and print what was discovered and the training throughput.
#
#   scripts/gpu-check.sh [GPUS]        (default: every GPU the worker finds)
#
# Meant to finish well inside 10 minutes. Needs the build dependencies and
# python3-torch with CUDA (a torch wheel on PYTHONPATH works too); set
# TRAINYARD_PYTHON to choose the interpreter. Everything it starts stops on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
py=${TRAINYARD_PYTHON:-python3}
build=${TRAINYARD_GPU_BUILD:-build-gpu}

if [ ! -x "$build/server/trainyard-server" ] || [ ! -x "$build/worker/trainyard-worker" ]; then
  command -v apt-get >/dev/null && scripts/deps.sh build || true
  CC=${CC:-clang} cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
  cmake --build "$build" -j"$(nproc)" --target trainyard-server trainyard-worker
  cmake --build "$build" -j"$(nproc)" --target trainyard-nccl-probe 2>/dev/null || true
fi

tmp=$(mktemp -d /tmp/trainyard-gpu-check.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  scripts/pg.sh stop "$tmp/pg" || true
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "== GPUs seen by NVML (trainyard-worker --discover)"
"$build/worker/trainyard-worker" --discover | tee "$tmp/discover.json"
echo

pgport=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
scripts/pg.sh start "$tmp/pg" "$pgport" trust
psql "postgresql://postgres@127.0.0.1:$pgport/postgres" -qc "CREATE DATABASE gpucheck"
db="postgresql://postgres@127.0.0.1:$pgport/gpucheck"
TRAINYARD_ADMIN_PASSWORD=gpu-check-admin-pw "$build/server/trainyard-server" --database-url "$db" \
  --create-admin admin --log-level warn >/dev/null
mkdir -p "$tmp/storage" "$tmp/worker"
"$build/server/trainyard-server" --database-url "$db" --listen "127.0.0.1:$port" \
  --storage-root "$tmp/storage" --access-log false --data-dir "$tmp" >"$tmp/server.log" 2>&1 &
pids+=($!)

TY_URL="http://127.0.0.1:$port" TY_TMP="$tmp" TY_TOP="$top" TY_GPUS="${1:-0}" \
TY_WORKER="$build/worker/trainyard-worker" "$py" - <<'PY'
import json, os, statistics, subprocess, sys, time, urllib.request

url, tmp, top = os.environ["TY_URL"], os.environ["TY_TMP"], os.environ["TY_TOP"]
def call(method, path, body=None, token=None, cookie=None, csrf=None):
    req = urllib.request.Request(url + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None)
    req.add_header("Content-Type", "application/json")
    if token: req.add_header("Authorization", "Bearer " + token)
    if cookie: req.add_header("Cookie", cookie)
    if csrf: req.add_header("X-CSRF-Token", csrf)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read()), r.headers
for _ in range(100):
    try:
        call("GET", "/readyz"); break
    except Exception:
        time.sleep(0.1)
login, h = call("POST", "/api/v1/auth/login", {"username": "admin", "password": "gpu-check-admin-pw"})
cookie, csrf = h["Set-Cookie"].split(";")[0], login["csrf_token"]
tok = call("POST", "/api/v1/tokens", {"name": "gpu-check"}, cookie=cookie, csrf=csrf)[0]["token"]
call("POST", "/api/v1/teams", {"name": "gpu"}, token=tok)
join = call("POST", "/api/v1/nodes/join-tokens", {"uses": 1}, token=tok)[0]["token"]
log = open(os.path.join(tmp, "worker.log"), "ab")
w = subprocess.Popen([os.environ["TY_WORKER"], "--server", url, "--name", "gpu-node",
                      "--work-dir", os.path.join(tmp, "worker"), "--allowed-root", os.path.join(tmp, "storage"),
                      "--addr", "127.0.0.1"], stdout=log, stderr=log,
                     env=dict(os.environ, TRAINYARD_JOIN_TOKEN=join))
try:
    for _ in range(100):
        nodes = call("GET", "/api/v1/nodes", token=tok)[0]["nodes"]
        if nodes and nodes[0]["state"] == "ready": break
        time.sleep(0.2)
    node = nodes[0]
    print("== node as the server sees it")
    for g in node["gpus"]:
        print("  GPU %d: %s, %d MiB, compute %s, uuid %s, nvlink peers %s" % (
            g["index"], g["model"], g["memory_mb"], g["compute_capability"], g["uuid"], g["nvlink_peers"]))
    ngpus = int(os.environ["TY_GPUS"]) or len(node["gpus"])
    if ngpus < 1:
        sys.exit("no GPU discovered")
    spec = {"name": "gpu-check-ddp", "team": "gpu", "resources": {"gpus": ngpus},
            "command": [sys.executable, os.path.join(top, "examples/ddp_mlp.py"), "--steps", "600",
                        "--hidden", "4096", "--batch", "512", "--checkpoint-every", "200"],
            "env": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}}
    job = call("POST", "/api/v1/jobs", spec, token=tok)[0]
    t0 = time.time()
    while time.time() - t0 < 420:
        job = call("GET", "/api/v1/jobs/" + job["id"], token=tok)[0]
        if job["state"] in ("SUCCEEDED", "FAILED", "CANCELLED"): break
        time.sleep(1)
    logs = call("GET", "/api/v1/jobs/%s/logs?rank=0&limit=20" % job["id"], token=tok)[0]["logs"]
    print("== job %s: %s (%s) in %.1f s" % (job["id"], job["state"], job["reason"], time.time() - t0))
    for l in logs[:4]:
        print("  " + l["text"].rstrip())
    m = call("GET", "/api/v1/jobs/%s/metrics?limit=20000" % job["id"], token=tok)[0]["metrics"]
    sps = [p["values"].get("samples_per_sec", 0) for p in m[len(m) // 4:]]
    if sps:
        print("== throughput through the platform: median %.0f samples/s over %d steps (%d GPU(s), nccl)"
              % (statistics.median(sps), len(sps), ngpus))
    print("== GPU use reported in heartbeats:", json.dumps(
        call("GET", "/api/v1/nodes", token=tok)[0]["nodes"][0]["gpu_stats"]))
finally:
    w.terminate(); w.wait(timeout=60)
PY

if [ -x "$build/worker/trainyard-nccl-probe" ]; then
  echo "== NCCL all-reduce (trainyard-nccl-probe)"
  "$build/worker/trainyard-nccl-probe" --max-bytes $((64 << 20)) --iters 10
fi
