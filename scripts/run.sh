#!/usr/bin/env bash
# `make run`: install what is missing, build, start a local PostgreSQL under
# ./var (or use TRAINYARD_DATABASE_URL), apply migrations, create the first
# admin, start trainyard-server and one local trainyard-worker, and print the
# dashboard address and the admin's login. Ctrl-C stops everything it
# started; running it again reuses ./var. A failing step is named, with its
# log under var/log/.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
step_init run "$top/var/log"
step --live deps scripts/deps.sh build

step configure env CC="${CC:-clang}" cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF
step --live build cmake --build build-release -j"$(nproc)" --target trainyard-server trainyard-worker trainyard

var=$top/var
mkdir -p "$var"
chmod 755 "$var"
listen=${TRAINYARD_LISTEN:-0.0.0.0:8080}
port=${listen##*:}
pids=()
pgdata=""

stop_all() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "$pgdata" ]; then scripts/pg.sh stop "$pgdata"; fi
  echo "trainyard stopped."
}
trap stop_all INT TERM EXIT

if [ -z "${TRAINYARD_DATABASE_URL:-}" ]; then
  pgdata=$var/pg
  # PostgreSQL runs as the postgres user: it must be able to reach ./var.
  if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$var"; then
    pgdata=/var/lib/trainyard/pg-$(echo -n "$top" | sha256sum | cut -c1-8)
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

server=build-release/server/trainyard-server
worker=build-release/worker/trainyard-worker
mkdir -p "$var/server" "$var/storage" "$var/worker"
export TRAINYARD_DATA_DIR=$var/server
export TRAINYARD_STORAGE_ROOT=$var/storage
export TRAINYARD_WEB_DIR=$top/web
export TRAINYARD_LISTEN=$listen

# The first admin: created once, its password kept in var/admin-password.
if [ ! -f "$var/admin-password" ]; then
  (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$var/admin-password")
fi
set +e
TRAINYARD_ADMIN_PASSWORD=$(cat "$var/admin-password") "$server" --create-admin admin --log-level warn >/dev/null
rc=$?
set -e
[ $rc -eq 0 ] || [ $rc -eq 3 ] || { echo "run: cannot create the admin (exit $rc)" >&2; exit 1; }

"$server" >>"$var/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
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
if "$worker" --discover 2>/dev/null | grep -q '"uuid":"GPU-[0-9a-f]'; then gpu_args=(); fi
join_args=()
if [ ! -f "$var/worker/node.json" ]; then
  cookie=$(mktemp)
  login=$(curl -fsS -c "$cookie" -H 'Content-Type: application/json' \
    -d "{\"username\":\"admin\",\"password\":\"$(cat "$var/admin-password")\"}" \
    "http://127.0.0.1:$port/api/v1/auth/login")
  csrf=$(echo "$login" | python3 -c 'import json,sys; print(json.load(sys.stdin)["csrf_token"])')
  token=$(curl -fsS -b "$cookie" -H "X-CSRF-Token: $csrf" -H 'Content-Type: application/json' \
    -d '{"uses":1,"ttl_s":600}' "http://127.0.0.1:$port/api/v1/nodes/join-tokens" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
  rm -f "$cookie"
  join_args=(--join-token "$token")
fi
"$worker" --server "http://127.0.0.1:$port" "${join_args[@]}" --name "$(hostname -s | tr 'A-Z' 'a-z')" \
  --work-dir "$var/worker" --allowed-root "$var/storage" --addr 127.0.0.1 "${gpu_args[@]}" \
  >>"$var/worker.log" 2>&1 &
pids+=($!)

host=$(hostname -I 2>/dev/null | awk '{print $1}')
cat <<MSG

  trainyard is running.
  Dashboard:  http://${host:-127.0.0.1}:$port/   (also http://127.0.0.1:$port/)
  Admin:      admin / $(cat "$var/admin-password")
  API:        http://127.0.0.1:$port/api/v1   (see README.md)
  Logs:       var/server.log, var/worker.log
  CLI:        build-release/cli/trainyard   (audit verify EXPORT --public-key KEY)
  Ctrl-C stops the server, the worker and PostgreSQL.

MSG
wait -n "${pids[@]}" || true
