#!/usr/bin/env bash
# A private PostgreSQL cluster for trainyard (development and tests).
#   scripts/pg.sh start DATADIR PORT [trust]  -> initdb if needed, start on 127.0.0.1:PORT
#   scripts/pg.sh stop DATADIR
# As root, the cluster runs as the "postgres" user (PostgreSQL refuses root).
# Sockets live in DATADIR, so nothing is shared with a system cluster.
set -euo pipefail

pgbin=""
for d in /usr/lib/postgresql/*/bin; do [ -x "$d/pg_ctl" ] && pgbin="$d"; done
[ -n "$pgbin" ] || { echo "pg.sh: PostgreSQL binaries not found (install postgresql)" >&2; exit 1; }

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

cmd=${1:?usage: pg.sh start|stop DATADIR [PORT]}
data=${2:?data dir}
case "$cmd" in
start)
  port=${3:?port}
  auth=${4:-scram}
  if [ ! -f "$data/PG_VERSION" ]; then
    mkdir -p "$data"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$data"
    chmod 700 "$data"
    if [ "$auth" = trust ]; then
      as_pg "$pgbin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
    else
      # Loopback needs a password; the local socket trusts only the OS user.
      pw="$data.pw"
      head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$pw"
      [ "$(id -u)" -eq 0 ] && chown postgres: "$pw"
      chmod 600 "$pw"
      as_pg "$pgbin/initdb" -D "$data" -U postgres --auth-local=peer --auth-host=scram-sha-256 \
        --pwfile="$pw" -E UTF8 --locale=C.UTF-8 >/dev/null
    fi
  fi
  if as_pg "$pgbin/pg_ctl" -D "$data" status >/dev/null 2>&1; then exit 0; fi
  opts="-p $port -c listen_addresses=127.0.0.1 -k $data -c max_connections=300"
  # Throwaway test clusters need no durability; a kept cluster does.
  [ "$auth" = trust ] && opts="$opts -c fsync=off -c full_page_writes=off -c synchronous_commit=off"
  if ! as_pg "$pgbin/pg_ctl" -D "$data" -w -t 60 -l "$data/server.log" -o "$opts" start >/dev/null; then
    # Why it did not start is in the server's own log (gone with a test cluster).
    echo "pg.sh: PostgreSQL did not start on port $port; last lines of $data/server.log:" >&2
    tail -n 20 "$data/server.log" >&2 || true
    exit 1
  fi
  ;;
stop)
  if [ -f "$data/PG_VERSION" ]; then
    as_pg "$pgbin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  ;;
psql)
  port=${3:?port}; shift 3
  as_pg "$pgbin/psql" -h "$data" -p "$port" -U postgres -v ON_ERROR_STOP=1 -qAt "$@"
  ;;
*) echo "pg.sh: unknown command $cmd" >&2; exit 2 ;;
esac
