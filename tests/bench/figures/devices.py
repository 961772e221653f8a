"""The host's side of the device path (issue 34), on a machine without a GPU: what the value modes
cost the program's thread beyond `trace` when the tensors' statistics, NaN counts and copies are a
device's work. The fake device (OPHOOK_TENSOR_COPY=fake-device) runs that work on the host;
OPHOOK_TEST_FAKE_DEVICE_IDLE=1 makes it do none of it (its results say every value is finite and
zero), so what is left is what a GPU run costs the program: queueing, launches, events, held
records, the backward check, the copies out of the staging memory. The program is small enough
that Python, not arithmetic, sets its pace, as a small model's does on a GPU. What the fake device
does not pay is the CUDA driver's calls: those are counted through ophook's CUDA backend on the
stand-in driver of the tests (tests/fake_cuda), which a GPU run makes alike."""
import json
import os
import subprocess

from .values import measure_loop
from measure import Group, preload_env

ROWS = [
    ("device-host-trace", "MLP loop (`tests/bench/programs/mlp_loop.py`: width 64, depth 8, batch 16, 200 SGD steps), "
     "`trace`: loop time (baseline: unhooked)", "—"),
    ("device-host-stats", "same, `stats`, the idle fake device (baseline: `trace`)", "—"),
    ("device-host-nan", "same, `OPHOOK_NAN=warn` with its defaults (`dump` with the ring), the idle fake device "
     "(baseline: `trace`)", "—"),
    ("device-host-nan-trace", "same, `trace` + `OPHOOK_NAN=warn`, the idle fake device (baseline: `trace`)", "—"),
    ("device-host-dump", "same, `dump`, the idle fake device (baseline: `trace`)", "—"),
    ("device-host-stats-behind", "same, `stats`, the idle fake device's results 2,000 launches late (a GPU far "
     "behind the program: 1,024 records held) (baseline: `trace`)", "—"),
    ("device-host-nan-behind", "same, `OPHOOK_NAN=warn` with its defaults, 2,000 launches late (baseline: `trace`)",
     "—"),
    ("device-host-nan-behind-ring-round", "same, 2,000 launches late, a 1 MiB ring, which comes round within the "
     "lag as a large model's does on a GPU (baseline: `trace`)", "—"),
    ("device-host-driver-calls", "same loop (50 steps), `stats` through the CUDA backend on the stand-in driver "
     "(`tests/fake_cuda`): CUDA driver calls per recorded call, all but the first call's set-up (baseline: the "
     "floor, the kernel launches per recorded call)", "—"),
    ("device-host-driver-calls-nan", "same, `OPHOOK_NAN=warn` with its defaults (the ring on the device; the "
     "backward ops' checks launch too)", "—"),
]

IDLE = {"OPHOOK_TENSOR_COPY": "fake-device", "OPHOOK_TEST_FAKE_DEVICE_IDLE": "1"}
BEHIND = {"OPHOOK_TEST_FAKE_DEVICE_LAG": "2000"}


def measure(group, ctx):
    options = ["--width", "64", "--batch", "16", "--steps", str(ctx.size(200, 2))]
    settings = {"device-host-trace": {"OPHOOK_MODE": "trace"},
                "device-host-stats": {"OPHOOK_MODE": "stats", **IDLE},
                "device-host-nan": {"OPHOOK_NAN": "warn", **IDLE},
                "device-host-nan-trace": {"OPHOOK_MODE": "trace", "OPHOOK_NAN": "warn", **IDLE},
                "device-host-dump": {"OPHOOK_MODE": "dump", "OPHOOK_MAX_BYTES": "100G", **IDLE},
                "device-host-stats-behind": {"OPHOOK_MODE": "stats", **IDLE, **BEHIND},
                "device-host-nan-behind": {"OPHOOK_NAN": "warn", **IDLE, **BEHIND},
                "device-host-nan-behind-ring-round": {"OPHOOK_NAN": "warn", "OPHOOK_RING_BYTES": "1M", **IDLE, **BEHIND}}
    against_trace = {key: "device-host-trace" for key in settings if key != "device-host-trace"}
    return measure_loop(group, ctx, options, settings, {key: None for key in settings}, against_trace)


COMPILE = """
import sys
sys.path.insert(0, %r)
import torch, ophook._ophook as o
o.torch_compile_statistics_kernel(9, 0)
"""


def measure_driver_calls(group, ctx):
    """The driver calls of the MLP loop through the stand-in driver, per recorded call."""
    # NVRTC loads libcuda.so.1 itself: the kernel is compiled beforehand, without the stand-in, into
    # the build tree's kernel cache, which tests/python/devices/test_torch_cuda_driver.py uses too (NVRTC
    # takes about 20 s over it; a cache holding it already is read).
    cache = os.path.join(ctx.build, "kernel-cache")
    subprocess.run([ctx.python, "-c", COMPILE % os.path.join(ctx.build, "python_shim")], check=True,
                   env={**os.environ, "XDG_CACHE_HOME": cache}, capture_output=True)
    argv = [ctx.python, os.path.join(ctx.root, "tests", "bench", "programs", "mlp_loop.py"), "--width", "64", "--batch", "16",
            "--steps", str(ctx.size(50, 2))]
    rows = {}
    for key, setting in (("device-host-driver-calls", {"OPHOOK_MODE": "stats"}),
                         ("device-host-driver-calls-nan", {"OPHOOK_NAN": "warn"})):
        calls_file, out = os.path.join(ctx.scratch, key + ".json"), os.path.join(ctx.scratch, key)
        env = preload_env(ctx.build, OPHOOK_LOG_LEVEL="warn", OPHOOK_OUTPUT=out, OPHOOK_TENSOR_COPY="fake-device",
                          OPHOOK_TEST_FAKE_DEVICE_DRIVER="1", OPHOOK_TEST_FAKE_CUDA_CALLS=calls_file,
                          XDG_CACHE_HOME=cache, LD_LIBRARY_PATH=os.path.join(ctx.build, "tests", "fake_cuda"), **setting)
        subprocess.run(argv, env=env, check=True, capture_output=True)
        with open(calls_file) as f:
            calls = json.load(f)
        with open(os.path.join(out, "summary.json")) as f:
            recorded = sum(json.load(f)["recorded"]["levels"].values())
        set_up = sum(calls.get(name, 0) for name in SET_UP_CALLS)
        per_call = (sum(calls.values()) - set_up) / recorded
        floor = calls["cuLaunchKernel"] / recorded
        rows[key] = group.row(key, "%.2f" % per_call, "%.2f" % floor, "%.2fx" % (per_call / floor), None)
    return rows


# The calls the first CUDA tensor's set-up makes once (the context, the kernel, the buffers).
SET_UP_CALLS = ("cuInit", "cuDeviceGet", "cuDeviceGetAttribute", "cuDevicePrimaryCtxRetain", "cuModuleLoadData",
                "cuModuleGetFunction", "cuMemAlloc_v2", "cuMemsetD32_v2", "cuMemHostAlloc",
                "cuMemHostGetDevicePointer_v2")

GROUPS = [Group("device_host", ROWS[:-2], measure), Group("device_driver_calls", ROWS[-2:], measure_driver_calls)]
