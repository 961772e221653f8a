"""OPHOOK_COMPILE=ignore and =eager on real torch.compile programs: `ignore` leaves compiled modules
compiled exactly as unhooked (the same graphs, no graph break, the same results) and records only
the calls outside them; `eager` says once that compiled code ran eagerly and records every op; a
warning raised in an eager op keeps the program's line under every policy. Real programs in
subprocesses under LD_PRELOAD, compared with unhooked runs."""
import json

import pytest

from harness import run_script, trace

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
