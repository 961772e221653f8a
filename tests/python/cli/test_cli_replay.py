"""`ophook replay` and `ophook compare --referee float64` on real recordings: a NumPy + torch
program is recorded under LD_PRELOAD (both torch levels, float32 and float16), then replayed by
the built `ophook` from its dumps; the verdicts are checked against what the dumps and a
recomputation say."""
import json
import os
import subprocess
import textwrap

import numpy as np
import pytest

from cli_fixtures import OPHOOK, run_ophook
from harness import VENV_PYTHON, clean_env, run_script, trace, summary

# Every array argument kind replay rebuilds: transposed and strided views, a tuple axis, an
# in-place op (out=), a float scalar next to integers, torch.Size, slices, a Linear layer (its
# init is random), and a float16 sum whose result cancels almost all of its terms.
PROGRAM = """
    import sys
    import numpy as np
    import torch

    half = sys.argv[1] == "float16"
    ndtype, tdtype = (np.float16, torch.float16) if half else (np.float32, torch.float32)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 24)).astype(ndtype)
    b = np.tanh(a) * ndtype(2) + ndtype(1)
    m = a.T @ b
    total = np.sum(m, axis=(0, 1))
    norms = np.linalg.norm(a, axis=1)
    running = np.cumsum(b, axis=0)
    index = np.argmax(a, axis=1)
    counts = np.add(index, 1.0)
    a += 1
    joined = np.concatenate([a[:, :4], b[:, ::3]], axis=1)
    x = torch.from_numpy(np.ascontiguousarray(a)).to(tdtype)
    layer = torch.nn.Linear(24, 8, dtype=tdtype)
    y = layer(x)
    g = torch.nn.functional.gelu(y)
    p = torch.softmax(g.float(), dim=-1).to(tdtype)
    col = p.t().sum(dim=(0,), keepdim=True)
    r = g.reshape(torch.Size([8, 16]))[1:5, ::2]
    noise = torch.randn(3)
    if "--planted" in sys.argv:
        cancel = torch.cat([torch.tensor([60000.0]), torch.linspace(1e-4, 2e-4, 999), torch.tensor([-60000.0])])
        planted = cancel.half().sum()
"""


def record(tmp_path, name, *args, **settings):
    directory = tmp_path / name
    directory.mkdir()
    run_script(directory, PROGRAM, *args, output=directory / "out", **settings)
    return directory / "out"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The program recorded at the two torch levels (float32), and at torch_function in float16."""
    tmp = tmp_path_factory.mktemp("replay")
    return {
        "function": record(tmp, "function", "float32", "--planted", levels="numpy,torch_function"),
        "dispatch": record(tmp, "dispatch", "float32", levels="torch_dispatch"),
        "half": record(tmp, "half", "float16", levels="numpy,torch_function"),
    }


def replay(*args, timeout=300):
    return run_ophook("replay", *args, timeout=timeout)


def replay_json(tmp_path, directory, *args, expect):
    report = tmp_path / ("report%d.json" % len(list(tmp_path.glob("report*.json"))))
    proc = replay(directory, "--json", report, *args)
    assert proc.returncode == expect, proc.stdout + proc.stderr
    return json.loads(report.read_text()), proc


def by_seq(document):
    return {c["seq"]: c for c in document["calls"]}


# Calls that compute nothing replay could check: random draws, fresh memory, questions about the
# recorded autograd graph (a replayed input is a fresh leaf), attribute and process-state setters.
NOT_COMPUTATIONS = ("random:", "returns uninitialized memory", "needs the recorded program's autograd graph",
                    "changes an attribute", "sets process state")


@pytest.mark.parametrize("level", ["function", "dispatch"])
def test_deterministic_calls_replay_bit_for_bit(runs, tmp_path, level):
    document, proc = replay_json(tmp_path, runs[level], expect=0)
    calls = document["calls"]
    deterministic = [c for c in calls if not c["reason"].startswith(NOT_COMPUTATIONS)]
    replayed = [c for c in deterministic if c["status"] != "skipped"]
    assert len(replayed) >= 0.9 * len(deterministic), [c for c in deterministic if c["status"] == "skipped"]
    assert all(c["status"] == "match" for c in replayed)
    assert all(c["max_abs"] in (0, None) for c in replayed)
    assert "verdict: all %d replayed calls match" % len(replayed) in proc.stdout
    # The random ops were skipped with their reason, not replayed.
    records = {r["seq"]: r for r in trace(runs[level])}
    random_ops = [c for c in calls if records[c["seq"]]["op"] in ("torch.randn", "aten.randn.default",
                                                                   "aten.normal_.default")]
    assert random_ops and all(c["status"] == "skipped" and c["reason"].startswith("random") for c in random_ops)


def test_what_replay_rebuilt(runs, tmp_path):
    """The arguments that need the encoding's additions really were rebuilt (and matched)."""
    records = trace(runs["function"])
    document, _ = replay_json(tmp_path, runs["function"], "--include", "^numpy\\.|^torch\\.Tensor\\.(sum|reshape)$",
                              expect=0)
    status = {c["seq"]: c["status"] for c in document["calls"]}

    def seq_of(op, predicate=lambda r: True):
        return next(r["seq"] for r in records if r["op"] == op and predicate(r))

    transposed = seq_of("numpy.matmul")
    assert [a.get("strides") for a in records[transposed]["args"]] == [[1, 24], None]
    tuple_axis = seq_of("numpy.sum", lambda r: "/kwargs/axis" in (r.get("tuples") or []))
    float_scalar = seq_of("numpy.add", lambda r: r["args"][1] == 1.0 and isinstance(r["args"][1], float))
    size = seq_of("torch.Tensor.reshape")
    assert records[size].get("tuples") == ["/args/1"]
    for seq in (transposed, tuple_axis, float_scalar, size, seq_of("numpy.concatenate")):
        assert status[seq] == "match", (seq, records[seq]["op"])


