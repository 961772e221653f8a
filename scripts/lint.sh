#!/usr/bin/env bash
# clang-tidy (checks in .clang-tidy) over the project's C++ sources, as compiled in the build's
# compile_commands.json. Exit 0 only when there is no warning.
#   scripts/lint.sh [--build DIR] [--changed | --stamp] [FILE-REGEX]
#     default: every file under src/ and tests/ (about 8 minutes on two cores)
#     --changed: only the files that changed since the commit named in .ci/lint-clean (the last
#       commit on which the whole tree linted clean), and every file that includes a header that
#       changed since then (from the build's dependency log); everything when .clang-tidy itself
#       changed, or the commit is unknown. CI runs this.
#     --stamp: lint everything; when clean, write HEAD's commit into .ci/lint-clean (commit it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
if [[ ${1:-} == --build ]]; then build=$(cd "$2" && pwd); shift 2; fi
scope=all
if [[ ${1:-} == --changed || ${1:-} == --stamp ]]; then scope=${1#--}; shift; fi
filter=${1:-"$root/(src|tests)/.*\.cpp$"}
test -f "$build/compile_commands.json" || { echo "lint: $build/compile_commands.json missing (run scripts/setup.sh)" >&2; exit 2; }
command -v run-clang-tidy >/dev/null || { echo "lint: run-clang-tidy missing (run scripts/setup.sh)" >&2; exit 2; }
all_files=$(grep -oE '"file": *"[^"]*"' "$build/compile_commands.json" | cut -d'"' -f4 | grep -E "$filter" | sort -u)

# The translation units to lint when only the changes since the clean commit need a look.
changed_units() {
  local clean changed headers
  clean=$(cat "$root/.ci/lint-clean" 2>/dev/null || true)
  if [[ -z $clean ]] || ! git -C "$root" merge-base --is-ancestor "$clean" HEAD 2>/dev/null; then
    echo "lint: no clean commit in .ci/lint-clean that HEAD descends from: every file" >&2
    echo "$all_files"; return
  fi
  # Committed changes since the clean commit and uncommitted ones, as absolute paths.
  changed=$( { git -C "$root" diff --name-only "$clean" --; git -C "$root" ls-files --others --exclude-standard; } |
    sort -u | sed "s#^#$root/#")
  if grep -qx "$root/.clang-tidy" <<<"$changed"; then
    echo "lint: .clang-tidy changed since $clean: every file" >&2
    echo "$all_files"; return
  fi
  headers=$(grep -E '\.(hpp|h)$' <<<"$changed" || true)
  {
    grep -xF -f <(echo "$all_files") <<<"$changed" || true
    if [[ -n $headers ]]; then
      # ninja's dependency log: "<object>: #deps N ..." then one indented header per line. Each
      # object's source comes from compile_commands.json; a unit the build never compiled (the
      # fuzz harnesses outside the asan preset) has no entry and is linted whenever a header changed.
      ninja -C "$build" -t deps >"$tmp/deps" 2>/dev/null || true
      echo "$headers" >"$tmp/headers"
      python3 - "$build" "$tmp/deps" "$tmp/headers" <<'PY'
import json, os, sys
build, deps_file, headers_file = sys.argv[1:4]
changed = {os.path.normpath(line) for line in open(headers_file).read().split()}
compiled, including, obj = set(), set(), None
for line in open(deps_file):
    if not line.startswith(" ") and ": #deps" in line:
        obj = os.path.normpath(os.path.join(build, line.split(": #deps")[0]))
        compiled.add(obj)
    elif line.strip() and obj is not None:
        if os.path.normpath(os.path.join(build, line.strip())) in changed:
            including.add(obj)
for entry in json.load(open(os.path.join(build, "compile_commands.json"))):
    out = os.path.normpath(os.path.join(entry["directory"], entry.get("output", "")))
    if out in including or out not in compiled:
        print(entry["file"])
PY
    fi
  } | grep -xF -f <(echo "$all_files") | sort -u || true
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ $scope == changed ]]; then files=$(changed_units); else files=$all_files; fi
count=$(grep -c . <<<"$files" || true)
if ((count == 0)); then echo "lint: clean (no C++ file changed since $(cat "$root/.ci/lint-clean"))"; exit 0; fi
# run-clang-tidy takes one regex of files: the chosen files' paths, escaped.
regex=$(sed -E 's/[][\.^$*+?(){}|/]/\\&/g' <<<"$files" | paste -sd'|')
# The database is GCC's: clang-tidy must not stop on a GCC-only warning flag. Headers are checked
# when they are the project's own (not NumPy's include/ below .venv, not the build's generated ones).
# run-clang-tidy always asks for colour: the escapes are removed before looking for warnings.
output=$(run-clang-tidy -quiet -p "$build" -j "$(nproc)" -header-filter="^$root/(src|include|tests)/" \
  -extra-arg=-Wno-unknown-warning-option "^($regex)$" 2>&1 | sed -E 's/\x1b\[[0-9;]*m//g') || true
checked=$(grep -cE '^clang-tidy(-[0-9]+)? ' <<<"$output" || true)
if ((checked != count)); then
  echo "$output" >&2
  echo "lint: clang-tidy ran on $checked of $count files" >&2
  exit 2
fi
warnings=$(grep -E '^/.*: (warning|error): ' <<<"$output" | sort -u || true)
if [[ -n $warnings ]]; then
  grep -vE '^(clang-tidy|[0-9]+ warnings? (and [0-9]+ errors? )?generated|Suppressed|Use -header-filter|Running)' \
    <<<"$output" >&2 || true
  echo "lint: $(wc -l <<<"$warnings") warning(s) in $count files" >&2
  exit 1
fi
echo "lint: clean ($count files, scope: $scope)"
if [[ $scope == stamp ]]; then
  git -C "$root" rev-parse HEAD >"$root/.ci/lint-clean"
  echo "lint: .ci/lint-clean now names $(cat "$root/.ci/lint-clean"); commit it"
fi
