"""OPHOOK_NAN (warn/raise) and @ophook.override rules at the torch levels, and the seeds' hijack
example (aten.mm by NumPy). Real programs in subprocesses under LD_PRELOAD; what they report and
record is checked against the program's own lines and recomputed values."""
import numpy as np
import pytest

from harness import EXAMPLES, arrays, load, ops, run, run_script, summary, trace

# A NaN planted deep in a model: log of a negative activation inside a nested module.
MODEL = """\
import torch
from torch import nn


class Features(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        h = self.proj(x)
        return torch.log(h)  # NaN where h < 0


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Tanh(), Features())
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(torch.nan_to_num(self.encoder(x)))
"""
LOG_LINE = next(i for i, line in enumerate(MODEL.splitlines(), 1) if "torch.log" in line)

PROGRAM = """
import torch
from model import Net

torch.manual_seed(0)
net = Net()
with torch.no_grad():
    net.encoder[1].proj.weight.copy_(torch.eye(4))
    net.encoder[1].proj.bias.zero_()
x = torch.linspace(-2.0, 2.0, 8).reshape(2, 4)
print(net(x).shape)
"""
NAME = {"torch_function": "torch.log", "torch_dispatch": "aten.log.default"}


def run_model(tmp_path, level, nan, **settings):
    (tmp_path / "model.py").write_text(MODEL)
    return run_script(tmp_path, PROGRAM, levels=level, nan=nan, **settings)


@pytest.mark.parametrize("level", ["torch_function", "torch_dispatch"])
def test_nan_warn_names_the_op_line_module_and_phase(tmp_path, level):
    proc = run_model(tmp_path, level, "warn", mode="trace")
    assert proc.stdout == "torch.Size([2, 2])\n"
    records = trace(tmp_path / "out")
    (log,) = ops(records, NAME[level])
    where = "%s:%d:forward" % (tmp_path / "model.py", LOG_LINE)
    (warning,) = [line for line in proc.stderr.splitlines() if "NaN/Inf" in line]
    assert warning.endswith("seq %d %s at %s in module Net.encoder.1 (forward)" % (log["seq"], NAME[level], where))
    first = summary(tmp_path / "out")["first_nonfinite"]
    assert first == {"seq": log["seq"], "op": NAME[level], "step": 0, "t_ns": log["t_ns"], "source": where,
                     "module": "Net.encoder.1", "phase": "forward", "after_collective": {}}  # no collectives
    assert log["source"] == where and log["module"] == "Net.encoder.1" and log["phase"] == "forward"
    counts = summary(tmp_path / "out")["ops"]
    assert counts[NAME[level]]["nonfinite"] == 1
    assert sum(op["nonfinite"] for op in counts.values()) == 1  # nan_to_num's NaN input is not fresh


@pytest.mark.parametrize("level", ["torch_function", "torch_dispatch"])
def test_nan_raise_stops_at_the_users_line_after_writing_the_record(tmp_path, level):
    proc = run_model(tmp_path, level, "raise", check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith("FloatingPointError"))
    assert lines[end].startswith("FloatingPointError: ophook: %s produced NaN/Inf from finite inputs" % NAME[level])
    frames = [line.strip() for line in lines[:end] if line.strip().startswith('File "')]
    assert frames[-1] == 'File "%s", line %d, in forward' % (tmp_path / "model.py", LOG_LINE)
    (log,) = ops(trace(tmp_path / "out"), NAME[level])
    (h,) = arrays(log)
    (produced,) = arrays(log, "outputs")
    expected_h = np.tanh(np.linspace(-2.0, 2.0, 8, dtype=np.float32).reshape(2, 4))
    np.testing.assert_allclose(load(tmp_path / "out", h), expected_h, rtol=1e-6)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(load(tmp_path / "out", produced), np.log(load(tmp_path / "out", h)), rtol=1e-6)
    assert np.isnan(load(tmp_path / "out", produced)).sum() == 4


# NaN/Inf that is no finding: what torch.empty hands out (deterministic mode fills it with NaN,
# as the allocator sometimes does by chance), and NaN/Inf the program passes as a float.
INTENDED_NAN = """
import torch
torch.use_deterministic_algorithms(True)
print(int(torch.empty(3).isnan().sum()), torch.nn.Linear(4, 4).weight.isfinite().all().item())
mask = torch.tensor([[True, False, False]])
print(torch.zeros(1, 3).masked_fill(mask, float("-inf")).softmax(-1).tolist())
print(torch.full((2,), float("nan")).isnan().all().item())
print(torch.log(torch.tensor([-1.0])))
"""


