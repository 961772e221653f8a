"""OPHOOK_COMPILE=record: torch.compile'd code runs compiled, with the same bits as
without ophook, and every kernel its Inductor-generated code launches is a record at level
`compiled` with its values, the aten ops it computes and the user's lines they come from; the
NaN hunt names the kernel and the line. Real programs on Inductor's CPU backend under LD_PRELOAD."""
import json
import sys

import numpy as np
import pytest

from cli_fixtures import run_ophook
from harness import SHIM_DIR, arrays, load, run_script, same_bits, summary, trace

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it: its reading of kernel sources
from ophook._torch.compiled_kernels import _reads_before_writing  # noqa: E402

# One training step of a compiled block (Linear, LayerNorm, GELU); prints the output, the loss
# and the updated weight as hex bytes, and writes the output's bytes.
TRAINING = """
import os
import numpy as np, torch
torch.manual_seed(0)

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 16)
        self.norm = torch.nn.LayerNorm(16)

    def forward(self, x):
        h = self.linear(x)                          # LINEAR
        y = torch.nn.functional.gelu(self.norm(h))  # NORM_GELU
        if os.environ.get("PERTURB"):
            y = y * 1.01                            # PERTURBED
        return torch.tanh(y)                        # TANH

block = Block()
step = torch.compile(block)
optimizer = torch.optim.SGD(block.parameters(), lr=0.1)
x = torch.randn(8, 16)
y = step(x)
loss = (y * y).mean()
loss.backward()
optimizer.step()
with open(os.environ.get("Y_NAME", "plain") + ".bytes", "wb") as out:  # not a recorded call
    out.write(y.detach().numpy().tobytes())
print(y.detach().numpy().tobytes().hex(), loss.item(), block.linear.weight.detach().numpy().tobytes().hex())
"""


def line_of(marker, source=TRAINING):
    return next(number for number, line in enumerate(source.splitlines(), 1) if marker in line)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """TRAINING unhooked; recorded in dump mode eagerly (the default policy) and compiled, the
    latter also with a perturbation inside the compiled code."""
    where = tmp_path_factory.mktemp("compiled")
    out = {"dir": where, "plain": run_script(where, TRAINING, preload=False, timeout=300).stdout}
    for name, policy, env in (("eager", "eager", {}), ("record", "record", {}),
                              ("perturbed", "record", {"PERTURB": "1"})):
        out[name] = run_script(where, TRAINING, mode="dump", compile=policy, output=where / name,
                               env=dict(env, Y_NAME=name), timeout=300).stdout
    return out


