"""The device paths record what the direct path records, on one program of everything the capture
meets (training, every dtype family, views, NaN/Inf, in-place ops, NumPy beside torch, small and
large tensors), run once unhooked and once per mode through each path: through torch
(OPHOOK_TENSOR_COPY=torch, the path of tensors on other devices than the CPU, so a CPU-only
machine runs it) the same records, files and statistics at both torch levels, none of its own
work recorded, the program's results unchanged; through the statistics kernel on the fake device
(OPHOOK_TENSOR_COPY=fake-device: launches queued per call, results arriving late) the same
records, the writer's statistics and the device fingerprint as digest."""
import struct

import numpy as np
import pytest
import torch

from device_programs import LEVELS, PROGRAM, nbytes, tensor_values, without
from harness import arrays, load, run_script, summary, trace, xxh64


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The program unhooked, then per mode through the direct path and through torch."""
    out = {}
    tmp = tmp_path_factory.mktemp("plain")
    out["plain"] = run_script(tmp, PROGRAM, preload=False).stdout
    # trace mode reads no value, through either path; the statistics kernel serves `stats`
    for mode, copy in (("stats", "auto"), ("stats", "torch"), ("stats", "fake-device"), ("dump", "auto"),
                       ("dump", "torch"), ("dump", "fake-device")):
        tmp = tmp_path_factory.mktemp("%s_%s" % (mode, copy))
        proc = run_script(tmp, PROGRAM, levels=LEVELS, mode=mode, tensor_copy=copy, nested=1)
        out[mode, copy] = (proc, tmp / "out")
    return out


@pytest.mark.parametrize("mode", ["stats", "dump"])
def test_results_and_records_equal_the_direct_paths(runs, mode):
    """Nothing of the path's own copies and reductions is recorded at any level (the same calls,
    seq, depth and parent), and nothing it does changes the program's results."""
    (direct, direct_out), (through_torch, torch_out) = runs[mode, "auto"], runs[mode, "torch"]
    assert direct.stdout == through_torch.stdout == runs["plain"]
    direct_records, torch_records = trace(direct_out), trace(torch_out)
    assert {r["level"] for r in direct_records} == {"ufunc", "torch_function", "torch_dispatch"}
    assert [without(r, mode == "dump") for r in torch_records] == [without(r, mode == "dump") for r in direct_records]
    assert summary(direct_out)["totals"]["tensors_copied_by_torch"] == 0
    assert summary(torch_out)["config"]["tensor_copy"] == "torch"
    assert "not read" not in through_torch.stderr


@pytest.mark.parametrize("path", ["torch", "fake-device"])
def test_dump_files_are_byte_identical(runs, path):
    """Through torch, and copied by the statistics kernel (`fake-device`: into staging memory, then
    into the record when the launch's results arrive, or the record shares an earlier record's
    copy of the same bytes), every file holds the direct path's bytes."""
    (_, direct_out), (_, torch_out) = runs["dump", "auto"], runs["dump", path]
    files = sorted(p.name for p in direct_out.glob("op_*.npy"))
    assert len(files) > 200 and files == sorted(p.name for p in torch_out.glob("op_*.npy"))
    for name in files:
        assert (direct_out / name).read_bytes() == (torch_out / name).read_bytes(), name
    # every torch array with a file was read through torch once (an alias in the same call shares
    # its first's file); one stored as a link to equal bytes was read all the same
    read = {(r["seq"], v["file"]) for r in trace(torch_out) if r["framework"] == "torch"
            for s in ("args", "kwargs", "outputs") for v in arrays(r, s) if v["file"]}
    assert summary(torch_out)["totals"]["tensors_copied_by_torch"] == len(read)
    if path == "fake-device":  # the staged bytes of a tensor unchanged at its address: a copy shared
        assert summary(torch_out)["copies_shared"]["shared"] > 0


def test_statistics_equal_the_direct_paths(runs):
    """Small tensors' statistics are computed from their bytes, as the direct path's: equal, digest
    included. Larger tensors' are reduced by torch: min, max and the NaN/Inf counts exactly; mean
    and std, which torch sums in another order than the writer, within a few units of the last
    place of the values' scale."""
    (_, direct_out), (_, torch_out) = runs["stats", "auto"], runs["stats", "torch"]
    pairs = list(zip(tensor_values(trace(direct_out)), tensor_values(trace(torch_out))))
    small = reduced = 0
    for direct, through_torch in pairs:
        a, b = direct["stats"], through_torch["stats"]
        if a is None or nbytes(direct) <= 256 << 10:
            assert b == a, (direct, through_torch)
            small += a is not None
            continue
        assert (a["min"], a["max"], a["nan"], a["inf"]) == (b["min"], b["max"], b["nan"], b["inf"]), (direct, b)
        scale = max(abs(a["min"]), abs(a["max"]))
        assert abs(a["mean"] - b["mean"]) <= 1e-14 * scale and abs(a["std"] - b["std"]) <= 1e-14 * scale, (a, b)
        reduced += 1
    assert small > 200 and reduced >= 14


