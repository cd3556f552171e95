#!/usr/bin/env bash
# `make run`: install what is missing, build, start a local PostgreSQL under
# ./var (or use TRAINYARD_DATABASE_URL), apply migrations, create the first
# admin, start trainyard-server (with the job templates of ./templates) and
# one local trainyard-worker, make sure a team "default" whose GPU quota
# covers that worker exists with the admin in it, and print the dashboard
# address and the admin's login. Ctrl-C stops everything it started;
# running it again reuses ./var. A failing step is named, with its log
# under var/log/.
#
# Overrides, for tests and for a second instance beside the first:
#   TRAINYARD_VAR_DIR        state directory instead of ./var
#   TRAINYARD_LISTEN         the server's address and port (0.0.0.0:8080)
#   TRAINYARD_PG_PORT        the managed PostgreSQL's port (54329)
#   TRAINYARD_RUN_BUILD_DIR  an existing build to run (tests: the ASan build);
#                            then nothing is installed or built (web/vendor
#                            included)
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
var=${TRAINYARD_VAR_DIR:-$top/var}
mkdir -p "$var"
var=$(cd "$var" && pwd)
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
step_init run "$var/log"

build=${TRAINYARD_RUN_BUILD_DIR:-}
if [ -z "$build" ]; then
  step --live deps scripts/deps.sh build
  build="build-release"
  step configure env CC="${CC:-clang}" cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF
  step --live build cmake --build "$build" -j"$(nproc)" --target trainyard-server trainyard-worker trainyard
  # The dashboard's third-party code (ECharts), served at /vendor/.
  if [ -f web/vendor/package-lock.json ]; then
    step vendor npm ci --prefix web/vendor --no-audit --no-fund
  fi
  # The API reference page (Swagger UI) at /api/v1/docs, pinned by its lock file.
  if [ -f docs/api/package-lock.json ]; then
    step npm-api-docs npm ci --prefix docs/api --no-audit --no-fund --ignore-scripts --omit=dev
  fi
fi

chmod 755 "$var"
listen=${TRAINYARD_LISTEN:-0.0.0.0:8080}
port=${listen##*:}
pids=()
pgdata=""
cookie=""

stop_all() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "$pgdata" ]; then scripts/pg.sh stop "$pgdata"; fi
  if [ -n "$cookie" ]; then rm -f "$cookie"; fi
  echo "trainyard stopped."
}
trap stop_all INT TERM EXIT

if [ -z "${TRAINYARD_DATABASE_URL:-}" ]; then
  pgdata=$var/pg
  # PostgreSQL runs as the postgres user: it must be able to reach ./var.
  if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$var"; then
    # Keyed by the checkout for ./var (as before), else by the var dir.
    key=$top
    [ "$var" = "$top/var" ] || key=$var
    pgdata=/var/lib/trainyard/pg-$(echo -n "$key" | sha256sum | cut -c1-8)
    mkdir -p "$(dirname "$pgdata")"
    chmod 755 "$(dirname "$pgdata")"
  fi
  pgport=${TRAINYARD_PG_PORT:-54329}
  step postgres scripts/pg.sh start "$pgdata" "$pgport"
  if [ ! -f "$var/db-password" ]; then
    (umask 077; head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$var/db-password")
  fi
  dbpw=$(cat "$var/db-password")
  step database scripts/pg.sh psql "$pgdata" "$pgport" -d postgres -v pw="$dbpw" <<'SQL'
SELECT format('CREATE ROLE trainyard LOGIN PASSWORD %L', :'pw')
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'trainyard') \gexec
SELECT 'CREATE DATABASE trainyard OWNER trainyard'
WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'trainyard') \gexec
SQL
  export TRAINYARD_DATABASE_URL="postgresql://trainyard:$dbpw@127.0.0.1:$pgport/trainyard"
fi

server=$build/server/trainyard-server
worker=$build/worker/trainyard-worker
if [ ! -x "$server" ] || [ ! -x "$worker" ]; then
  echo "run: no trainyard-server or trainyard-worker in $build" >&2
  exit 1
fi
mkdir -p "$var/server" "$var/storage" "$var/worker"
export TRAINYARD_DATA_DIR=$var/server
export TRAINYARD_STORAGE_ROOT=$var/storage
export TRAINYARD_WEB_DIR=$top/web
export TRAINYARD_API_DOCS_DIR=$top/docs/api
export TRAINYARD_TEMPLATES_DIR=$top/templates
# The templates' scripts: one path, the same on every node (here: this one).
export TRAINYARD_EXAMPLES_DIR=$top/examples
export TRAINYARD_LISTEN=$listen

# The first admin: created once, its password kept in var/admin-password.
if [ ! -f "$var/admin-password" ]; then
  (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$var/admin-password")
fi
# Exit 3: the admin exists already (a second start).
set +e
TRAINYARD_ADMIN_PASSWORD=$(cat "$var/admin-password") "$server" --create-admin admin --log-level warn \
  >"$var/log/admin.log" 2>&1
rc=$?
set -e
if [ $rc -ne 0 ] && [ $rc -ne 3 ]; then
  tail -n 20 "$var/log/admin.log" >&2
  echo "run: step \"admin\" failed (exit $rc); log: $var/log/admin.log" >&2
  exit 1
fi

"$server" >>"$var/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
  curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null || {
  tail -20 "$var/server.log" >&2
  echo "run: step \"server\" failed (not ready); log: $var/server.log" >&2
  exit 1
}

# One local worker: real GPUs when NVML finds them, else two fake ones.
gpu_args=(--fake-gpus 2:16)
ngpus=2
if "$worker" --discover 2>/dev/null | grep -q '"uuid":"GPU-[0-9a-f]'; then
  gpu_args=()
  ngpus=$("$worker" --discover 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["gpus"]))')
