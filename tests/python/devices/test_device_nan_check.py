"""OPHOOK_NAN=warn with the statistics kernel on the fake device: every call is judged as its
values arrive, oldest first, and the culprit, its warning, the run's first NaN/Inf and the ring's
files are the direct path's; calls whose values are all on the host wait for nothing; the
backward check reads no tensor of a node that only moves its gradient's elements."""
import ast
import re

import pytest

from device_programs import NAN_PROGRAM, PLANTED
from harness import arrays, ops, run_script, summary, trace


@pytest.mark.parametrize("where,levels,mode", [("forward", "torch_function", "trace"),
                                               ("forward", "torch_function,torch_dispatch", "trace"),
                                               ("forward", "torch_function", None),
                                               ("backward", "torch_function", None),
                                               ("forward", "torch_function", "dump")])
def test_kernel_nan_warn_names_the_culprit_of_the_direct_path(tmp_path, where, levels, mode):
    """OPHOOK_NAN=warn with the kernel's counts (trace), with its counts and the ring's bytes on
    the device (the default: dump with the ring), or with its counts and every tensor's bytes
    staged for the files (dump: the check takes the counts, not the bytes) arriving late: every
    call is judged as its values come in, oldest first — recorded calls and the backward ops no
    level records alike — and the culprit, its warning, the run's first NaN/Inf and the files are
    the direct path's; nothing waits but the run's end."""
    runs = {}
    for copy in ("auto", "fake-device"):
        (tmp_path / copy).mkdir()
        settings = {"mode": mode} if mode else {}
        proc = run_script(tmp_path / copy, NAN_PROGRAM.replace("PLANTED", PLANTED[where]), levels=levels, nan="warn",
                          tensor_copy=copy, **settings)
        here = str(tmp_path / copy)  # each run's own directory, out of what is compared
        warnings = [line.split("] ", 1)[1].replace(here, "") for line in proc.stderr.splitlines()
                    if "warning: first NaN/Inf" in line]
        first = summary(tmp_path / copy / "out")
        for key in ("source", "forward_source"):
            if first["first_nonfinite"].get(key):
                first["first_nonfinite"][key] = first["first_nonfinite"][key].replace(here, "")
        files = sorted(p.name for p in (tmp_path / copy / "out").glob("op_*.npy"))
        runs[copy] = (proc.stdout, warnings, first, files)
    (plain, direct_warnings, direct, direct_files), (out, kernel_warnings, kernel, kernel_files) = runs.values()
    assert out == plain and len(direct_warnings) == 1
    strip_seq = lambda text: re.sub(r"seq \d+ ", "", text)  # a backward culprit's seq is given when judged
    assert [strip_seq(w) for w in kernel_warnings] == [strip_seq(w) for w in direct_warnings]
    assert ("/prog.py:9:" if where == "forward" else "/prog.py:12:") in direct_warnings[0]  # backward's line
    assert ("(%s)" % where) in direct_warnings[0]
    same = lambda first: {k: v for k, v in first.items() if k not in ("seq", "t_ns")}  # each run's own clock
    culprit = same(direct["first_nonfinite"])
    assert same(kernel["first_nonfinite"]) == culprit and culprit["step"] == 2
    assert kernel_files == direct_files and (mode == "trace" or direct_files)  # the ring's dump
    # byte for byte (the fake device's ring: a backward culprit's from the part for unrecorded
    # calls), but for memory torch.empty left uninitialised, which differs from run to run
    for name in kernel_files:
        if not name.startswith(("op_torch.empty_output", "op_torch.nn.init.")):
            assert (tmp_path / "auto/out" / name).read_bytes() == (tmp_path / "fake-device/out" / name).read_bytes()
    assert kernel["notes"]["device_statistics"]["synchronizations"] <= 5  # the fake device's last launches


# Float calls the kernel reads, between calls that read nothing on a device (int tensors, shapes),
# then a NaN born in torch (judged later) right before an Inf born in NumPy (judged at once).
WAIT_FREE_PROGRAM = """
import numpy as np, torch
torch.manual_seed(0)
x = torch.rand(64, 64)
for i in range(300):
    x = torch.tanh(x * 1.01)
    index = torch.arange(64)  # int64: no NaN to count, nothing read
    x = x[index].view(64, 64)
y = torch.log(x - 5)
z = np.log(np.zeros(3))
print(float(x.sum()), bool(torch.isnan(y).all()), z.tolist())
"""