def test_a_damaged_file_is_a_mismatch_of_exactly_the_call_naming_it(runs, tmp_path):
    out = runs["dispatch"]
    copy = tmp_path / "run"
    copy.mkdir()
    for f in out.iterdir():
        os.link(f, copy / f.name)  # cheap; a file is only ever replaced, never written through
    records = trace(copy)
    gelu = next(r for r in records if r["op"] == "aten.gelu.default")
    tampered = gelu["outputs"][0]["file"]
    values = np.load(copy / tampered)
    values.flat[3] += 1
    replacement = copy / "new.npy"
    np.save(replacement, values)
    os.replace(replacement, copy / tampered)
    addmm = next(r for r in records if r["op"] == "aten.addmm.default")
    broken = addmm["args"][1]["file"]
    (copy / "cut.npy").write_bytes((copy / broken).read_bytes()[:60])
    os.replace(copy / "cut.npy", copy / broken)

    document, proc = replay_json(tmp_path, copy, expect=1)
    mismatched = {c["seq"]: c for c in document["calls"] if c["status"] == "mismatch"}
    assert set(mismatched) == {gelu["seq"], addmm["seq"]}
    assert mismatched[gelu["seq"]]["max_abs"] == pytest.approx(1.0, rel=1e-2)
    assert "1 of" in mismatched[gelu["seq"]]["reason"]
    assert broken in mismatched[addmm["seq"]]["reason"]
    assert "seq %d aten.gelu.default" % gelu["seq"] in proc.stdout
    assert "verdict: 2 of" in proc.stdout


def test_reference_float64_small_for_float32_large_for_planted_float16_sum(runs, tmp_path):
    document, proc = replay_json(tmp_path, runs["function"], "--reference", "float64", expect=1)
    records = {r["seq"]: r for r in trace(runs["function"])}
    calls = by_seq(document)
    planted = next(s for s, r in records.items() if r["op"] == "torch.Tensor.sum"
                   and r["args"][0]["dtype"] == "float16")
    half_sum = calls[planted]
    assert half_sum["status"] == "mismatch" and half_sum["max_rel"] > 0.02
    assert half_sum["threshold"] == 2.0 ** -10
    # Recomputed: the recorded float16 sum against the sum of its recorded float16 inputs in float64.
    terms = np.load(runs["function"] / records[planted]["args"][0]["file"]).astype(np.float64)
    recorded = float(np.load(runs["function"] / records[planted]["outputs"][0]["file"]))
    assert half_sum["max_rel"] == pytest.approx(abs(recorded - terms.sum()) / (abs(terms.sum()) + 1e-7), rel=1e-6)
    others = [c for s, c in calls.items() if s != planted and c["status"] != "skipped"]
    assert others and all(c["status"] == "match" for c in others), [c for c in others if c["status"] != "match"]
    float32 = [c for c in others if c.get("threshold") == 2.0 ** -13 and c["max_rel"]]
    assert len(float32) >= 5 and all(c["max_rel"] < 10 * 2.0 ** -13 for c in float32)
    ranked = [o["op"] for o in document["ops"]]
    assert ranked[0] == "torch.Tensor.sum"
    assert "seq %d torch.Tensor.sum" % planted in proc.stdout


