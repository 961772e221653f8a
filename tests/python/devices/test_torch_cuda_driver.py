"""ophook's CUDA backend (src/python/torch/cuda/cuda_backend.cpp) without a GPU: CPU tensors sent
to it (OPHOOK_TENSOR_COPY=fake-device with OPHOOK_TEST_FAKE_DEVICE_DRIVER=1) through a stand-in
libcuda.so.1 (tests/fake_cuda), which runs the kernel's host arithmetic, lets results land three
launches late and counts every driver call. The records must be those of the fake device (the same
arithmetic behind the engine alone), the results known by their stamps without asking the driver,
and a launch that fails on the device must end in records without values, not in a hang."""
import json
import subprocess

import pytest

from device_programs import LEVELS, MASKED_CULPRIT_RING_PROGRAM, NAN_PROGRAM, PLANTED, PROGRAM, without
from harness import BUILD_DIR, SHIM_DIR, VENV_PYTHON, arrays, clean_env, run_script, summary, trace

FAKE_DRIVER_DIR = BUILD_DIR / "tests" / "fake_cuda"
EVENT_CALLS = {"cuEventCreate", "cuEventRecord", "cuEventQuery", "cuEventSynchronize"}
COMPILE = """
import sys
sys.path.insert(0, %r)
import torch, ophook._ophook as o
print(o.torch_compile_statistics_kernel(9, 0)[0])
"""


