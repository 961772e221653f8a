"""Dump mode's ring with the statistics kernel (the fake device's): the tensors' bytes stay in
their device's memory and come to the host only for a trigger, the culprit keeps its bytes in a
ring that came round to them, a call larger than the ring leaves it to the calls it holds, an
input the call before wrote shares that copy unless it changed, and tensors the ring has no room
for stay on the device with their statistics. The files are the direct path's, byte for byte."""
import pytest

from device_programs import CULPRIT_RING_PROGRAM, MASKED_CULPRIT_RING_PROGRAM, nbytes
from harness import arrays, run_script, summary, trace


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