def device_fingerprint(raw):
    """docs/devices.md's digest of statistics computed on a device, from the tensor's raw bytes."""
    words = np.frombuffer(raw, "<i4" if len(raw) % 4 == 0 else "u1").astype(np.int64)
    odd = 2 * np.arange(words.size, dtype=np.int64) + 1
    with np.errstate(over="ignore"):
        sums = [int((words * odd).sum()), int((words * words).sum())]
    return "%016x" % xxh64(struct.pack("<QQQ", *(s & (2 ** 64 - 1) for s in sums), len(raw)))


def test_statistics_digest_is_the_fingerprint_of_the_bytes(runs):
    """Statistics reduced by torch carry the device fingerprint of the tensor's bytes, recomputed
    here from the direct path's dump of the same call (narrowed back to bf16 where widened)."""
    (_, dump_out), (_, torch_out) = runs["dump", "auto"], runs["stats", "torch"]
    checked = 0
    for dumped, computed in zip(tensor_values(trace(dump_out), ["torch"]), tensor_values(trace(torch_out), ["torch"])):
        if not dumped["file"] or nbytes(dumped) <= 256 << 10:
            continue
        values = torch.from_numpy(load(dump_out, dumped)).to(getattr(torch, dumped["dtype"]))
        raw = values.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        assert computed["stats"]["xxh64"] == device_fingerprint(raw), dumped
        checked += 1
    assert checked >= 14


# ---- the statistics kernel, on the fake device -------------------------------------------------------


def test_kernel_records_equal_the_direct_paths(runs):
    """OPHOOK_TENSOR_COPY=fake-device: the statistics kernel's asynchronous path (launches queued
    per call, results arriving three launches late, held records submitted as they arrive) records
    the same calls in the same order as the direct path, and the program's results are unchanged."""
    (direct, direct_out), (kernel, kernel_out) = runs["stats", "auto"], runs["stats", "fake-device"]
    assert kernel.stdout == runs["plain"]
    records = trace(kernel_out)
    assert [without(r, False) for r in records] == [without(r, False) for r in trace(direct_out)]
    assert [r["seq"] for r in records] == list(range(len(records)))
    assert "not read" not in kernel.stderr


def test_kernel_statistics_are_the_writers(runs):
    """The kernel's statistics of every tensor equal the writer's from the same bytes: min, max and
    the NaN/Inf counts exactly, mean and std within 1e-12 of the values' scale (the kernel merges
    per-thread moments, the writer sums in lanes). Conjugate and negative views are left to the
    generic path, whose small snapshots give the writer's own statistics."""
    (_, direct_out), (_, kernel_out) = runs["stats", "auto"], runs["stats", "fake-device"]
    compared = 0
    for direct, kernel in zip(tensor_values(trace(direct_out), ["torch"]), tensor_values(trace(kernel_out), ["torch"])):
        a, b = direct["stats"], kernel["stats"]
        if a is None:
            assert b is None, (direct, kernel)
            continue
        assert (a["min"], a["max"], a["nan"], a["inf"]) == (b["min"], b["max"], b["nan"], b["inf"]), (direct, b)
        if a["min"] is not None:
            scale = max(abs(a["min"]), abs(a["max"]), 1e-300)
            assert abs(a["mean"] - b["mean"]) <= 1e-12 * scale and abs(a["std"] - b["std"]) <= 1e-12 * scale, (a, b)
        compared += 1
    assert compared > 300


def test_kernel_digest_is_the_fingerprint_of_the_bytes(runs):
    """Every tensor the kernel read carries the device fingerprint of its bytes (recomputed here
    from the direct path's dump of the same call); the others (conjugate and negative views) the
    XXH64 of their bytes."""
    (_, dump_out), (_, kernel_out) = runs["dump", "auto"], runs["stats", "fake-device"]
    fingerprints = 0
    for dumped, computed in zip(tensor_values(trace(dump_out), ["torch"]), tensor_values(trace(kernel_out), ["torch"])):
        if not dumped["file"]:
            continue
        values = torch.from_numpy(load(dump_out, dumped)).to(getattr(torch, dumped["dtype"]))
        raw = values.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        digest = computed["stats"]["xxh64"]
        assert digest in (device_fingerprint(raw), "%016x" % xxh64(raw)), dumped
        fingerprints += digest == device_fingerprint(raw)
    assert fingerprints > 300