def test_a_compiled_training_step_is_recorded_kernel_by_kernel(runs):
    tmp_path = runs["dir"]
    assert runs["record"] == runs["plain"]  # the same kernels: the same bits
    out = tmp_path / "record"
    records = trace(out)
    assert summary(out)["notes"]["compile"]["policy"] == "record"
    kernels = [r for r in records if r["level"] == "compiled"]
    assert {r["phase"] for r in kernels} == {"forward", "backward"}
    # summary.json counts the kernels under their level and phases as the records give them
    counts = summary(out)["recorded"]
    assert counts["levels"]["compiled"] == len(kernels)
    assert sum(counts["levels"].values()) == len(records)
    for phase in ("forward", "backward", "optimizer"):
        assert counts["phases"].get(phase, 0) == sum(r.get("phase") == phase for r in records)
    assert counts["phases"].get("none", 0) == sum(r.get("phase") is None for r in records)
    # nothing that runs inside the compiled region is recorded at the torch levels
    assert not [r for r in records if r["op"] in ("torch.nn.functional.linear", "torch.nn.functional.layer_norm",
                                                   "torch.nn.functional.gelu", "torch.addmm")]
    prog = str(tmp_path / "prog.py")
    linear = "%s:%d:forward" % (prog, line_of("# LINEAR"))
    norm_gelu = "%s:%d:forward" % (prog, line_of("# NORM_GELU"))
    forward = [r for r in kernels if r["phase"] == "forward"]
    addmm = [r for r in forward if r["op"].endswith("extern_kernels.addmm")]
    assert len(addmm) == 1 and "aten.addmm" in addmm[0]["computes"] and addmm[0]["source"] == linear
    assert addmm[0]["modules"] == ["linear"] and addmm[0]["module"] == "OptimizedModule"
    fused = [r for r in forward if "cpp_fused" in r["op"]]
    tanh = "%s:%d:forward" % (prog, line_of("# TANH"))
    assert len(fused) == 1 and fused[0]["sources"] == [norm_gelu, tanh] and fused[0]["source"] == norm_gelu
    assert {"aten.erf", "aten.tanh"} <= set(fused[0]["computes"])  # GELU's, tanh's
    assert fused[0]["modules"] == ["norm"]  # gelu and tanh run in Block.forward itself
    # values: the fused kernel's last output is the block's output, bit for bit; the addmm's
    # output is x @ W.T + b from its own inputs
    assert same_bits(load(out, arrays(fused[0], "outputs")[-1]), np.frombuffer((tmp_path / "record.bytes").read_bytes(), np.float32).reshape(8, 16))
    bias, x, weight_t = (load(out, a) for a in arrays(addmm[0], "args"))
    np.testing.assert_allclose(load(out, arrays(addmm[0], "outputs")[0]), bias + x @ weight_t, rtol=1e-5, atol=1e-6)
    backward = [r for r in kernels if r["phase"] == "backward"]
    assert any(r["op"].endswith("extern_kernels.mm") and r["sources"] == [linear] for r in backward)
    assert all(r["source"] in (linear, norm_gelu) for r in kernels)


def test_compare_pairs_kernels_with_eager_calls_and_names_the_first_that_differs(runs):
    where = runs["dir"]
    # eager against compiled: each kernel pairs with the eager call its value ends in, and they agree
    # within float32 reassociation
    same = run_ophook("compare", where / "eager", where / "record", "--rtol", "1e-3", "--atol", "1e-6",
                      "--json", where / "same.json")
    assert same.returncode == 0, same.stdout
    process = json.loads((where / "same.json").read_text())["processes"][0]
    assert process["fused_calls"] >= 1 and process["unmatched_base"] == process["unmatched_new"] == 0
    assert "compiled kernels: 2 paired with the eager call whose value each ends in" in same.stdout
    # a perturbation inside the compiled code: the fused kernel that holds it is the first divergent
    # call and its origin, paired with tanh (the value it ends in), and the float64 referee says
    # the eager side is closer
    differ = run_ophook("compare", where / "eager", where / "perturbed", "--rtol", "1e-3", "--atol", "1e-6",
                        "--json", where / "differ.json", "--referee", "float64", timeout=300)
    assert differ.returncode == 1, differ.stdout
    result = json.loads((where / "differ.json").read_text())
    first = result["processes"][0]["first_origin"]
    assert first == result["processes"][0]["first_divergence"]
    base = {r["seq"]: r for r in trace(where / "eager")}[first["base_seq"]]
    kernel = {r["seq"]: r for r in trace(where / "perturbed")}[first["new_seq"]]
    perturbed = "%s:%d:forward" % (where / "prog.py", line_of("# PERTURBED"))
    assert base["op"] == "torch.tanh" and "cpp_fused" in kernel["op"] and perturbed in kernel["sources"]
    assert "first divergent call" in differ.stdout and kernel["op"] in differ.stdout
    verdict = next(op for op in result["ops"] if op["op"] == "torch.tanh")["referee"]
    assert verdict["closer"] == "base", verdict


