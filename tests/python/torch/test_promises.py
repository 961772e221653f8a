"""Promises real programs rely on (issue 24): OPHOOK_NAN respects np.errstate; OPHOOK_COMPILE=ignore
leaves compiled modules compiled exactly as unhooked, and eager says once that compiled code ran
eagerly; a NaN born in the backward pass is found with the default levels, at its aten op, with the
layer's module. Real programs in subprocesses under LD_PRELOAD, compared with unhooked runs."""
import json

import numpy as np
import pytest

from harness import run, run_script, summary, trace

# 0/0 and exp overflow, declared expected with np.errstate (context manager, decorator, seterr),
# then the same operations undeclared.
ERRSTATE = """
import numpy as np
zeros, big = np.zeros(3), np.full(2, 1000.0)
with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
    quiet_nan = zeros / zeros
    quiet_inf = np.exp(big)

@np.errstate(all="ignore")
def declared():
    return np.log(zeros), np.true_divide(1.0, zeros)

declared()
old = np.seterr(invalid="ignore")
np.sqrt(np.array([-1.0]))
np.seterr(**old)
print("quiet", np.isnan(quiet_nan).all(), np.isinf(quiet_inf).all())
if __import__("sys").argv[1:] == ["loud"]:
    np.divide(zeros, zeros)
    print("loud done")
"""


@pytest.mark.parametrize("policy", ["warn", "raise"])
def test_errstate_declared_nonfinite_is_not_a_culprit(tmp_path, policy):
    plain = run_script(tmp_path, ERRSTATE, preload=False)
    hooked = run_script(tmp_path, ERRSTATE, nan=policy, mode="stats")
    assert hooked.stdout == plain.stdout == "quiet True True\n"
    assert "NaN/Inf" not in hooked.stderr and "Warning" not in hooked.stderr, hooked.stderr
    facts = summary(tmp_path / "out")
    assert facts["first_nonfinite"] is None
    expected = {op: facts["ops"][op]["nonfinite_expected"] for op in facts["ops"]}
    # np.true_divide is np.divide: 0/0 in the with block, 1/0 in the decorated function
    assert expected["numpy.divide"] == 2 and expected["numpy.exp"] == 1
    assert expected["numpy.log"] == 1 and expected["numpy.sqrt"] == 1
    assert all(facts["ops"][op]["nonfinite"] == 0 for op in facts["ops"])


def test_the_same_operations_outside_errstate_are_reported(tmp_path):
    warned = run_script(tmp_path, ERRSTATE, "loud", nan="warn", mode="trace")
    assert warned.stdout.endswith("loud done\n")
    assert "first NaN/Inf from finite inputs: seq" in warned.stderr and "numpy.divide" in warned.stderr
    raised = run_script(tmp_path, ERRSTATE, "loud", nan="raise", mode="trace", check=False,
                        env={"OPHOOK_OUTPUT": str(tmp_path / "raised")})
    assert raised.returncode == 1 and "loud done" not in raised.stdout
    assert "FloatingPointError: ophook: numpy.divide produced NaN/Inf" in raised.stderr


# A model trained two steps with torch.compile (aot_eager: Dynamo's graphs without Inductor's
# compile time); the program reports Dynamo's own counters and the losses.
COMPILED = """
import json, sys, torch
from torch import nn
import torch._dynamo
from torch._dynamo.utils import counters

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
compiled = torch.compile(model, backend="aot_eager")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 8), torch.randn(32, 1)
losses = []
for _ in range(2):
    opt.zero_grad()
    loss = ((compiled(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    losses.append(loss.item())
print(json.dumps({"losses": [float.hex(l) for l in losses],
                  "graphs": counters["stats"]["unique_graphs"],
                  "breaks": sum(counters["graph_break"].values())}))
"""


def test_compile_ignore_compiles_modules_exactly_as_unhooked(tmp_path):
    plain = json.loads(run_script(tmp_path, COMPILED, preload=False).stdout)
    assert plain["graphs"] >= 1 and plain["breaks"] == 0
    hooked = run_script(tmp_path, COMPILED, compile="ignore", mode="trace")
    assert json.loads(hooked.stdout) == plain
    assert "graph break" not in hooked.stderr and "does not know how to trace" not in hooked.stderr
    records = trace(tmp_path / "out")
    ops = {r["op"] for r in records}
    # outside the compiled module: recorded; inside it: not
    assert "torch.Tensor.backward" in ops and "torch.randn" in ops
    assert "torch.nn.functional.linear" not in ops


def test_compile_eager_says_once_that_compiled_code_ran_eagerly(tmp_path):
    hooked = run_script(tmp_path, COMPILED, mode="trace")
    notice = "torch.compile runs eagerly under ophook: results are eager PyTorch's"
    assert hooked.stderr.count(notice) == 1, hooked.stderr
    facts = json.loads(hooked.stdout)
    assert facts["graphs"] == 0  # nothing compiled: every op ran (and was recorded) eagerly
    linear = [r for r in trace(tmp_path / "out") if r["op"] == "torch.nn.functional.linear"]
    assert len(linear) == 4  # two layers, two steps


# A warning torch raises in C++ inside an eager op (new_tensor from a tensor), after a compiled
# function ran: where Python says it was raised, and whether a filter by the program's module
# turns it into an error as it would unhooked.
WARNING_PLACE = """
import json, warnings, torch
from torch._dynamo.utils import counters

@torch.compile(backend="aot_eager")
def scaled(x):
    return torch.tanh(x) * 2

x = torch.randn(4)
scaled(x), scaled(x)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    x.new_tensor(x)  # WARNS
with warnings.catch_warnings():
    warnings.filterwarnings("error", module="__main__")
    try:
        x.new_tensor(x)
        filtered = False
    except UserWarning:
        filtered = True
print(json.dumps({"places": [(w.filename, w.lineno) for w in caught], "filtered": filtered,
                  "graphs": counters["stats"]["unique_graphs"], "breaks": sum(counters["graph_break"].values())}))
"""


@pytest.mark.parametrize("policy", ["eager", "ignore", "record"])
def test_a_warning_keeps_the_programs_line_under_every_compile_policy(tmp_path, policy):
    plain = json.loads(run_script(tmp_path, WARNING_PLACE, preload=False).stdout)
    line = next(n for n, text in enumerate(WARNING_PLACE.splitlines(), 1) if "# WARNS" in text)
    assert [place[1] for place in plain["places"]] == [line] and plain["filtered"]
    hooked = json.loads(run_script(tmp_path, WARNING_PLACE, compile=policy, mode="trace").stdout)
    assert hooked["places"] == plain["places"] and hooked["filtered"]
    if policy != "eager":  # still compiled, no graph break
        assert (hooked["graphs"], hooked["breaks"]) == (plain["graphs"], 0)


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
