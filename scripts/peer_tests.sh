#!/usr/bin/env bash
# Runs other projects' own test suites, shipped in their installed packages, without the hook and
# under LD_PRELOAD in trace mode and in dump mode with a byte budget. The set of failing tests must
# be the same in every run, and the hooked runs must have recorded.
#
#   scripts/peer_tests.sh [--torch] [--quick] [--build DIR] [--work DIR]
#     default: NumPy's numpy/_core/tests/test_{ufunc,umath,numeric,multiarray}.py (≈ 21,000 tests),
#              runs plain, trace, dump (default levels numpy,torch_function)
#     --torch: einops's tests (einops/tests, numpy and torch backends: rearrange/reduce/einsum on
#              tensors, torch.nn layers, torch.compile, a threaded subprocess), runs plain and
#              trace/dump at OPHOOK_LEVELS=numpy,torch_function and at numpy,torch_dispatch
#     --quick: the CI slice: test_ufunc.py + test_numeric.py (NumPy), test_ops.py + test_packing.py
#              (einops)
# Environment: PEER_MAX_BYTES (dump-mode budget, default 16M: the runs cross it),
# PEER_PYTEST_ARGS (extra pytest arguments).
# Last line: "peer tests (SUITE): plain P passed S skipped F failed | trace ... | dump ... |
# failure sets identical".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${OPHOOK_BUILD_DIR:-$root/build}
work=""
suite=numpy
quick=0
while (($#)); do
  case $1 in
    --torch) suite=einops ;;
    --quick) quick=1 ;;
    --build) build=$(cd "$2" && pwd); shift ;;
    --work) work=$2; shift ;;
    *) echo "usage: $0 [--torch] [--quick] [--build DIR] [--work DIR]" >&2; exit 2 ;;
  esac
  shift
done
python=$root/.venv/bin/python
library=$build/libophook.so
test -f "$library" || { echo "peer_tests: $library not found (run scripts/setup.sh)" >&2; exit 2; }
if [[ -z $work ]]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/ophook-peer.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"

suite_env=()
if [[ $suite == numpy ]]; then
  files=(test_ufunc.py test_umath.py test_numeric.py test_multiarray.py)
  ((quick)) && files=(test_ufunc.py test_numeric.py)
  package_dir=$("$python" -c 'import numpy, os; print(os.path.dirname(numpy.__file__))')
  tests_dir=$package_dir/_core/tests
  runs=(plain trace dump)
else
  files=(test_ops.py test_einsum.py test_layers.py test_other.py test_packing.py test_parsing.py
    test_examples.py)
  ((quick)) && files=(test_ops.py test_packing.py)
  package_dir=$("$python" -c 'import einops, os; print(os.path.dirname(einops.__file__))')
  tests_dir=$package_dir/tests
  # einops tests only the backends named here; test_einops_threading starts `python` from PATH.
  suite_env=(EINOPS_TEST_BACKENDS=numpy,torch PATH="$root/.venv/bin:$PATH")
  runs=(plain trace dump trace_dispatch dump_dispatch)
fi
paths=()
for f in "${files[@]}"; do paths+=("$tests_dir/$f"); done

# Same arguments for every run: no cache, fixed hypothesis seed (NumPy's suite uses hypothesis, and
# random examples would make the failure sets differ by chance), a junit file to compare.
run() {  # run NAME [env assignments...]
  local name=$1; shift
  local started=$SECONDS status=0
  (cd "$work" && env "${suite_env[@]}" "$@" "$python" -m pytest -q -p no:cacheprovider \
     --hypothesis-seed=0 -o addopts="" --junitxml="$work/$name.xml" \
     ${PEER_PYTEST_ARGS:-} "${paths[@]}" >"$work/$name.log" 2>&1) || status=$?
  # pytest: 0 all passed, 1 some failed; anything else (crash, usage, interrupted) is a failure.
  if ((status > 1)); then
    echo "peer_tests: the $name run ended with status $status; see $work/$name.log:" >&2
    tail -20 "$work/$name.log" >&2
    exit 1
  fi
  echo "peer_tests: $suite $name run done in $((SECONDS - started)) s" >&2
}

hooked() {  # hooked MODE LEVELS NAME: a run under LD_PRELOAD
  local budget=()
  [[ $1 == dump ]] && budget=(OPHOOK_MAX_BYTES="${PEER_MAX_BYTES:-16M}")
  run "$3" LD_PRELOAD="$library" OPHOOK_MODE="$1" OPHOOK_LEVELS="$2" "${budget[@]}" \
    OPHOOK_OUTPUT="$work/$3_out" OPHOOK_LOG_LEVEL=warn
}

for name in "${runs[@]}"; do
  case $name in
    plain) run plain OPHOOK_DISABLE=1 ;;
    trace | dump) hooked "$name" numpy,torch_function "$name" ;;
    *_dispatch) hooked "${name%_dispatch}" numpy,torch_dispatch "$name" ;;
  esac
done

"$python" - "$work" "$suite" "${runs[@]}" <<'PY'
import json, os, sys
import xml.etree.ElementTree as ET

work, suite, names = sys.argv[1], sys.argv[2], sys.argv[3:]

def outcome(name):
    passed, skipped, failed = 0, 0, set()
    for case in ET.parse(os.path.join(work, name + ".xml")).getroot().iter("testcase"):
        test_id = case.get("classname") + "::" + case.get("name")
        if case.find("failure") is not None or case.find("error") is not None:
            failed.add(test_id)
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return passed, skipped, failed

runs = {name: outcome(name) for name in names}
problems = []
for name in names[1:]:
    # The hooked runs must really have recorded: the root process's summary counts its calls.
    try:
        with open(os.path.join(work, name + "_out", "summary.json")) as f:
            summary = json.load(f)
    except (OSError, ValueError) as e:
        problems.append(f"{name}: no readable summary.json ({e})")
        continue
    totals = summary.get("totals", {})
    print(f"peer_tests: {name} run: totals {json.dumps(totals)}, budget {json.dumps(summary.get('budget'))}",
          file=sys.stderr)
    if not totals.get("calls"):
        problems.append(f"{name}: the hook recorded no call")
base = runs["plain"][2]
for name in names[1:]:
    failed = runs[name][2]
    for test_id in sorted(failed - base):
        problems.append(f"{name}: fails only under the hook: {test_id}")
    for test_id in sorted(base - failed):
        problems.append(f"{name}: passes only under the hook: {test_id}")
for p in problems:
    print("peer_tests:", p, file=sys.stderr)
parts = [f"{name} {p} passed {s} skipped {len(f)} failed" for name, (p, s, f) in runs.items()]
verdict = "failure sets identical" if not problems else f"{len(problems)} problem(s)"
print(f"peer tests ({suite}): " + " | ".join(parts) + " | " + verdict)
sys.exit(1 if problems else 0)
PY
