"""Tensors the device path meets beside plain ones, through torch (OPHOOK_TENSOR_COPY=torch): meta
and fake tensors, never read, in programs that run unchanged; a DTensor, read as its rank's local
shard; a device that runs out of memory while ophook reads, which leaves a spec without values
and a warning, never an error in the program."""
import pytest

from device_programs import tensor_values
from harness import arrays, load, run_script, summary, trace


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
