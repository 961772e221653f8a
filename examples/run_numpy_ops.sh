#!/usr/bin/env bash
# The two ways to record examples/numpy_ops.py without touching it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python="$root/.venv/bin/python"

echo "== 1. LD_PRELOAD: no code change, no PYTHONPATH =="
OPHOOK_OUTPUT=np_op_dumps LD_PRELOAD="$root/build/libophook.so" "$python" "$root/examples/numpy_ops.py"

echo "== 2. on demand: the shim directory on PYTHONPATH (the seed's usercustomize way) =="
OPHOOK_OUTPUT=np_op_dumps_pythonpath PYTHONPATH="$root/build/python_shim${PYTHONPATH:+:$PYTHONPATH}" \
  "$python" "$root/examples/numpy_ops.py"

echo "== recorded =="
for d in np_op_dumps np_op_dumps_pythonpath; do
  printf '%s: %s calls, %s .npy files\n' "$d" "$(wc -l <"$d/trace.jsonl")" "$(find "$d" -name '*.npy' | wc -l)"
done
