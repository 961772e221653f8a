#!/usr/bin/env bash
# Idempotent set-up: system packages (apt), the project's .venv (numpy, torch CPU wheel, pybind11,
# pytest), then a CMake build into build/. Safe to run again: every step skips what is already there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

log() { printf '[setup] %s\n' "$*" >&2; }

# chromium: tests/python/cli/test_html_pages.py renders the report and compare pages headless.
# ccache: tests/python/contract/test_packaging.py builds the wheel again from the same sources and flags.
apt_packages=(build-essential cmake ninja-build pkg-config libspdlog-dev libfmt-dev libgtest-dev
  libgmock-dev nlohmann-json3-dev libcli11-dev libxxhash-dev libbenchmark-dev python3-numpy
  python3-venv clang clang-tidy libclang-rt-14-dev chromium ccache)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing system packages: ${missing[*]}"
  sudo_cmd=(); [[ $(id -u) == 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The interpreter the extension is built for: the pyenv/system python3 that creates .venv.
python=${OPHOOK_PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
  log "creating .venv with $($python --version)"
  "$python" -m venv .venv
fi
# torch==2.13.0 resolves to the CPU wheel that lies on this machine's disk; any other request
# would pull a multi-GB CUDA build.
# apache-tvm-ffi ships DLPack's official header, which the extension is built against.
# einops ships its own numpy/torch test suite: scripts/peer_tests.sh --torch runs it under the hook.
# jsonschema checks the published schemas (docs/schema/); jsonschema-rs validates every record the
# tests read at a hundredth of its cost. tqdm draws `ophook replay`'s progress bar.
# nvidia-cuda-nvrtc: NVIDIA's runtime compiler (no GPU needed), with which the tests compile the
# device statistics kernel as a run on a GPU does; nvidia-cuda-cuobjdump and -nvdisasm show the
# instructions nvcc made of it (tests/bench/kernel_instructions.py).
# tensorboard: the training monitor writes its scalars as TensorBoard events where it is installed,
# and the tests read them back with its reader; google-crc32c: the events' checksums in C (the monitor
# falls back to tensorboard's pure-Python one without it); transformers: the monitor's GPT-2 from a config.
pip_packages=(numpy==2.4.6 torch==2.13.0 pybind11 pytest pytest-timeout expecttest scikit-build-core
  hypothesis einops==0.8.2 apache-tvm-ffi==0.1.15.post2 jsonschema jsonschema-rs tqdm nvidia-cuda-nvrtc==13.5.37
  nvidia-cuda-cuobjdump==13.5.37 nvidia-cuda-nvdisasm==13.5.37 tensorboard google-crc32c transformers)
if ! .venv/bin/python - "${pip_packages[@]}" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
for spec in sys.argv[1:]:
    name, _, want = spec.partition("==")
    have = version(name)
    if want and not have.startswith(want):
        raise SystemExit(1)
PY
then
  log "installing Python packages into .venv: ${pip_packages[*]}"
  .venv/bin/pip install -q --disable-pip-version-check "${pip_packages[@]}"
fi

log "configuring and building into build/"
# ccache without the build directory in its key (CCACHE_NOHASHDIR), so that the wheel that
# test_packaging.py builds elsewhere with these flags finds these objects.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER_LAUNCHER="env;CCACHE_NOHASHDIR=1;ccache" \
  -DPython3_EXECUTABLE="$root/.venv/bin/python" >/dev/null
cmake --build build -- -k 0 | grep -vE '^\[[0-9]+/[0-9]+\] ' || true
test -f build/libophook.so && test -x build/ophook
log "ready: build/libophook.so, build/ophook, build/python_shim/"
