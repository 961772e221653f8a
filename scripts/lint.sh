#!/usr/bin/env bash
# clang-tidy (checks in .clang-tidy) over the project's C++ sources, as compiled in the build's
# compile_commands.json. Exit 0 only when there is no warning.
#   scripts/lint.sh [--build DIR] [FILE-REGEX]   (default build/, every file under src/ and tests/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
if [[ ${1:-} == --build ]]; then build=$(cd "$2" && pwd); shift 2; fi
filter=${1:-"$root/(src|tests)/.*\.cpp$"}
test -f "$build/compile_commands.json" || { echo "lint: $build/compile_commands.json missing (run scripts/setup.sh)" >&2; exit 2; }
jobs=$(nproc)
# The database is GCC's: clang-tidy must not stop on a GCC-only warning flag.
output=$(run-clang-tidy -quiet -p "$build" -j "$jobs" -extra-arg=-Wno-unknown-warning-option "$filter" 2>&1) || true
warnings=$(grep -E '^/.*: (warning|error): ' <<<"$output" | sort -u || true)
if [[ -n $warnings ]]; then
  grep -vE '^(clang-tidy|[0-9]+ warnings? generated|Suppressed|Use -header-filter|Running)' <<<"$output" >&2 || true
  echo "lint: $(wc -l <<<"$warnings") warning(s)" >&2
  exit 1
fi
echo "lint: clean (files matching $filter)"