@pytest.mark.parametrize("level", ["torch_function", "torch_dispatch"])
def test_uninitialized_memory_and_nan_arguments_are_no_finding(tmp_path, level):
    plain = run_script(tmp_path, INTENDED_NAN, preload=False)
    proc = run_script(tmp_path, INTENDED_NAN, levels=level, nan="raise", mode="dump", check=False)
    assert proc.returncode == 1
    assert plain.stdout == proc.stdout + "tensor([nan])\n"
    assert proc.stdout == "3 True\n[[0.0, 0.5, 0.5]]\nTrue\n"
    log_op = NAME[level]
    (error,) = [line for line in proc.stderr.splitlines() if line.startswith("FloatingPointError")]
    assert error.startswith("FloatingPointError: ophook: %s produced" % log_op)
    records = trace(tmp_path / "out")
    empties = [r for r in records if r["op"].split(".")[-2 if level == "torch_dispatch" else -1] == "empty"]
    assert empties, "torch.empty was not recorded"
    (empty_out,) = arrays(empties[0], "outputs")
    assert np.isnan(load(tmp_path / "out", empty_out)).all()  # the hook saw the NaN and let it be
    counts = summary(tmp_path / "out")["ops"]
    assert {op for op, c in counts.items() if c["nonfinite"]} == {log_op}
    assert summary(tmp_path / "out")["first_nonfinite"]["op"] == log_op


# The backward check (OPHOOK_NAN with the default levels) hooks the autograd nodes of each
# backward pass and must take the hooks off again: one left behind would check its node once more
# at every later pass through a retained graph, and run where the program never asked for it.
# The program's own hook on the loss's node shares that node's hook dict with ophook's.
BACKWARDS = """
import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
w = torch.randn(8, 8, requires_grad=True)
for step in range(4):
    loss = (torch.randn(2, 8) @ w).sum()
    hooks = loss.grad_fn.register_hook(lambda returned, received: None).hooks_dict_ref()
    loss.backward(retain_graph=True)
    after_first = len(hooks)
    loss.backward()
    torch.autograd.grad((w * 2.0).sum(), w)
    print(step, len(_get_current_dispatch_mode_stack()), after_first, len(hooks))
"""


def test_backward_check_leaves_the_graph_as_it_was(tmp_path):
    plain = run_script(tmp_path, BACKWARDS, preload=False)
    for mode in ("trace", "stats"):
        hooked = run_script(tmp_path, BACKWARDS, nan="warn", mode=mode)
        assert hooked.stdout == plain.stdout == "".join("%d 0 1 1\n" % step for step in range(4))
        assert "cannot hook" not in hooked.stderr


# One Root class in two places: each backward pass plants the NaN's birth (the gradient of sqrt
# at 0 is Inf) in one of them, or at the top level, or in a forward run on another thread.
BACKWARD_MODULES = """
import threading
import torch
from torch import nn

class Root(nn.Module):
    def forward(self, x):
        return x + torch.sqrt(x - x.detach())

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.root = Root()

    def forward(self, x, plant):
        h = torch.relu(self.fc(x))
        return self.root(h) if plant else h * 2

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.head = Block(), Block(), nn.Linear(4, 1)

    def forward(self, x, where):
        return self.head(self.b(self.a(x, where == "a"), where == "b"))

torch.manual_seed(0)
net, x = Net(), torch.randn(8, 4)

def backward(out):
    net.zero_grad()
    out.sum().backward()
    print(bool(torch.isfinite(net.a.fc.weight.grad).all()), end=" ")

backward(net(x, "b"))
backward(net(x, "a"))
made = []
worker = threading.Thread(target=lambda: made.append(net(x, "b")))
worker.start()
worker.join()
backward(made[0])                       # the forward ran on another thread
backward(net(x, "b"))                   # and again on this one alone
out = net(x, None)
backward(out + torch.sqrt(out - out.detach()))  # made outside any module
print()
"""