fi

# The REST API as the admin, so that every change below is audited like any
# other. One sign-in serves the join token and the team.
api_url="http://127.0.0.1:$port/api/v1"
cookie=$(mktemp)
csrf=""
admin_id=""
api() { # METHOD PATH [JSON]: prints the answer; fails (showing it) on an HTTP error
  local args=(-sS --fail-with-body -b "$cookie" -c "$cookie" -X "$1" -H "X-CSRF-Token: $csrf")
  [ $# -ge 3 ] && args+=(-H 'Content-Type: application/json' -d "$3")
  curl "${args[@]}" "$api_url$2" || { echo "run: $1 $2 failed; log: $var/server.log" >&2; return 1; }
}
json() { # EXPR: evaluates a Python expression over the JSON on stdin (as j)
  python3 -c 'import json,sys; j=json.load(sys.stdin); v='"$1"'; print("" if v is None else v)'
}
login=$(api POST /auth/login "{\"username\":\"admin\",\"password\":\"$(cat "$var/admin-password")\"}")
csrf=$(echo "$login" | json 'j["csrf_token"]')
admin_id=$(echo "$login" | json 'j["user"]["id"]')

# The first admin's team, so the first job can be submitted at once: created
# when missing, its quota raised to the worker's GPUs when below, the admin
# added when not a member. Idempotent: a second run changes nothing.
team_id=$(api GET /teams | json 'next((t["id"] for t in j["teams"] if t["name"] == "default"), None)')
if [ -z "$team_id" ]; then
  team_id=$(api POST /teams "{\"name\":\"default\",\"gpu_quota\":$ngpus}" | json 'j["id"]')
else
  quota=$(api GET "/teams/$team_id" | json 'int(j["gpu_quota"])')
  if [ "$quota" -lt "$ngpus" ]; then
    api PATCH "/teams/$team_id" "{\"gpu_quota\":$ngpus}" >/dev/null
  fi
fi
member=$(api GET "/teams/$team_id" | json "any(m['id'] == '$admin_id' for m in j['members'])")
if [ "$member" != True ]; then
  api PUT "/teams/$team_id/members/$admin_id" >/dev/null
fi

# The join token goes in the worker's environment, never on its command line.
token=""
if [ ! -f "$var/worker/node.json" ]; then
  token=$(api POST /nodes/join-tokens '{"uses":1,"ttl_s":600}' | json 'j["token"]')
fi
api POST /auth/logout >/dev/null
rm -f "$cookie"
cookie=""
# The ranks' account (worker/ident.h). As root: trainyard-job, created here
# when missing, provided it can reach the checkout (the examples, var/); a
# checkout below a private home cannot be, and neither can a worker run by
# a normal user switch ids: then the ranks run as the worker (--job-user
# self), which the worker logs loudly. Never so in a packaged install.
job_args=(--job-user self)
if [ "$(id -u)" -eq 0 ]; then
  if ! getent passwd trainyard-job >/dev/null; then
    useradd --system --no-create-home --shell /usr/sbin/nologin trainyard-job
  fi
  reachable=1
  d=$top
  while [ "$d" != / ]; do
    case $(stat -c %A "$d") in *x | *t) ;; *) reachable=0 ;; esac
    d=$(dirname "$d")
  done
  if [ $reachable -eq 1 ]; then
    job_args=()
    chmod 0711 "$var" "$var/storage"
  else
    echo "run: ranks run as $(id -un): trainyard-job cannot reach $top" >&2
  fi
else
  echo "run: ranks run as $(id -un) (not root: cannot switch to trainyard-job)" >&2
fi
TRAINYARD_JOIN_TOKEN="$token" "$worker" --server "http://127.0.0.1:$port" --name "$(hostname -s | tr 'A-Z' 'a-z')" \
  --work-dir "$var/worker" --allowed-root "$var/storage" --addr 127.0.0.1 "${gpu_args[@]}" \
  "${job_args[@]}" \
  >>"$var/worker.log" 2>&1 &
pids+=($!)

host=$(hostname -I 2>/dev/null | awk '{print $1}')
cat <<MSG

  trainyard is running.
  Dashboard:  http://${host:-127.0.0.1}:$port/   (also http://127.0.0.1:$port/)
  Admin:      admin / $(cat "$var/admin-password")
  Team:       default   (GPU quota $ngpus; the admin is a member)
  API:        http://127.0.0.1:$port/api/v1   (see README.md)
  Logs:       $var/server.log, $var/worker.log
  CLI:        $build/cli/trainyard   (audit verify EXPORT --public-key KEY)
  Ctrl-C stops the server, the worker and PostgreSQL.

MSG
wait -n "${pids[@]}" || true
