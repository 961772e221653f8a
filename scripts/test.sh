#!/usr/bin/env bash
# Runs set-up, then every test (GoogleTest and pytest) through ctest on both cores, then the C++
# tests and the fuzz harnesses again in a clang build with AddressSanitizer + UBSan (CMakePresets.json
# "asan"; each fuzzer runs 20 s). Prints the time each part took. Exit 0 only if all pass.
#   scripts/test.sh [--sanitize] [CTEST-ARGS...]
#     --sanitize: also the ThreadSanitizer build ("tsan") of the C++ tests.
# The lint test checks the C++ files changed since .ci/lint-clean (scripts/lint.sh --changed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tsan=false
if [[ ${1:-} == --sanitize ]]; then tsan=true; shift; fi
times=()
timed() {  # timed LABEL COMMAND...: runs it, notes its wall time, returns its status
  local label=$1 start=$SECONDS status=0
  shift
  "$@" || status=$?
  times+=("$label: $((SECONDS - start)) s")
  return $status
}
status=0
timed "set-up" scripts/setup.sh
# Two at a time: the tests that use both cores themselves (lint, the wheel build) say so
# (PROCESSORS 2) and run alone.
timed "ctest" ctest --test-dir build --output-on-failure --timeout 1500 -j 2 "$@" || status=$?

sanitizer_suite() {  # sanitizer_suite PRESET [cmake -D...]
  local preset=$1; shift
  echo "[test] $preset build: C++ tests under the sanitizer" >&2
  cmake --preset "$preset" "$@" >/dev/null
  cmake --build --preset "$preset" >"build-san-$preset/build.log" 2>&1 ||
    { tail -40 "build-san-$preset/build.log" >&2; return 1; }
  ctest --preset "$preset"
}
timed "asan+ubsan" sanitizer_suite asan -DOPHOOK_FUZZ_SECONDS=20 || status=1
if $tsan; then timed "tsan" sanitizer_suite tsan || status=1; fi
printf '[test] %s\n' "${times[@]}" "total: $SECONDS s" >&2
exit $status