def test_a_backward_culprit_is_named_by_the_module_whose_forward_made_it(tmp_path):
    plain = run_script(tmp_path, BACKWARD_MODULES, preload=False)
    assert plain.stdout == "False False False False False \n"
    hooked = run_script(tmp_path, BACKWARD_MODULES, nan="warn", mode="trace")
    assert hooked.stdout == plain.stdout
    culprits = [r for r in trace(tmp_path / "out") if r["level"] == "torch_dispatch"]
    assert [r["op"] for r in culprits] == ["autograd.SqrtBackward0"] * 5
    assert [r["phase"] for r in culprits] == ["backward"] * 5
    # Counters of two threads overlap: a pass after another thread's forward names no module
    # rather than a wrong one.
    assert [r["module"] for r in culprits] == ["Net.b.root", "Net.a.root", None, "Net.b.root", None]
    # OPHOOK_MODULES: the nodes of other modules (and of none) are not hooked.
    selected = run_script(tmp_path, BACKWARD_MODULES, nan="warn", mode="trace", modules=r"^Net\.a\b")
    assert selected.stdout == plain.stdout
    culprits = [r for r in trace(tmp_path / "out") if r["level"] == "torch_dispatch"]
    assert [(r["op"], r["module"]) for r in culprits] == [("autograd.SqrtBackward0", "Net.a.root")]


# Backward module attribution hooks every module forward's gradients; torch's
# register_multi_grad_hook left an uncollectable cycle through autograd's C++ nodes at every one
# (a depth-6 model grew by about 400 objects a step, for good).
DEEP_TRAINING = """
import gc
import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(*[m for _ in range(6) for m in (nn.Linear(16, 16), nn.LayerNorm(16), nn.GELU())], nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(4, 16), torch.randn(4, 2)


def step():
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def alive():
    gc.collect()
    return len(gc.get_objects())


def steps():
    for _ in range(40):
        loss = step()
    for _ in range(40):
        model(x)  # an evaluation that forgot torch.no_grad(): a graph built and never run
    return loss


loss = steps()  # what one step's graph holds (the last loss keeps it) is counted at both ends
before = alive()
loss = steps()
print(float(loss), alive() - before)
"""


@pytest.mark.parametrize("levels", ["torch_function", "torch_function,torch_dispatch"])
def test_backward_module_hooks_leave_nothing_behind(tmp_path, levels):
    plain = run_script(tmp_path, DEEP_TRAINING, preload=False)
    hooked = run_script(tmp_path, DEEP_TRAINING, nan="warn", mode="trace", levels=levels)
    plain_loss, plain_growth = plain.stdout.split()
    hooked_loss, hooked_growth = hooked.stdout.split()
    assert hooked_loss == plain_loss
    # 40 steps of this model (and 40 forwards): what a step leaves grows by hundreds of objects.
    assert int(hooked_growth) <= int(plain_growth) + 100, (plain_growth, hooked_growth)


RULES = """
import ophook, torch

@ophook.override("aten.mm.default")
def mm_plus_1000(original, a, b):
    return original(a, b) + 1000 if a.numel() >= 4 else original(a, b)   # conditional

@ophook.override("torch.nn.functional.relu")
def relu_times_10(original, x, *args, **kwargs):
    return original(x, *args, **kwargs) * 10

@ophook.override("aten.sub.Tensor")
def refusing_sub(original, *args, **kwargs):
    raise ZeroDivisionError("rule says no")

@ophook.override("torch.Tensor.div")
def refusing_div(original, *args, **kwargs):
    raise ZeroDivisionError("rule says no")

@ophook.override("aten.mul.Tensor")
def list_for_mul(original, a, b):
    return [1.0, 2.0]

@ophook.override("aten.cos.default")
def wrong_shape_cos(original, x):
    return original(x).reshape(-1)[:1]
"""

OVERRIDDEN_PROGRAM = """
import torch
print(torch.mm(torch.ones(2, 2), torch.ones(2, 2)).tolist(), torch.mm(torch.ones(1, 1), torch.ones(1, 1)).tolist())
print(torch.nn.functional.relu(torch.tensor([-1.0, 2.0])).tolist())
for name, call in [("sub", lambda: torch.ones(2) - 1), ("div", lambda: torch.ones(2).div(2)),
                   ("mul", lambda: torch.mul(torch.ones(2), 3)), ("cos", lambda: torch.cos(torch.zeros(2, 2)))]:
    try:
        call()
    except Exception as e:
        print(name, type(e).__name__, e)
"""