@pytest.fixture(scope="module")
def kernel_cache():
    """A kernel cache holding the kernel for the stand-in's compute capability (9.0), compiled
    beforehand: NVRTC itself loads libcuda.so.1 when it compiles, and the stand-in is not for it.
    The build tree's, which the benchmarks' driver-call rows use too (tests/bench/figures/devices.py):
    NVRTC takes about 20 s over the kernel, and compiling it is tested elsewhere
    (test_statistics_kernel.py); a cache holding it already is read."""
    cache = BUILD_DIR / "kernel-cache"
    proc = subprocess.run([str(VENV_PYTHON), "-c", COMPILE % str(SHIM_DIR)], env=clean_env(XDG_CACHE_HOME=cache),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.split() == ["sm_90"], proc.stderr
    return cache


def run_on(tmp_path, source, device, cache, env=None, **settings):
    """Runs `source` with its CPU tensors on the fake device, straight (`device` "engine") or
    through the CUDA backend and the stand-in driver ("driver"), in <tmp_path>/<device>; returns
    the process, its output directory and, through the driver, the driver calls it made."""
    here = tmp_path / device
    here.mkdir()
    calls = here / "driver_calls.json"
    extra = {"XDG_CACHE_HOME": cache, **(env or {})}
    if device == "driver":
        extra.update(OPHOOK_TEST_FAKE_DEVICE_DRIVER=1, OPHOOK_TEST_FAKE_CUDA_CALLS=calls,
                     LD_LIBRARY_PATH=FAKE_DRIVER_DIR)
    proc = run_script(here, source, tensor_copy="fake-device", env=extra, **settings)
    counted = json.loads(calls.read_text()) if device == "driver" else {}
    return proc, here / "out", counted


@pytest.mark.parametrize("mode", ["stats", "dump"])
def test_the_cuda_backend_records_what_the_fake_device_records(tmp_path, kernel_cache, mode):
    """Every dtype family, views, large and small tensors, training at both torch levels: through
    the CUDA backend the same records, statistics, digests and files as on the fake device, the
    program's output unchanged. In `stats` its launches copy nothing to the host: no event is recorded
    or asked about (the stamps beside the results say when they are there), one launch per kernel launched,
    and a call asks whether its stream captures a CUDA graph twice at most (before its inputs are
    read, after it ran), not once per tensor."""
    (engine, engine_out, _), (driver, driver_out, calls) = (
        run_on(tmp_path, PROGRAM, device, kernel_cache, levels=LEVELS, mode=mode, nested=1)
        for device in ("engine", "driver"))
    assert driver.stdout == engine.stdout
    assert [without(r, True) for r in trace(driver_out)] == [without(r, True) for r in trace(engine_out)]
    for name in (p.name for p in engine_out.glob("op_*.npy")):
        assert (driver_out / name).read_bytes() == (engine_out / name).read_bytes(), name
    note = summary(driver_out)["notes"]["device_statistics"]
    assert note["devices"] == "fake (CUDA driver)" and note["launch_failures"] == 0
    assert calls["cuLaunchKernel"] == note["kernels_launched"] > 100
    recorded = len(trace(driver_out))
    assert calls["cuStreamIsCapturing"] <= 2 * recorded
    if mode == "stats":
        assert not EVENT_CALLS & calls.keys(), calls
        # with 40 tensors or so a call, several calls launch again before their outputs: the
        # launches per call, and so the capture checks, exceed one
        assert calls["cuStreamIsCapturing"] < calls["cuLaunchKernel"] + recorded
    else:  # `dump`'s launches copy to the host: their events say when the bytes are there
        assert 1 <= calls["cuEventRecord"] <= note["kernels_launched"]


@pytest.mark.parametrize("where", ["forward", "backward"])
def test_warn_through_the_cuda_backend_names_the_fake_devices_culprit(tmp_path, kernel_cache, where):
    """OPHOOK_NAN=warn (its ring on the device), a NaN born in forward or an Inf born in backward (a
    call no level records): through the CUDA backend the same first culprit, warning and ring
    files as on the fake device. The launches that copy into the ring (device memory) are known
    done by their stamps too: only those after the trigger, whose bytes go to the host for files,
    are followed by events."""
    source = NAN_PROGRAM.replace("PLANTED", PLANTED[where])
    runs = [run_on(tmp_path, source, device, kernel_cache, levels="torch_function", nan="warn")
            for device in ("engine", "driver")]
    (engine, engine_out, _), (driver, driver_out, calls) = runs
    assert driver.stdout == engine.stdout
    warning = lambda proc: [line.split("warning: ", 1)[1].split(" at /")[0] for line in proc.stderr.splitlines()
                            if "warning: first NaN/Inf" in line]
    assert warning(driver) == warning(engine) and len(warning(engine)) == 1
    first = lambda out: {k: v for k, v in summary(out)["first_nonfinite"].items()
                         if k not in ("source", "forward_source", "t_ns")}  # each run's own directory and clock
    assert first(driver_out) == first(engine_out) and first(engine_out)["phase"] == where
    files = sorted(p.name for p in engine_out.glob("op_*.npy"))
    assert files and sorted(p.name for p in driver_out.glob("op_*.npy")) == files
    for name in files:  # but for memory torch.empty left uninitialised, which differs from run to run
        if not name.startswith(("op_torch.empty_output", "op_torch.nn.init.")):
            assert (driver_out / name).read_bytes() == (engine_out / name).read_bytes(), name
    assert calls.get("cuEventRecord", 0) < calls["cuLaunchKernel"] // 2, calls


def test_the_rings_gate_through_the_cuda_backend_keeps_the_culprits_bytes(tmp_path, kernel_cache):
    """A 64 KiB ring that comes round within the stand-in's three-launch lag, -Inf flowing through
    every step (device_programs' masked culprit program): through the CUDA backend the gate is
    the word the backend allocated on the device, left open by the calls whose inputs held -Inf
    and closed by the culprit's launch, as on the fake device: the same culprit files, byte for
    byte, and the same tensors kept out of the ring."""
    runs = [run_on(tmp_path, MASKED_CULPRIT_RING_PROGRAM, device, kernel_cache, levels="torch_function", nan="warn",
                   ring_bytes=64 << 10) for device in ("engine", "driver")]
    (engine, engine_out, _), (driver, driver_out, _) = runs
    assert driver.stdout == engine.stdout
    files = sorted(p.name for p in engine_out.glob("op_*.npy"))
    assert [name.split("_")[1] for name in files] == ["torch.log", "torch.log"]
    assert sorted(p.name for p in driver_out.glob("op_*.npy")) == files
    assert all((driver_out / name).read_bytes() == (engine_out / name).read_bytes() for name in files)
    skipped = lambda out: summary(out)["notes"]["device_statistics"]["ring_copies_skipped"]
    assert skipped(driver_out) == skipped(engine_out) > 0


def test_a_launch_that_fails_on_the_device_leaves_records_without_values(tmp_path, kernel_cache):
    """From its 20th statistics launch on, the device fails them (as after a fault): their results
    never land and the stream reports the error. ophook does not wait for them forever: the run
    ends as it would unhooked, the arrays read by those launches say why they have no values, one
    warning says what happened, summary.json counts the launches that failed, and the arrays read
    before have their values."""
    (engine, _, _), (driver, out, _) = (
        run_on(tmp_path, PROGRAM, device, kernel_cache, env={"OPHOOK_TEST_FAKE_CUDA_FAIL_AT": 20},
               levels="torch_function", mode="stats", timeout=120)
        for device in ("engine", "driver"))
    assert driver.stdout == engine.stdout
    kernel_read = [a for r in trace(out) for a in arrays(r) + arrays(r, "outputs")
                   if a.get("stats") or "on the device failed" in (a.get("reason") or "")]
    failed = [a for a in kernel_read if "on the device failed" in (a.get("reason") or "")]
    assert failed and len(failed) < len(kernel_read) and all(not a.get("stats") for a in failed)
    assert summary(out)["notes"]["device_statistics"]["launch_failures"] >= 1
    assert driver.stderr.count("the statistics kernel could not run") == 1
