"""The training monitor (python_shim/ophook/_monitor, OPHOOK_MONITOR): an MLP trained by AdamW from
a DataLoader, with the batch of step 12 scaled by 1e3. monitor.jsonl holds one line per optimizer
step whose values equal the program's own recomputation (the loss, each parameter's weight,
gradient and update norms, the global gradient norm, the learning rate); loss:6sigma fires at step 12
and at no step before; a loss that drifts slowly fires nothing; a bad rule fails at start, naming
what is accepted; the program computes what it computes unhooked. Parameters of every kind (float64
read in C++, bfloat16 and a strided view read by torch) equal their recomputation, a clamp between
steps included; a lazily negated output is read as the values it stands for."""
import json
import math

import pytest

from cli_fixtures import run_ophook
from harness import monitor_lines, run_script, summary

# REFERENCE=path: the program writes, per step, what the monitor should find, computed from its own
# tensors (under the monitor alone no op is recorded, so these computations are not seen).
PROGRAM = """
import json, os, sys
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
SPIKE = int(os.environ.get("SPIKE_STEP", "-1"))
DRIFT = float(os.environ.get("DRIFT", "0"))
x = torch.randn(512, 16)
y = (x @ torch.randn(16, 1)).tanh()
loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
names = ["Sequential." + n for n, _ in model.named_parameters()]
reference = []
step = 0
for epoch in range(2):
    for xb, yb in loader:
        if step == SPIKE:
            xb = xb * 1e3
        yb = yb + DRIFT * step
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        before = [p.detach().clone() for p in model.parameters()]
        grads = [p.grad.detach().clone() for p in model.parameters()]
        opt.step()
        with torch.no_grad():
            params = {}
            for name, p, b, g in zip(names, model.parameters(), before, grads):
                params[name] = {"norm": p.norm().item(), "grad_norm": g.norm().item(),
                                "update_norm": (p - b).norm().item(), "max": p.max().item(), "grad_min": g.min().item()}
            total = torch.stack([g.norm() for g in grads]).norm().item()
        reference.append({"loss": loss.item(), "grad_norm": total, "params": params})
        step += 1
        if step == 24:
            break
if os.environ.get("REFERENCE"):
    json.dump(reference, open(os.environ["REFERENCE"], "w"))
sys.stdout.write("final %r\\n" % [float(p.sum()) for p in model.parameters()])
"""


def close(a, b, rel=1e-5):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-7)


