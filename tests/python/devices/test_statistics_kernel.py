"""The statistics kernel (OPHOOK_TENSOR_COPY=fake-device runs it on the fake device, so a CPU-only
machine does): its source compiles with NVRTC for every GPU generation and is kept in the kernel
cache; calls of many tensors, views of one tensor, calls given up on and results far behind the
program each read right; summary.json counts what it did; the idle fake device leaves the host
all a GPU's work. Real programs in subprocesses under LD_PRELOAD, compared with the direct path
and with unhooked runs."""
import subprocess

import pytest

from device_programs import NAN_PROGRAM, PLANTED, tensor_values
from harness import SHIM_DIR, VENV_PYTHON, arrays, clean_env, run_script, summary, trace


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


def test_the_idle_fake_device_does_none_of_a_gpus_work(tmp_path):
    """OPHOOK_TEST_FAKE_DEVICE_IDLE=1 (tests/bench/figures/devices.py measures the host's side of
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
