#!/bin/bash
# The rows of issue 34's GPU table that the lent machines' check script (its perf section) does
# not run, for one prepared device call once the lent machines' build step has filled .device/
# (the library built for the device's Python, and the check programs, gpt2.py among them):
#   device tool: command `bash tests/bench/gpu_rows.sh`, carry [".device"], timeout_s about 300.
# Rows: both torch levels in `trace` beside `stats`, OPHOOK_NAN's warn (with its ring, and in
# `trace` mode) and raise, `dump` with what crossed the bus and what did not (the small GPT-2), a GPT-2 the GPU sets the pace of (12 layers, width 768, batch 16x512) unhooked and
# under trace, stats and OPHOOK_NAN=warn, and the kernel's cost per op (device_statistics.py).
# Each hooked row prints its
# `recorded N calls`, the summary's notes.device_statistics and how long the program waited for
# the writer (queue.producer_wait_ms: in `dump`, the disk's share of the row); losses and parameters must equal
# the unhooked run's (the params digest printed on each row).
set -u
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
D=$root/.device; LIB=$D/build/libophook.so
[[ -f $LIB && -f $D/gpt2.py ]] || { echo "no .device/ with build/libophook.so and gpt2.py: run the lent GPU machines' build step first" >&2; exit 2; }
W=$(mktemp -d); cd "$W"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
row() {  # NAME ENV... : one process of gpt2.py, its ms per step, params digest and costs
  local name=$1; shift
  timeout -k 5 150 env OPHOOK_OUTPUT="$W/$name" "$@" python3 "$D/gpt2.py" "${TOOL:-ophook}" > "$name.txt" 2> "$name.err"
  local rc=$? result costs
  result=$(grep '^RESULT' "$name.txt" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()[7:]); print("%8.2f ms/step  params %s" % (d["s_per_step"]*1e3, d["params"]))' 2>/dev/null)
  costs=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); q=d["queue"]; print(d["notes"].get("device_statistics"), " waited for the writer: %d times, %.0f ms" % (q["producer_waits"], q["producer_wait_ms"]))' "$W/$name/summary.json" 2>/dev/null)
  printf '%-16s rc=%s %s  %s\n' "$name" "$rc" "${result:-no result}" "$(grep -o 'recorded [0-9]* calls' "$name.err" | tail -1)"
  [[ -n $costs ]] && echo "                 $costs"
  rm -rf "${W:?}/$name"
}
echo "== GPT-2 4L/256, batch 8x128, both torch levels (STEPS=5)"
export STEPS=5
BOTH=numpy,torch_function,torch_dispatch
TOOL=none row small_none
row small_trace_both env LD_PRELOAD="$LIB" OPHOOK_MODE=trace OPHOOK_LEVELS=$BOTH
row small_stats_both env LD_PRELOAD="$LIB" OPHOOK_MODE=stats OPHOOK_LEVELS=$BOTH
row small_nan env LD_PRELOAD="$LIB" OPHOOK_NAN=warn
row small_trace_nan env LD_PRELOAD="$LIB" OPHOOK_MODE=trace OPHOOK_NAN=warn  # the check alone: counts, no ring
row small_nan_raise env LD_PRELOAD="$LIB" OPHOOK_NAN=raise  # its one wait per call, no NaN to find
row small_dump env LD_PRELOAD="$LIB" OPHOOK_MODE=dump  # bytes_to_host against bytes_unchanged
echo "== GPT-2 12L/768, batch 16x512 (STEPS=3): the GPU sets the pace"
export NL=12 NE=768 BATCH=16 SEQ=512 STEPS=3
TOOL=none row large_none
row large_trace env LD_PRELOAD="$LIB" OPHOOK_MODE=trace
row large_stats env LD_PRELOAD="$LIB" OPHOOK_MODE=stats
row large_nan env LD_PRELOAD="$LIB" OPHOOK_NAN=warn
TOOL=none row large_none_again
unset NL NE BATCH SEQ
echo "== the kernel per op (ms per call; unhooked, then stats)"
timeout 60 python3 "$root/tests/bench/device_statistics.py" unhooked 2>&1 | tail -8
timeout 90 env LD_PRELOAD="$LIB" OPHOOK_OUTPUT="$W/ops" OPHOOK_MODE=stats python3 "$root/tests/bench/device_statistics.py" stats 2>&1 | tail -8
rm -rf "$W"