@pytest.fixture(scope="module")
def spiked(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("spiked")
    proc = run_script(tmp, PROGRAM, monitor="1", monitor_trigger="loss:6sigma",
                      env={"SPIKE_STEP": "12", "REFERENCE": str(tmp / "reference.json")})
    return tmp, proc


def test_monitor_values_equal_the_programs_recomputation(spiked):
    tmp, _ = spiked
    reference = json.loads((tmp / "reference.json").read_text())
    lines = monitor_lines(tmp / "out")
    assert [line["step"] for line in lines] == list(range(24))
    for line, want in zip(lines, reference):
        assert close(line["loss"], want["loss"]), (line["step"], line["loss"], want["loss"])
        assert close(line["grad_norm"], want["grad_norm"]), line["step"]
        assert line["backward_calls"] == 1
        assert set(line["params"]) == set(want["params"])
        for name, stats in line["params"].items():
            expected = want["params"][name]
            for stat in ("norm", "grad_norm", "max", "grad_min"):
                assert close(stats[stat], expected[stat]), (line["step"], name, stat, stats[stat], expected[stat])
            assert close(stats["update_ratio"], expected["update_norm"] / expected["norm"], rel=1e-4), (name, stats)
            assert stats["lr"] == 1e-2 and stats["nan"] == stats["grad_inf"] == 0


def test_the_spike_fires_at_its_step_and_not_before(spiked):
    tmp, proc = spiked
    lines = monitor_lines(tmp / "out")
    fired = [line["step"] for line in lines if line.get("triggers")]
    assert fired and fired[0] == 12, fired
    trigger = lines[12]["triggers"][0]
    assert trigger["rule"] == "loss:6sigma" and trigger["statistic"] == "loss" and trigger["sigmas"] > 6
    assert "monitor: step 12: loss" in proc.stderr
    note = summary(tmp / "out")["notes"]["monitor"]
    note = json.loads(note) if isinstance(note, str) else note
    assert note["steps"] == 24 and note["triggers"][0]["step"] == 12
    trace = (tmp / "out" / "trace.jsonl")
    assert not trace.exists() or not trace.read_text().strip()  # the monitor alone records no op


def test_the_program_computes_what_it_computes_unhooked(spiked, tmp_path):
    _, hooked = spiked
    plain = run_script(tmp_path, PROGRAM, preload=False, env={"SPIKE_STEP": "12"})
    assert hooked.stdout == plain.stdout


def test_a_slow_drift_fires_nothing(tmp_path):
    run_script(tmp_path, PROGRAM, monitor="1", monitor_trigger="loss:6sigma,grad_norm:10x", env={"DRIFT": "0.2"})
    lines = monitor_lines(tmp_path / "out")
    assert len(lines) == 24 and not [line["step"] for line in lines if line.get("triggers")]
    assert lines[-1]["loss"] > 2 * lines[5]["loss"]  # it did drift


@pytest.mark.parametrize("rule", ["loss:6", "los:6sigma", "fc1.weight.gradnorm:3x", "loss:-2sigma"])
def test_a_bad_rule_fails_at_start_naming_what_is_accepted(tmp_path, rule):
    proc = run_script(tmp_path, PROGRAM, check=False, monitor="1", monitor_trigger=rule, strict="1")
    assert proc.returncode == 2
    assert "OPHOOK_MONITOR_TRIGGER='%s' is not valid" % rule in proc.stderr
    assert "STATISTIC:Nsigma" in proc.stderr and "update_ratio" in proc.stderr


def test_a_run_without_an_optimizer_says_what_it_could_not_monitor(tmp_path):
    program = "import torch\nw = torch.ones(3, requires_grad=True)\n(w * 2).sum().backward()\n"
    proc = run_script(tmp_path, program, monitor="1")
    assert "monitor: no optimizer step ran: nothing was monitored" in proc.stderr
    note = summary(tmp_path / "out")["notes"]["monitor"]
    note = json.loads(note) if isinstance(note, str) else note
    assert note["steps"] == 0 and "no optimizer step ran" in note["missing"]
    assert not (tmp_path / "out" / "monitor.jsonl").exists()


def test_the_report_names_the_op_that_made_the_spike(tmp_path):
    run_script(tmp_path, PROGRAM, monitor="1", mode="stats", monitor_trigger="loss:6sigma", env={"SPIKE_STEP": "12"})
    lines = monitor_lines(tmp_path / "out")
    assert [line["step"] for line in lines if line.get("triggers")][:1] == [12]
    report = run_ophook("report", tmp_path / "out")
    assert report.returncode == 0, report.stderr
    assert "24 steps (0-23), 1 trigger" in report.stdout, report.stdout
    moved = next(line for line in report.stdout.splitlines() if "moved most: " in line)
    first = moved.split("moved most: ")[1].split("; ")[0]  # the gradient that spiked, at its step
    assert first.startswith("Sequential.") and ".grad_norm " in first and first.endswith("(top at step 12)"), moved
    made_by = next(line for line in report.stdout.splitlines() if "made by" in line)
    line_number = PROGRAM.splitlines().index(
        "        loss = torch.nn.functional.mse_loss(model(xb), yb)") + 1
    assert "op=torch.nn.functional.linear" in made_by and "module=Sequential.0" in made_by, made_by
    assert "/prog.py:%d:" % line_number in made_by and "phase=forward" in made_by, made_by


def test_a_killed_run_leaves_every_complete_step_whole(tmp_path):
    killed = PROGRAM.replace("        step += 1\n", "        step += 1\n"
                             "        if step == 15:\n            os.kill(os.getpid(), 9)\n")
    proc = run_script(tmp_path, killed, check=False, monitor="1")
    assert proc.returncode == -9
    lines = monitor_lines(tmp_path / "out")
    assert [line["step"] for line in lines] == list(range(15))


GPT2 = """
import json, os, sys
import torch
from torch.utils.data import DataLoader
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(vocab_size=96, n_positions=16, n_embd=32, n_layer=2, n_head=2))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
loader = DataLoader(torch.randint(0, 96, (320, 16)), batch_size=16)
reference = []
for step, ids in enumerate(loader):
    for group in opt.param_groups:
        group["lr"] = 1.0 if step == 14 else 1e-3  # the learning rate jumps for one step
    loss = model(input_ids=ids, labels=ids).loss
    opt.zero_grad()
    loss.backward()
    total = torch.nn.utils.get_total_norm([p.grad for p in model.parameters() if p.grad is not None]).item()
    opt.step()
    reference.append({"loss": loss.item(), "grad_norm": total})
json.dump(reference, open(os.environ["REFERENCE"], "w"))
sys.stdout.write("final %.6f\\n" % reference[-1]["loss"])
"""


def test_a_gpt2_from_a_config_fires_on_the_step_its_learning_rate_jumps(tmp_path):
    run_script(tmp_path, GPT2, monitor="1", monitor_trigger="*.update_ratio:10x",
               env={"REFERENCE": str(tmp_path / "reference.json")}, timeout=300)
    reference = json.loads((tmp_path / "reference.json").read_text())
    lines = monitor_lines(tmp_path / "out")
    assert len(lines) == len(reference) == 20
    for line, want in zip(lines, reference):
        assert close(line["loss"], want["loss"]) and close(line["grad_norm"], want["grad_norm"], rel=1e-4), line["step"]
    assert "GPT2LMHeadModel.transformer.h.1.attn.c_attn.weight" in lines[0]["params"]
    fired = sorted({line["step"] for line in lines if line.get("triggers")})
    assert fired and fired[0] == 14, fired
    assert all(t["statistic"].endswith(".update_ratio") for t in lines[14]["triggers"])


def test_tensorboard_reads_the_scalars_back(spiked):
    tmp, _ = spiked
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp / "out" / "tensorboard"))
    events.Reload()
    lines = monitor_lines(tmp / "out")
    loss = {event.step: event.value for event in events.Scalars("loss")}
    assert sorted(loss) == list(range(24))
    for line in lines:
        assert close(loss[line["step"]], line["loss"], rel=1e-6)
    grad_norms = events.Scalars("params/Sequential.0.weight/grad_norm")
    assert close(grad_norms[5].value, lines[5]["params"]["Sequential.0.weight"]["grad_norm"], rel=1e-6)