@pytest.mark.parametrize("include", [None, "^$"])
def test_overrides_at_both_torch_levels(tmp_path, include):
    (tmp_path / "rules.py").write_text(RULES)
    settings = {"include": include} if include else {}  # "^$": pure hijacking, nothing recorded
    proc = run_script(tmp_path, OVERRIDDEN_PROGRAM, levels="torch_function,torch_dispatch", nested=1, mode="dump",
                      overrides=tmp_path / "rules.py", **settings)
    lines = proc.stdout.splitlines()
    assert lines[:4] == ["[[1002.0, 1002.0], [1002.0, 1002.0]] [[1.0]]", "[0.0, 20.0]",
                         "sub ZeroDivisionError rule says no", "div ZeroDivisionError rule says no"]
    assert lines[4].startswith("mul TypeError ophook override list_for_mul (rules.py:")
    assert "for aten.mul.Tensor returned list; the op returns a Tensor" in lines[4]
    assert lines[5].startswith("cos TypeError ophook override wrong_shape_cos (rules.py:")
    assert "for aten.cos.default returned shape (1,); the op returns shape (2, 2)" in lines[5]
    records = trace(tmp_path / "out")
    if include:
        assert records == []
        return
    mms = ops(records, "aten.mm.default")
    assert [r["overridden"] for r in mms] == [True, True]
    big = mms[0]
    a, b = (load(tmp_path / "out", v) for v in arrays(big))
    assert np.array_equal(load(tmp_path / "out", arrays(big, "outputs")[0]), a @ b + 1000)  # what the rule returned
    (relu,) = ops(records, "torch.nn.functional.relu")
    assert relu["overridden"] is True and load(tmp_path / "out", arrays(relu, "outputs")[0]).tolist() == [0, 20]
    (sub,) = ops(records, "aten.sub.Tensor")
    assert sub["error"] == "ZeroDivisionError: rule says no" and sub["outputs"] == [] and sub["overridden"]
    (div,) = ops(records, "torch.Tensor.div")
    assert div["error"] == "ZeroDivisionError: rule says no" and div["overridden"]
    assert all(not r.get("overridden") for r in ops(records, "torch.mm") + ops(records, "torch.ones"))


def test_hijack_mm_example(tmp_path):
    """The seeds' scenario: aten.mm by NumPy, verified against native torch.mm (float32, float64),
    with both kinds of call recorded."""
    proc = run([EXAMPLES / "hijack_mm.py"], cwd=tmp_path, levels="torch_dispatch", mode="dump",
               overrides=EXAMPLES / "rules_numpy_mm.py")
    assert proc.stdout.splitlines()[-1] == "hijacked 6 aten.mm calls; every result matches native torch.mm"
    mms = ops(trace(tmp_path / "out"), "aten.mm.default")
    assert len(mms) == 12 and all(r["overridden"] for r in mms)  # the rule handled all, falling through for 6
    for record in mms:
        a, b = (load(tmp_path / "out", v) for v in arrays(record))
        (out,) = arrays(record, "outputs")
        assert out["dtype"] in ("float32", "float64") and out["dtype"] == arrays(record)[0]["dtype"]
        np.testing.assert_allclose(load(tmp_path / "out", out), a @ b, rtol=1e-5, atol=1e-5)


def test_hijack_mm_example_says_how_to_run_it(tmp_path):
    proc = run([EXAMPLES / "hijack_mm.py"], cwd=tmp_path, preload=False, check=False)
    assert proc.returncode == 1 and "OPHOOK_OVERRIDES=examples/rules_numpy_mm.py" in proc.stderr
    # an aten rule without the torch_dispatch level: ophook warns, the example says what went wrong
    proc = run([EXAMPLES / "hijack_mm.py"], cwd=tmp_path, check=False, overrides=EXAMPLES / "rules_numpy_mm.py")
    assert proc.returncode == 1 and "torch.mm was not hijacked" in proc.stderr
    assert "override for aten.mm.default inactive: OPHOOK_LEVELS does not include torch_dispatch" in proc.stderr
