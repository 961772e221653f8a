#!/usr/bin/env bash
# ophook in CI: record a reference run of examples/regression_model.py, record it again and
# compare. Unchanged code -> `ophook compare` exits 0; a numeric change (OPHOOK_EXAMPLE_PERTURB=1
# grows a layer-norm epsilon) -> it exits 1 and names the first divergent call.
#
#   examples/ci_regression.sh [WORK_DIR]        (default: ci_regression_output)
#   OPHOOK=ophook PYTHON=python examples/ci_regression.sh   # a pip-installed ophook
#
# Exits 0 when both comparisons ended as expected (0, then 1), else 1.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ophook=${OPHOOK:-$root/build/ophook}
python=${PYTHON:-$root/.venv/bin/python}
work=${1:-ci_regression_output}
program="$root/examples/regression_model.py"

record() {  # record DIR: one run of the program under the hook, its output kept out of the log
  "$ophook" run --output "$1" -- "$python" "$program" >/dev/null || exit 1
}
compare() {  # compare NEW [ARGS...]: prints the comparison, then its exit status
  "$ophook" compare "$work/reference" "$@"
  local status=$?
  echo "compare exit status: $status"
  return "$status"
}

echo "== 1. reference run (e.g. on main, kept as a CI artifact) =="
record "$work/reference"
echo "== 2. the same code again: expect exit 0 =="
record "$work/unchanged"
compare "$work/unchanged"
unchanged=$?
echo "== 3. after a numeric change (OPHOOK_EXAMPLE_PERTURB=1): expect exit 1 =="
OPHOOK_EXAMPLE_PERTURB=1 record "$work/changed"
compare "$work/changed" --json "$work/changed.json" --html "$work/changed.html"
changed=$?
echo "full result: $work/changed.json, $work/changed.html"
[[ $unchanged == 0 && $changed == 1 ]]
