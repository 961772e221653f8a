"""What is recorded: operator calls, not accessors or set-up; only the steps, ranks and
modules asked for; the optimizer's phase and the step of each call. Real programs under LD_PRELOAD,
their results compared with unhooked runs."""
import json
import socket
from collections import Counter

import pytest

from cli_fixtures import run_ophook
from harness import run, run_script, summary, trace

# Three optimizer steps of a three-layer model; the program prints its losses and parameters.
TRAINING = """
import json, torch
from torch import nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return x

torch.manual_seed(0)
model = Model()
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
x, y = torch.randn(8, 4), torch.randn(8, 4)
losses = []
for step in range(3):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    losses.append(loss.item())
print(json.dumps({"losses": losses, "weight": model.layers[1].weight.tolist(),
                  "requires_grad": model.layers[0].weight.requires_grad}))
"""


@pytest.fixture(scope="module")
def unhooked(tmp_path_factory):
    return run_script(tmp_path_factory.mktemp("plain"), TRAINING, preload=False).stdout


def steps_of(records):
    return sorted({r["step"] for r in records})


def test_steps_count_optimizer_steps_and_select_them(tmp_path, unhooked):
    everything = run_script(tmp_path, TRAINING, mode="trace", levels="torch_function,torch_dispatch",
                            env={"OPHOOK_OUTPUT": str(tmp_path / "all")})
    assert everything.stdout == unhooked
    records = trace(tmp_path / "all")
    assert steps_of(records) == [0, 1, 2, 3]  # step 3: the calls after the last update
    update = [r for r in records if r["phase"] == "optimizer"]
    assert update and {r["step"] for r in update} == {0, 1, 2}
    # SGD with momentum: the buffer's first clone, then mul_/add_ updates; no forward op in there
    functions = {r["op"] for r in update if r["level"] == "torch_function"}
    assert functions <= {"torch.Tensor.add_", "torch.Tensor.mul_", "torch.Tensor.clone", "torch.Tensor.detach",
                         "torch.clone"}, functions
    assert "torch.Tensor.add_" in functions
    # the report tells what the run consists of, counted from the same records
    report = run_ophook("report", tmp_path / "all").stdout

    def counted(field):  # most calls first, ties by name
        counts = sorted(Counter(r[field] for r in records if r[field]).items(), key=lambda kv: (-kv[1], kv[0]))
        return ", ".join("%s %d" % kv for kv in counts[:5])
    assert "levels         " + counted("level") in report, report
    assert "phases         " + counted("phase") in report, report
    assert "steps          0-3" in report
    assert "top modules    " + counted("module") in report, report
    second = run_script(tmp_path, TRAINING, mode="trace", levels="torch_function,torch_dispatch", steps="1")
    assert second.stdout == unhooked
    selected = trace(tmp_path / "out")
    assert steps_of(selected) == [1]
    # exactly the calls the full run made during step 1, in the same order
    expected = [(r["op"], r["phase"], r["module"]) for r in records if r["step"] == 1]
    assert [(r["op"], r["phase"], r["module"]) for r in selected] == expected
    assert summary(tmp_path / "out")["recorded"]["steps"] == "1"


def test_step_marks_steps_of_a_numpy_loop(tmp_path):
    run_script(tmp_path, """
        import numpy as np, ophook
        x = np.ones(3)
        for i in range(4):
            x = np.sqrt(x + i)
            ophook.step()
    """, mode="trace", steps="2-")
    records = trace(tmp_path / "out")
    assert [(r["op"], r["step"]) for r in records] == [("numpy.add", 2), ("numpy.sqrt", 2), ("numpy.add", 3),
                                                       ("numpy.sqrt", 3)]


def test_modules_records_only_calls_inside_the_matching_module(tmp_path, unhooked):
    proc = run_script(tmp_path, TRAINING, mode="trace", levels="torch_function,torch_dispatch",
                      modules=r"layers\.1\b")
    assert proc.stdout == unhooked
    records = trace(tmp_path / "out")
    assert {r["module"] for r in records} == {"Model.layers.1"}
    phases = {r["phase"] for r in records}
    assert phases == {"forward", "backward"}
    ops = {(r["level"], r["op"]) for r in records}
    assert ("torch_function", "torch.nn.functional.linear") in ops
    assert ("torch_dispatch", "aten.addmm.default") in ops and ("torch_dispatch", "aten.mm.default") in ops
    per_step = [len([r for r in records if r["step"] == s]) for s in (0, 1, 2)]
    assert per_step[0] == per_step[1] == per_step[2] > 0


