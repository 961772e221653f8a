"""The monitor alone keeps its torch_function mode on the stack only where backward() is called
(src/python/torch/backward_window.hpp): inside a module's forward and an optimizer's step the
program sees the function mode stack it has unhooked, its own mode included, while every step's
loss still reaches monitor.jsonl. A program that calls backward() inside its module's forward keeps
the mode on from its first step: every later step has its loss. Real programs under LD_PRELOAD,
compared with their unhooked runs."""
import json

import pytest

from harness import monitor_lines, run_script

PROGRAM = """
import json, os, sys
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode, _get_current_function_mode_stack

SCENARIO = os.environ["SCENARIO"]


class Counting(TorchFunctionMode):
    calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        Counting.calls += 1
        return func(*args, **(kwargs or {}))


def stack():
    return ",".join(type(mode).__name__ for mode in _get_current_function_mode_stack())


stacks = {"forward": set(), "step": set()}


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden, self.out = torch.nn.Linear(8, 16), torch.nn.Linear(16, 1)

    def forward(self, x):
        stacks["forward"].add(stack())
        return self.out(torch.relu(self.hidden(x)))


class Trainer(torch.nn.Module):  # the whole step inside a forward
    def __init__(self, net, opt):
        super().__init__()
        self.net, self.opt = net, opt

    def forward(self, x, y):
        loss = F.mse_loss(self.net(x), y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss


torch.manual_seed(0)
net = Net()
opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
opt.register_step_pre_hook(lambda optimizer, args, kwargs: stacks["step"].add(stack()))
trainer = Trainer(net, opt)
losses = []


def train():
    for step in range(6):
        x = torch.randn(32, 8)
        y = x.sum(1, keepdim=True).sin()
        if SCENARIO == "inside":
            loss = trainer(x, y)
        else:
            loss = F.mse_loss(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        losses.append(loss.item())


if SCENARIO == "own_mode":
    with Counting():
        train()
else:
    train()
print(json.dumps({"losses": losses, "stacks": {k: sorted(v) for k, v in stacks.items()},
                  "own_mode_calls": Counting.calls,
                  "weights": [float(p.sum()) for p in net.parameters()]}))
"""


def runs(tmp_path, scenario):
    hooked = run_script(tmp_path, PROGRAM, monitor="1", env={"SCENARIO": scenario})
    plain = run_script(tmp_path, PROGRAM, preload=False, env={"SCENARIO": scenario})
    return json.loads(hooked.stdout), json.loads(plain.stdout), monitor_lines(tmp_path / "out")


@pytest.mark.parametrize("scenario", ["plain", "own_mode"])
def test_forward_and_step_see_the_stack_they_have_unhooked(tmp_path, scenario):
    hooked, plain, lines = runs(tmp_path, scenario)
    assert hooked["stacks"] == plain["stacks"], (hooked["stacks"], plain["stacks"])
    assert hooked["own_mode_calls"] == plain["own_mode_calls"]
    assert hooked["losses"] == plain["losses"] and hooked["weights"] == plain["weights"]
    if scenario == "own_mode":
        assert plain["stacks"]["forward"] == ["Counting"] and plain["own_mode_calls"] > 0
    assert [line["loss"] for line in lines] == pytest.approx(plain["losses"], rel=1e-6)
    assert all(line["backward_calls"] == 1 for line in lines)


def test_backward_inside_a_forward_keeps_the_mode_on_after_the_first_step(tmp_path):
    hooked, plain, lines = runs(tmp_path, "inside")
    assert hooked["losses"] == plain["losses"] and hooked["weights"] == plain["weights"]
    assert [line["step"] for line in lines] == list(range(6))
    # The first step's backward() ran with the mode aside; from the second on the mode stays.
    assert lines[0]["loss"] is None and lines[0]["backward_calls"] == 0
    assert [line["loss"] for line in lines[1:]] == pytest.approx(plain["losses"][1:], rel=1e-6)
