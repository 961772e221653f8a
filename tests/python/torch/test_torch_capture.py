"""What ophook records of torch calls: tensors of every dtype and kind, values, modules, phases,
in-place ops, nesting with NumPy, the API-tracer files and the Tracer API. Each test runs real
programs in subprocesses (under LD_PRELOAD unless said) and checks the output against values
recomputed here."""
import json

import numpy as np
import pytest
import torch

from harness import EXAMPLES, SHIM_DIR, SUPPORT_DIR, arrays, load, ops, run, run_script, same_bits, summary, trace
from torch_dtypes import PLAIN, WIDENED, dtype_case

# ---- tensors of every dtype and kind ------------------------------------------------------------

DTYPE_PROGRAM = """
import sys
import numpy as np
import torch
sys.path.insert(0, %(support)r)
from torch_dtypes import dtype_case, WIDENED, PLAIN

for name in WIDENED + PLAIN + ["complex32"]:
    if name == "complex32":
        t = dtype_case("complex64").to(torch.complex32)
    else:
        t = dtype_case(name)
    torch.clone(t)

x = torch.arange(24, dtype=torch.float32).reshape(4, 6)
specials = [
    x.t(),                                        # transposed
    x[:, 1::2],                                   # strided slice
    x[2:],                                        # storage offset
    torch.tensor([1.0, 2.0, 3.0]).expand(4, 3),  # stride 0
    torch.tensor(3.5),                            # 0-d
    torch.empty(0, 3),                            # no elements
    torch.nn.Parameter(torch.full((2, 2), 0.25)), # requires grad
    (torch.arange(4.0) * (1 + 1j)).conj(),        # conjugate view
    (torch.arange(4.0) * (1 + 1j)).conj().imag,   # negative view
]
for t in specials:
    torch.clone(t)

spec_only = {
    "sparse": torch.eye(3).to_sparse(),
    "quantized": torch.quantize_per_tensor(torch.arange(4.0), 0.5, 0, torch.quint8),
    "meta": torch.empty(2, 3, device="meta"),
    "nested": torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]),
}
for t in spec_only.values():
    try:
        torch.clone(t)
    except Exception as e:
        print("clone failed", e)

from torch._subclasses.fake_tensor import FakeTensorMode
with FakeTensorMode():
    torch.clone(torch.ones(2, 2))
print("done")
"""


# Torch releases without the C++ functions ophook calls directly (torch_native) have tensors read
# through torch's DLPack exporter; older ones, without the exporter too, through their attributes.
# The same program through the Tracer API, those pieces put out of reach before recording starts
# (`missing`: the torch._C attributes older releases lack).
WITHOUT_NATIVE = """
import sys
sys.path.insert(0, %(shim)r)
import torch
for name in %(missing)r:
    delattr(torch._C, name)
import ophook
from ophook import _ophook
_ophook.torch_without_native()
ophook.Tracer(output_path="out", levels=[%(level)r], mode="dump", log_level="debug").start()
"""
TENSOR_READS = {"native": "at::toDLPackNonOwning", "exporter": "torch's DLPack exporter", "attributes": None}


