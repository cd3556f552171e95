#!/bin/sh
# bench/run-all.sh - every benchmark in turn (make bench), each printing its tables.
# Usage: bench/run-all.sh [--quick] [--list] [NAME ...]
#   NAME: run only these (names as --list prints them).
#   --quick: the small forms where a benchmark has one (sched --quick, launch --quick,
#     audit at 100,000 events, one round of the Python drivers); minutes instead of hours.
# Stops at the first benchmark that fails, and says which. The figures are not
# recorded anywhere: paste the tables into bench/RESULTS.md (bench/README.md, "Rules").
# Needs what bench/README.md lists (scripts/deps.sh bench; launch needs root).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
quick=0 list=0 only=""
for a in "$@"; do
    case $a in
        --quick) quick=1 ;;
        --list) list=1 ;;
        -*) echo "run-all.sh: unknown option $a" >&2; exit 2 ;;
        *) only="$only $a" ;;
    esac
done

# name, then the command for the full run, then the command for --quick.
benches() {
    cat <<'LIST'
sched|sched/run.sh|sched/run.sh --quick
advisor|advisor/run.sh|advisor/run.sh --reps 3
api|api/run.sh|api/run.sh
audit|audit/run.sh|audit/run.sh 100000
launch|launch/run.sh|launch/run.sh --quick
output-burst|launch/output_burst.sh|launch/output_burst.sh --rounds 1
train|train/run.sh|train/run.sh --rounds 1
recovery|recovery/run.sh|recovery/run.sh --reps 1
templates|templates/run.sh|templates/run.sh --rounds 1
web|web/run.sh|web/run.sh
serving|serving/run.sh|serving/run.sh --quick
LIST
}

if [ "$list" = 1 ]; then
    benches | cut -d'|' -f1
    exit 0
fi
benches | while IFS='|' read -r name full small; do
    if [ -n "$only" ] && ! printf ' %s ' "$only" | grep -q " $name "; then
        continue
    fi
    cmd=$full
    [ "$quick" = 1 ] && cmd=$small
    echo "## bench $name: bench/$cmd ($(date -u +%Y-%m-%dT%H:%MZ))"
    # shellcheck disable=SC2086
    if ! (cd "$here/.." && bench/$cmd); then
        echo "run-all.sh: bench $name failed (bench/$cmd)" >&2
        exit 1
    fi
done
