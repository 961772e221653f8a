#!/usr/bin/env bash
# Runs set-up, then every test (GoogleTest and pytest) through ctest, then the C++ tests and the
# fuzz harnesses again in a clang build with AddressSanitizer + UBSan (CMakePresets.json "asan";
# each fuzzer runs 20 s). Exit 0 only if all pass.
#   scripts/test.sh [--sanitize] [CTEST-ARGS...]
#     --sanitize: also the ThreadSanitizer build ("tsan") of the C++ tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tsan=false
if [[ ${1:-} == --sanitize ]]; then tsan=true; shift; fi
scripts/setup.sh
status=0
ctest --test-dir build --output-on-failure --timeout 1500 "$@" || status=$?

sanitizer_suite() {  # sanitizer_suite PRESET [cmake -D...]
  local preset=$1; shift
  echo "[test] $preset build: C++ tests under the sanitizer" >&2
  cmake --preset "$preset" "$@" >/dev/null
  cmake --build --preset "$preset" >"build-san-$preset/build.log" 2>&1 ||
    { tail -40 "build-san-$preset/build.log" >&2; return 1; }
  ctest --preset "$preset"
}
sanitizer_suite asan -DOPHOOK_FUZZ_SECONDS=20 || status=1
if $tsan; then sanitizer_suite tsan || status=1; fi
exit $status