MODULES = """
import json, os
import torch

torch.manual_seed(0)
dtype = getattr(torch, os.environ["DTYPE"])  # float32: read in C++; bfloat16: by torch ops
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)).to(dtype)
opt = torch.optim.SGD(model.parameters(), lr=1e-2)
seen = {}

def keep(name):
    def hook(module, inputs, output):
        seen.setdefault(name, {})["act_norm"] = output.detach().norm().item()
        seen[name]["act_max"] = output.detach().max().item()
        output.register_hook(lambda grad: seen[name].__setitem__("act_grad_norm", grad.norm().item()))
    return hook

for index in (0, 2):
    model[index].register_forward_hook(keep("Sequential.%d" % index))
reference = []
for step in range(6):
    loss = model(torch.randn(8, 16, dtype=dtype)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    reference.append(json.loads(json.dumps(seen)))
json.dump(reference, open(os.environ["REFERENCE"], "w"))
"""


@pytest.mark.parametrize("dtype,rel", [("float32", 1e-5), ("bfloat16", 1e-2)])  # bfloat16's norms round
def test_module_activations_equal_the_programs_own_hooks(tmp_path, dtype, rel):
    run_script(tmp_path, MODULES, monitor="modules", env={"REFERENCE": str(tmp_path / "reference.json"), "DTYPE": dtype})
    reference = json.loads((tmp_path / "reference.json").read_text())
    lines = monitor_lines(tmp_path / "out")
    assert len(lines) == 6
    for line, want in zip(lines, reference):
        for name, stats in want.items():
            got = line["modules"][name]
            for stat, value in stats.items():
                assert close(got[stat], value, rel=rel), (line["step"], name, stat, got[stat], value)
            assert got["act_nonfinite"] == 0
        assert "Sequential" in line["modules"] and "Sequential.1" in line["modules"]  # the whole model, the ReLU


# Parameters of each kind the monitor reads: float64 (in C++), bfloat16 and a transposed float32
# view (by torch's multi-tensor ops); and a weight clamped between steps through .data, which
# autograd's version counter does not see: the next step's update holds the clamp.
KINDS = """
import json, os
import torch

torch.manual_seed(0)
model = torch.nn.ModuleDict({"wide": torch.nn.Linear(8, 8).double(), "narrow": torch.nn.Linear(8, 8).to(torch.bfloat16)})
model.register_parameter("strided", torch.nn.Parameter(torch.randn(8, 8).t()))
assert not model.strided.is_contiguous()
params = list(model.parameters())
opt = torch.optim.SGD(params, lr=0.1)
x = torch.randn(4, 8)
reference, kept = [], [p.detach().clone() for p in params]
for step in range(4):
    out = model["wide"](x.double()).float() + model["narrow"](x.to(torch.bfloat16)).float() + x @ model.strided
    loss = out.square().mean()
    opt.zero_grad()
    loss.backward()
    grads = [p.grad.detach().clone() for p in params]
    before = [p.detach().clone() for p in params]
    opt.step()
    with torch.no_grad():
        reference.append([{"dtype": str(p.dtype), "norm": p.double().norm().item(), "grad_norm": g.double().norm().item(),
                           "update_norm": (p.double() - k.double()).norm().item(), "min": p.min().item(),
                           "max": p.max().item(), "step_only": (p.double() - b.double()).norm().item()}
                          for p, g, k, b in zip(params, grads, kept, before)])
        kept = [p.detach().clone() for p in params]
        model["wide"].weight.data.clamp_(-0.2, 0.2)
json.dump(reference, open(os.environ["REFERENCE"], "w"))
"""