@pytest.fixture(scope="module", params=list(TENSOR_READS))
def dtype_run(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dtypes")
    program = DTYPE_PROGRAM % {"support": str(SUPPORT_DIR)}
    if request.param == "native":
        proc = run_script(tmp, program, levels="torch_function", mode="dump", log_level="debug")
    else:
        missing = ["_dlpack_exchange_api"] if request.param == "attributes" else []
        start = WITHOUT_NATIVE % {"shim": str(SHIM_DIR), "missing": missing, "level": "torch_function"}
        proc = run_script(tmp, start + program, preload=False)
    assert "done" in proc.stdout
    reads = [line for line in proc.stderr.splitlines() if "torch tensors read through" in line]
    expected = TENSOR_READS[request.param]
    assert [line.endswith("read through " + expected) for line in reads] == ([True] if expected else [])
    records = ops(trace(tmp / "out"), "torch.clone")
    return tmp / "out", records


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_every_dtype_round_trips(dtype_run):
    out, records = dtype_run
    names = WIDENED + PLAIN + ["complex32"]
    for name, record in zip(names, records):
        (value,) = arrays(record)
        if name == "complex32":
            source = dtype_case("complex64").to(torch.complex32)
        else:
            source = dtype_case(name)
        assert value["dtype"] == name
        assert value["shape"] == list(source.shape)
        saved = load(out, value)
        if name in WIDENED:
            assert value["saved_dtype"] == "float32"
            expected = source.float().numpy()
            assert saved.dtype == np.float32
            assert np.array_equal(saved, expected, equal_nan=True), name
            finite = ~np.isnan(expected)
            assert same_bits(saved[finite], expected[finite]), name  # exact, signed zeros included
        elif name == "complex32":
            assert value["saved_dtype"] == "complex64"
            assert same_bits(saved, source.to(torch.complex64).numpy())
        else:
            assert "saved_dtype" not in value
            expected = source.view(torch.uint8).numpy().view(saved.dtype).reshape(saved.shape) \
                if name.startswith("uint") and name != "uint8" else source.numpy()
            assert same_bits(saved, expected), name
        (output,) = arrays(record, "outputs")
        assert same_bits(load(out, output), saved)


def test_views_parameters_and_specials_copy_their_values(dtype_run):
    out, records = dtype_run
    x = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    expected = [x.t(), x[:, 1::2], x[2:], torch.tensor([1.0, 2.0, 3.0]).expand(4, 3), torch.tensor(3.5),
                torch.empty(0, 3), torch.full((2, 2), 0.25),
                (torch.arange(4.0) * (1 + 1j)).conj().resolve_conj(),
                (torch.arange(4.0) * (1 + 1j)).conj().imag.resolve_neg()]
    specials = records[len(WIDENED) + len(PLAIN) + 1:][:len(expected)]
    for record, want in zip(specials, expected):
        (value,) = arrays(record)
        assert value["shape"] == list(want.shape)
        assert same_bits(load(out, value), want.contiguous().numpy())


def test_unreadable_tensors_are_described_with_a_reason(dtype_run):
    out, records = dtype_run
    rest = records[len(WIDENED) + len(PLAIN) + 1 + 9:]
    reasons = []
    for record in rest:
        values = arrays(record)
        assert values, record
        assert values[0]["file"] is None
        reasons.append(values[0]["reason"])
    text = json.dumps(reasons)
    assert "sparse" in text and "quantized" in text and "nested" in text and "meta" in text, reasons
    assert "subclass" in text, reasons  # the FakeTensor
    assert any(v["device"] == "meta" for r in rest for v in arrays(r))


# ---- values, names, modules, phases, in-place, nesting ------------------------------------------

TRAINING_PROGRAM = """
import json
import numpy as np
import torch
from torch import nn
from torch.overrides import handle_torch_function, has_torch_function

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.head = nn.Linear(8, 2)
    def forward(self, x):
        return self.head(self.body(x))

def numpy_sqrt(t):
    # a library-style op implemented with NumPy: the NumPy call is nested inside it
    if has_torch_function((t,)):
        return handle_torch_function(numpy_sqrt, (t,), t)
    return torch.from_numpy(np.sqrt(t.numpy()))

torch.manual_seed(0)
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.5)
x = torch.randn(5, 4)
loss = net(x).square().mean()
loss.backward()
before = {n: p.detach().clone() for n, p in net.named_parameters()}
opt.step()
a = torch.ones(3)
a.add_(2)
numpy_sqrt(torch.full((3,), 4.0))
v = np.arange(3.0) + 1
t = torch.from_numpy(v) * 2
w = np.multiply(t.numpy(), 3)
z = torch.zeros(2, 3, dtype=torch.float64, device="cpu")
e = torch.empty(torch.Size([2, 2]), memory_format=torch.contiguous_format)
m = torch.max(x, 0)
s = x[1:3, None]
print(json.dumps({n: p.tolist() for n, p in before.items()}))
"""


@pytest.fixture(scope="module")
def training_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("training")
    proc = run_script(tmp, TRAINING_PROGRAM, levels="numpy,torch_function,torch_dispatch", nested=1, mode="dump")
    before = json.loads(proc.stdout.strip().splitlines()[-1])
    return tmp / "out", trace(tmp / "out"), before


def test_numpy_and_torch_share_one_sequence(training_run):
    out, records, _ = training_run
    assert [r["seq"] for r in records] == list(range(len(records)))
    frameworks = {r["framework"] for r in records}
    assert frameworks == {"numpy", "torch"}
    levels = {r["level"] for r in records}
    assert {"torch_function", "torch_dispatch", "ufunc"} <= levels
    assert all(r["phase"] is None for r in records if r["framework"] == "numpy")
    assert all(r["phase"] in ("forward", "backward", "optimizer") for r in records if r["framework"] == "torch")
    # opt.step()'s parameter updates, at both levels, and nothing else in that phase
    update = [r for r in records if r["phase"] == "optimizer"]
    assert {r["op"] for r in update} == {"torch.Tensor.add_", "aten.add_.Tensor"}
    assert len(update) == 2 * 4  # 4 parameters
    assert all(r["step"] == 0 for r in update)
    after = [r for r in records if r["seq"] > update[-1]["seq"]]
    assert after and all(r["step"] == 1 and r["phase"] != "optimizer" for r in after)


def test_module_paths(training_run):
    _, records, _ = training_run
    linear = ops(records, "torch.nn.functional.linear")
    assert [r["module"] for r in linear] == ["Net.body.0", "Net.head"]
    assert [r["module"] for r in ops(records, "torch.nn.functional.relu")] == ["Net.body.1"]
    addmm = [r for r in ops(records, "aten.addmm.default") if r["phase"] == "forward"]
    assert [r["module"] for r in addmm] == ["Net.body.0", "Net.head"]
    assert all(r["module"] is None for r in ops(records, "torch.Tensor.backward"))


def test_backward_ops_are_recorded_with_phase_backward(training_run):
    out, records, _ = training_run
    (backward,) = ops(records, "torch.Tensor.backward")
    # Every aten op of the backward pass, recorded at its own level under the torch_function
    # record that ran it, with the module whose forward it differentiates.
    inside = [r for r in records if r["parent"] == backward["seq"]]
    assert inside and all(r["level"] == "torch_dispatch" and r["depth"] == 0 for r in inside)
    phases = {r["op"]: r["phase"] for r in inside}
    assert phases.get("aten.threshold_backward.default") == "backward"
    assert phases.get("aten.mm.default") == "backward"
    modules = {r["module"] for r in inside if r["op"] == "aten.threshold_backward.default"}
    assert modules == {"Net.body.1"}
    assert {r["module"] for r in inside if r["op"] == "aten.mm.default"} == {"Net.head", "Net.body.0"}
    mm = next(r for r in inside if r["op"] == "aten.mm.default")
    a, b = (torch.from_numpy(load(out, v)) for v in arrays(mm))
    # recomputed with the op itself: NumPy's matmul may round differently (another BLAS kernel)
    assert np.array_equal(load(out, arrays(mm, "outputs")[0]), torch.mm(a, b).numpy())


BACKWARD_PASS_PROGRAM = """
import torch

class Doubled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        # a final callback runs once the whole pass is done, still inside it (DDP syncs there)
        torch.autograd.Variable._execution_engine.queue_callback(lambda: torch.sub(grad, 1))
        return torch.mul(grad, 3)

x = torch.full((3,), 0.5, requires_grad=True)
Doubled.apply(x).sum().backward()
torch.add(x.grad, 1)
print(x.grad.tolist())
"""


# Where ophook asks torch whether a backward pass runs: the C++ function, torch._C's
# _current_graph_task_id, or (torch releases before that) _current_autograd_node, which knows no
# pass outside a node: the final callback's op then counts as forward.
PHASE_SOURCES = {"native": [], "graph_task_id": [], "autograd_node": ["_current_graph_task_id"]}


@pytest.mark.parametrize("phase_from", list(PHASE_SOURCES))
def test_backward_phase_covers_the_whole_pass(tmp_path, phase_from):
    """Ops run by autograd (a node's Python backward) and by the engine's final callbacks are
    "backward"; the program's ops before and after the pass are "forward". The C++ function and
    torch._C._current_graph_task_id agree; _current_autograd_node misses only the callback."""
    program = BACKWARD_PASS_PROGRAM
    if phase_from == "native":
        proc = run_script(tmp_path, program, levels="torch_dispatch", mode="dump")
    else:
        program = WITHOUT_NATIVE % {"shim": str(SHIM_DIR), "missing": PHASE_SOURCES[phase_from],
                                    "level": "torch_dispatch"} + program
        proc = run_script(tmp_path, program, preload=False)
    assert proc.stdout.strip() == "[3.0, 3.0, 3.0]"
    records = trace(tmp_path / "out")
    phases = [(r["op"], r["phase"]) for r in records if r["op"] in ("aten.mul.Tensor", "aten.sub.Tensor",
                                                                     "aten.add.Tensor")]
    callback = "forward" if phase_from == "autograd_node" else "backward"
    assert phases == [("aten.mul.Tensor", "forward"), ("aten.mul.Tensor", "backward"),
                      ("aten.sub.Tensor", callback), ("aten.add.Tensor", "forward")]
    (sub,) = ops(records, "aten.sub.Tensor")
    (grad,) = arrays(sub)[:1]
    assert np.array_equal(load(tmp_path / "out", arrays(sub, "outputs")[0]), load(tmp_path / "out", grad) - 1)


def test_in_place_ops_record_pre_op_values(training_run):
    out, records, before = training_run
    # a.add_(2) on ones: input holds the ones, output the threes (both levels)
    for name in ("torch.Tensor.add_", "aten.add_.Tensor"):
        record = [r for r in ops(records, name) if arrays(r) and arrays(r)[0]["shape"] == [3]][-1]
        assert np.array_equal(load(out, arrays(record)[0]), np.ones(3, np.float32)), name
        assert np.array_equal(load(out, arrays(record, "outputs")[0]), np.full(3, 3, np.float32)), name
    # the optimizer step: param.add_(grad, alpha=-lr) gets the parameter before the step
    steps = [r for r in ops(records, "torch.Tensor.add_") if r["kwargs"].get("alpha") == -0.5]
    assert len(steps) == 4
    for record, (name, values) in zip(steps, before.items()):
        param, grad = arrays(record)
        pre = load(out, param)
        assert np.array_equal(pre, np.array(values, np.float32)), name
        post = load(out, arrays(record, "outputs")[0])
        assert np.array_equal(post, (torch.from_numpy(pre).add_(torch.from_numpy(load(out, grad)), alpha=-0.5)).numpy())


def test_numpy_inside_a_torch_op_is_recorded_at_its_own_level(training_run):
    out, records, _ = training_run
    (outer,) = [r for r in records if r["op"].endswith("numpy_sqrt")]
    assert outer["level"] == "torch_function" and outer["depth"] == 0
    inner = [r for r in ops(records, "numpy.sqrt") if r["seq"] > outer["seq"]]
    assert inner and inner[0]["depth"] == 0 and inner[0]["parent"] == outer["seq"]
    assert np.array_equal(load(out, arrays(inner[0], "outputs")[0]), np.full(3, 2.0, np.float32))


def test_non_tensor_values(training_run):
    _, records, _ = training_run
    (zeros,) = ops(records, "torch.zeros")
    assert zeros["args"] == [2, 3]
    assert zeros["kwargs"]["dtype"] == {"kind": "torch.dtype", "repr": "torch.float64"}
    assert zeros["kwargs"]["device"] == "cpu"
    (empty,) = [r for r in ops(records, "torch.empty") if r["source"] and r["args"] == [[2, 2]]]
    assert empty["kwargs"]["memory_format"] == {"kind": "torch.memory_format", "repr": "torch.contiguous_format"}
    (maximum,) = [r for r in ops(records, "torch.max") if r["level"] == "torch_function"]
    assert maximum["args"][1] == 0
    values, indices = maximum["outputs"][0]
    assert values["dtype"] == "float32" and indices["dtype"] == "int64"
    (getitem,) = [r for r in ops(records, "torch.Tensor.__getitem__") if r["source"].endswith("<module>")][-1:]
    key = getitem["args"][1]
    assert key[0] == {"kind": "slice", "repr": "slice(1, 3, None)"} and key[1] is None


def test_nested_off_hides_a_call_only_under_a_recorded_call_of_its_own_level(tmp_path):
    run_script(tmp_path, """
        import numpy as np, torch
        from torch.overrides import handle_torch_function, has_torch_function
        def numpy_sqrt(t):
            if has_torch_function((t,)):
                return handle_torch_function(numpy_sqrt, (t,), t)
            return torch.from_numpy(np.sqrt(t.numpy()))
        numpy_sqrt(torch.full((3,), 4.0))
        np.mean(np.ones(2))
        torch.nn.functional.linear(torch.ones(2, 3), torch.ones(4, 3))
    """, levels="numpy,torch_function,torch_dispatch", mode="trace")
    records = trace(tmp_path / "out")
    by_seq = {r["seq"]: r for r in records}
    assert all(r["depth"] == 0 for r in records)
    (outer,) = [r for r in records if r["op"].endswith("numpy_sqrt")]
    # inside the torch_function call: its torch_function calls are hidden, its NumPy call and the
    # aten ops below it are not
    under = [r for r in records if r["parent"] == outer["seq"]]
    assert [r["op"] for r in under if r["level"] != "torch_dispatch"] == ["numpy.sqrt"]
    assert any(r["level"] == "torch_dispatch" for r in under)
    # numpy.mean hides the add.reduce it makes (NumPy's levels nest as one)
    assert "numpy.mean" in [r["op"] for r in records] and not ops(records, "numpy.add.reduce")
    # every aten op runs under a torch_function record, never hidden by one
    (linear,) = ops(records, "torch.nn.functional.linear")
    assert [r["op"] for r in records if r["parent"] == linear["seq"]] == ["aten.t.default", "aten.mm.default"]  # no bias: mm
    for r in records:
        if r["level"] == "torch_dispatch":
            assert r["parent"] is not None and by_seq[r["parent"]]["level"] == "torch_function", r


# ---- the seed's API tracer example and the Tracer API -------------------------------------------

def test_api_tracer_example_without_preload(tmp_path):
    """examples/api_tracer.py through the Tracer API, ophook imported from the build's shim
    directory (put on sys.path by hand: the shim's sitecustomize would start recording itself)."""
    code = ("import sys, runpy; sys.path.insert(0, %r); sys.argv = [%r, 'trace_output'];"
            "runpy.run_path(%r, run_name='__main__');"
            "import torch; torch.ones(1);"
            "print('stack', torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack())"
            % (str(SHIM_DIR), str(EXAMPLES / "api_tracer.py"), str(EXAMPLES / "api_tracer.py")))
    proc = run(["-c", code], cwd=tmp_path, preload=False)
    assert "stack 0 0" in proc.stdout  # the modes are gone after the with block
    out = tmp_path / "trace_output"
    assert (out / "api_trace.txt").read_text().splitlines() == [
        'torch.randn(2, 3, device="cpu")',
        "torch.ones(2, 3)",
        'torch.add(Tensor([2, 3], "float32"), Tensor([2, 3], "float32"), alpha=10)',
        'torch.Tensor.sum(Tensor([2, 3], "float32"))',
    ]
    assert (out / "api_apis.txt").read_text().split() == ["torch.Tensor.sum", "torch.add", "torch.ones",
                                                          "torch.randn"]
    assert (out / "api_configs.txt").read_text().splitlines() == [
        'torch.Tensor.sum(Tensor([2, 3], "float32"))',
        'torch.add(Tensor([2, 3], "float32"), Tensor([2, 3], "float32"), alpha=10)',
        "torch.ones(2, 3)",
        'torch.randn(2, 3, device="cpu")',
    ]
    statistics = (out / "api_statistics.txt").read_text()
    assert "Total APIs: 4" in statistics and "Total API calls: 4" in statistics
    assert "torch.randn: 1 (25.00%)" in statistics
    records = trace(out)
    assert [r["op"] for r in records] == ["torch.randn", "torch.ones", "torch.add", "torch.Tensor.sum"]
    assert all(v["file"] is None for r in records for v in arrays(r) + arrays(r, "outputs"))  # mode=trace
    assert summary(out)["versions"]["torch"] == torch.__version__


def test_tracer_api_dump_and_restart(tmp_path):
    code = """
import sys
sys.path.insert(0, %r)
import numpy as np, torch, ophook
x = torch.arange(6.0).reshape(2, 3)
with ophook.Tracer(output_path="first", levels=["torch_function"], mode="dump"):
    y = torch.mul(x, 2)
torch.add(x, 1)  # not recorded
with ophook.Tracer(output_path="second", levels=["torch_dispatch"], mode="dump"):
    torch.sub(x, 1)
""" % str(SHIM_DIR)
    run(["-c", code], cwd=tmp_path, preload=False)
    first = trace(tmp_path / "first")
    assert [r["op"] for r in first] == ["torch.mul"]
    assert np.array_equal(load(tmp_path / "first", arrays(first[0], "outputs")[0]),
                          np.arange(6.0, dtype=np.float32).reshape(2, 3) * 2)
    second = trace(tmp_path / "second")
    assert [r["op"] for r in second] == ["aten.sub.Tensor"]



def test_tracer_options_apply_when_the_shim_started_recording(runner):
    """Under the PYTHONPATH shim recording starts before the program: a Tracer finishes that
    recording and starts its own with its options."""
    run = runner.run("""
import torch, ophook
torch.ones(2)                                            # recorded by the shim's recording
with ophook.Tracer(output_path="mine", levels=["torch_dispatch"], mode="trace"):
    torch.mul(torch.ones(2), 3)
torch.zeros(1)                                           # after the Tracer: not recorded
""", how="pythonpath")
    assert [r["op"] for r in run.records()] == ["torch.ones"]
    mine = trace(runner.tmp_path / "mine")
    assert [r["op"] for r in mine] == ["aten.ones.default", "aten.mul.Tensor"]
    assert all(v["file"] is None for r in mine for v in arrays(r))
