#!/usr/bin/env bash
# Runs set-up, then every test (GoogleTest and pytest) through ctest. Exit 0 only if all pass.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
ctest --test-dir build --output-on-failure --timeout 1500 "$@"
