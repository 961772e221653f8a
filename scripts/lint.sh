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
command -v run-clang-tidy >/dev/null || { echo "lint: run-clang-tidy missing (run scripts/setup.sh)" >&2; exit 2; }
files=$(grep -oE '"file": *"[^"]*"' "$build/compile_commands.json" | cut -d'"' -f4 | grep -E "$filter" | sort -u | wc -l)
# The database is GCC's: clang-tidy must not stop on a GCC-only warning flag. Headers are checked
# when they are the project's own (not NumPy's include/ below .venv, not the build's generated ones).
# run-clang-tidy always asks for colour: the escapes are removed before looking for warnings.
output=$(run-clang-tidy -quiet -p "$build" -j "$(nproc)" -header-filter="^$root/(src|include|tests)/" \
  -extra-arg=-Wno-unknown-warning-option "$filter" 2>&1 | sed -E 's/\x1b\[[0-9;]*m//g') || true
checked=$(grep -cE '^clang-tidy(-[0-9]+)? ' <<<"$output" || true)
if ((checked != files)); then
  echo "$output" >&2
  echo "lint: clang-tidy ran on $checked of $files files" >&2
  exit 2
fi
warnings=$(grep -E '^/.*: (warning|error): ' <<<"$output" | sort -u || true)
if [[ -n $warnings ]]; then
  grep -vE '^(clang-tidy|[0-9]+ warnings? (and [0-9]+ errors? )?generated|Suppressed|Use -header-filter|Running)' \
    <<<"$output" >&2 || true
  echo "lint: $(wc -l <<<"$warnings") warning(s) in $files files" >&2
  exit 1
fi
echo "lint: clean ($files files)"
