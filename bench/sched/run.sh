#!/bin/sh
# bench/sched/run.sh - scheduler benchmarks, printed as markdown tables:
#  1. one pass: 10,000 queued jobs (Philly GPU-size mix), 1,000 nodes x 8 GPUs half busy
#  2. full Philly replay (82,247 jobs) on 47 nodes x 8 GPUs (offered load ~1.0), 4 policies
#  3. small cluster: 16 nodes x 4 GPUs, 160 jobs sampled the Pollux way, several seeds
#  4. the runtime predictor on the full Philly replay (predictor/): trainyard,
#     trainyard-spf and trainyard-qspf learning run times online, against
#     sjf-oracle and fifo
#  5. forecast accuracy on the Philly replay: the forecast start at submit
#     against the actual start, with predictions and from time limits alone
#  6. an untuned second trace: the Alibaba openb pod list (alibaba_csv.py)
# The forecast's cost is the second table of bench_sched (section 1).
# Builds a release tree (no sanitizers) in build-rel first.
# Usage: bench/sched/run.sh [--quick]   (--quick: fewer reps and seeds)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build-rel}
trace=${PHILLY_TRACE:-$root/../shared/traces/pollux-philly.csv}
alibaba=${ALIBABA_TRACE:-$root/../shared/traces/alibaba-openb_pod_list_default.csv}
reps=101
seeds="1 2 3 4 5 6 7 8"
fc_every=800 # about 100 forecasts (each twice) over the 82,247 arrivals
if [ "${1:-}" = "--quick" ]; then
    reps=11
    seeds="1 2"
    fc_every=8000
fi

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target bench_sched trainyard-sim >/dev/null
sim=$build/scheduler/trainyard-sim

echo "### One pass (release build, $reps repetitions)"
echo
"$build/bench/sched/bench_sched" --reps "$reps"
echo

echo "### Full Philly replay: 82,247 jobs, 47 nodes x 8 GPUs"
echo
out=$(mktemp)
for p in fifo sjf-oracle trainyard tiresias-las; do
    "$sim" --trace "$trace" --format philly --nodes 47 --gpus-per-node 8 --switch-size 8 \
        --policy "$p" --json >>"$out"
done
python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {r["policy"]: r for r in rows}
print("| policy | avg JCT s | p50 JCT s | p99 JCT s | avg queue s | makespan s | GPU util | preemptions | passes | pass ms p50 | pass ms p99 | wall s |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print("| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.3f | %d | %d | %.3f | %.3f | %.1f |" % (
        r["policy"], r["avg_jct_s"], r["p50_jct_s"], r["p99_jct_s"], r["avg_queue_s"],
        r["makespan_s"], r["gpu_utilization"], r["preemptions"], r["passes"],
        r["pass_ms_p50"], r["pass_ms_p99"], r["wall_s"]))
print()
print("offered load %.3f; trainyard/fifo avg JCT %.3f (target <= 0.6); trainyard/sjf-oracle %.3f (target <= 1.2)" % (
    rows[0]["offered_load"], by["trainyard"]["avg_jct_s"] / by["fifo"]["avg_jct_s"],
    by["trainyard"]["avg_jct_s"] / by["sjf-oracle"]["avg_jct_s"]))
PY
echo
philly_out=$out

echo "### Small cluster: 16 nodes x 4 GPUs, 160 Philly jobs sampled as Pollux does (seeds: $seeds)"
echo
out=$(mktemp)
for p in fifo sjf-oracle trainyard tiresias-las; do
    for s in $seeds; do
        "$sim" --trace "$trace" --format philly --nodes 16 --gpus-per-node 4 --switch-size 4 \
            --policy "$p" --sample 160 --seed "$s" --json >>"$out"
    done
done
python3 - "$out" <<'PY'
import json, sys
from collections import defaultdict
agg = defaultdict(list)
for l in open(sys.argv[1]):
    r = json.loads(l)
    agg[r["policy"]].append(r)
