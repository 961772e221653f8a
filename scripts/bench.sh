#!/usr/bin/env bash
# ophook's benchmarks: every figure of issue 6 against a baseline measured in the same run (A/B
# interleaved, median of repetitions), printed as one markdown table with date, machine and
# versions. The code lives in tests/bench/ (bench.py drives it).
#
#   scripts/bench.sh                  # full run (several minutes), verdicts against the targets
#   scripts/bench.sh --smoke          # tiny sizes, one repetition, no verdicts: does it all still run?
#   scripts/bench.sh --only 'numpy-trace|torch'   # only the figures whose key or text matches
#   scripts/bench.sh --build DIR      # products of another build directory (default: build/)
#   scripts/bench.sh --reps N         # repetitions per figure
#   scripts/bench.sh --list           # the figure keys
#
# Needs the build products (scripts/setup.sh) and .venv. Exit status 1 when a figure could not be
# measured (an error, not a slow figure: numbers never fail the run).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
exec "$root/.venv/bin/python" "$root/tests/bench/bench.py" "$@"