def test_emitted_script_reproduces_the_call_under_plain_python(runs, tmp_path):
    records = trace(runs["function"])
    for op in ("numpy.matmul", "torch.nn.functional.linear", "numpy.sum", "torch.Tensor.__getitem__"):
        seq = next(r["seq"] for r in records if r["op"] == op)
        proc = replay(runs["function"], "--emit-script", seq)
        assert proc.returncode == 0, proc.stderr
        script = tmp_path / ("repro_%d.py" % seq)
        script.write_text(proc.stdout)
        ran = subprocess.run([str(VENV_PYTHON), str(script)], capture_output=True, text=True, env=clean_env(),
                             cwd=tmp_path, timeout=120)
        assert ran.returncode == 0, (op, ran.stdout, ran.stderr)
        assert "outputs[0]: match" in ran.stdout
    random = next(r["seq"] for r in records if r["op"] == "torch.randn")
    refused = replay(runs["function"], "--emit-script", random)
    assert refused.returncode == 2 and "random" in refused.stderr


def test_referee_names_the_float32_run_closer(runs, tmp_path):
    report = tmp_path / "compare.json"
    html = tmp_path / "compare.html"
    proc = run_ophook("compare", runs["function"], runs["half"], "--referee", "float64", "--json", report,
                      "--html", html, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    ops = {o["op"]: o for o in json.loads(report.read_text())["ops"]}
    rounding = ("numpy.matmul", "numpy.tanh", "numpy.cumsum", "numpy.linalg.norm", "torch.nn.functional.linear",
                "torch.nn.functional.gelu")
    for op in rounding:
        verdict = ops[op]["referee"]
        assert verdict["closer"] == "base", (op, verdict)
        assert verdict["base_max_rel"] < verdict["new_max_rel"], (op, verdict)
        assert verdict["pairs_judged"] >= 1
    # Wherever NEW computed in float16, BASE (float32) is closer, or both are exact (a tie).
    half_outputs = {}
    for r in trace(runs["half"]):
        half_outputs.setdefault(r["op"], set()).update(a["dtype"] for a in r["outputs"]
                                                       if isinstance(a, dict) and a.get("kind") == "array")
    judged = [op for op, entry in ops.items() if entry.get("referee", {}).get("closer")]
    assert len(judged) >= len(rounding)
    for op in judged:
        if half_outputs.get(op) == {"float16"}:
            assert ops[op]["referee"]["closer"] in ("base", "tie"), (op, ops[op]["referee"])
    assert "referee float64" in proc.stdout
    assert "Referee float64" in html.read_text()


def test_random_config_replay_of_runs_without_dumps(tmp_path):
    script = """
        import numpy as np
        rng = np.random.default_rng(1)
        a = rng.uniform(0.5, 2.0, (32, 8)).astype(np.float32)
        i = rng.integers(0, 8, 32)
        b = np.log(a) @ a.T
        c = np.take_along_axis(a, i[:, None], axis=1)
        d = np.sqrt(b * b).sum(axis=0)
    """
    out = {}
    for mode in ("trace", "stats"):
        (tmp_path / mode).mkdir()
        out[mode] = tmp_path / mode / "out"
        run_script(tmp_path / mode, script, output=out[mode], mode=mode, levels="numpy")
    document, proc = replay_json(tmp_path, out["stats"], "--random", expect=0)
    records = {r["seq"]: r for r in trace(out["stats"])}
    status = {records[c["seq"]]["op"]: c for c in document["calls"]}
    for op in ("numpy.log", "numpy.matmul", "numpy.take_along_axis", "numpy.sqrt", "numpy.add.reduce"):
        assert status[op]["status"] == "match", status[op]
    assert status["numpy.matmul"]["max_rel"] < 10 * 2.0 ** -13
    trace_document, _ = replay_json(tmp_path, out["trace"], "--random", expect=0)
    trace_ops = {r["seq"]: r["op"] for r in trace(out["trace"])}
    reasons = {trace_ops[c["seq"]]: c["reason"] for c in trace_document["calls"]}
    assert "without a recorded range" in reasons["numpy.take_along_axis"]
    assert reasons["numpy.log"] == ""
    # Without --random, a run without dumps has nothing to replay, and says what to do.
    plain = replay(out["trace"])
    assert plain.returncode == 0 and "--random" in plain.stdout


def test_usage_and_input_errors(runs, tmp_path):
    missing = replay(tmp_path / "nowhere")
    assert missing.returncode == 2 and "not a directory" in missing.stderr
    parent = tmp_path / "parent"
    (parent / "pid42").mkdir(parents=True)
    (parent / "pid42" / "trace.jsonl").write_text("")
    nested = replay(parent)
    assert nested.returncode == 2 and str(parent / "pid42") in nested.stderr
    unknown = replay(runs["dispatch"], "--seq", "5,99999")
    assert unknown.returncode == 2 and "99999" in unknown.stderr
    regex = replay(runs["dispatch"], "--include", "(")
    assert regex.returncode == 2 and "regular expression" in regex.stderr
    both = replay(runs["dispatch"], "--emit-script", "3", "--json", tmp_path / "x.json")
    assert both.returncode == 2
    python = replay(runs["dispatch"], "--python", tmp_path / "no-python")
    assert python.returncode == 2 and "no-python" in python.stderr and "--python" in python.stderr
    helped = replay("--help")
    assert helped.returncode == 0 and "2^-10 float16" in helped.stdout and "--emit-script" in helped.stdout


def test_seq_selection_and_html(runs, tmp_path):
    records = trace(runs["dispatch"])
    chosen = [r["seq"] for r in records if r["op"] == "aten.addmm.default"]
    html = tmp_path / "replay.html"
    document, proc = replay_json(tmp_path, runs["dispatch"], "--seq", ",".join(map(str, chosen)), "--html", html,
                                 expect=0)
    assert sorted(c["seq"] for c in document["calls"]) == chosen
    assert all(c["status"] == "match" for c in document["calls"])
    page = html.read_text()
    assert "aten.addmm.default" in page and "Ops, ranked by error" in page


# Operands that share memory: NumPy computes x.T @ x with BLAS syrk (one buffer), where two
# buffers take gemm and differ in the last bits; each operand pair here lies in one block.
SHARING = """
    import numpy as np
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 37))
    gram = x.T @ x                       # x.T is a block (Fortran order), x lies in it
    part = np.dot(x, x.T[:, 5:50])       # a slice of the transpose, offset into x
    f = np.asfortranarray(x)
    back = np.matmul(f.T, f[::-1, 2:])   # a reversed, offset view
    fresh = np.add(x, x.copy())          # no sharing
"""


def test_operands_sharing_memory_are_replayed_sharing_it(tmp_path):
    run_script(tmp_path, SHARING, output=tmp_path / "out", mode="dump")
    out = tmp_path / "out"
    records = {r["op"]: r for r in trace(out) if r["op"] in ("numpy.matmul", "numpy.dot", "numpy.add")}
    assert not any("view_of" in a for a in records["numpy.add"]["args"])
    views = 0
    for op in ("numpy.matmul", "numpy.dot"):
        first, second = records[op]["args"][:2]
        base, view = (first, second) if "view_of" in second else (second, first)
        assert view["view_of"] == "/args/%d" % records[op]["args"].index(base)
        # The view, rebuilt from the base's file at its offset and strides, holds its own file's values.
        memory = np.load(out / base["file"]).ravel(order="F" if base.get("strides") else "C")
        values = np.load(out / view["file"])
        strides = view.get("strides") or [s // values.itemsize for s in values.strides]
        rebuilt = np.lib.stride_tricks.as_strided(memory[view["view_offset"]:], values.shape,
                                                  [s * values.itemsize for s in strides])
        np.testing.assert_array_equal(rebuilt, values)
        views += 1
    assert views == 2
    proc = replay(out)
    assert proc.returncode == 0 and "0 mismatch" in proc.stdout, proc.stdout + proc.stderr


# Arrays whose dtype's str is not its name: structured records and fixed-width strings.
DESCRIBED_DTYPES = """
import numpy as np
rec = np.zeros(4, dtype=[("a", "f4"), ("b", "i8")])
rec["a"] = [3, 1, 4, 2]
rec["b"] = [30, 10, 40, 20]
ordered = np.sort(rec, order="a")
names = np.array(["alpha", "beta", "gamma"])
longer = np.strings.add(names, "_x")
both = np.concatenate([names, longer])
"""


def test_structured_and_string_arrays_replay(tmp_path):
    run_script(tmp_path, DESCRIBED_DTYPES, output=tmp_path / "out", mode="dump")
    records = {r["op"]: r for r in trace(tmp_path / "out")}
    assert records["numpy.sort"]["args"][0]["dtype"] == "[('a', '<f4'), ('b', '<i8')]"
    report, proc = replay_json(tmp_path, tmp_path / "out", expect=0)
    calls = by_seq(report)
    assert records["numpy.add"]["args"][0]["dtype"] == "<U5"
    for op in ("numpy.sort", "numpy.add", "numpy.concatenate"):
        assert calls[records[op]["seq"]]["status"] == "match", (op, calls[records[op]["seq"]])


# Calls whose kernels depend on whether their inputs require grad: multi-head attention (query,
# key and value one tensor) and a GRU, with their parameters, the GRU also under no_grad; and a
# ReLU in place on an activation, which autograd allows on a tensor that is not a leaf.
AUTOGRAD_INPUTS = """
import torch
torch.manual_seed(0)
attention = torch.nn.MultiheadAttention(16, 4, batch_first=True)
gru = torch.nn.GRU(4, 6, batch_first=True)
x = torch.randn(2, 5, 16)
out, weights = attention(x, x, x)
seq, last = gru(torch.randn(2, 3, 4))
hidden = torch.nn.functional.relu_(out * 2)
with torch.no_grad():
    frozen, _ = gru(torch.randn(2, 3, 4))
(hidden.sum() + seq.sum()).backward()
"""


def test_inputs_requiring_grad_are_replayed_requiring_grad(tmp_path):
    run_script(tmp_path, AUTOGRAD_INPUTS, output=tmp_path / "out", mode="dump",
               levels="numpy,torch_function,torch_dispatch")
    records = trace(tmp_path / "out")
    mha = next(r for r in records if r["op"] == "torch.nn.functional.multi_head_attention_forward")
    assert [a.get("requires_grad") for a in mha["args"][:3]] == [None] * 3  # the input: no grad
    assert mha["args"][5]["requires_grad"] is True  # in_proj_weight, a parameter
    assert "grad_enabled" not in mha
    grus = [r for r in records if r["op"] == "torch.gru"]
    assert len(grus) == 2 and all(a.get("requires_grad") for r in grus for a in r["args"][2])
    assert [r.get("grad_enabled") for r in grus] == [None, False]  # the second under no_grad
    report, proc = replay_json(tmp_path, tmp_path / "out", expect=0)
    calls = by_seq(report)
    relu = next(r for r in records if r["op"] == "torch.nn.functional.relu_")
    assert relu["args"][0]["requires_grad"] is True
    for record in (mha, *grus, relu):
        assert calls[record["seq"]]["status"] == "match", (record["op"], calls[record["seq"]])


# A program that changes torch's intra-op thread count between two reductions.
THREADS = """
import torch
torch.manual_seed(0)
x = torch.randn(1 << 20)
print(torch.get_num_threads())
before = x.sum()
torch.set_num_threads(1)
after = x.sum()
product = x.reshape(1024, 1024) @ x.reshape(1024, 1024)
"""


def test_replay_runs_each_call_with_the_threads_torch_had(tmp_path):
    """torch.set_num_threads is no call a mode sees; dump mode notes the count where it changed,
    and replay sets it for the calls after: a reduction's bits depend on it."""
    proc = run_script(tmp_path, THREADS, output=tmp_path / "out", mode="dump")
    default = int(proc.stdout.split()[0])
    sums = [r for r in trace(tmp_path / "out") if r["op"] == "torch.Tensor.sum"]
    changes = summary(tmp_path / "out")["notes"]["torch_threads"]["changes"]
    assert changes[-1] == {"seq": sums[1]["seq"], "threads": 1}
    assert changes[0]["seq"] <= sums[0]["seq"] and changes[0]["threads"] == default
    report, _ = replay_json(tmp_path, tmp_path / "out", expect=0)
    assert all(c["status"] in ("match", "skipped") for c in report["calls"])
    assert {c["seq"] for c in report["calls"] if c["status"] == "match"} >= {r["seq"] for r in sums}
