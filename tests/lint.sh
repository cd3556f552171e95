#!/usr/bin/env bash
# Lint: clang-format must agree with every C file, and the functions that
# CONVENTIONS.md bans must not appear in the product's C code.
set -u
cd "$(dirname "$0")/.."
rc=0
files=$(git ls-files '*.c' '*.h' 2>/dev/null || find common server scheduler worker cli tests bench -name '*.[ch]')
if command -v clang-format >/dev/null; then
  bad=$(for f in $files; do [ -f "$f" ] && ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1 && echo "$f"; done)
  if [ -n "$bad" ]; then echo "clang-format disagrees with:"; echo "$bad"; rc=1; fi
fi
banned='\b(sprintf|strcpy|strcat|gets|strtok|atoi|system|popen)[[:space:]]*\('
hits=$(for f in $files; do [ -f "$f" ] && grep -nE "$banned" "$f" | grep -v 'snprintf\|vsnprintf' | sed "s|^|$f:|"; done)
if [ -n "$hits" ]; then echo "banned functions:"; echo "$hits"; rc=1; fi
[ $rc -eq 0 ] && echo "lint: ok ($(echo $files | wc -w) files)"
exit $rc
