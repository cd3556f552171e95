#!/usr/bin/env python3
"""Launch latency and burst throughput: trainyard vs a private Slurm 22.05.

Latency = (rank's own started_unix_ms, from examples/sleep_rank.py) minus the
wall time taken just before the submit (POST for trainyard, exec of
sbatch/srun for Slurm). For a multi-rank job: the last rank to start.
Burst = N trivial 1-GPU jobs submitted as fast as possible; jobs/s from the
first submit to the last completion.

CLI mode (--cli-only): the time from exec of `trainyard submit FILE` (the
command line, a new process each time, as a user or a pipeline runs it) to
the rank's started_unix_ms, next to the same job by POST, `sbatch` and
`srun` (1 GPU each, Slurm default and tuned) in the same run.

Usage: launch.py [--tmp DIR] [--jobs 200] [--multi 20] [--burst 500]
       [--slurm-seq 10] [--slurm-srun 50] [--skip-slurm]
       launch.py --cli-only [--cli-jobs 50] [--slurm-seq 10] [--slurm-srun 50]
Prints markdown tables. Stops everything it started.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import PY, EXAMPLES, pct  # noqa: E402

SLEEP_RANK = os.path.join(EXAMPLES, "sleep_rank.py")
RANK_CMD = [PY, SLEEP_RANK, "--seconds", "0"]
START_RE = re.compile(r'TRAINYARD_METRIC (\{.*"started_unix_ms".*\})')


def now_ms():
    return time.time() * 1000.0


def log(msg):
    print("[launch %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def summary(xs):
    return {"n": len(xs), "p50": pct(xs, 50), "p99": pct(xs, 99), "max": max(xs) if xs else 0}


# --------------------------------------------------------------------------- floor
def python_floor(n=20):
    """exec of python3 sleep_rank.py to its own started_unix_ms, no scheduler."""
    out = []
    for _ in range(n):
        t0 = now_ms()
        p = subprocess.run(RANK_CMD, capture_output=True, text=True)
        m = START_RE.search(p.stdout)
        out.append(json.loads(m.group(1))["started_unix_ms"] - t0)
    return out


# --------------------------------------------------------------------------- trainyard
def ty_started(ty, jid, ranks):
    ms = [m for m in ty.metrics(jid) if "started_unix_ms" in m["values"]]
    if len({m["rank"] for m in ms}) < ranks:
        return None
    return max(m["values"]["started_unix_ms"] for m in ms)


def ty_one_gpu(ty, n, interval, starts, t0s):
    """n one-GPU jobs submitted open-loop every interval s; 8 GPUs, so none queue."""
    subs = []
    for i in range(n):
        t0 = now_ms()
        jid = ty.submit("lat-%d" % i, RANK_CMD, gpus=1)
        subs.append((jid, t0))
        t0s[jid] = t0
        time.sleep(max(0.0, interval - (now_ms() - t0) / 1000.0))
    lat = []
    for jid, t0 in subs:
        ty.wait_state(jid, ("SUCCEEDED", "FAILED"), timeout=60, interval=0.1)
        s = common.wait_for(lambda: ty_started(ty, jid, 1), timeout=30, interval=0.1,
                            what="metric of %s" % jid)
        lat.append(s - t0)
        starts[jid] = s
    return lat


def ty_cli(ty, n, interval, token, path):
    """n one-GPU jobs, each by exec of `trainyard submit FILE --json`; returns the
    launch latencies and the CLI process's own wall times (exec to exit)."""
    cli = os.path.join(os.environ["TRAINYARD_BUILD_DIR"], "cli", "trainyard")
    env = dict(os.environ, TRAINYARD_URL=ty.server.url, TRAINYARD_TOKEN=token, LC_ALL="C")
    subs, walls = [], []
    for _ in range(n):
        t0 = now_ms()
        p = subprocess.run([cli, "submit", path, "--json"], capture_output=True, text=True, env=env)
        walls.append(now_ms() - t0)
        if p.returncode != 0:
            raise RuntimeError("trainyard submit: exit %d: %s" % (p.returncode, p.stderr))
        subs.append((json.loads(p.stdout)["id"], t0))
        time.sleep(max(0.0, interval - (now_ms() - t0) / 1000.0))
    lat = []
    for jid, t0 in subs:
        ty.wait_state(jid, ("SUCCEEDED", "FAILED"), timeout=60, interval=0.1)
        s = common.wait_for(lambda: ty_started(ty, jid, 1), timeout=30, interval=0.1,
                            what="metric of %s" % jid)
        lat.append(s - t0)
    return lat, walls


