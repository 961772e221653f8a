"""The programs and record helpers that more than one file of devices/ uses: the program of
every dtype, view and size that each device path must record as the direct path does, the NaN
programs, the ring programs whose culprit must keep its bytes, and the comparison of records
across runs. The device path is OPHOOK_TENSOR_COPY=torch or =fake-device, so a CPU-only machine
runs it."""
import re

import numpy as np
import torch

from harness import arrays

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


def tensor_values(records, framework=("numpy", "torch")):
    """Every array value of every record (of `framework`), in order."""
    return [v for r in records if r["framework"] in framework
            for section in ("args", "kwargs", "outputs") for v in arrays(r, section)]


def nbytes(value):
    """The bytes of a recorded tensor in its own dtype."""
    return int(np.prod(value["shape"])) * getattr(torch, value["dtype"]).itemsize


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