def test_warn_on_the_device_waits_for_nothing_at_calls_that_read_nothing_there(tmp_path):
    """OPHOOK_NAN=warn with the kernel: a call whose values are all on the host (an int tensor the
    check does not read, a NumPy call) is judged at once without waiting for the device's results
    of the calls before it, unless it is a culprit: then those earlier calls are judged first, and
    the first culprit in seq order is still the one named."""
    proc = run_script(tmp_path, WAIT_FREE_PROGRAM, levels="numpy,torch_function", nan="warn", mode="trace",
                      tensor_copy="fake-device")
    out = tmp_path / "out"
    first = summary(out)["first_nonfinite"]
    assert first["op"] == "torch.log" and "/prog.py:9:" in first["source"], first
    warnings = [line for line in proc.stderr.splitlines() if "warning: first NaN/Inf" in line]
    assert len(warnings) == 1 and "torch.log" in warnings[0], proc.stderr
    note = summary(out)["notes"]["device_statistics"]
    assert len(ops(trace(out), "torch.arange")) == 300
    assert note["synchronizations"] <= 10, note  # the culprit's and the last launches', not one per arange (900)
    (tmp_path / "plain").mkdir()
    assert proc.stdout == run_script(tmp_path / "plain", WAIT_FREE_PROGRAM, preload=False).stdout


# Backward passes full of views (t, view, detach, expand) beside ops that compute (mm, sum, tanh's).
VIEWS_PROGRAM = """
import torch
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
for step in range(3):
    x = torch.randn(5, 8)
    loss = net(x).view(-1).expand(2, 20).sum()
    net.zero_grad()
    COUNT
    loss.backward()
print(float(loss))
"""
# The same program unhooked, counting the floating gradients each autograd node receives and
# returns, by the node's name: what the check reads unless it passes the node by.
COUNT_NODES = """
from collections import Counter
tally = globals().setdefault("tally", Counter())
def visit(node, seen):
    if node is None or node in seen: return
    seen.add(node)
    name = type(node).__name__
    node.register_hook(lambda returned, received, name=name: tally.update(
        {name: sum(g is not None and g.is_floating_point() for g in returned + received)}))
    for next_node, _ in node.next_functions: visit(next_node, seen)
visit(loss.grad_fn, set())
import atexit; atexit.register(lambda: print(dict(tally)))
"""


def test_the_backward_check_reads_no_views_tensors(tmp_path):
    """OPHOOK_NAN's check of the backward pass passes by the autograd nodes that only move their
    gradient's elements (ViewBackward0, TBackward0…: a view's elements are its input's, so it
    never makes a NaN/Inf from finite inputs) and AccumulateGrad: the kernel reads the recorded
    calls' floating tensors and those every other node receives and returns — counted by an
    unhooked run that hooks every node itself — and no more."""
    run_script(tmp_path, VIEWS_PROGRAM.replace("COUNT", ""), nan="warn", mode="trace", tensor_copy="fake-device")
    (tmp_path / "plain").mkdir()
    plain = run_script(tmp_path / "plain", VIEWS_PROGRAM.replace("    COUNT", COUNT_NODES.replace("\n", "\n    ")),
                       preload=False)
    per_node = ast.literal_eval(plain.stdout.splitlines()[-1])
    passed_by = {"ViewBackward0", "TBackward0", "AccumulateGrad"}
    assert passed_by <= set(per_node) and per_node["ViewBackward0"] > 0, per_node
    checked = sum(count for name, count in per_node.items() if name not in passed_by)
    floating = lambda record: [a for a in arrays(record) + arrays(record, "outputs")
                               if a["dtype"].startswith(("float", "bfloat", "complex"))]
    out = tmp_path / "out"
    expected = sum(len(floating(r)) for r in trace(out)) + checked
    note = summary(out)["notes"]["device_statistics"]
    # the recorded view's output is answered by its input's read (reads_shared), not read again
    assert note["tensors_read"] + note["reads_shared"] == expected and note["reads_shared"] == 3, (note, per_node)