def run_trainyard_cli(a, res):
    ty = common.Trainyard()
    try:
        ty.add_worker("w8", 8)
        ty.wait_ready(1)
        st, tok, _ = ty.admin.post("/api/v1/tokens", {"name": "bench-cli"})
        assert st == 201, tok
        path = os.path.join(a.tmp, "cli-job.json")
        with open(path, "w") as f:
            json.dump({"name": "cli-lat", "team": "bench", "command": RANK_CMD,
                       "resources": {"gpus": 1}}, f)
        ty.submit("warm", RANK_CMD)
        time.sleep(2)
        # Alternate POST and CLI rounds so that both see the same machine.
        res["ty_1gpu"], res["ty_cli"], res["ty_cli_wall"] = [], [], []
        per = max(1, a.cli_jobs // 5)
        for r in range(5):
            log("trainyard: round %d: %d by POST, %d by the CLI" % (r + 1, per, per))
            res["ty_1gpu"] += ty_one_gpu(ty, per, a.interval, {}, {})
            lat, walls = ty_cli(ty, per, a.interval, tok["token"], path)
            res["ty_cli"] += lat
            res["ty_cli_wall"] += walls
    finally:
        ty.close()


def run_slurm_cli(a, res, tuned):
    tag = "tuned" if tuned else "default"
    s = Slurm(os.path.join(a.tmp, "slurm-" + tag), tuned)
    try:
        seq = a.slurm_seq_tuned if tuned else a.slurm_seq
        log("slurm %s: sbatch 1 GPU x %d" % (tag, seq))
        res["sl_%s_sbatch1" % tag] = slurm_sbatch_lat(s, seq, 1, "exec %s" % " ".join(RANK_CMD))
        log("slurm %s: srun 1 GPU x %d" % (tag, a.slurm_srun))
        res["sl_%s_srun1" % tag] = slurm_srun_lat(s, a.slurm_srun, 1)
    finally:
        s.close()


def cli_table(res):
    print("### CLI: `trainyard submit FILE` to the rank running, 1 GPU, ms")
    print()
    print("| system | how | runs | p50 | p99 | max | note |")
    print("|---|---|---:|---:|---:|---:|---|")
    rows = [("(none)", "python3 sleep_rank.py exec'd by hand", "floor", "interpreter start, in every row"),
            ("trainyard", "`trainyard submit job.json` (exec of the CLI)", "ty_cli",
             "t0 before exec; the CLI exits once the job is accepted"),
            ("trainyard", "the CLI process alone (exec to exit)", "ty_cli_wall",
             "part of the row above"),
            ("trainyard", "POST /api/v1/jobs from Python", "ty_1gpu", "same server, rounds interleaved")]
    for tag in ("default", "tuned"):
        rows.append(("slurm %s" % tag, "`sbatch`", "sl_%s_sbatch1" % tag, ""))
        rows.append(("slurm %s" % tag, "`srun`", "sl_%s_srun1" % tag, "blocks until the job ends"))
    for system, how, key, note in rows:
        if key in res and res[key]:
            x = summary(res[key])
            print("| %s | %s | %d | %.0f | %.0f | %.0f | %s |" % (system, how, x["n"], x["p50"],
                                                                x["p99"], x["max"], note))
    print()
    if res.get("ty_cli"):
        base = summary(res["ty_cli"])["p50"]
        print("| ratio (p50 / trainyard CLI p50) | value |")
        print("|---|---:|")
        for tag in ("default", "tuned"):
            for k, w in (("sbatch1", "sbatch"), ("srun1", "srun")):
                key = "sl_%s_%s" % (tag, k)
                if res.get(key):
                    print("| slurm %s %s | %.1f x |" % (tag, w, summary(res[key])["p50"] / base))
        print()


def ty_breakdown(ty, subs_t0, starts):
    """Per 1-GPU job, from the database's own timestamps (same clock): submit -> row
    inserted -> PLACED (scheduler) -> STARTING (long-poll answered) -> rank started."""
    rows = ty.db.sql(
        "SELECT j.id, extract(epoch from j.created_at) * 1000, "
        "extract(epoch from min(e.ts) FILTER (WHERE e.to_state = 'PLACED')) * 1000, "
        "extract(epoch from min(e.ts) FILTER (WHERE e.to_state = 'STARTING')) * 1000 "
        "FROM jobs j JOIN job_events e ON e.job_id = j.id WHERE j.name LIKE 'lat-%' GROUP BY j.id")
    parts = {"submit -> job row": [], "job row -> PLACED": [], "PLACED -> STARTING": [],
             "STARTING -> rank's first line": []}
    for jid, created, placed, starting in rows:
        if jid not in starts or not placed or not starting:
            continue
        created, placed, starting = float(created), float(placed), float(starting)
        parts["submit -> job row"].append(created - subs_t0[jid])
        parts["job row -> PLACED"].append(placed - created)
        parts["PLACED -> STARTING"].append(starting - placed)
        parts["STARTING -> rank's first line"].append(starts[jid] - starting)
    return parts


def ty_multi(ty, reps, gpus, per_node):
    lat = []
    for i in range(reps):
        t0 = now_ms()
        jid = ty.submit("multi-%d" % i, RANK_CMD, gpus=gpus, gpus_per_node=per_node)
        j = ty.wait_state(jid, ("SUCCEEDED", "FAILED"), timeout=60, interval=0.05)
        assert j["state"] == "SUCCEEDED", j
        s = common.wait_for(lambda: ty_started(ty, jid, gpus), timeout=30, interval=0.1,
                            what="metrics of %s" % jid)
        lat.append(s - t0)
    return lat


def ty_burst(ty, n, threads=4):
    cmd = ["/bin/true"]
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        ids = list(ex.map(lambda i: ty.submit("burst-%d" % i, cmd, gpus=1), range(n)))
    t_sub = time.time() - t0
    q = ("SELECT count(*) FILTER (WHERE state = 'SUCCEEDED'), count(*) FILTER (WHERE state IN "
         "('FAILED','CANCELLED')), extract(epoch from max(finished_at)) FROM jobs WHERE name LIKE "
         "'burst-%'")
    deadline = time.time() + 600
    while time.time() < deadline:
        ok, bad, last = ty.db.sql(q)[0]
        if int(ok) + int(bad) >= n:
            break
        time.sleep(0.25)
    else:
        raise RuntimeError("burst did not finish: %s ok of %d" % (ok, n))
    span = float(last) - t0
    return {"n": n, "ok": int(ok), "failed": int(bad), "submit_s": t_sub, "span_s": span,
            "jobs_per_s": n / span}


def run_trainyard(a, res):
    tmp = os.path.join(a.tmp, "ty")
    os.makedirs(tmp, exist_ok=True)
    ty = common.Trainyard()
    try:
        ty.add_worker("w8", 8)
        ty.wait_ready(1)
        ty.submit("warm", RANK_CMD)  # first-use costs (page cache, prepared statements)
        time.sleep(2)
        log("trainyard: %d one-GPU jobs" % a.jobs)
        starts, t0s = {}, {}
        res["ty_1gpu"] = ty_one_gpu(ty, a.jobs, a.interval, starts, t0s)
        res["ty_breakdown"] = ty_breakdown(ty, t0s, starts)
        log("trainyard: 8 ranks on one worker x %d" % a.multi)
        res["ty_8x1"] = ty_multi(ty, a.multi, 8, 8)
        log("trainyard: burst %d" % a.burst)
        res["ty_burst"] = ty_burst(ty, a.burst)
    finally:
        ty.close()
    ty = common.Trainyard()
    try:
        ty.add_worker("w4a", 4)
        ty.add_worker("w4b", 4)
        ty.wait_ready(2)
        ty.submit("warm", RANK_CMD)
        time.sleep(2)
        log("trainyard: 8 ranks across two workers x %d" % a.multi)
        res["ty_8x2"] = ty_multi(ty, a.multi, 8, 4)
    finally:
        ty.close()


# --------------------------------------------------------------------------- slurm
def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Slurm:
    """A private munged + slurmctld + slurmd (one node, 8 fake GPUs) on loopback."""

    def __init__(self, base, tuned):
        self.procs = []
        self.dir = base
        try:
            self._start(base, tuned)
        except BaseException:
            self.close()
            raise

    def _start(self, base, tuned):
        shutil.rmtree(base, ignore_errors=True)
        for d in ("ctld", "spool", "dev", "out", "munge"):
            os.makedirs(os.path.join(base, d))
        os.chmod(base, 0o755)
        os.chmod(os.path.join(base, "munge"), 0o700)
        key = os.path.join(base, "munge", "munge.key")
        subprocess.run(["mungekey", "-c", "-k", key], check=True, capture_output=True)
        os.chmod(key, 0o400)
        self.sock = os.path.join(base, "munge", "munge.sock")
        subprocess.run(["munged", "--force", "-S", self.sock, "--key-file", key,
                        "--pid-file", os.path.join(base, "munge", "munged.pid"),
                        "--log-file", os.path.join(base, "munge", "munged.log"),
                        "--seed-file", os.path.join(base, "munge", "seed")], check=True)
        for i in range(8):
            subprocess.run(["mknod", os.path.join(base, "dev", "nvidia%d" % i), "c", "195",
                            str(i)], check=True)
        cport, dport = free_port(), free_port()
        conf = os.path.join(base, "slurm.conf")
        lines = [
            "ClusterName=tybench", "SlurmctldHost=localhost", "SlurmctldPort=%d" % cport,
            "SlurmdPort=%d" % dport, "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", "CredType=cred/munge",
            "AuthInfo=socket=%s" % self.sock,
            "StateSaveLocation=%s/ctld" % base, "SlurmdSpoolDir=%s/spool" % base,
            "SlurmctldPidFile=%s/ctld.pid" % base, "SlurmdPidFile=%s/slurmd.pid" % base,
            "SlurmctldLogFile=%s/ctld.log" % base, "SlurmdLogFile=%s/slurmd.log" % base,
            "ProctrackType=proctrack/pgid", "TaskPlugin=task/none",
            "SchedulerType=sched/backfill", "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core", "GresTypes=gpu",
            "CommunicationParameters=NoCtldInAddrAny,NoInAddrAny", "ReturnToService=2",
            "MpiDefault=none", "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none", "MaxJobCount=20000",
            "NodeName=n1 NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 Gres=gpu:8 State=UNKNOWN",
            "PartitionName=p Nodes=n1 Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8",
        ]
        if tuned:
            lines += ["SchedulerParameters=batch_sched_delay=0", "Epilog=/bin/true"]
        with open(conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(base, "gres.conf"), "w") as f:
            f.write("AutoDetect=off\nName=gpu File=%s/dev/nvidia[0-7]\n" % base)
        self.env = dict(os.environ, SLURM_CONF=conf)
        self.env.pop("SLURM_JOB_ID", None)
        self.procs.append(subprocess.Popen(["slurmctld", "-D", "-i", "-f", conf], env=self.env,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(0.5)
        self.procs.append(subprocess.Popen(["slurmd", "-D", "-N", "n1", "-f", conf], env=self.env,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.time() + 60
        while time.time() < deadline:
            p = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=self.env,
                               capture_output=True, text=True)
            if p.stdout.strip() in ("idle",):
                break
            time.sleep(0.3)
        else:
            raise RuntimeError("slurm node not idle: %r\n%s" % (p.stdout + p.stderr,
                                                               self.tail("slurmd.log")))

    def tail(self, name, n=20):
        try:
            with open(os.path.join(self.dir, name)) as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def sbatch(self, args):
        p = subprocess.run(["sbatch", "--parsable"] + args, env=self.env, capture_output=True,
                           text=True)
        if p.returncode != 0:
            raise RuntimeError("sbatch: " + p.stderr)
        return p.stdout.strip().split(";")[0]

    def queue_len(self):
        p = subprocess.run(["squeue", "-h", "-o", "%i"], env=self.env, capture_output=True,
                           text=True)
        return len(p.stdout.split())

    def close(self):
        if getattr(self, "env", None):
            subprocess.run(["scancel", "--user=root"], env=self.env, capture_output=True)
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        try:
            with open(os.path.join(self.dir, "munge", "munged.pid")) as f:
                pid = int(f.read().strip())
            os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError):
            pass


def starts_in(text):
    return [json.loads(m.group(1))["started_unix_ms"] for m in START_RE.finditer(text)]


def slurm_sbatch_lat(s, reps, ntasks, script_cmd):
    lat = []
    script = os.path.join(s.dir, "rank.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\n%s\n" % script_cmd)
    os.chmod(script, 0o755)
    for i in range(reps):
        out = os.path.join(s.dir, "out", "lat-%d-%d.out" % (ntasks, i))
        t0 = now_ms()
        s.sbatch(["-O", "-n", str(ntasks), "--gres=gpu:%d" % ntasks, "-o", out, script])
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with open(out) as f:
                    st = starts_in(f.read())
            except OSError:
                st = []
            if len(st) >= ntasks:
                break
            time.sleep(0.01)
        else:
            raise RuntimeError("sbatch job did not start: " + s.tail("ctld.log"))
        lat.append(max(st) - t0)
        while s.queue_len() > 0:  # let it end so the next one has the GPUs
            time.sleep(0.05)
    return lat


def slurm_srun_lat(s, reps, ntasks):
    lat = []
    for _ in range(reps):
        t0 = now_ms()
        p = subprocess.run(["srun", "-O", "-n", str(ntasks), "--gres=gpu:%d" % ntasks] + RANK_CMD,
                           env=s.env, capture_output=True, text=True, timeout=120)
        st = starts_in(p.stdout)
        if len(st) < ntasks:
            raise RuntimeError("srun: %s %s" % (p.stdout[-500:], p.stderr[-500:]))
        lat.append(max(st) - t0)
    return lat


def slurm_burst(s, n, threads=4):
    t0 = time.time()
    args = ["-n", "1", "--gres=gpu:1", "-o", "/dev/null", "--wrap", "/bin/true"]
    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        list(ex.map(lambda i: s.sbatch(args), range(n)))
    t_sub = time.time() - t0
    deadline = time.time() + 900
    while time.time() < deadline:
        if s.queue_len() == 0:
            break
        time.sleep(0.1)
    else:
        raise RuntimeError("slurm burst did not finish")
    span = time.time() - t0
    return {"n": n, "ok": n, "failed": 0, "submit_s": t_sub, "span_s": span, "jobs_per_s": n / span}


def run_slurm(a, res, tuned):
    tag = "tuned" if tuned else "default"
    s = Slurm(os.path.join(a.tmp, "slurm-" + tag), tuned)
    try:
        seq = a.slurm_seq_tuned if tuned else a.slurm_seq
        cmd = "exec %s" % " ".join(RANK_CMD)
        log("slurm %s: sbatch 1 GPU x %d" % (tag, seq))
        res["sl_%s_sbatch1" % tag] = slurm_sbatch_lat(s, seq, 1, cmd)
        log("slurm %s: srun 1 GPU x %d" % (tag, a.slurm_srun))
        res["sl_%s_srun1" % tag] = slurm_srun_lat(s, a.slurm_srun, 1)
        log("slurm %s: srun 8 tasks x %d" % (tag, a.multi))
        res["sl_%s_srun8" % tag] = slurm_srun_lat(s, a.multi, 8)
        log("slurm %s: sbatch 8 tasks (srun inside) x %d" % (tag, max(3, seq // 2)))
        res["sl_%s_sbatch8" % tag] = slurm_sbatch_lat(s, max(3, seq // 2), 8,
                                                      "srun -O %s" % " ".join(RANK_CMD))
        n = a.burst if tuned else a.burst_default
        log("slurm %s: burst %d" % (tag, n))
        res["sl_%s_burst" % tag] = slurm_burst(s, n)
    finally:
        s.close()


# --------------------------------------------------------------------------- report
def table(res, a):
    def row(system, what, key, note=""):
        if key not in res:
            return
        x = summary(res[key])
        print("| %s | %s | %d | %.0f | %.0f | %.0f | %s |" % (system, what, x["n"], x["p50"],
                                                            x["p99"], x["max"], note))
    print("### Launch latency (submit -> every rank running its first line), ms")
    print()
    print("| system | job | runs | p50 | p99 | max | note |")
    print("|---|---|---:|---:|---:|---:|---|")
    row("(none)", "python3 sleep_rank.py exec'd by hand", "floor", "interpreter start, in every row")
    row("trainyard", "1 GPU (POST)", "ty_1gpu", "open loop, one submit per %.2f s" % a.interval)
    row("trainyard", "8 ranks, 1 worker x 8", "ty_8x1")
    row("trainyard", "8 ranks, 2 workers x 4", "ty_8x2")
    for tag in ("default", "tuned"):
        row("slurm %s" % tag, "1 GPU sbatch", "sl_%s_sbatch1" % tag)
        row("slurm %s" % tag, "1 GPU srun", "sl_%s_srun1" % tag)
        row("slurm %s" % tag, "8 tasks srun, 1 node x 8", "sl_%s_srun8" % tag)
        row("slurm %s" % tag, "8 tasks sbatch+srun, 1 node x 8", "sl_%s_sbatch8" % tag)
    print()
    if "ty_1gpu" in res:
        ty = summary(res["ty_1gpu"])
        print("Targets for trainyard 1-GPU: p50 %.0f ms (<= 50: %s), p99 %.0f ms (<= 150: %s)." % (
            ty["p50"], "met" if ty["p50"] <= 50 else "NOT met", ty["p99"],
            "met" if ty["p99"] <= 150 else "NOT met"))
        print()
        print("| ratio (p50 / trainyard 1-GPU p50) | value |")
        print("|---|---:|")
        for tag in ("default", "tuned"):
            for k, w in (("sbatch1", "sbatch"), ("srun1", "srun")):
                key = "sl_%s_%s" % (tag, k)
                if key in res:
                    print("| slurm %s %s | %.1f x |" % (tag, w, summary(res[key])["p50"] / ty["p50"]))
        if "ty_8x1" in res:
            t8 = summary(res["ty_8x1"])["p50"]
            for tag in ("default", "tuned"):
                for k in ("srun8", "sbatch8"):
                    key = "sl_%s_%s" % (tag, k)
                    if key in res:
                        print("| slurm %s %s / trainyard 8 ranks 1 worker | %.1f x |" % (
                            tag, k, summary(res[key])["p50"] / t8))
        print()
    if res.get("ty_breakdown"):
        print("### Where trainyard's 1-GPU launch time goes (database timestamps), ms")
        print()
        print("| step | p50 | p99 |")
        print("|---|---:|---:|")
        for k, v in res["ty_breakdown"].items():
            print("| %s | %.0f | %.0f |" % (k, pct(v, 50), pct(v, 99)))
        print()
    print("### Burst: trivial 1-GPU jobs (/bin/true), 8 GPUs, submitted by 4 threads")
    print()
    print("| system | jobs | submit s | first submit -> last completion s | jobs/s | ratio to trainyard |")
    print("|---|---:|---:|---:|---:|---:|")
    base = res.get("ty_burst", {}).get("jobs_per_s")
    for name, key in (("trainyard", "ty_burst"), ("slurm default", "sl_default_burst"),
                      ("slurm tuned", "sl_tuned_burst")):
        if key in res:
            b = res[key]
            print("| %s | %d | %.1f | %.1f | %.1f | %s |" % (
                name, b["n"], b["submit_s"], b["span_s"], b["jobs_per_s"],
                "%.2f" % (b["jobs_per_s"] / base) if base else "-"))
    print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tmp", default=os.environ.get("BENCH_TMP"),
                    help="scratch directory (bench/lib/with-pg.sh sets BENCH_TMP)")
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--interval", type=float, default=0.25)
    ap.add_argument("--multi", type=int, default=20)
    ap.add_argument("--burst", type=int, default=500)
    ap.add_argument("--burst-default", type=int, default=500)
    ap.add_argument("--slurm-seq", type=int, default=10)
    ap.add_argument("--slurm-seq-tuned", type=int, default=20)
    ap.add_argument("--slurm-srun", type=int, default=50)
    ap.add_argument("--skip-slurm", action="store_true")
    ap.add_argument("--skip-trainyard", action="store_true")
    ap.add_argument("--json", help="also write raw results here")
    ap.add_argument("--cli-only", action="store_true",
                    help="only the CLI comparison: trainyard submit vs POST, sbatch, srun")
    ap.add_argument("--cli-jobs", type=int, default=50)
    a = ap.parse_args()
    res = {}
    res["floor"] = python_floor()
    if a.cli_only:
        try:
            if not a.skip_trainyard:
                run_trainyard_cli(a, res)
            if not a.skip_slurm:
                run_slurm_cli(a, res, tuned=False)
                run_slurm_cli(a, res, tuned=True)
        finally:
            if a.json:
                with open(a.json, "w") as f:
                    json.dump(res, f)
            cli_table(res)
        return
    try:
        if not a.skip_trainyard:
            run_trainyard(a, res)
        if not a.skip_slurm:
            run_slurm(a, res, tuned=False)
            run_slurm(a, res, tuned=True)
    finally:
        if a.json:
            with open(a.json, "w") as f:
                json.dump(res, f)
        table(res, a)


if __name__ == "__main__":
    main()
