#!/usr/bin/env bash
# The server's layers point down only (server/README.md): a file may include
# headers of its own folder and of the folders below it, never of one above.
# Lowest first: core, jobs, store, http, loops, serve, api, then server/ itself
# (main.c). Headers of common/ and of the pure libraries are not layered.
# A header name is looked up among the layers' folders (names are unique
# there), so `#include "db.h"` from server/http/ is a downward include of
# server/store/db.h. Prints every offending line and exits 1 when there is
# one. Usage: tests/layers.sh [ROOT]   (ROOT: a tree to check, default this one)
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
srv=$root/server
layers=(core jobs store http loops serve api)
rank_of() { # folder name -> rank; server/ itself is above every layer
  local i
  for i in "${!layers[@]}"; do [ "${layers[$i]}" = "$1" ] && { echo "$i"; return; }; done
  echo "${#layers[@]}"
}
declare -A header_layer=()
for l in "${layers[@]}"; do
  [ -d "$srv/$l" ] || { echo "layers: missing folder server/$l"; exit 1; }
  for h in "$srv/$l"/*.h; do
    [ -e "$h" ] || continue
    name=${h##*/}
    if [ -n "${header_layer[$name]:-}" ]; then
      echo "layers: $name is in both server/${header_layer[$name]} and server/$l"
      exit 1
    fi
    header_layer[$name]=$l
  done
done
# One pass over every include line of every file: awk gets the layers'
# order and where each header lives, and prints the offending lines.
files=$(find "$srv" -name '*.[ch]' | sort)
checked=$(wc -l <<<"$files")
map=$(for h in "${!header_layer[@]}"; do echo "$h ${header_layer[$h]}"; done)
# shellcheck disable=SC2086 # the file list splits on newlines only
out=$(IFS=$'\n'; grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' $files |
  awk -v root="$root/" -v srv="$srv" -v order="${layers[*]}" -v map="$map" '
    BEGIN {
      n = split(order, o, " ")
      for (i = 1; i <= n; i++) rank[o[i]] = i
      rank["server"] = n + 1
      m = split(map, lines, "\n")
      for (i = 1; i <= m; i++) { split(lines[i], kv, " "); where[kv[1]] = kv[2] }
    }
    {
      file = $0; sub(/:.*/, "", file)
      rest = substr($0, length(file) + 2)
      line = rest; sub(/:.*/, "", line)
      text = substr(rest, length(line) + 2)
      inc = text; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
      dir = file; sub(/\/[^\/]*$/, "", dir)
      own = (dir == srv) ? "server" : dir
      sub(/.*\//, "", own)
      rel = (index(file, root) == 1) ? substr(file, length(root) + 1) : file
      if (inc ~ /\//) {
        printf "%s:%s: %s  (include by plain name; the build sets the layers\047 folders)\n", rel, line, text
        next
      }
      if (!(inc in where)) next # common/, a pure library, a generated file or a system header
      if (rank[where[inc]] > rank[own])
        printf "%s:%s: %s  (server/%s may not use server/%s)\n", rel, line, text, own, where[inc]
    }')
bad=0
if [ -n "$out" ]; then
  echo "$out"
  bad=1
fi
if [ $bad -ne 0 ]; then
  echo "layers: includes point up (server/README.md, 'Layers')"
  exit 1
fi
echo "layers: ok ($checked files; ${layers[*]} below server/)"