def test_replay_skips_compiled_kernels_with_one_reason(runs):
    """A kernel's code lived only in the recorded process: replay names that once, not as an op it
    failed to find, and replays the eager calls around the compiled region as usual."""
    where = runs["dir"]
    proc = run_ophook("replay", where / "record", "--json", where / "replay.json", timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((where / "replay.json").read_text())
    kernels = {r["seq"] for r in trace(where / "record") if r["level"] == "compiled"}
    calls = {c["seq"]: c for c in report["calls"]}
    assert kernels and {c["status"] for s, c in calls.items() if s in kernels} == {"skipped"}
    compiled = [g for g in report["skipped"] if g["reason"].startswith("a compiled kernel")]
    assert len(compiled) == 1 and compiled[0]["count"] == len(kernels)
    assert "not found here" not in proc.stdout
    assert any(c["status"] == "match" for s, c in calls.items() if s not in kernels)


NAN = """
import torch

@torch.compile
def features(x, w):
    h = x @ w
    return torch.log(h - 100.0) * 2  # PLANTED

x, w = torch.ones(4, 8), torch.ones(8, 8)
print(features(x, w).isnan().sum().item())
"""


def test_a_nan_born_in_a_compiled_kernel_names_the_kernel_and_the_line(tmp_path):
    proc = run_script(tmp_path, NAN, mode="trace", compile="record", nan="warn", timeout=300)
    assert proc.stdout.strip() == "32"
    where = "%s:%d:features" % (tmp_path / "prog.py", line_of("# PLANTED", NAN))
    warning = [line for line in proc.stderr.splitlines() if "first NaN/Inf from finite inputs" in line]
    assert len(warning) == 1 and "cpp_fused" in warning[0] and where in warning[0], proc.stderr
    records = trace(tmp_path / "out")
    kernels = [r for r in records if r["level"] == "compiled"]
    assert [r["op"] for r in kernels][0].endswith("extern_kernels.mm")
    assert kernels[1]["source"] == where and "aten.log" in kernels[1]["computes"]
    raised = run_script(tmp_path, NAN, mode="trace", compile="record", nan="raise", timeout=300, check=False)
    assert raised.returncode == 1 and "FloatingPointError" in raised.stderr and "cpp_fused" in raised.stderr


# Three blocks of the same shapes: Inductor launches one fused kernel, and extern_kernels.addmm,
# from a site per block, each site with its own module and buffers. Planted: the third block's
# product overflows.
BLOCKS = """
import torch
torch.manual_seed(0)

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.nn.functional.gelu(self.linear(x))

model = torch.nn.Sequential(Block(), Block(), Block())
step = torch.compile(model)
x = torch.ones(4, 8)
with torch.no_grad():
    print(step(x).sum().item().hex())
    model[1].linear.bias.fill_(1.0)
    model[2].linear.weight.fill_(3e38)  # PLANTED
    print(step(x).isinf().sum().item())
"""


def test_a_kernel_launched_from_several_sites_names_each_sites_module(tmp_path):
    plain = run_script(tmp_path, BLOCKS, preload=False, timeout=300)
    proc = run_script(tmp_path, BLOCKS, mode="trace", compile="record", nan="warn", timeout=300)
    assert proc.stdout == plain.stdout and proc.stdout.splitlines()[1] == "32"
    kernels = [r for r in trace(tmp_path / "out") if r["level"] == "compiled"]
    assert len(kernels) == 12  # two calls of three blocks, a product and a GELU each
    products = [r for r in kernels[:6] if r["op"].endswith("extern_kernels.addmm")]
    assert [r["modules"] for r in products] == [["0.linear"], ["1.linear"], ["2.linear"]]
    fused = [r for r in kernels[:6] if "cpp_fused" in r["op"]]
    assert len({r["op"] for r in fused}) == 1 and [r["modules"] for r in fused] == [["0"], ["1"], ["2"]]
    warning = [line for line in proc.stderr.splitlines() if "first NaN/Inf from finite inputs" in line]
    assert len(warning) == 1 and "extern_kernels.addmm" in warning[0], proc.stderr
    assert warning[0].endswith("computing aten.gelu, aten.t, aten.addmm in 2.linear")
    planted = [r for r in kernels[6:] if r["op"].endswith("extern_kernels.addmm")][2]
    assert summary(tmp_path / "out")["first_nonfinite"]["seq"] == planted["seq"]
    # counted by name, whatever the site
    assert summary(tmp_path / "out")["ops"][products[0]["op"]]["count"] == 6
    report = run_ophook("report", tmp_path / "out").stdout
    assert "seq=%d op=%s" % (planted["seq"], planted["op"]) in report and " kernel_modules=2.linear " in report


# x @ w, then a ReLU Inductor runs in place on the product's buffer (buf1 = buf0; del buf0  # reuse).
IN_PLACE = """
import torch

@torch.compile
def layer(x, w):
    return torch.relu(x @ w)

x = torch.ones(4, 8)
x[0, 0] = float("inf")  # an Inf the program puts there itself
print(layer(x, torch.ones(8, 8)).isinf().sum().item())
"""


def test_a_kernel_updating_a_buffer_in_place_reads_what_it_held(tmp_path):
    proc = run_script(tmp_path, IN_PLACE, mode="stats", compile="record", nan="warn", timeout=300)
    assert proc.stdout.strip() == "8"
    assert "first NaN/Inf from finite inputs" not in proc.stderr  # the Inf came in with x
    kernels = [r for r in trace(tmp_path / "out") if r["level"] == "compiled"]
    relu = next(r for r in kernels if "cpp_fused_relu" in r["op"])
    (product,) = arrays(relu, "args")
    assert product["shape"] == [4, 8] and product["stats"]["inf"] == 8


@pytest.mark.parametrize("body, read", [
    ("auto tmp0 = at::vec::Vectorized<float>::loadu(in_out_ptr0 + x0, 16);\n"
     "tmp1.store(in_out_ptr0 + x0, 16);", True),                       # updated in place
    ("tmp5.store(in_out_ptr0 + x0);\nauto tmp9 = in_out_ptr0[x0];", False),  # filled, read back
    ("in_out_ptr0[x0] = tmp5;\nauto tmp9 = in_out_ptr0[x0];", False),
    ("auto out_ptr2 = in_out_ptr0;\ntmp5.store(out_ptr2 + x0);\nauto tmp7 = in_out_ptr0[x0];", False),
    ("auto in_ptr2 = in_out_ptr0;\nauto tmp0 = in_ptr2[x0];\nin_out_ptr0[x0] = tmp0;", True),
    ("tmp1 = tl.load(in_out_ptr0 + (x0), xmask)\ntl.store(in_out_ptr0 + (x0), tmp1, xmask)", True),
    ("tl.store(in_out_ptr0 + (x0), tmp3, xmask)\ntmp4 = tl.load(in_out_ptr0 + (x0), xmask)", False),
])
def test_an_in_out_pointer_is_read_when_the_kernel_loads_it_first(body, read):
    assert _reads_before_writing("in_out_ptr0", body) is read
    assert _reads_before_writing("in_ptr0", body) and not _reads_before_writing("out_ptr0", body)


# A generated module of the form Inductor writes for CUDA (Triton kernels launched with .run), with
# a stand-in for Triton that computes on the CPU: what the launchers see of a Triton kernel
# without a GPU. buf0 is fresh (an output only); arg1_1 is read and written in place.
TRITON_FORM = """
# AOT ID: ['7_forward']
import torch

class FakeTriton:
    def run(self, in_ptr0, in_out_ptr0, out_ptr0, xnumel, stream=None):
        out_ptr0.copy_(in_ptr0 * 2)
        in_out_ptr0.add_(in_ptr0)

class AsyncCompile:
    def triton(self, name, source, device_str):
        return FakeTriton()

async_compile = AsyncCompile()
empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu
triton_poi_fused_add_mul_0 = async_compile.triton('triton_poi_fused_add_mul_0', '''
import triton
@triton.jit
def triton_poi_fused_add_mul_0(in_ptr0, in_out_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    tmp0 = tl.load(in_ptr0 + (xindex), xmask)
    tmp1 = tl.load(in_out_ptr0 + (xindex), xmask)
    tl.store(out_ptr0 + (xindex), tmp0 * 2.0, xmask)
    tl.store(in_out_ptr0 + (xindex), tmp1 + tmp0, xmask)
''', device_str='cuda')

def call(args):
    arg0_1, arg1_1 = args
    args.clear()
    stream0 = None
    buf0 = empty_strided_cpu((4, ), (1, ), torch.float32)
    triton_poi_fused_add_mul_0.run(arg0_1, arg1_1, buf0, 4, stream=stream0)
    return (buf0, arg1_1, )
"""


def test_a_triton_kernel_launch_is_recorded_with_what_it_reads_and_writes(tmp_path):
    (tmp_path / "generated.py").write_text(TRITON_FORM)
    proc = run_script(tmp_path, """
        import importlib.util, torch
        from ophook._torch import compiled_kernels as _compiled_kernels
        spec = importlib.util.spec_from_file_location("generated", "generated.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _compiled_kernels.instrument(module)
        x, y = torch.arange(4.0), torch.full((4,), 10.0)
        out, written = module.call([x, y])
        print(out.tolist(), written.tolist())
    """, mode="stats", compile="record")
    assert proc.stdout.strip() == "[0.0, 2.0, 4.0, 6.0] [10.0, 11.0, 12.0, 13.0]"
    kernels = [r for r in trace(tmp_path / "out") if r["level"] == "compiled"]
    assert [r["op"] for r in kernels] == ["inductor.7_forward.triton_poi_fused_add_mul_0"]
    args, outputs = arrays(kernels[0], "args"), arrays(kernels[0], "outputs")
    # read: x and y as it was; written: y after, then buf0; the xnumel scalar is an argument too
    assert [a["stats"]["mean"] for a in args] == [1.5, 10.0] and kernels[0]["args"][2] == 4
    assert [a["stats"]["mean"] for a in outputs] == [11.5, 3.0]
    assert "stream" not in kernels[0]["kwargs"]


def test_include_and_exclude_select_kernels_by_the_aten_ops_they_compute(tmp_path):
    run_script(tmp_path, NAN, mode="trace", compile="record", include=r"^aten\.log$", timeout=300)
    kernels = trace(tmp_path / "out")
    assert len(kernels) == 1 and "cpp_fused" in kernels[0]["op"] and "aten.log" in kernels[0]["computes"]
    run_script(tmp_path, NAN, mode="trace", compile="record", exclude=r"^aten\.mm$", timeout=300)
    ops = [r["op"] for r in trace(tmp_path / "out") if r["level"] == "compiled"]
    assert len(ops) == 1 and "cpp_fused" in ops[0]


RECOMPILE = """
import torch

@torch.compile
def scaled(x):
    y = torch.sin(x) * 2            # FIRST_GRAPH
    print("graph break")
    return torch.cos(y) + 1          # SECOND_GRAPH

with torch.no_grad():
    for n in (4, 8, 16):             # a new shape recompiles (then dynamic)
        print(scaled(torch.linspace(0, 1, n)).sum().item().hex())
"""


def test_recompiles_and_graph_breaks_keep_their_bits_and_name_their_graphs(tmp_path):
    plain = run_script(tmp_path, RECOMPILE, preload=False, timeout=300)
    hooked = run_script(tmp_path, RECOMPILE, mode="stats", compile="record", timeout=300)
    assert hooked.stdout == plain.stdout
    kernels = [r for r in trace(tmp_path / "out") if r["level"] == "compiled"]
    prog = str(tmp_path / "prog.py")
    first = "%s:%d:scaled" % (prog, line_of("# FIRST_GRAPH", RECOMPILE))
    second = "%s:%d:scaled" % (prog, line_of("# SECOND_GRAPH", RECOMPILE))
    # two graphs per compile (the break), three calls: each launch a record on its own line
    assert [r["source"] for r in kernels] == [first, second] * 3
    assert len({r["op"] for r in kernels}) >= 4  # the recompile's graphs are new graphs
    assert all(r["phase"] == "forward" for r in kernels)
    assert [r["outputs"][0]["shape"] for r in kernels[::2]] == [[4], [8], [16]]


# The "compile the optimizer" recipe: a compiled model and a compiled step of two optimizers;
# prints each iteration's loss bits, then how many graphs Dynamo made and how many breaks.
COMPILED_OPTIMIZER = """
import torch
import torch._dynamo.utils as dynamo_counters
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 2))
adam = torch.optim.Adam(model[0].parameters(), lr=1e-2)
sgd = torch.optim.SGD(model[2].parameters(), lr=1e-2)
compiled = torch.compile(model)

@torch.compile
def update():
    adam.step()
    sgd.step()

for i in range(4):
    loss = compiled(torch.randn(4, 8)).square().mean()
    loss.backward()
    update()
    print(i, loss.item().hex())           # ITEM
counters = dynamo_counters.counters
print("graphs", counters["stats"]["unique_graphs"], "breaks", sum(counters["graph_break"].values()))
"""


@pytest.mark.parametrize("policy", ["record", "ignore"])
def test_a_compiled_optimizer_step_counts_its_steps(tmp_path, policy):
    """A compiled optimizer.step() runs ophook's step hooks only while Dynamo traces it; the steps
    it completes at run time are counted all the same, as the eager policy counts them, with the
    same graphs and breaks as without ophook."""
    plain = run_script(tmp_path, COMPILED_OPTIMIZER, preload=False, timeout=300)
    eager = run_script(tmp_path, COMPILED_OPTIMIZER, mode="trace", compile="eager", output=tmp_path / "eager",
                       timeout=300)
    ours = run_script(tmp_path, COMPILED_OPTIMIZER, mode="trace", compile=policy, output=tmp_path / "ours",
                      timeout=300)
    assert ours.stdout == plain.stdout  # the same bits, as many graphs and graph breaks
    item = "%s:%d:<module>" % (tmp_path / "prog.py", line_of("# ITEM", COMPILED_OPTIMIZER))

    def item_steps(where):
        return [r["step"] for r in trace(where) if r["source"] == item and r["op"] == "torch.Tensor.item"]

    assert item_steps(tmp_path / "eager") == [2, 4, 6, 8]  # each optimizer's step counts
    assert item_steps(tmp_path / "ours") == item_steps(tmp_path / "eager")
    assert summary(tmp_path / "ours")["recorded"]["last_step"] == 8
    if policy == "record":
        kernels = [r for r in trace(tmp_path / "ours") if r["level"] == "compiled"]
        updates = [r for r in kernels if r["phase"] == "optimizer"]
        assert updates and {r["step"] for r in updates} <= {0, 1, 2, 3, 4, 5, 6, 7}
        assert {r["phase"] for r in kernels} == {"forward", "backward", "optimizer"}
    # OPHOOK_STEPS selects by those steps: iteration 0's item and iteration 1's forward, backward
    # and first update (step 2), its second update (step 3, kernels only under record), nothing after
    run_script(tmp_path, COMPILED_OPTIMIZER, mode="trace", compile=policy, steps="2-3", output=tmp_path / "some",
               timeout=300)
    some = trace(tmp_path / "some")
    assert {r["step"] for r in some} == ({2, 3} if policy == "record" else {2})
    assert item_steps(tmp_path / "some") == [2]
    if policy == "record":
        assert {r["phase"] for r in some if r["level"] == "compiled" and r["step"] == 2} == {
            "forward", "backward", "optimizer"}


def test_uninstall_gives_inductor_back_its_loader_and_settings(tmp_path):
    proc = run_script(tmp_path, """
        import torch, ophook
        from torch._inductor import codecache, config
        before = (config.trace.provenance_tracking_level, config.fx_graph_cache)
        f = torch.compile(lambda x: torch.sin(x) * 2)
        print(f(torch.ones(3)).tolist())
        hooked = hasattr(codecache.PyCodeCache.load_by_key_path.__func__, "__wrapped__")
        ophook.uninstall()
        print(hooked, before, hasattr(codecache.PyCodeCache.load_by_key_path.__func__, "__wrapped__"),
              (config.trace.provenance_tracking_level, config.fx_graph_cache))
    """, mode="trace", compile="record", timeout=300)
    values, flags = proc.stdout.splitlines()
    # while recording: provenance on, the FX graph cache off; after: as torch set them
    assert flags == "True (1, False) False (0, True)", flags
    assert [r["level"] for r in trace(tmp_path / "out")].count("compiled") == 1
