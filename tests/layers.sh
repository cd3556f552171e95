#!/usr/bin/env bash
# The server's layers point down only (server/README.md): a file may include
# headers of its own folder and of the folders below it, never of one above.
# Lowest first: core, jobs, store, http, loops, api, then server/ itself
# (main.c). Headers of common/ and of the pure libraries are not layered.
# A header name is looked up among the layers' folders (names are unique
# there), so `#include "db.h"` from server/http/ is a downward include of
# server/store/db.h. Prints every offending line and exits 1 when there is
# one. Usage: tests/layers.sh [ROOT]   (ROOT: a tree to check, default this one)
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
srv=$root/server
layers=(core jobs store http loops api)
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
bad=0
checked=0
while IFS= read -r file; do
  dir=${file%/*}
  own=${dir##*/}
  [ "$dir" = "$srv" ] && own=server
  own_rank=$(rank_of "$own")
  checked=$((checked + 1))
  while IFS=: read -r line text; do
    inc=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' <<<"$text")
    [ -n "$inc" ] || continue
    case $inc in
    */*)
      echo "${file#"$root"/}:$line: $text  (include by plain name; the build sets the layers' folders)"
      bad=1
      continue
      ;;
    esac
    l=${header_layer[$inc]:-}
    [ -n "$l" ] || continue # common/, a pure library, a generated file or a system header
    if [ "$(rank_of "$l")" -gt "$own_rank" ]; then
      echo "${file#"$root"/}:$line: $text  (server/$own may not use server/$l)"
      bad=1
    fi
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include' "$file")
done < <(find "$srv" -name '*.[ch]' | sort)
if [ $bad -ne 0 ]; then
  echo "layers: includes point up (server/README.md, 'Layers')"
  exit 1
fi
echo "layers: ok ($checked files; ${layers[*]} below server/)"