print("| policy | runs | mean avg JCT s | mean p99 JCT s | mean makespan s | mean GPU util | preemptions |")
print("|---|---:|---:|---:|---:|---:|---:|")
for p, rs in agg.items():
    n = len(rs)
    print("| %s | %d | %.0f | %.0f | %.0f | %.3f | %d |" % (p, n,
        sum(r["avg_jct_s"] for r in rs) / n, sum(r["p99_jct_s"] for r in rs) / n,
        sum(r["makespan_s"] for r in rs) / n, sum(r["gpu_utilization"] for r in rs) / n,
        sum(r["preemptions"] for r in rs)))
PY
rm -f "$out"

# Rows of trainyard-sim --json output as a JCT table against sjf-oracle and fifo.
jct_table() {
    python3 - "$1" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
base = {r["policy"]: r for r in rows if not r["predict"]}
print("| policy | predictor | avg JCT s | p99 JCT s | avg JCT / sjf-oracle | p99 / fifo p99 | preemptions | wall s |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print("| %s | %s | %.0f | %.0f | %.3f | %.3f | %d | %.1f |" % (
        r["policy"], "online" if r["predict"] else "-", r["avg_jct_s"], r["p99_jct_s"],
        r["avg_jct_s"] / base["sjf-oracle"]["avg_jct_s"], r["p99_jct_s"] / base["fifo"]["p99_jct_s"],
        r["preemptions"], r["wall_s"]))
PY
}

echo
echo "### The runtime predictor on the full Philly replay (47 nodes x 8 GPUs)"
echo
for p in trainyard-spf trainyard-qspf; do
    "$sim" --trace "$trace" --format philly --nodes 47 --gpus-per-node 8 --switch-size 8 \
        --policy "$p" --json >>"$philly_out"
done
for p in trainyard trainyard-spf trainyard-qspf; do
    "$sim" --trace "$trace" --format philly --nodes 47 --gpus-per-node 8 --switch-size 8 \
        --policy "$p" --predict --json >>"$philly_out"
done
jct_table "$philly_out"
rm -f "$philly_out"

echo
echo "### Forecast accuracy on the Philly replay (every ${fc_every}th arrival, jobs that waited >= 10 min)"
echo
out=$(mktemp)
# each policy twice: the event simulation (the default) and the exact one
# (a sched_plan() per simulated end), on the same arrivals
for p in trainyard trainyard-spf; do
    for exact in "" --forecast-exact; do
        "$sim" --trace "$trace" --format philly --nodes 47 --gpus-per-node 8 --switch-size 8 \
            --policy "$p" --predict --forecast-every "$fc_every" $exact --json |
            sed "s/^{/{\"simulation\":\"$([ -n "$exact" ] && echo exact || echo events)\",/" >>"$out"
    done
done
python3 - "$out" <<'PY'
import json, sys
print("| policy | simulation | forecasts | waited >= 10 min | no start | median wait s | median err s | p90 err s | median err / wait | limits alone: median err s | p90 err s | median err / wait | forecast ms p50 | max |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for l in open(sys.argv[1]):
    r = json.loads(l)
    print("| %s | %s | %d | %d | %d | %.0f | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f | %.1f | %.1f |" % (
        r["policy"], r["simulation"], r["fc_sampled"], r["fc_counted"], r["fc_unknown"], r["fc_med_wait_s"],
        r["fc_med_err_s"], r["fc_p90_err_s"], r["fc_med_ratio"], r["lim_med_err_s"],
        r["lim_p90_err_s"], r["lim_med_ratio"], r["fc_ms_p50"], r["fc_ms_max"]))
PY
rm -f "$out"

echo
ali=$(mktemp)
read -r ajobs anodes <<EOF2
$(python3 "$here/alibaba_csv.py" "$alibaba" "$ali")
EOF2
echo "### Alibaba openb pods (untuned): $ajobs jobs, $anodes nodes x 8 GPUs (offered load ~1.0)"
echo
out=$(mktemp)
for p in fifo sjf-oracle trainyard trainyard-spf trainyard-qspf; do
    "$sim" --trace "$ali" --format csv --nodes "$anodes" --gpus-per-node 8 --switch-size 8 \
        --policy "$p" --json >>"$out"
done
for p in trainyard trainyard-spf trainyard-qspf; do
    "$sim" --trace "$ali" --format csv --nodes "$anodes" --gpus-per-node 8 --switch-size 8 \
        --policy "$p" --predict --json >>"$out"
done
jct_table "$out"
rm -f "$out" "$ali"
