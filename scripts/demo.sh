#!/usr/bin/env bash
# The main job on an embedded default: set up, record the bundled examples with LD_PRELOAD (no
# change to their code), then show the summary and where the dumps are.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh

out="$root/demo_output"
python="$root/.venv/bin/python"
rm -rf "$out"
mkdir -p "$out"

echo
echo "== recording examples/numpy_ops.py (LD_PRELOAD=build/libophook.so, OPHOOK_MODE=dump) =="
OPHOOK_OUTPUT="$out/numpy_ops" LD_PRELOAD="$root/build/libophook.so" "$python" examples/numpy_ops.py

if [[ -f examples/torch_mlp.py ]]; then
  echo
  # Both torch levels: each torch call and the aten ops under it (their "parent"), backward
  # included; every enabled level is recorded, nesting only concerns calls of the same level.
  echo "== recording examples/torch_mlp.py (both torch levels) =="
  OPHOOK_OUTPUT="$out/torch_mlp" OPHOOK_LEVELS=numpy,torch_function,torch_dispatch \
    LD_PRELOAD="$root/build/libophook.so" "$python" examples/torch_mlp.py
fi

for run in "$out"/*/; do
  echo
  echo "== summary of ${run%/} =="
  build/ophook report "$run"
done
echo
echo "Dumps are in $out/ (trace.jsonl, op_*.npy, summary.json, api_*.txt per run)."
echo "Load any of them with numpy.load(path); compare two runs with: build/ophook compare A B"
