# shellcheck shell=bash
# Shared by scripts/run.sh, test.sh and build.sh (source it, do not run it).
#
#   step_init WHO LOGDIR
#       WHO prefixes messages ("run", "test", "build"); each step's output
#       goes to LOGDIR/NAME.log (made if missing, kept after the script).
#       Also reports, with its line, a command that fails outside a step.
#   step [--live] NAME CMD [ARG...]
#       Runs CMD with stdout and stderr in LOGDIR/NAME.log (rewritten each
#       run); with --live they also go to the terminal (long steps such as
#       the build and ctest). On failure it prints the tail of the log (live:
#       the compiler errors in it) and
#           WHO: step "NAME" failed (exit N); log: LOGDIR/NAME.log
#       to stderr, and exits N. CMD must be a program, not a shell function
#       (set -e does not apply inside it).

step_init() {
  STEP_WHO=$1
  mkdir -p "$2"
  STEP_LOGDIR=$(cd "$2" && pwd)
  # Under set -e a failing command outside a step ends the script; say which.
  # (Only while errexit is on: scripts turn it off around checked commands.)
  trap 'step_unexpected $? $LINENO "$BASH_COMMAND"' ERR
}

step_unexpected() {
  case $- in
  *e*) echo "$STEP_WHO: failed (exit $1) at line $2: $3" >&2 ;;
  esac
}

step() {
  local live=0
  if [ "$1" = --live ]; then
    live=1
    shift
  fi
  local name=$1
  shift
  local log=$STEP_LOGDIR/$name.log rc=0
  printf '# %s: %s\n' "$(date '+%F %T')" "$*" >"$log"
  if [ $live = 1 ]; then
    "$@" 2>&1 | tee -a "$log" || rc=${PIPESTATUS[0]}
  else
    "$@" >>"$log" 2>&1 || rc=$?
  fi
  [ "$rc" -eq 0 ] && return 0
  if [ $live = 1 ]; then
    # The output scrolled past; repeat the first compiler errors, if any.
    if grep -qE '(^|: )(fatal )?error:|undefined reference|CMake Error' "$log"; then
      echo "--- errors in $log ---" >&2
      grep -E '(^|: )(fatal )?error:|undefined reference|CMake Error' "$log" | head -n 20 >&2
    fi
  else
    echo "--- last lines of $log ---" >&2
    tail -n 30 "$log" >&2
  fi
  echo "$STEP_WHO: step \"$name\" failed (exit $rc); log: $log" >&2
  exit "$rc"
}