def test_every_kind_of_parameter_equals_the_programs_recomputation(tmp_path):
    run_script(tmp_path, KINDS, monitor="1", env={"REFERENCE": str(tmp_path / "reference.json")})
    reference = json.loads((tmp_path / "reference.json").read_text())
    lines = monitor_lines(tmp_path / "out")
    assert len(lines) == len(reference) == 4
    for line, want in zip(lines, reference):
        assert len(line["params"]) == len(want) == 5
        for (name, stats), expected in zip(line["params"].items(), want):
            # bfloat16's norms are computed, and rounded, in bfloat16 (torch._foreach_norm)
            rel = 1e-2 if expected["dtype"] == "torch.bfloat16" else 1e-6
            for stat in ("norm", "grad_norm", "min", "max"):
                assert close(stats[stat], expected[stat], rel=rel), (line["step"], name, stat, stats[stat], expected)
            update = stats["update_ratio"] * stats["norm"]
            assert close(update, expected["update_norm"], rel=2 * rel), (line["step"], name, update, expected)
    # the clamp moved the float64 weight between steps 0 and 1: step 1's update holds more than the step's
    wide = [next(p for p in step if p["dtype"] == "torch.float64") for step in reference]  # wide.weight: the first
    assert wide[0]["update_norm"] == wide[0]["step_only"]
    assert wide[1]["update_norm"] > 1.5 * wide[1]["step_only"], wide  # the first clamp cuts the most


NAN_STEP = """
import torch

torch.manual_seed(0)
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    x = torch.randn(8, 4)
    if step == 2:
        x[0, 0] = float("nan")  # the loss, every gradient and then every weight become NaN
    loss = model(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_nan_step_is_written_null_with_what_was_not_finite_counted(tmp_path):
    run_script(tmp_path, NAN_STEP, monitor="1")
    lines = monitor_lines(tmp_path / "out")
    assert [line["step"] for line in lines] == [0, 1, 2, 3]
    assert "nonfinite" not in lines[1] and lines[1]["loss"] is not None
    nan_step = lines[2]
    assert nan_step["loss"] is None and nan_step["nonfinite"]["loss"] == "nan"
    weight = nan_step["params"]["Linear.weight"]
    assert weight["norm"] is None and weight["grad_norm"] is None
    assert weight["grad_nan"] == 8 and weight["nan"] == 8 and weight["inf"] == 0  # all 2 x 4 elements
    assert nan_step["nonfinite"]["Linear.weight.norm"] == "nan"


NEGATED = """
import json, os
import torch


class Negated(torch.nn.Module):
    def forward(self, x):
        return torch._neg_view(x)  # contiguous, its memory holding -output: torch's lazy negation


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 4), Negated())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
seen = []
model[1].register_forward_hook(lambda module, inputs, output: seen.append(output.detach().clone().max().item()))
loss = model(torch.randn(8, 4)).square().mean()
loss.backward()
opt.step()
json.dump(seen, open(os.environ["REFERENCE"], "w"))
"""


def test_a_lazily_negated_output_is_read_as_the_values_it_stands_for(tmp_path):
    run_script(tmp_path, NEGATED, monitor="modules", env={"REFERENCE": str(tmp_path / "reference.json")})
    (expected,) = json.loads((tmp_path / "reference.json").read_text())
    (line,) = monitor_lines(tmp_path / "out")
    assert close(line["modules"]["Sequential.1"]["act_max"], expected), (line["modules"], expected)


COMPILED = """
import json, torch
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
x = torch.randn(256, 16); y = x.sum(1, keepdim=True).sin()
model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.GELU(), torch.nn.LayerNorm(64), torch.nn.Linear(64, 1))
compiled = torch.compile(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
losses = []
for xb, yb in DataLoader(TensorDataset(x, y), batch_size=32):
    loss = torch.nn.functional.mse_loss(compiled(xb), yb)
    opt.zero_grad(); loss.backward(); opt.step()
    losses.append(loss.item())
print(json.dumps(losses))
"""


def test_a_compiled_model_runs_compiled_under_the_monitor_alone(tmp_path):
    # Run eagerly (OPHOOK_COMPILE's default when ops are recorded), Inductor's float32 results differ
    # in their last bits: the same losses to the bit say the model ran compiled.
    hooked = run_script(tmp_path, COMPILED, monitor="1")
    plain = run_script(tmp_path, COMPILED, preload=False)
    assert hooked.stdout == plain.stdout
    losses = json.loads(plain.stdout)
    lines = monitor_lines(tmp_path / "out")
    assert [line["step"] for line in lines] == list(range(len(losses))) and len(losses) == 8
    assert all(close(line["loss"], loss, rel=1e-6) and line["backward_calls"] == 1 for line, loss in zip(lines, losses))