def test_accessors_and_metadata_queries_only_when_asked(tmp_path, unhooked):
    default = run_script(tmp_path, TRAINING, mode="stats", env={"OPHOOK_OUTPUT": str(tmp_path / "default")})
    assert default.stdout == unhooked
    names = {r["op"] for r in trace(tmp_path / "default")}
    noise = {n for n in names if n.endswith(("__get__", "__set__")) or n.split(".")[-1] in ("dim", "size", "numel")}
    assert not noise
    assert not any("profiler" in n for n in names)
    asked = run_script(tmp_path, TRAINING, mode="stats", accessors=1)
    assert asked.stdout == unhooked
    names = {r["op"] for r in trace(tmp_path / "out")}
    assert "torch.Tensor.grad.__get__" in names or "torch.Tensor.grad.__set__" in names
    assert any(n.endswith("__get__") for n in names)


def test_an_accessor_is_named_once_however_often_it_runs(tmp_path):
    # A property accessor arrives as a fresh method-wrapper per access, its __name__ a fresh string
    # each time: naming it on every access cost ~10 µs per `.grad`, a third of a training step.
    proc = run_script(tmp_path, """
        import collections, json
        import ophook._torch.modes as modes
        asked = collections.Counter()
        namer = modes.function_name
        def counting(func):
            asked[repr(func).split(" of ")[0]] += 1
            return namer(func)
        modes.function_name = counting  # before torch is imported: the recorder's namer
        import torch
        w = torch.ones(3, requires_grad=True)
        (w * 2).sum().backward()
        total = 0.0
        for _ in range(200):
            total += float(w.grad.sum())
            w.grad = w.grad * 1
        print(json.dumps([total, {k: v for k, v in asked.items() if "wrapper" in k}]))
    """, mode="trace", accessors=1)
    total, asked = json.loads(proc.stdout)
    assert total == 1200.0
    assert asked == {"<method-wrapper '__get__'": 1, "<method-wrapper '__set__'": 1}, asked
    names = Counter(r["op"] for r in trace(tmp_path / "out"))
    assert names["torch.Tensor.grad.__get__"] >= 400 and names["torch.Tensor.grad.__set__"] == 200, names


def test_a_rank_left_out_writes_nothing(tmp_path):
    code = "import numpy as np\nprint(np.add(1, 2))\n"
    proc = run_script(tmp_path, code, mode="trace", ranks="0", env={"RANK": "1"})
    assert proc.stdout == "3\n"
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("trace.jsonl"))
    proc = run_script(tmp_path, code, mode="trace", ranks="1", env={"RANK": "1"})
    assert [r["op"] for r in trace(tmp_path / "out")] == ["numpy.add"]


def test_two_gloo_ranks_record_only_the_rank_asked_for(tmp_path):
    script = tmp_path / "ranks.py"
    script.write_text(
        "import torch, torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "t = torch.ones(4) * (dist.get_rank() + 1)\n"
        "dist.all_reduce(t)\n"
        "open('result%d.txt' % dist.get_rank(), 'w').write(str(t.tolist()))\n"
        "dist.destroy_process_group()\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run(["-m", "torch.distributed.run", "--nproc_per_node=2", "--master_addr=127.0.0.1", "--master_port=%d" % port,
         script], cwd=tmp_path, timeout=240, mode="trace", ranks="1", env={"OMP_NUM_THREADS": "1"})
    assert [(tmp_path / ("result%d.txt" % r)).read_text() for r in (0, 1)] == ["[3.0, 3.0, 3.0, 3.0]"] * 2
    out = tmp_path / "out"
    assert not (out / "rank0").exists()
    assert "torch.distributed.distributed_c10d.all_reduce" in {r["op"] for r in trace(out / "rank1")}
