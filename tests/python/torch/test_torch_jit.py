"""torch.jit.trace under the torch levels: PyTorch's tracer cannot see through a TorchDispatchMode,
and TorchScript cannot run every traced graph under one, so the torch_dispatch level steps aside
for them. The program must behave exactly as without the hook, and recording must resume."""
import json

import pytest

from harness import run_script, summary, trace

# A convolution (traced below the op torch calls: the case a dispatch mode breaks) and shape
# arithmetic (wrapped-number tensors in the traced graph: the case TorchScript cannot run under a
# dispatch mode), traced with the default checks, then run; the eager model runs before and after.
PROGRAM = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, kernel_size=3)

    def forward(self, x):
        h = self.conv(x)
        return h.reshape(h.shape[0], h.shape[1] // 2, -1).amax(-1)


torch.manual_seed(0)
net = Net()
x = torch.randn(2, 3, 6, 6)
before = net(x)
traced = torch.jit.trace(net, x)
print(torch.equal(traced(x), before), torch.equal(traced(x + 1), net(x + 1)))
print("torch._convolution" in traced.conv.code, [round(v, 4) for v in net(x * 2).flatten().tolist()])
"""


@pytest.mark.parametrize("level", ["torch_function", "torch_dispatch"])
def test_jit_trace_behaves_as_without_the_hook_and_recording_resumes(tmp_path, level):
    plain = run_script(tmp_path, PROGRAM, preload=False)
    hooked = run_script(tmp_path, PROGRAM, levels=level, mode="trace")
    assert hooked.stdout == plain.stdout
    assert plain.stdout.startswith("True True\nTrue [")
    records = trace(tmp_path / "out")
    conv = "aten.convolution.default" if level == "torch_dispatch" else "torch.nn.functional.conv2d"
    convs = [r for r in records if r["op"] == conv]
    # Eager forwards outside the tracer: before, net(x + 1), net(x * 2). Inside it (the trace, its
    # checks, the traced module's runs) the dispatch level records nothing.
    expected = 3 if level == "torch_dispatch" else len(convs)
    assert len(convs) == expected and expected >= 3
    notes = summary(tmp_path / "out")["notes"]
    warnings = [line for line in hooked.stderr.splitlines() if "torch.jit" in line]
    if level == "torch_dispatch":
        assert "stepped aside" in json.dumps(notes["jit"]) and len(warnings) == 1
    else:
        assert "jit" not in notes and not warnings
