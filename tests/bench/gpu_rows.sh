#!/bin/bash
# Issue 34's GPU table in one prepared device call, once the lent machines' build step has filled
# .device/ (the library built for the device's Python, the check programs with gpt2.py, the
# peers' wheels):
#   device tool: command `bash tests/bench/gpu_rows.sh`, carry [".device"], timeout_s about 450.
# Small GPT-2 (4 layers, width 256, batch 8x128): unhooked (first and last), `trace`, `stats`,
# OPHOOK_NAN's warn (with its ring, and in `trace` mode) and raise, `dump` (its bytes on disk and
# what crossed the bus; again with one file helper instead of the CPUs' half; `trace` and `dump`
# again under bfloat16 autocast, whose bf16 tensors the writer widens for their files), both torch
# levels in `trace` and `stats`, a do-nothing Python TorchDispatchMode and msprobe statistics. Large
# GPT-2, the GPU sets the pace (12 layers, width 768, batch 16x512): unhooked (first and last),
# `trace`, `stats`, OPHOOK_NAN=warn. Then the kernel's cost per op (device_statistics.py), and
# last each row's ratio to its baseline row.
# Each hooked row prints its `recorded N calls`, the summary's notes.device_statistics and how
# long the program waited for the writer (queue.producer_wait_ms: in `dump`, the disk's share of
# the row); losses and parameters must equal the unhooked run's (the params digest on each row).
# ROWS_LOGS=/ABSOLUTE/FILE.tgz keeps every row's stdout and stderr there; ROWS=REGEX runs only the
# rows whose names match it (`kernel` names the cost per op), for a second call short of time.
set -u
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
D=$root/.device; LIB=$D/build/libophook.so
[[ -f $LIB && -f $D/gpt2.py ]] || { echo "no .device/ with build/libophook.so and gpt2.py: run the lent GPU machines' build step first" >&2; exit 2; }
W=$(mktemp -d); cd "$W"
python3 -m pip install -q --no-index --no-deps --no-compile --target "$W/site" "$D"/whl/*.whl >/dev/null 2>&1 && export PYTHONPATH=$W/site
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
row() {  # NAME ENV... : one process of gpt2.py, its ms per step, params digest and costs
  local name=$1; shift
  [[ $name =~ ${ROWS:-.} ]] || return 0
  timeout -k 5 "${ROW_LIMIT:-90}" env PEER_OUT="$W/$name" OPHOOK_OUTPUT="$W/$name" "$@" python3 "$D/gpt2.py" "${TOOL:-ophook}" > "$name.txt" 2> "$name.err"
  local rc=$? result costs
  result=$(grep '^RESULT' "$name.txt" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()[7:]); print("%8.2f ms/step  params %s" % (d["s_per_step"]*1e3, d["params"]))' 2>/dev/null)
  costs=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); q=d["queue"]; print(d["notes"].get("device_statistics"), " waited for the writer: %d times, %.0f ms" % (q["producer_waits"], q["producer_wait_ms"]))' "$W/$name/summary.json" 2>/dev/null)
  printf '%-16s rc=%s %s  %s  %s on disk\n' "$name" "$rc" "${result:-no result}" "$(grep -o 'recorded [0-9]* calls' "$name.err" | tail -1)" "$(du -sh "$W/$name" 2>/dev/null | cut -f1)"
  [[ -n $costs ]] && echo "                 $costs"
  [[ -z $result ]] && tail -5 "$name.err" | sed 's/^/                 | /'
  [[ -n $result ]] && echo "$name ${result%% ms/step*}" >> "$W/rows"
  rm -rf "${W:?}/$name"
}
echo "== GPT-2 4L/256, batch 8x128 (STEPS=5)"
export STEPS=5
BOTH=numpy,torch_function,torch_dispatch
TOOL=none row small_none
row small_trace env LD_PRELOAD="$LIB" OPHOOK_MODE=trace
row small_stats env LD_PRELOAD="$LIB" OPHOOK_MODE=stats
row small_trace_both env LD_PRELOAD="$LIB" OPHOOK_MODE=trace OPHOOK_LEVELS=$BOTH
row small_stats_both env LD_PRELOAD="$LIB" OPHOOK_MODE=stats OPHOOK_LEVELS=$BOTH
row small_nan env LD_PRELOAD="$LIB" OPHOOK_NAN=warn
row small_trace_nan env LD_PRELOAD="$LIB" OPHOOK_MODE=trace OPHOOK_NAN=warn  # the check alone: counts, no ring
row small_nan_raise env LD_PRELOAD="$LIB" OPHOOK_NAN=raise  # its one wait per call, no NaN to find
row small_dump env LD_PRELOAD="$LIB" OPHOOK_MODE=dump OPHOOK_MAX_BYTES=30G  # bytes_to_host against bytes_unchanged
row small_dump_1helper env LD_PRELOAD="$LIB" OPHOOK_MODE=dump OPHOOK_MAX_BYTES=30G OPHOOK_TEST_FILE_HELPERS=1  # the writer and one file helper, as on two cores
AMP=1 row small_trace_amp env LD_PRELOAD="$LIB" OPHOOK_MODE=trace  # bfloat16 autocast: the next row's baseline
AMP=1 row small_dump_amp env LD_PRELOAD="$LIB" OPHOOK_MODE=dump OPHOOK_MAX_BYTES=30G  # bf16 tensors the writer widens
TOOL=noop-dispatch row small_noop_mode
TOOL=msprobe-stats row small_msprobe
TOOL=none row small_none_again
echo "== GPT-2 12L/768, batch 16x512 (STEPS=3): the GPU sets the pace"
export NL=12 NE=768 BATCH=16 SEQ=512 STEPS=3
TOOL=none row large_none
row large_trace env LD_PRELOAD="$LIB" OPHOOK_MODE=trace
row large_stats env LD_PRELOAD="$LIB" OPHOOK_MODE=stats
row large_nan env LD_PRELOAD="$LIB" OPHOOK_NAN=warn
TOOL=none row large_none_again
unset NL NE BATCH SEQ
if [[ kernel =~ ${ROWS:-.} ]]; then
  echo "== the kernel per op (ms per call; unhooked, then stats)"
  timeout 60 python3 "$root/tests/bench/programs/device_statistics.py" unhooked 2>&1 | tail -8
  timeout 90 env LD_PRELOAD="$LIB" OPHOOK_OUTPUT="$W/ops" OPHOOK_MODE=stats python3 "$root/tests/bench/programs/device_statistics.py" stats 2>&1 | tail -8
fi
[[ -f $W/rows ]] && echo "== each row against its baseline (ms per step)" && python3 - "$W/rows" <<'PY'
import sys
ms = dict((n, float(v)) for n, v in (l.split() for l in open(sys.argv[1])))
def baseline(n):
    if n.endswith("_both") or n.endswith("_amp"):
        return "small_trace_" + n.rsplit("_", 1)[1]
    return n.split("_")[0] + ("_trace" if n.startswith("small") else "_none")
for n, v in ms.items():
    b = baseline(n)
    print("%-18s %9.2f  %s" % (n, v, "%.2fx %s" % (v / ms[b], b) if b in ms else ""))
if "small_msprobe" in ms and "small_stats" in ms:
    print("msprobe statistics / ophook stats: %.1fx" % (ms["small_msprobe"] / ms["small_stats"]))
PY
[[ -n ${ROWS_LOGS:-} ]] && (cd "$W" && tar czf "$ROWS_LOGS" ./*.txt ./*.err)
rm -rf "$W"
