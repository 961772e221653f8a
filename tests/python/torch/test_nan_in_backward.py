"""A NaN/Inf born in the backward pass is found with the default levels: at the autograd node that
made it, with the layer's module, in the backward phase, under OPHOOK_NAN=warn and =raise (which
raises from backward()); the culprit's record keeps its statistics and files, checked in place;
a custom autograd.Function's backward is checked as its node, once per pass. Real programs in
subprocesses under LD_PRELOAD, compared with unhooked runs."""
import numpy as np
import pytest

from harness import run_script, summary, trace

# The first non-finite value appears in the backward pass: sqrt's gradient at 0 is infinite
# (the forward adds 0 = sqrt(x - x), finite).
BACKWARD_NAN = """
import torch
from torch import nn

class Root(nn.Module):
    def forward(self, x):
        return x + torch.sqrt(x - x.detach())

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.root = Root()
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.root(torch.relu(self.fc(x))))

torch.manual_seed(0)
net = Net()
loss = net(torch.randn(8, 4)).sum()
print("forward finite", bool(torch.isfinite(loss)))
try:
    loss.backward()
except FloatingPointError as error:
    print("raised from backward:", str(error).split(" (")[0])
else:
    print("gradients finite", bool(torch.isfinite(net.fc.weight.grad).all()))
"""


def test_a_nan_born_in_backward_is_found_with_the_default_levels(tmp_path):
    plain = run_script(tmp_path, BACKWARD_NAN, preload=False)
    assert plain.stdout == "forward finite True\ngradients finite False\n"
    warned = run_script(tmp_path, BACKWARD_NAN, nan="warn", mode="trace")
    assert warned.stdout == plain.stdout
    (line,) = [l for l in warned.stderr.splitlines() if "first NaN/Inf from finite inputs" in l]
    assert "in module Net.root (backward)" in line, line
    records = trace(tmp_path / "out")
    (culprit,) = [r for r in records if r["level"] == "torch_dispatch"]
    # the autograd node that computed sqrt's gradient: 1 / (2 * sqrt(0)) is Inf
    assert culprit["op"] == "autograd.SqrtBackward0" and culprit["phase"] == "backward" and culprit["module"] == "Net.root"
    (backward,) = [r for r in records if r["op"] == "torch.Tensor.backward"]
    assert culprit["parent"] == backward["seq"] and culprit["seq"] > backward["seq"]
    assert [r["seq"] for r in records] == list(range(len(records)))  # no seq spent on unchecked ops
    assert summary(tmp_path / "out")["first_nonfinite"]["module"] == "Net.root"


@pytest.mark.parametrize("mode", ["dump", "stats"])
def test_a_backward_culprit_checked_in_place_keeps_its_values(tmp_path, mode):
    """The backward check reads arrays where they lie and copies a call's only when it is the
    culprit: that record still has its statistics and, in `dump` mode (OPHOOK_NAN's default,
    with the ring), its files, as they were when the op ran."""
    settings = {"mode": mode} if mode == "stats" else {}
    warned = run_script(tmp_path, BACKWARD_NAN, nan="warn", **settings)
    assert warned.stdout == "forward finite True\ngradients finite False\n"
    out = tmp_path / "out"
    (culprit,) = [r for r in trace(out) if r["level"] == "torch_dispatch"]
    inputs = [v for v in culprit["args"] if isinstance(v, dict) and v.get("kind") == "array"]
    outputs = [v for v in culprit["outputs"] if isinstance(v, dict) and v.get("kind") == "array"]
    assert inputs and outputs
    assert all(v["stats"]["nan"] + v["stats"]["inf"] == 0 for v in inputs), inputs
    assert sum(v["stats"]["nan"] + v["stats"]["inf"] for v in outputs) > 0, outputs
    if mode == "dump":
        for value in inputs + outputs:
            data = np.load(out / value["file"])
            assert int(np.isnan(data).sum()) == value["stats"]["nan"]
            assert int(np.isinf(data).sum()) == value["stats"]["inf"]
    else:
        assert all(v["file"] is None for v in inputs + outputs)


