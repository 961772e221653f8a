"""The device path (OPHOOK_TENSOR_COPY=torch sends every tensor through it, so a CPU-only machine
runs it): the same records, files and statistics as the direct path at both torch levels, none of
its own work recorded, the program's results unchanged; meta, fake and DTensor programs; a device
that runs out of memory while ophook reads; statistics held for their batch and still written at
a flush, a termination signal and os._exit. Real programs in subprocesses under LD_PRELOAD."""
import ast
import ctypes
import ctypes.util
import json
import re
import signal
import struct
import subprocess

import numpy as np
import pytest
import torch

from harness import (LIBRARY, SHIM_DIR, VENV_PYTHON, arrays, clean_env, load, ops, run_script, same_bits, summary,
                      trace)

LEVELS = "numpy,torch_function,torch_dispatch"

# A little of everything the capture meets: training (autograd, an optimizer, modules), every
# dtype family, views (transposed, strided, offset, broadcast, 0-d, empty, conjugate, negative),
# NaN/Inf values, in-place ops, NumPy beside torch; small tensors (snapshot, read back in batches)
# and tensors over 256 KiB (statistics reduced by torch, one of them over a 4 Mi-element chunk).
PROGRAM = """
import json
import numpy as np
import torch
from torch import nn

torch.use_deterministic_algorithms(True)  # torch.empty's memory NaN-filled: the same bytes in every run
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(5, 6)
losses = []
for _ in range(2):
    opt.zero_grad()
    loss = net(x).square().mean()
    loss.backward()
    opt.step()
    losses.append(loss.item())

base = torch.arange(24, dtype=torch.float64).reshape(4, 6) / 7 - 1
kinds = [base.to(d) for d in (torch.float16, torch.bfloat16, torch.float32, torch.int64, torch.int8)]
kinds += [base > 0, (base * (1 + 2j)).to(torch.complex64), base * (1 - 1j),
          torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn),
          torch.tensor([1.0, float("nan"), float("inf"), -float("inf"), -0.0, 3.5])]
views = [base.t(), base[:, 1::2], base[2:], torch.tensor([1.0, 2.0, 3.0]).expand(4, 3), torch.tensor(3.25),
         torch.empty(0, 3), (torch.arange(4.0) * (1 + 1j)).conj(), (torch.arange(4.0) * (1 + 1j)).conj().imag]
results = [torch.clone(t) for t in kinds + views]
results.append(torch.neg(base[:, ::2]))
big = torch.linspace(-3, 3, 300_000)
big[5], big[7], big[11] = float("nan"), float("inf"), -float("inf")
large = [big, big[::2], (big * 2).to(torch.bfloat16), torch.arange(100_000) - 7, big[:60_000] * (1 - 2j),
         big.double()[:40_000] * (2 + 1j), torch.linspace(0, 1, 4_300_000)]
results += [torch.clone(t) for t in large]
a = torch.ones(3)
a.add_(2)
v = np.arange(3.0) + 1
t = torch.from_numpy(v) * 2
print(json.dumps({"losses": [l.hex() for l in losses],
                  "weights": [p.detach().double().flatten().tolist() for p in net.parameters()],
                  "a": a.tolist(), "t": t.tolist()}))
"""
VOLATILE = ("t_ns", "dur_ns", "pid", "tid")


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


