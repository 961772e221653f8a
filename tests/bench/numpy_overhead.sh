#!/usr/bin/env bash
# Added cost per NumPy ufunc call (16 elements), each configuration against a plain run measured
# in the same session, interleaved, median of ROUNDS. Prints a markdown table.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
python="$root/.venv/bin/python"
lib="$root/build/libophook.so"
calls=${CALLS:-200000}
rounds=${ROUNDS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

configs=(
  "trace, OPHOOK_STACK=0|OPHOOK_MODE=trace OPHOOK_STACK=0"
  "trace, OPHOOK_STACK=1|OPHOOK_MODE=trace OPHOOK_STACK=1"
  "filtered out by OPHOOK_INCLUDE|OPHOOK_MODE=trace OPHOOK_INCLUDE=^nothing$"
  "stats|OPHOOK_MODE=stats OPHOOK_STACK=0"
  "dump|OPHOOK_MODE=dump OPHOOK_STACK=0"
)
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "| configuration | plain ns/call | hooked ns/call | added ns/call | ratio |"
echo "| --- | --- | --- | --- | --- |"
for entry in "${configs[@]}"; do
  name=${entry%%|*}
  settings=${entry#*|}
  : >"$tmp/plain"
  : >"$tmp/hooked"
  for ((i = 0; i < rounds; i++)); do
    "$python" "$root/tests/bench/numpy_call_cost.py" "$calls" >>"$tmp/plain"
    env $settings OPHOOK_LOG_LEVEL=off OPHOOK_OUTPUT="$tmp/out" LD_PRELOAD="$lib" \
      "$python" "$root/tests/bench/numpy_call_cost.py" "$calls" >>"$tmp/hooked"
  done
  plain=$(median <"$tmp/plain")
  hooked=$(median <"$tmp/hooked")
  awk -v n="$name" -v p="$plain" -v h="$hooked" \
    'BEGIN { printf "| %s | %.0f | %.0f | %.0f | %.2fx |\n", n, p, h, h - p, h / p }'
done