def test_a_nan_born_in_backward_raises_from_backward(tmp_path):
    raised = run_script(tmp_path, BACKWARD_NAN, nan="raise", mode="trace")
    assert raised.stdout.startswith("forward finite True\nraised from backward: ophook: autograd.SqrtBackward0 ")
    assert "produced NaN/Inf from finite inputs" in raised.stdout


# A custom autograd.Function whose backward divides by its saved input (0 in the second row), a
# graph run twice (retain_graph) and a NaN only in the second pass's incoming gradient scale.
CUSTOM_BACKWARD = """
import torch

class Reciprocal(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2.0

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / x

x = torch.tensor([[1.0, 2.0], [0.0, 3.0]], requires_grad=True)
loss = Reciprocal.apply(x).sum()
loss.backward(retain_graph=True)
first = x.grad.clone()
loss.backward()
print(first.tolist(), bool(torch.isinf(x.grad).any()))
"""


def test_a_custom_functions_backward_is_checked_as_its_node_once_per_pass(tmp_path):
    """A custom Function's backward is one autograd node: the Inf born inside it names that node.
    A graph retained and run again is checked again, once per pass: its hooks leave with the
    first pass and come back with the second."""
    plain = run_script(tmp_path, CUSTOM_BACKWARD, preload=False)
    warned = run_script(tmp_path, CUSTOM_BACKWARD, nan="warn", mode="trace")
    assert warned.stdout == plain.stdout and "True" in plain.stdout
    (line,) = [l for l in warned.stderr.splitlines() if "first NaN/Inf from finite inputs" in l]
    assert "autograd.ReciprocalBackward" in line and "(backward)" in line, line
    records = trace(tmp_path / "out")
    backwards = [r for r in records if r["op"] == "torch.Tensor.backward"]
    culprits = [r for r in records if r["op"] == "autograd.ReciprocalBackward"]
    assert [c["parent"] for c in culprits] == [b["seq"] for b in backwards]  # one per pass, not two
    assert all(c["phase"] == "backward" and c["level"] == "torch_dispatch" for c in culprits)
    assert [r["seq"] for r in records] == list(range(len(records)))
    # each pass walks SumBackward0, ReciprocalBackward and x's AccumulateGrad, and hooks the first two
    hooking = summary(tmp_path / "out")["notes"]["backward_check"]
    assert {k: hooking[k] for k in ("passes", "nodes_walked", "nodes_hooked")} == {
        "passes": 2, "nodes_walked": 6, "nodes_hooked": 4}, hooking
    assert hooking["hooking_ms"] > 0


# A weight made Inf behind the program's back (through .data: no recorded call wrote it): the
# forward multiply takes it as an input (no culprit), and its backward node computes the input's
# gradient from the saved weight: Inf out of a finite gradient, fed by what the node saved.
SAVED_INF = """
import torch
x = torch.ones(3, requires_grad=True)
w = torch.ones(3, requires_grad=True)
w.data[1] = float("inf")
(x * w).sum().backward()
print("x.grad", x.grad.tolist())
"""


def test_a_node_fed_inf_by_its_saved_tensors_is_no_culprit(tmp_path):
    proc = run_script(tmp_path, SAVED_INF, nan="warn", mode="stats")
    assert proc.stdout == run_script(tmp_path, SAVED_INF, preload=False).stdout
    assert "from finite inputs" not in proc.stderr, proc.stderr
    assert summary(tmp_path / "out")["first_nonfinite"] is None


def test_a_backward_culprit_names_the_forward_line_that_made_its_node(tmp_path):
    proc = run_script(tmp_path, BACKWARD_NAN, nan="warn")
    culprit = summary(tmp_path / "out")["first_nonfinite"]
    forward_line = next(n for n, line in enumerate(BACKWARD_NAN.splitlines(), 1) if "torch.sqrt" in line)
    assert culprit["op"] == "autograd.SqrtBackward0"
    assert culprit["forward_source"] == "%s:%d:forward" % (tmp_path / "prog.py", forward_line)
    assert "its node made in forward at %s:%d:forward" % (tmp_path / "prog.py", forward_line) in proc.stderr
