#!/usr/bin/env bash
# Runs NumPy's own test suite (shipped in the installed wheel) three times: without the hook,
# under LD_PRELOAD in trace mode, and under LD_PRELOAD in dump mode with a byte budget. The set
# of failing tests must be the same in all three runs, and the hooked runs must have recorded.
#
#   scripts/peer_tests.sh [--quick] [--build DIR] [--work DIR]
#     default: numpy/_core/tests/test_{ufunc,umath,numeric,multiarray}.py (≈ 21,000 tests)
#     --quick: test_ufunc.py and test_numeric.py only (the CI slice)
# Environment: PEER_MAX_BYTES (dump-mode budget, default 16M: the runs cross it),
# PEER_PYTEST_ARGS (extra pytest arguments).
# Last line: "peer tests: plain P passed F failed | trace ... | dump ... | failure sets identical".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${OPHOOK_BUILD_DIR:-$root/build}
work=""
files=(test_ufunc.py test_umath.py test_numeric.py test_multiarray.py)
while (($#)); do
  case $1 in
    --quick) files=(test_ufunc.py test_numeric.py) ;;
    --build) build=$(cd "$2" && pwd); shift ;;
    --work) work=$2; shift ;;
    *) echo "usage: $0 [--quick] [--build DIR] [--work DIR]" >&2; exit 2 ;;
  esac
  shift
done
python=$root/.venv/bin/python
library=$build/libophook.so
test -f "$library" || { echo "peer_tests: $library not found (run scripts/setup.sh)" >&2; exit 2; }
tests_dir=$("$python" -c 'import numpy, os; print(os.path.join(os.path.dirname(numpy.__file__), "_core", "tests"))')
if [[ -z $work ]]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/ophook-peer.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
paths=()
for f in "${files[@]}"; do paths+=("$tests_dir/$f"); done

# Same arguments for every run: no cache, fixed hypothesis seed (the suite uses hypothesis, and
# random examples would make the failure sets differ by chance), a junit file to compare.
run() {  # run NAME [env assignments...]
  local name=$1; shift
  local started=$SECONDS status=0
  (cd "$work" && env "$@" "$python" -m pytest -q -p no:cacheprovider --hypothesis-seed=0 \
     -o addopts="" --junitxml="$work/$name.xml" ${PEER_PYTEST_ARGS:-} "${paths[@]}" \
     >"$work/$name.log" 2>&1) || status=$?
  # pytest: 0 all passed, 1 some failed; anything else (crash, usage, interrupted) is a failure.
  if ((status > 1)); then
    echo "peer_tests: the $name run ended with status $status; see $work/$name.log:" >&2
    tail -20 "$work/$name.log" >&2
    exit 1
  fi
  echo "peer_tests: $name run done in $((SECONDS - started)) s" >&2
}

run plain OPHOOK_DISABLE=1
run trace LD_PRELOAD="$library" OPHOOK_MODE=trace OPHOOK_OUTPUT="$work/trace_out" OPHOOK_LOG_LEVEL=warn
run dump LD_PRELOAD="$library" OPHOOK_MODE=dump OPHOOK_MAX_BYTES="${PEER_MAX_BYTES:-16M}" \
  OPHOOK_OUTPUT="$work/dump_out" OPHOOK_LOG_LEVEL=warn

"$python" - "$work" <<'PY'
import json, os, sys
import xml.etree.ElementTree as ET

work = sys.argv[1]

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

def recorded(out):
    # The hooked runs must really have recorded: the root process's summary counts its calls.
    with open(os.path.join(work, out, "summary.json")) as f:
        summary = json.load(f)
    return summary

runs = {name: outcome(name) for name in ("plain", "trace", "dump")}
problems = []
for name, out in (("trace", "trace_out"), ("dump", "dump_out")):
    try:
        summary = recorded(out)
    except (OSError, ValueError) as e:
        problems.append(f"{name}: no readable summary.json ({e})")
        continue
    calls = summary.get("totals", summary).get("calls", 0)
    print(f"peer_tests: {name} run: totals {json.dumps(summary.get('totals'))}, "
          f"budget {json.dumps(summary.get('budget'))}", file=sys.stderr)
    if not calls:
        problems.append(f"{name}: the hook recorded no call")
base = runs["plain"][2]
for name in ("trace", "dump"):
    failed = runs[name][2]
    for test_id in sorted(failed - base):
        problems.append(f"{name}: fails only under the hook: {test_id}")
    for test_id in sorted(base - failed):
        problems.append(f"{name}: passes only under the hook: {test_id}")
for p in problems:
    print("peer_tests:", p, file=sys.stderr)
parts = [f"{name} {p} passed {s} skipped {len(f)} failed" for name, (p, s, f) in runs.items()]
verdict = "failure sets identical" if not problems else f"{len(problems)} problem(s)"
print("peer tests: " + " | ".join(parts) + " | " + verdict)
sys.exit(1 if problems else 0)
PY
