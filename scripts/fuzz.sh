#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz: .npy reader, trace.jsonl reader, configuration
# parser) with clang, AddressSanitizer and UBSan (CMakePresets.json, preset "asan"), then runs each
# for SECONDS (default 300): first its committed corpus, then mutations. A crash leaves its input
# in build-san-asan/tests/fuzz/<name>/crash-* and makes this script fail; commit such an input
# under tests/fuzz/corpus/<name>/ once fixed, so every later run replays it.
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${1:-300}
cmake --preset asan -DOPHOOK_FUZZ_SECONDS="$seconds" >/dev/null
cmake --build --preset asan >build-san-asan/build.log 2>&1 || { tail -40 build-san-asan/build.log >&2; exit 1; }
ctest --preset asan -L fuzz --timeout $((seconds + 300))
# libFuzzer's final statistics, per harness, from ctest's log.
awk '/^[0-9]+\/[0-9]+ Test: /{name=$3} /stat::number_of_executed_units:/{print name ": " $2 " executions without a crash"}' \
  build-san-asan/Testing/Temporary/LastTest.log