def without(record, stats):
    """The record without what differs between runs anyway (times, ids), without `same_as` and,
    unless `stats`, without the arrays' statistics. `same_as` names the file of equal bytes that
    reached the writer first: records held for their device values reach it later than the direct
    path's, so the first of two equal files can differ (test_dump_files_are_byte_identical checks
    that every name holds the same bytes in both runs, links included)."""
    def strip(value):
        if isinstance(value, dict):
            if value.get("kind") != "array" and "repr" in value:  # object addresses differ
                return {**value, "repr": re.sub(r"0x[0-9a-f]+", "0x?", value["repr"])}
            return {k: strip(v) for k, v in value.items() if k != "same_as" and (stats or k != "stats")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value
    kept = {k: v for k, v in record.items() if k not in VOLATILE}
    kept["source"] = (kept["source"] or "").rpartition("/")[2]  # each run has its own directory
    return strip(kept)


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


def tensor_values(records, framework=("numpy", "torch")):
    """Every array value of every record (of `framework`), in order."""
    return [v for r in records if r["framework"] in framework
            for section in ("args", "kwargs", "outputs") for v in arrays(r, section)]


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


def nbytes(value):
    """The bytes of a recorded tensor in its own dtype."""
    return int(np.prod(value["shape"])) * getattr(torch, value["dtype"]).itemsize


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


def xxh64(data):
    library = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
    library.XXH64.restype = ctypes.c_uint64
    library.XXH64.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
    return library.XXH64(data, len(data), 0)


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


CACHED_KERNEL = """
import sys
sys.path.insert(0, %r)
import torch, ophook._ophook as o
target, image, cached = o.torch_compile_statistics_kernel(9, 0)
print(target, cached, len(image))
"""


def test_kernel_compiles_with_nvrtc_for_every_gpu_generation_and_is_kept(tmp_path):
    """The kernel source ophook embeds compiles with NVRTC (scripts/setup.sh installs NVIDIA's
    wheel; a CUDA build of torch ships one) into a cubin for each GPU generation this CUDA
    supports (Turing, Hopper, Blackwell here), both entry points (the statistics and `dump`'s copy of
    changed bytes), as the first CUDA tensor of a run compiles it: a syntax or
    resource error in statistics_kernel.cu or its header fails here, with no GPU. A GPU newer than
    NVRTC knows gets PTX for the newest it knows (the driver compiles it); an older one an error.
    NVRTC takes seconds over the kernel: each image is kept in the kernel cache
    ($XDG_CACHE_HOME/ophook), which the next process reads instead (the same bytes); a file there
    that is no kernel image is compiled over."""
    code = ("import sys; sys.path.insert(0, %r)\n"
            "import torch, ophook._ophook as o\n"
            "for cc in ((7, 5), (9, 0), (12, 0), (99, 0)):\n"
            "    target, image, cached = o.torch_compile_statistics_kernel(*cc)\n"
            "    print(target, image[:4] == b'\\x7fELF', b'.entry ophook_statistics' in image, len(image),\n"
            "          b'ophook_copy_changed' in image, cached)\n"
            "try:\n"
            "    o.torch_compile_statistics_kernel(3, 0)\n"
            "except RuntimeError as error:\n"
            "    print('refused', error)\n") % str(SHIM_DIR)
    proc = subprocess.run([str(VENV_PYTHON), "-c", code], env=clean_env(XDG_CACHE_HOME=tmp_path), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = [line.split() for line in proc.stdout.splitlines()]
    cubins = [[t, "True", "False"] for t in ("sm_75", "sm_90", "sm_120")]
    assert [line[:3] for line in lines[:3]] == cubins and all(int(line[3]) > 10_000 for line in lines[:3])
    assert all(line[4] == "True" and line[5] == "False" for line in lines[:4])  # both entry points; compiled
    assert lines[3][0].startswith("compute_") and lines[3][1:3] == ["False", "True"]  # PTX text
    assert lines[4][:1] == ["refused"] and "sm_30" in proc.stdout
    for target, *_, size, _, _ in lines[:3]:
        (kept,) = (tmp_path / "ophook").glob(f"statistics_kernel-{target}-*.cubin")
        assert kept.stat().st_size == int(size)

    def have():
        proc = subprocess.run([str(VENV_PYTHON), "-c", CACHED_KERNEL % str(SHIM_DIR)], capture_output=True, text=True,
                              env=clean_env(XDG_CACHE_HOME=tmp_path), timeout=300)
        assert proc.returncode == 0, proc.stderr
        target, cached, size = proc.stdout.split()
        (kept,) = (tmp_path / "ophook").glob("statistics_kernel-sm_90-*.cubin")
        return target, cached == "True", int(size), kept
    (kept,) = (tmp_path / "ophook").glob("statistics_kernel-sm_90-*.cubin")
    image = kept.read_bytes()
    target, cached, size, kept_again = have()
    assert target == "sm_90" and cached and kept_again == kept and kept.read_bytes() == image and size == len(image)
    kept.write_bytes(b"not a kernel")
    target, cached, size, kept = have()
    assert not cached and kept.read_bytes() == image


TRAINING = """
import torch
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 8))
opt = torch.optim.AdamW(net.parameters())
for _ in range(5):
    loss = net(torch.randn(512, 64)).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(loss.item())
"""


MANY_TENSORS = """
import torch
torch.manual_seed(0)
parts = [torch.randn(100 + i) * (i + 1) for i in range(30)]
whole = torch.cat(parts)
scaled = torch._foreach_mul(parts, 2.0)
torch._foreach_mul_(parts[:13], 3.0)  # in place: its 13 inputs read before it, one more than a launch takes
print(float(whole.sum()), float(sum(t.sum() for t in scaled)), float(sum(t.sum() for t in parts)))
"""


def test_kernel_reads_calls_of_many_tensors(tmp_path):
    """A call of more tensors than one launch takes (twelve: torch.cat and a foreach op of thirty,
    an in-place foreach of thirteen) gets several launches, and each tensor's statistics are its own: the fake device publishes a
    launch's results only when that launch is done, so a tensor tied to the wrong launch would read
    a poisoned result."""
    out = {}
    for copy in ("auto", "fake-device"):
        (tmp_path / copy).mkdir()
        run_script(tmp_path / copy, MANY_TENSORS, levels="torch_function", mode="stats", tensor_copy=copy)
        out[copy] = tensor_values(trace(tmp_path / copy / "out"), ["torch"])
    assert len(out["auto"]) == len(out["fake-device"]) > 90
    for direct, kernel in zip(out["auto"], out["fake-device"]):
        a, b = direct["stats"], kernel["stats"]
        assert (a["min"], a["max"], a["nan"], a["inf"]) == (b["min"], b["max"], b["nan"], b["inf"]), (a, b)
        assert abs(a["mean"] - b["mean"]) <= 1e-12 * max(abs(a["min"]), abs(a["max"])), (a, b)


VIEWS_OF_ONE_TENSOR = """
import torch
torch.manual_seed(0)
x = torch.randn(64, 48)
x[3, 5] = float("nan")
y = x.view(48, 64)     # the same bytes in C order: read once with x
z = y.reshape(-1)
w = x.detach()
t = x.t()              # the same elements in another order: read on its own
print(float(torch.nansum(z + w.reshape(-1))), float(torch.nansum(t)))
"""


def test_a_launch_reads_the_same_elements_once(tmp_path):
    """A view's output that holds its input's elements in the same order (view, reshape, detach)
    is answered by the input's read in the same launch: the statistics and digest are the input's,
    equal to the direct path's, and the kernel read each such tensor once
    (notes.device_statistics.reads_shared); a transposed view is read on its own."""
    out = {}
    for copy in ("auto", "fake-device"):
        (tmp_path / copy).mkdir()
        proc = run_script(tmp_path / copy, VIEWS_OF_ONE_TENSOR, levels="torch_function", mode="stats", tensor_copy=copy)
        out[copy] = (proc.stdout, trace(tmp_path / copy / "out"), summary(tmp_path / copy / "out"))
    assert out["auto"][0] == out["fake-device"][0]
    by_op = {r["op"]: r for r in out["fake-device"][1]}
    stats = lambda r, side: [v["stats"] for v in arrays(r, side)][0]
    x_stats = stats(by_op["torch.Tensor.view"], "args")
    for op in ("torch.Tensor.view", "torch.Tensor.reshape", "torch.Tensor.detach"):
        assert stats(by_op[op], "outputs") == stats(by_op[op], "args") == x_stats, op
    assert x_stats["nan"] == 1
    t_stats = stats(by_op["torch.Tensor.t"], "outputs")
    assert t_stats["xxh64"] != x_stats["xxh64"] and (t_stats["min"], t_stats["max"]) == (x_stats["min"], x_stats["max"])
    for direct, kernel in zip(tensor_values(out["auto"][1], ["torch"]), tensor_values(out["fake-device"][1], ["torch"])):
        a, b = direct["stats"], kernel["stats"]
        assert (a["min"], a["max"], a["nan"], a["inf"]) == (b["min"], b["max"], b["nan"], b["inf"]), (a, b)
    note = out["fake-device"][2]["notes"]["device_statistics"]
    # the outputs of view, reshape, detach and w.reshape, and the add's second view of x's bytes
    assert note["reads_shared"] == 5, note
    read = sum(1 for r in out["fake-device"][1] for side in ("args", "outputs") for v in arrays(r, side) if v["stats"])
    assert note["tensors_read"] == read - note["reads_shared"]


def test_kernel_costs_are_in_the_summary(tmp_path):
    """summary.json says what the kernel did: one launch per call and twelve tensors (two when the
    call may write into its inputs: those are read before it),
    every tensor read, its result (72 bytes) brought to the host, and no wait on the program's
    thread but the run's last read-back (the fake device's results trail three launches behind)."""
    proc = run_script(tmp_path, TRAINING, levels="torch_function", mode="stats", tensor_copy="fake-device")
    records = trace(tmp_path / "out")
    note = summary(tmp_path / "out")["notes"]["device_statistics"]
    assert note["devices"] == "fake" and note["launch_failures"] == 0
    tensors = sum(1 for r in records for s in ("args", "kwargs", "outputs") for v in arrays(r, s)
                  if v["stats"] is not None)
    assert 100 < note["tensors_read"] <= tensors  # a tensor twice in one call is read once
    # one launch per call (two for a call that may write into its inputs), twelve tensors each
    assert 0 < note["kernels_launched"] <= 2 * len(records) + note["tensors_read"] // 12
    assert note["bytes_to_host"] == 72 * note["tensors_read"]
    assert note["synchronizations"] <= 3, note
    assert [r["seq"] for r in records] == list(range(len(records)))
    (tmp_path / "plain").mkdir()
    assert proc.stdout == run_script(tmp_path / "plain", TRAINING, preload=False).stdout


GIVEN_UP_THEN_OPS = """
import torch
x = torch.full((8, 8), 0.5)
try:
    torch.mm(x, torch.ones(3, 3))
except RuntimeError as e:
    print("caught", type(e).__name__)
for _ in range(1500):
    x = torch.tanh(x) + 0.5
print(float(x.sum()))
"""


def test_results_given_up_on_do_not_hold_later_launches(tmp_path):
    """`trace` + OPHOOK_NAN=warn: the kernel reads the operands of a call that then raises, whose
    check is given up (a call that raised is not judged). Its slots are freed once its launch is
    done, so the launches after it leave as their calls are judged: the engine holds about as many
    launches as calls wait for their counts, not one more per call for the rest of the run (every
    one of the 3,000 here, read through at each launch, when the slots waited for all slots to be
    in use)."""
    proc = run_script(tmp_path, GIVEN_UP_THEN_OPS, levels="torch_function", mode="trace", nan="warn",
                      tensor_copy="fake-device")
    note = summary(tmp_path / "out")["notes"]["device_statistics"]
    assert note["kernels_launched"] > 3000 and note["launch_failures"] == 0
    assert note["launches_held_most"] < 100, note
    assert len(trace(tmp_path / "out")) > 3000
    (tmp_path / "plain").mkdir()
    assert proc.stdout == run_script(tmp_path / "plain", GIVEN_UP_THEN_OPS, preload=False).stdout
    # The empty family's calls are never judged, so the check reads nothing of theirs.
    (tmp_path / "empty").mkdir()
    with_empty = GIVEN_UP_THEN_OPS.replace("import torch", "import torch\nfor _ in range(100): torch.empty(64, 64)")
    run_script(tmp_path / "empty", with_empty, levels="torch_function", mode="trace", nan="warn", tensor_copy="fake-device")
    assert len(trace(tmp_path / "empty/out")) == len(trace(tmp_path / "out")) + 100
    assert summary(tmp_path / "empty/out")["notes"]["device_statistics"]["tensors_read"] == note["tensors_read"]


UNCHANGED_WEIGHT = """
import torch
torch.manual_seed(0)
w = torch.randn(256, 128)  # 128 KiB: large enough for shared copies
v = torch.randn(128)
for i in range(3000):
    y = torch.mv(w, v)
    if i % 600 == 599:
        w.mul_(1.5)  # new bytes at the same address
h = torch.tanh(w)
g = torch.exp(h)  # tanh's output read again while still in flight
hb = torch.tanh(w).bfloat16()
gb = torch.exp(hb)  # so too in bfloat16, widened for its file
print(float(y.sum()), float(g.sum()), float(gb.float().sum()))
"""


def test_dump_sends_a_tensors_bytes_again_only_when_they_changed(tmp_path):
    """`dump` on the device: a tensor read again at the same address is compared on the device,
    by the fingerprint of its bytes, with its latest read still in flight or else the copy the host
    holds, and copied to the host only when its bytes changed since. A weight read 3,000 times and
    multiplied in place every 600th, then an activation read right after it is made: every file
    holds the tensor as it was at that call (recomputed here), the copies not sent are counted, and
    every tensor is read by the kernel to the end (the earlier reads kept for later ones to compare
    with are let go: the 8,192 result slots are used several times over)."""
    proc = run_script(tmp_path, UNCHANGED_WEIGHT, levels="torch_function", mode="dump", tensor_copy="fake-device")
    out = tmp_path / "out"
    records = trace(out)
    torch.manual_seed(0)
    w = torch.randn(256, 128)
    expected_reads, expected_after = [], []
    for i in range(3000):
        expected_reads.append(w.numpy().copy())
        if i % 600 == 599:
            w.mul_(1.5)
            expected_after.append(w.numpy().copy())
    h = torch.tanh(w)
    mv, mul = ops(records, "torch.mv"), ops(records, "torch.Tensor.mul_")
    assert len(mv) == 3000 and len(mul) == 5
    assert all(same_bits(load(out, arrays(r)[0]), want) for r, want in zip(mv, expected_reads))
    assert all(same_bits(load(out, arrays(r, "outputs")[0]), want) for r, want in zip(mul, expected_after))
    exp = ops(records, "torch.exp")
    assert same_bits(load(out, arrays(exp[0])[0]), h.numpy())
    assert same_bits(load(out, arrays(exp[1])[0]), h.bfloat16().float().numpy())
    note = summary(out)["notes"]["device_statistics"]
    recorded = [a for r in records for a in arrays(r) + arrays(r, "outputs")]
    assert note["tensors_read"] == len(recorded) > 9000, note
    assert note["copies_unchanged"] >= 2900, note  # about every read of the weight but the first of each value
    float32_unchanged = note["copies_unchanged"] - 1  # the bfloat16 activation's (64 KiB) besides
    assert note["bytes_unchanged"] == float32_unchanged * 128 * 1024 + 64 * 1024
    # every float32 read found unchanged shares a copy, and nothing else does (the bfloat16 one is
    # widened, so copied)
    assert summary(out)["copies_shared"]["shared"] == float32_unchanged, summary(out)["copies_shared"]
    # every tensor's result crossed, and the bytes of every one not found unchanged
    staged = sum(load(out, a).nbytes // (2 if a["dtype"] == "bfloat16" else 1) for a in recorded)  # bf16: widened
    assert note["bytes_to_host"] == 72 * note["tensors_read"] + staged - note["bytes_unchanged"]
    (tmp_path / "plain").mkdir()
    assert proc.stdout == run_script(tmp_path / "plain", UNCHANGED_WEIGHT, preload=False).stdout


STAGED_CHAIN = """
import torch
torch.manual_seed(0)
x = torch.randn(64, 1024)  # 256 KiB a tensor
for i in range(80):
    y = torch.mul(x, 0.5)
    x = torch.add(y, float(i))
    s = torch.sum(x)  # 4 bytes: copied out, not lent
parts = [torch.mul(x, k) for k in range(5)]
z = torch.stack(parts)  # its fifth input finds the staging memory full of its own four
print(float(s), float(z.sum()))
"""


def test_dump_lends_staged_bytes_and_waits_for_the_writer_when_staging_is_full(tmp_path):
    """`dump` on the device: a tensor's bytes the device copied into the staging memory are the
    record's copy where they lie (lent, not copied again by the program's thread) until the writer
    has written them; small arrays are copied out. With a staging memory of 1 MiB (four of these
    tensors) the program waits for the writer to give ranges back instead of reading tensors
    through torch: every tensor is read by the kernel, every file holds the tensor as it was at its
    call (recomputed here), and the program's output is the unhooked one. A call whose own
    tensors fill the staging memory has the one that finds no room read through torch, as is one
    larger than half of it."""
    proc = run_script(tmp_path, STAGED_CHAIN, levels="torch_function", mode="dump", tensor_copy="fake-device",
                      test_staging_bytes=str(1 << 20))
    out = tmp_path / "out"
    records = trace(out)
    torch.manual_seed(0)
    x = torch.randn(64, 1024)
    muls, adds, sums = ops(records, "torch.mul"), ops(records, "torch.add"), ops(records, "torch.sum")
    muls, parts = muls[:80], muls[80:]
    assert len(muls) == len(adds) == len(sums) == 80 and len(parts) == 5
    for i, (mul, add, total) in enumerate(zip(muls, adds, sums)):
        y = torch.mul(x, 0.5)
        assert same_bits(load(out, arrays(mul)[0]), x.numpy()) and same_bits(load(out, arrays(mul, "outputs")[0]), y.numpy())
        x = torch.add(y, float(i))
        assert same_bits(load(out, arrays(add)[0]), y.numpy()) and same_bits(load(out, arrays(add, "outputs")[0]), x.numpy())
        assert same_bits(load(out, arrays(total, "outputs")[0]), torch.sum(x).numpy())
    stack = ops(records, "torch.stack")[0]
    want = [torch.mul(x, k) for k in range(5)]
    assert all(same_bits(load(out, a), w.numpy()) for a, w in zip(arrays(stack), want))
    assert same_bits(load(out, arrays(stack, "outputs")[0]), torch.stack(want).numpy())
    note = summary(out)["notes"]["device_statistics"]
    recorded = [a for r in records for a in arrays(r) + arrays(r, "outputs")]
    # none read through torch for want of room but the stack's fifth input, its output and the
    # sum's input (1.25 MiB, more than half the staging memory); the sum's output waits for the
    # stack's record to be written
    assert note["tensors_read"] == len(recorded) - 3, note
    assert note["staging_waits"] > 0, note
    # the program's thread copied only the small ones (the sums' outputs and float()'s inputs)
    sizes = [load(out, a).nbytes for a in recorded]
    assert min(sizes) == 4 and max(sizes) == 5 * 256 * 1024
    assert note["bytes_copied_from_staging"] == sum(n for n in sizes if n < 64 * 1024), note
    assert note["bytes_to_host"] - 72 * note["tensors_read"] >= 161 * 256 * 1024, note  # randn, then 2 a step
    (tmp_path / "plain").mkdir()
    assert proc.stdout == run_script(tmp_path / "plain", STAGED_CHAIN, preload=False).stdout


NARROW_CHAIN = """
import torch
torch.manual_seed(0)
x = torch.randn(256, 512)
for i in range(20):
    b = x.to(torch.bfloat16)  # 256 KiB
    c = torch.mul(b, 0.5)  # b read again while its read is still in flight
    f = c.to(torch.float8_e4m3fn)  # 128 KiB
    x = torch.add(x, c.float())
print(float(x.sum()), float(f.float().sum()))
"""


def test_dump_lends_narrow_staged_bytes_and_the_writer_widens_them(tmp_path):
    """`dump` on the device: bfloat16 and float8 tensors are widened to float32 for their files,
    and that is done by the writer's threads from the staged bytes, as for a float32 tensor's lent
    copy, not by the program's thread: it copies nothing out of the staging memory. Every file
    holds the tensor as it was at its call, widened (recomputed here); the program's output is the
    unhooked one."""
    proc = run_script(tmp_path, NARROW_CHAIN, levels="torch_function", mode="dump", tensor_copy="fake-device")
    out = tmp_path / "out"
    records = trace(out)
    torch.manual_seed(0)
    x = torch.randn(256, 512)
    conversions, muls, adds = ops(records, "torch.Tensor.to"), ops(records, "torch.mul"), ops(records, "torch.add")
    assert len(conversions) == 40 and len(muls) == len(adds) == 20
    for mul, add in zip(muls, adds):
        b = x.to(torch.bfloat16)
        c = torch.mul(b, 0.5)
        f = c.to(torch.float8_e4m3fn)
        for array, want in ((arrays(mul)[0], b), (arrays(mul, "outputs")[0], c)):
            assert array["dtype"] == "bfloat16" and same_bits(load(out, array), want.float().numpy())
        x = torch.add(x, c.float())
        assert same_bits(load(out, arrays(add, "outputs")[0]), x.numpy())
    to_fp8 = [r for r in conversions if arrays(r, "outputs")[0]["dtype"] == "float8_e4m3fn"]
    assert len(to_fp8) == 20 and same_bits(load(out, arrays(to_fp8[-1], "outputs")[0]), f.float().numpy())
    note = summary(out)["notes"]["device_statistics"]
    recorded = [a for r in records for a in arrays(r) + arrays(r, "outputs")]
    assert note["tensors_read"] == len(recorded), note
    # the program's thread copied out only the small ones (the last line's two sums, as outputs and
    # as float()'s inputs), where before it widened every bfloat16 and float8 tensor's bytes
    sizes = [load(out, a).nbytes for a in recorded]
    assert note["bytes_copied_from_staging"] == sum(n for n in sizes if n < 64 * 1024) == 4 * 4, note
    (tmp_path / "plain").mkdir()
    assert proc.stdout == run_script(tmp_path / "plain", NARROW_CHAIN, preload=False).stdout


NAN_PROGRAM = """
import torch
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(4):
    h = net(torch.randn(64, 16))
    if step == 2:
        h = PLANTED
    loss = h.square().mean() + h.mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(loss.item())
"""
# NaN from finite inputs in forward, and Inf born in backward (sqrt's gradient at 0), line 9
PLANTED = {"forward": "torch.log(h - 10)", "backward": "torch.sqrt(h * 0)"}


@pytest.mark.parametrize("where,levels,mode", [("forward", "torch_function", "trace"),
                                               ("forward", "torch_function,torch_dispatch", "trace"),
                                               ("forward", "torch_function", None),
                                               ("backward", "torch_function", None),
                                               ("forward", "torch_function", "dump")])
def test_kernel_nan_warn_names_the_culprit_of_the_direct_path(tmp_path, where, levels, mode):
    """OPHOOK_NAN=warn with the kernel's counts (trace), with its counts and the ring's bytes on
    the device (the default: dump with the ring), or with its counts and every tensor's bytes
    staged for the files (dump: the check takes the counts, not the bytes) arriving late: every
    call is judged as its values come in, oldest first — recorded calls and the backward ops no
    level records alike — and the culprit, its warning, the run's first NaN/Inf and the files are
    the direct path's; nothing waits but the run's end."""
    runs = {}
    for copy in ("auto", "fake-device"):
        (tmp_path / copy).mkdir()
        settings = {"mode": mode} if mode else {}
        proc = run_script(tmp_path / copy, NAN_PROGRAM.replace("PLANTED", PLANTED[where]), levels=levels, nan="warn",
                          tensor_copy=copy, **settings)
        here = str(tmp_path / copy)  # each run's own directory, out of what is compared
        warnings = [line.split("] ", 1)[1].replace(here, "") for line in proc.stderr.splitlines()
                    if "warning: first NaN/Inf" in line]
        first = summary(tmp_path / copy / "out")
        first["first_nonfinite"]["source"] = first["first_nonfinite"]["source"].replace(here, "")
        files = sorted(p.name for p in (tmp_path / copy / "out").glob("op_*.npy"))
        runs[copy] = (proc.stdout, warnings, first, files)
    (plain, direct_warnings, direct, direct_files), (out, kernel_warnings, kernel, kernel_files) = runs.values()
    assert out == plain and len(direct_warnings) == 1
    strip_seq = lambda text: re.sub(r"seq \d+ ", "", text)  # a backward culprit's seq is given when judged
    assert [strip_seq(w) for w in kernel_warnings] == [strip_seq(w) for w in direct_warnings]
    assert ("/prog.py:9:" if where == "forward" else "/prog.py:12:") in direct_warnings[0]  # backward's line
    assert ("(%s)" % where) in direct_warnings[0]
    culprit = {k: v for k, v in direct["first_nonfinite"].items() if k != "seq"}
    assert {k: v for k, v in kernel["first_nonfinite"].items() if k != "seq"} == culprit and culprit["step"] == 2
    assert kernel_files == direct_files and (mode == "trace" or direct_files)  # the ring's dump
    # byte for byte (the fake device's ring: a backward culprit's from the part for unrecorded
    # calls), but for memory torch.empty left uninitialised, which differs from run to run
    for name in kernel_files:
        if not name.startswith(("op_torch.empty_output", "op_torch.nn.init.")):
            assert (tmp_path / "auto/out" / name).read_bytes() == (tmp_path / "fake-device/out" / name).read_bytes()
    assert kernel["notes"]["device_statistics"]["synchronizations"] <= 5  # the fake device's last launches



# Float calls the kernel reads, between calls that read nothing on a device (int tensors, shapes),
# then a NaN born in torch (judged later) right before an Inf born in NumPy (judged at once).
WAIT_FREE_PROGRAM = """
import numpy as np, torch
torch.manual_seed(0)
x = torch.rand(64, 64)
for i in range(300):
    x = torch.tanh(x * 1.01)
    index = torch.arange(64)  # int64: no NaN to count, nothing read
    x = x[index].view(64, 64)
y = torch.log(x - 5)
z = np.log(np.zeros(3))
print(float(x.sum()), bool(torch.isnan(y).all()), z.tolist())
"""


def test_warn_on_the_device_waits_for_nothing_at_calls_that_read_nothing_there(tmp_path):
    """OPHOOK_NAN=warn with the kernel: a call whose values are all on the host (an int tensor the
    check does not read, a NumPy call) is judged at once without waiting for the device's results
    of the calls before it, unless it is a culprit: then those earlier calls are judged first, and
    the first culprit in seq order is still the one named."""
    proc = run_script(tmp_path, WAIT_FREE_PROGRAM, levels="numpy,torch_function", nan="warn", mode="trace",
                      tensor_copy="fake-device")
    out = tmp_path / "out"
    first = summary(out)["first_nonfinite"]
    assert first["op"] == "torch.log" and "/prog.py:9:" in first["source"], first
    warnings = [line for line in proc.stderr.splitlines() if "warning: first NaN/Inf" in line]
    assert len(warnings) == 1 and "torch.log" in warnings[0], proc.stderr
    note = summary(out)["notes"]["device_statistics"]
    assert len(ops(trace(out), "torch.arange")) == 300
    assert note["synchronizations"] <= 10, note  # the culprit's and the last launches', not one per arange (900)
    (tmp_path / "plain").mkdir()
    assert proc.stdout == run_script(tmp_path / "plain", WAIT_FREE_PROGRAM, preload=False).stdout



# Backward passes full of views (t, view, detach, expand) beside ops that compute (mm, sum, tanh's).
VIEWS_PROGRAM = """
import torch
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
for step in range(3):
    x = torch.randn(5, 8)
    loss = net(x).view(-1).expand(2, 20).sum()
    net.zero_grad()
    COUNT
    loss.backward()
print(float(loss))
"""
# The same program unhooked, counting the floating gradients each autograd node receives and
# returns, by the node's name: what the check reads unless it passes the node by.
COUNT_NODES = """
from collections import Counter
tally = globals().setdefault("tally", Counter())
def visit(node, seen):
    if node is None or node in seen: return
    seen.add(node)
    name = type(node).__name__
    node.register_hook(lambda returned, received, name=name: tally.update(
        {name: sum(g is not None and g.is_floating_point() for g in returned + received)}))
    for next_node, _ in node.next_functions: visit(next_node, seen)
visit(loss.grad_fn, set())
import atexit; atexit.register(lambda: print(dict(tally)))
"""


def test_the_backward_check_reads_no_views_tensors(tmp_path):
    """OPHOOK_NAN's check of the backward pass passes by the autograd nodes that only move their
    gradient's elements (ViewBackward0, TBackward0…: a view's elements are its input's, so it
    never makes a NaN/Inf from finite inputs) and AccumulateGrad: the kernel reads the recorded
    calls' floating tensors and those every other node receives and returns — counted by an
    unhooked run that hooks every node itself — and no more."""
    run_script(tmp_path, VIEWS_PROGRAM.replace("COUNT", ""), nan="warn", mode="trace", tensor_copy="fake-device")
    (tmp_path / "plain").mkdir()
    plain = run_script(tmp_path / "plain", VIEWS_PROGRAM.replace("    COUNT", COUNT_NODES.replace("\n", "\n    ")),
                       preload=False)
    per_node = ast.literal_eval(plain.stdout.splitlines()[-1])
    passed_by = {"ViewBackward0", "TBackward0", "AccumulateGrad"}
    assert passed_by <= set(per_node) and per_node["ViewBackward0"] > 0, per_node
    checked = sum(count for name, count in per_node.items() if name not in passed_by)
    floating = lambda record: [a for a in arrays(record) + arrays(record, "outputs")
                               if a["dtype"].startswith(("float", "bfloat", "complex"))]
    out = tmp_path / "out"
    expected = sum(len(floating(r)) for r in trace(out)) + checked
    note = summary(out)["notes"]["device_statistics"]
    # the recorded view's output is answered by its input's read (reads_shared), not read again
    assert note["tensors_read"] + note["reads_shared"] == expected and note["reads_shared"] == 3, (note, per_node)


def test_the_idle_fake_device_does_none_of_a_gpus_work(tmp_path):
    """OPHOOK_TEST_FAKE_DEVICE_IDLE=1 (tests/bench/figures_devices.py measures the host's side of
    the device path with it): the fake device computes nothing and copies nothing — a NaN goes
    unseen and every tensor's statistics are zero — while the host does all it does for a GPU:
    every tensor queued and launched, every record completed."""
    source = NAN_PROGRAM.replace("PLANTED", PLANTED["forward"])
    proc = run_script(tmp_path, source, levels="torch_function", nan="warn", mode="stats", tensor_copy="fake-device",
                      env={"OPHOOK_TEST_FAKE_DEVICE_IDLE": "1"})
    out = tmp_path / "out"
    records = trace(out)
    read = [a for r in records for a in arrays(r) + arrays(r, "outputs") if a["dtype"] == "float32"]
    assert read and all(a["stats"]["min"] == a["stats"]["max"] == 0 and a["stats"]["nan"] == 0 for a in read)
    assert summary(out)["first_nonfinite"] is None and "NaN" not in proc.stderr
    note = summary(out)["notes"]["device_statistics"]
    assert note["tensors_read"] >= len(read) and note["kernels_launched"] >= len(records)


# A small training loop (about 1,500 records, 10 a step) with a NaN from finite inputs in step 30.
BEHIND_PROGRAM = """
import torch
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.01)
x = torch.randn(64, 16)
for step in range(150):
    loss = net(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step == 30:
        y = torch.log(x - 10)
print(float(loss), float(sum(p.sum() for p in net.parameters())))
"""


@pytest.mark.parametrize("settings", [{"mode": "stats"}, {"nan": "warn"}], ids=["stats", "warn"])
def test_a_device_far_behind_the_program_gives_the_same_records(tmp_path, settings):
    """The fake device's results 5,000 launches late, as a GPU far behind a large model's program:
    records are held until 1,024 wait, then the oldest are waited for. Every record and its
    statistics (in `warn`, up to the culprit), the culprit and its ring's files are those of the
    run whose results trail by three launches."""
    runs = {}
    for lag in ("3", "5000"):
        (tmp_path / lag).mkdir()
        proc = run_script(tmp_path / lag, BEHIND_PROGRAM, levels="torch_function", tensor_copy="fake-device",
                          env={"OPHOOK_TEST_FAKE_DEVICE_LAG": lag}, **settings)
        runs[lag] = (proc.stdout, tmp_path / lag / "out")
    (near_out, near), (far_out, far) = runs.values()
    assert far_out == near_out

    culprit = summary(far)["first_nonfinite"]
    assert culprit["op"] == "torch.log" and culprit["seq"] == summary(near)["first_nonfinite"]["seq"]
    # In `warn`, after the culprit which calls' bytes go to the host (and get the writer's
    # statistics) until the ring is written is the writer's pace: compared up to the culprit.
    last = culprit["seq"] if settings.get("nan") else None

    def comparable(out):
        """Its records from step 1 on (step 0 made the model in uninitialised memory), without
        times and directories: files and reasons too are compared."""
        records = [r for r in trace(out) if r["step"] >= 1 and (last is None or r["seq"] <= last)]
        for r in records:
            r["source"] = r["source"].replace(str(out.parent), "")
            for key in ("t_ns", "dur_ns", "pid", "tid"):
                del r[key]
        return records

    assert len(comparable(near)) > (300 if last else 1400) and comparable(far) == comparable(near)
    if last:  # the ring's files of the culprit
        for name in ("op_torch.log_input1_%06d.npy" % last, "op_torch.log_output_%06d.npy" % last):
            assert (far / name).read_bytes() == (near / name).read_bytes()
    note = summary(far)["notes"]["device_statistics"]
    assert note["launches_held_most"] > 1000 and note["synchronizations"] > 100, note


# ---- the ring on the device -------------------------------------------------------------------------

# 64 KiB tensors of every kind the files widen (bf16, fp8, complex), then NaN from finite inputs.
# The first tanh runs on one thread: under load, about one run in 150 of this program had its
# first torch.tanh that MKL splits over two threads come back with the worker's half about 450 ulp
# off, inputs identical — hooked, and unhooked too with a C thread kept busy beside it (as ophook's
# writer is), the same wrong value; never with one tanh called before (0 in 244). A race in the
# first call, not ophook's; this test is about the ring's bytes.
RING_PROGRAM = """
import torch
torch.tanh(torch.zeros(8))
torch.manual_seed(0)
x = torch.rand(128, 128)
for step in range(16):
    x = torch.tanh(x * 1.01 + 0.01)
    kinds = [x.to(torch.bfloat16), x.to(torch.float8_e4m3fn), x * (1 + 1j), x.double()]
y = torch.log(x - 5)
print(float(x.sum()), [float(k.float().abs().sum()) for k in kinds])
"""
DEVICE_LOST = "held on its device"


@pytest.mark.parametrize("ring_bytes", [None, 1 << 20])
def test_the_ring_keeps_tensors_bytes_on_their_device(tmp_path, ring_bytes):
    """With the kernel, OPHOOK_RING_BYTES' ring keeps the tensors' bytes in their device's memory
    (the fake device's here) and brings them to the host only for a trigger: the ring's files are
    the direct path's, byte for byte (bf16, fp8 and complex widened alike), and until the culprit
    only the kernel's results crossed. A ring that comes round within the calls still in flight
    (1 MiB) loses none of the bytes its trigger writes: the rooms over them behind the culprit's
    closed gate copied nothing."""
    settings = {"mode": "dump", "ring_bytes": ring_bytes} if ring_bytes else {}
    runs = {}
    for copy in ("auto", "fake-device"):
        (tmp_path / copy).mkdir()
        proc = run_script(tmp_path / copy, RING_PROGRAM, levels="torch_function", nan="warn", tensor_copy=copy,
                          **settings)
        runs[copy] = (proc.stdout, tmp_path / copy / "out")
    (plain, direct), (out, kernel) = runs.values()
    assert out == plain
    direct_files = {p.name for p in direct.glob("op_*.npy")}
    kernel_files = {p.name for p in kernel.glob("op_*.npy")}
    assert any(name.startswith("op_torch.log_output") for name in kernel_files)  # the culprit's
    for name in kernel_files:
        assert name in direct_files and (kernel / name).read_bytes() == (direct / name).read_bytes(), name
    lost = [v for r in trace(kernel) for v in arrays(r, "args") + arrays(r, "outputs")
            if DEVICE_LOST in (v.get("reason") or "")]
    # the 1 MiB ring came round within the fake device's lag: the calls' bytes it took over before
    # the culprit was judged stayed, the rooms over them behind the culprit's closed gate
    assert kernel_files == direct_files and not lost
    assert len(kernel_files) > (60 if ring_bytes is None else 10)
    facts = summary(kernel)
    costs, trigger = facts["notes"]["device_statistics"], facts["ring"]["triggers"][0]
    assert costs["ring_bytes_on_device"] == (ring_bytes or 256 << 20) * 5 // 4  # and a quarter for checks
    # the results, and at most the bytes of the calls after the culprit: those go to the host
    # until the trigger has written the ring (how many of them is the writer's pace)
    culprit = facts["first_nonfinite"]["seq"]
    after = sum(nbytes(v) for r in trace(kernel) if r["seq"] > culprit for v in arrays(r, "args") + arrays(r, "outputs"))
    assert costs["bytes_to_host"] <= 72 * costs["tensors_read"] + after < costs["bytes_read"] / 10
    assert trigger["bytes_from_device"] > 0 and trigger["files"] == len(kernel_files)


# 16 KiB tensors, two calls a 64 KiB ring's worth, then NaN from finite inputs and a call after it.
CULPRIT_RING_PROGRAM = """
import torch
torch.manual_seed(0)
x = torch.rand(64, 64)
for step in range(20):
    x = torch.tanh(x * 1.01 + 0.01)
y = torch.log(x - 5)
z = y + 1
print(float(x.sum()), bool(torch.isnan(z).all()))
"""
# The same, with -Inf flowing through every step from a call no culprit (made of a scalar -Inf):
# each of its calls' outputs holds -Inf, and so does one of its inputs (read before the call, for
# the in-place add).
MASKED_CULPRIT_RING_PROGRAM = """
import torch
torch.manual_seed(0)
x = torch.rand(64, 64)
mask = torch.full((64, 64), float("-inf")).triu(1)
for step in range(20):
    scores = x * 2
    scores += mask
    x = torch.tanh(scores.softmax(-1) * 1.01 + 0.01)
y = torch.log(x - 5)
z = y + 1
print(float(x.sum()), bool(torch.isnan(z).all()))
"""


@pytest.mark.parametrize("program, lag", [(CULPRIT_RING_PROGRAM, 3), (MASKED_CULPRIT_RING_PROGRAM, 200)],
                         ids=["three-launches-late", "masked-200-launches-late"])
def test_a_culprit_keeps_its_bytes_in_a_device_ring_that_came_round_to_them(tmp_path, program, lag):
    """The fake device's results land `lag` launches late, as behind a busy GPU, and a 64 KiB
    ring holds about two calls: the rooms of the calls after the culprit take over the culprit's
    before its NaN is seen. The device's gate, closed by the culprit's launch (NaN in its outputs,
    none in its inputs), keeps them from copying there, and the host waits for no launch to hand
    rooms out: the culprit's files are the CPU run's, byte for byte (its bytes were overwritten
    there before, and it had none). Calls whose outputs hold -Inf from inputs that do (the masked
    program's) do not close it: only calls after the culprit were kept out of the ring."""
    runs = {}
    for copy in ("auto", "fake-device"):
        (tmp_path / copy).mkdir()
        proc = run_script(tmp_path / copy, program, levels="torch_function", nan="warn",
                          tensor_copy=copy, ring_bytes=64 << 10, env={"OPHOOK_TEST_FAKE_DEVICE_LAG": str(lag)})
        runs[copy] = (proc.stdout, tmp_path / copy / "out")
    (plain, host), (out, device) = runs.values()
    assert out == plain and out.split()[-1] == "True"
    culprit = summary(device)["first_nonfinite"]
    assert culprit["op"] == "torch.log" and culprit["seq"] == summary(host)["first_nonfinite"]["seq"]
    files = sorted(p.name for p in device.glob("op_*.npy"))
    assert files == sorted(p.name for p in host.glob("op_*.npy"))
    assert files == ["op_torch.log_input1_%06d.npy" % culprit["seq"], "op_torch.log_output_%06d.npy" % culprit["seq"]]
    assert all((device / name).read_bytes() == (host / name).read_bytes() for name in files)
    records = trace(device)
    lost = [v for r in records for v in arrays(r, "args") + arrays(r, "outputs") if DEVICE_LOST in (v.get("reason") or "")]
    assert not lost
    costs = summary(device)["notes"]["device_statistics"]
    after = [v for r in records if r["seq"] > culprit["seq"] for v in arrays(r, "args") + arrays(r, "outputs")]
    assert 0 < costs["ring_copies_skipped"] <= len(after)
    if lag == 3:  # the trigger's wait for the launches in flight, and the exit's: none while rooms came round
        assert costs["synchronizations"] <= lag + 1


# Calls of two 16 KiB tensors, a 256 KiB ring's window of them; then a call whose bfloat16 tensors,
# 66 KiB each on the device, take 133 KiB each on the host (widened), more than the ring together;
# then the culprit.
OUTGROWN_RING_PROGRAM = """
import torch
torch.manual_seed(0)
big = torch.rand(34000, dtype=torch.bfloat16)
x = torch.rand(64, 64)
for step in range(12):
    x = torch.tanh(x * 1.01 + 0.01)
doubled = big * 2
y = torch.log(x - 5)
print(float(x.sum()), float(doubled.sum()))
"""
TOO_LARGE = "larger than the OPHOOK_RING_BYTES ring"


def test_a_call_larger_than_the_ring_leaves_the_device_ring_to_the_calls_it_holds(tmp_path):
    """The writer's ring holds no call whose arrays take more than OPHOOK_RING_BYTES on the host,
    and the device's part of the ring must not spend its memory on one either: the call's tensor
    copies not yet launched are withdrawn (its input's here, 200 launches behind), so the calls
    before it that the writer holds keep their bytes. Their files are the CPU run's, byte for byte
    (before, they lost theirs: the call's 133 KiB on the device overwrote them)."""
    runs = {}
    for copy in ("auto", "fake-device"):
        (tmp_path / copy).mkdir()
        proc = run_script(tmp_path / copy, OUTGROWN_RING_PROGRAM, levels="torch_function", nan="warn", mode="dump",
                          tensor_copy=copy, ring_bytes=256 << 10, env={"OPHOOK_TEST_FAKE_DEVICE_LAG": "200"})
        runs[copy] = (proc.stdout, tmp_path / copy / "out")
    (plain, host), (out, device) = runs.values()
    assert out == plain
    records = {r["seq"]: r for r in trace(device)}
    large = next(seq for seq, r in records.items() if r["op"] == "torch.Tensor.mul" and
                 arrays(r, "args")[0]["dtype"] == "bfloat16")
    for run in (host, device):
        large_arrays = [v for r in trace(run) if r["seq"] == large for v in arrays(r, "args") + arrays(r, "outputs")]
        assert [v["reason"] for v in large_arrays] == [TOO_LARGE, TOO_LARGE]
    files = sorted(p.name for p in device.glob("op_*.npy"))
    assert files == sorted(p.name for p in host.glob("op_*.npy"))
    assert sum(int(name[-10:-4]) < large for name in files) >= 4  # calls before it, not only the culprit's
    assert all((device / name).read_bytes() == (host / name).read_bytes() for name in files)
    lost = [v for r in records.values() for v in arrays(r, "args") + arrays(r, "outputs")
            if DEVICE_LOST in (v.get("reason") or "")]
    assert not lost
    assert summary(device)["notes"]["device_statistics"]["ring_copies_withdrawn"] == 1


# Each call's input is the call before's output; one is written in between by no recorded call.
SHARED_ROOM_PROGRAM = """
import ctypes, torch
torch.manual_seed(0)
x = torch.rand(64, 64)
y = x * 2
ctypes.memset(y.data_ptr(), 0, y.numel() * 4)  # written by no call ophook records
z = y + 1
w = z * 3
v = torch.log(w - 5)
print(float(y.sum()), float(w.sum()))
"""
SHARE_CHANGED = "changed on its device, by no recorded call, since the read whose copy in the OPHOOK_RING_BYTES ring it shares"


def test_an_input_the_call_before_wrote_shares_its_copy_in_the_device_ring_unless_it_changed(tmp_path):
    """A call's input read just before as the call before's output is not copied into the device's
    ring again: it shares that copy, and its files are the CPU run's, byte for byte. Where the bytes
    changed in between by no recorded call (ctypes here; on a GPU, another library's kernel), the
    two reads' fingerprints differ: that input gets no file and says why, never the earlier bytes."""
    runs = {}
    for copy in ("auto", "fake-device"):
        (tmp_path / copy).mkdir()
        proc = run_script(tmp_path / copy, SHARED_ROOM_PROGRAM, levels="torch_function", nan="warn", tensor_copy=copy)
        runs[copy] = (proc, tmp_path / copy / "out")
    (plain, host), (proc, device) = runs.values()
    assert proc.stdout == plain.stdout
    assert "changed on its device since the call before read it" in proc.stderr
    records = {r["op"] + str(r["seq"]): r for r in trace(device)}
    changed = arrays(records["torch.Tensor.add2"], "args")[0]
    assert changed["file"] is None and changed["reason"].startswith(SHARE_CHANGED)
    assert changed["stats"]["max"] == 0  # its statistics are its own read's
    files = sorted(p.name for p in device.glob("op_*.npy"))
    assert files == sorted(p.name for p in host.glob("op_*.npy") if p.name != "op_torch.Tensor.add_input1_000002.npy")
    assert "op_torch.Tensor.mul_input1_000003.npy" in files  # the share found unchanged
    assert all((device / name).read_bytes() == (host / name).read_bytes() for name in files)
    costs = summary(device)["notes"]["device_statistics"]
    assert costs["ring_shares_changed"] == 1 and costs["ring_copies_shared"] >= 3


NO_ROOM = "larger than the OPHOOK_RING_BYTES ring's room on its device: statistics only"


# RING_PROGRAM with a 128 KiB tensor made each step by a call with no tensor input.
NO_ROOM_PROGRAM = RING_PROGRAM.replace("    kinds = [", "    wide = torch.rand(128, 128, dtype=torch.float64)\n    kinds = [")


def test_tensors_the_device_ring_has_no_room_for_stay_on_the_device(tmp_path):
    """A tensor larger than half the device's part of the ring (128 KiB float64 here, with a
    192 KiB ring) whose call the ring holds (the call that made it) is neither kept in the ring
    nor sent to the host: its statistics are the kernel's, its reason says why it has no file, and
    only results (and the calls after the culprit) crossed to the host; the culprit is still named
    and the smaller tensors' files written. A call larger than the ring (the 64 KiB float32 input
    and 128 KiB output of `double` and of the complex `mul`) is held by neither part, as on the CPU."""
    runs = {}
    for mode, settings in (("ring", {"nan": "warn", "mode": "dump", "ring_bytes": 192 << 10}), ("stats", {"mode": "stats"})):
        (tmp_path / mode).mkdir()
        proc = run_script(tmp_path / mode, NO_ROOM_PROGRAM, levels="torch_function", tensor_copy="fake-device", **settings)
        runs[mode] = (proc, tmp_path / mode / "out")
    (ring_proc, ring), (stats_proc, stats) = runs.values()
    assert ring_proc.stdout == stats_proc.stdout and "first NaN/Inf from finite inputs" in ring_proc.stderr
    by_place = {(r["seq"], i): v for r in trace(stats) for i, v in enumerate(arrays(r, "args") + arrays(r, "outputs"))}
    culprit = summary(ring)["first_nonfinite"]["seq"]
    before = [r for r in trace(ring) if r["seq"] < culprit]  # after it, the writer's pace decides the path
    refused = [(r["seq"], i, v) for r in before for i, v in enumerate(arrays(r, "args") + arrays(r, "outputs"))
               if v.get("reason") == NO_ROOM]
    assert len(refused) == 16 and all(v["dtype"] == "float64" and v["file"] is None for _, _, v in refused)
    too_large = [r for r in before if r["op"] in ("torch.Tensor.double", "torch.Tensor.mul") and
                 arrays(r, "outputs")[0]["dtype"] in ("float64", "complex64")]
    assert len(too_large) == 32
    assert all(v["reason"] == TOO_LARGE for r in too_large for v in arrays(r, "args") + arrays(r, "outputs"))
    assert all(v["stats"] == by_place[(seq, i)]["stats"] for seq, i, v in refused)  # the kernel's statistics
    assert any(p.name.startswith("op_torch.log_output") for p in ring.glob("op_*.npy"))  # the culprit's file
    facts = summary(ring)
    costs, culprit = facts["notes"]["device_statistics"], facts["first_nonfinite"]["seq"]
    after = sum(nbytes(v) for r in trace(ring) if r["seq"] > culprit for v in arrays(r, "args") + arrays(r, "outputs"))
    assert costs["bytes_to_host"] <= 72 * costs["tensors_read"] + after


# ---- meta, fake and DTensor ------------------------------------------------------------------------

META_AND_FAKE = """
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

model = torch.nn.Linear(4, 3, device="meta")
y = model(torch.empty(2, 4, device="meta")).relu()
print(y.shape, y.device)
with FakeTensorMode() as fake:
    w = torch.ones(4, 4)
    z = (w @ w).sum(0)
    print(z.shape, type(z).__name__)
print(torch.ones(2).add(1).tolist())
"""


@pytest.mark.parametrize("mode", ["stats", "dump"])
def test_meta_and_fake_tensor_programs_run_unchanged(tmp_path, mode):
    plain = run_script(tmp_path, META_AND_FAKE, preload=False)
    proc = run_script(tmp_path, META_AND_FAKE, levels="torch_function,torch_dispatch", mode=mode, tensor_copy="torch")
    assert proc.stdout == plain.stdout and "not read" not in proc.stderr
    records = trace(tmp_path / "out")
    values = tensor_values(records)
    meta = [v for v in values if v["device"] == "meta"]
    fake = [v for v in values if "FakeTensor" in (v.get("reason") or "")]
    assert meta and fake
    assert all(v["file"] is None and v["stats"] is None for v in meta + fake)
    assert all(v["reason"] == "meta tensor: no values, never read" for v in meta)
    (last,) = [r for r in records if r["op"] == "torch.Tensor.add"]
    assert arrays(last, "outputs")[0]["stats"]["max"] == 2.0
    assert summary(tmp_path / "out")["totals"]["record_errors"] == 0


DTENSOR = """
import torch, torch.distributed as dist
from torch.testing._internal.distributed.fake_pg import FakeStore
dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=2)
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor
mesh = init_device_mesh("cpu", (2,))
d = distribute_tensor(torch.arange(8.0).reshape(4, 2), mesh, [Shard(0)])
doubled = torch.mul(d, 2)
print(doubled.to_local().tolist())
dist.destroy_process_group()
"""


def test_dtensor_records_its_local_shard(tmp_path):
    """A DTensor's values are this rank's local shard (a plain tensor), read as any tensor is, and
    the record says so; a fake process group gives two ranks in one process."""
    plain = run_script(tmp_path, DTENSOR, preload=False)
    proc = run_script(tmp_path, DTENSOR, levels="torch_function", mode="dump", tensor_copy="torch")
    assert proc.stdout == plain.stdout == "[[0.0, 2.0], [4.0, 6.0]]\n"
    (mul,) = [r for r in trace(tmp_path / "out") if r["op"] == "torch.mul"]
    (shard,) = arrays(mul)
    (product,) = arrays(mul, "outputs")
    note = "DTensor: this rank's local shard (global shape [4, 2], placements (Shard(dim=0),))"
    assert shard["reason"] == product["reason"] == note
    assert shard["shape"] == [2, 2]
    assert load(tmp_path / "out", shard).tolist() == [[0.0, 1.0], [2.0, 3.0]]
    assert load(tmp_path / "out", product).tolist() == [[0.0, 2.0], [4.0, 6.0]]


# ---- running out of memory while reading ------------------------------------------------------------

# The device "runs out of memory" inside the path's own torch work: while FULL is set, aten::copy_
# (which the path's copies and float64 conversions use, and torch.neg does not) raises torch's
# OutOfMemoryError; torch.library.get_kernel keeps the real kernel for the rest of the program.
OUT_OF_MEMORY = """
import torch
FULL = [False]
kernel = torch.library.get_kernel("aten::copy_", "CPU")
library = torch.library.Library("aten", "IMPL")

def copy_(keyset, self, src, non_blocking=False):
    if FULL[0]:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (simulated)")
    if not isinstance(src, torch.Tensor):  # a wrapped number arrives as a Python scalar
        src = torch.scalar_tensor(src, dtype=self.dtype)
    return kernel.call_boxed(keyset, self, src, non_blocking)

library.impl("copy_", copy_, "CPU", with_keyset=True)
x = torch.arange(6, dtype=torch.float32)
FULL[0] = True
y = torch.neg(x)
z = torch.neg(y)
FULL[0] = False
print(torch.mul(z, 2).tolist())
"""


@pytest.mark.parametrize("mode", ["stats", "dump"])
def test_out_of_memory_while_reading_falls_back_to_a_spec(tmp_path, mode):
    plain = run_script(tmp_path, OUT_OF_MEMORY, preload=False)
    proc = run_script(tmp_path, OUT_OF_MEMORY, levels="torch_function", mode=mode, tensor_copy="torch")
    assert proc.stdout == plain.stdout == "[0.0, 2.0, 4.0, 6.0, 8.0, 10.0]\n"
    warnings = [line for line in proc.stderr.splitlines() if "was not read (" in line]
    assert len(warnings) == 1 and "OutOfMemoryError: CUDA out of memory" in warnings[0]
    records = trace(tmp_path / "out")
    unread = [v for r in records if r["op"] == "torch.neg" for s in ("args", "outputs") for v in arrays(r, s)]
    assert len(unread) == 4
    assert all(v["reason"] == "out of memory while reading it through torch: spec only" for v in unread)
    assert all(v["file"] is None and v["stats"] is None for v in unread)
    (mul,) = [r for r in records if r["op"] == "torch.mul"]
    assert arrays(mul, "outputs")[0]["stats"]["max"] == 10.0  # read again once memory is back
    note = summary(tmp_path / "out")["notes"]["tensors_not_read"]
    assert note["count"] == note["out_of_memory"] == 4 and note["last_op"] == "torch.neg"


# ---- statistics held for their batch ---------------------------------------------------------------

HELD = """
import json, os, sys, time
import torch
import ophook
x = torch.arange(4.0)
for _ in range(5):
    x = torch.add(x, 1)
if sys.argv[1] == "flush":
    ophook.flush()
    print(sum(1 for _ in open(os.path.join(os.environ["OPHOOK_OUTPUT"], "trace.jsonl"))), flush=True)
elif sys.argv[1] == "term":
    print("ready", flush=True)
    for _ in range(6000):
        time.sleep(0.01)  # back in the interpreter often: the pause for the signal runs between bytecodes
else:
    os._exit(0)
"""


def run_held(tmp_path, how):
    (tmp_path / "held.py").write_text(HELD)
    env = clean_env(LD_PRELOAD=LIBRARY, OPHOOK_OUTPUT=tmp_path / "out", OPHOOK_MODE="stats",
                    OPHOOK_LEVELS="torch_function", OPHOOK_TENSOR_COPY="torch")
    proc = subprocess.Popen([str(VENV_PYTHON), str(tmp_path / "held.py"), how], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if how == "term":
        assert proc.stdout.readline() == "ready\n"
        proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    return proc.returncode, stdout, tmp_path / "out"


@pytest.mark.parametrize("how", ["flush", "term"])
def test_held_statistics_are_written_at_a_flush_and_a_termination_signal(tmp_path, how):
    """Five torch.add calls stay held (fewer than a batch, within 0.1 s) until ophook.flush() or
    SIGTERM reads their statistics back: every record reaches trace.jsonl, with its statistics."""
    returncode, stdout, out = run_held(tmp_path, how)
    assert returncode == (0 if how == "flush" else -signal.SIGTERM)
    records = trace(out)
    adds = [r for r in records if r["op"] == "torch.add"]
    if how == "flush":
        assert int(stdout) == len(records)
    assert [arrays(r, "outputs")[0]["stats"]["max"] for r in adds] == [4.0, 5.0, 6.0, 7.0, 8.0]


def test_records_held_at_os_exit_are_written(tmp_path):
    """os._exit runs no atexit handler: the preload's _exit reads the held records back first (the
    exiting thread holds the GIL), as DataLoader workers need; none is dropped."""
    returncode, _, out = run_held(tmp_path, "exit")
    assert returncode == 0
    totals = summary(out)["totals"]
    assert (totals["calls"], totals["dropped_after_exit"]) == (6, 0)
    adds = [r for r in trace(out) if r["op"] == "torch.add"]
    assert [arrays(r, "outputs")[0]["stats"]["max"] for r in adds] == [4.0, 5.0, 6.0, 7.0, 8.0]
