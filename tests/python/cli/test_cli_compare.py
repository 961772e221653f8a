"""`ophook compare` end to end: synthetic run directories (np.save + trace.jsonl) compared by
the built binary; exit codes, the first divergent call, per-op numbers against numpy."""
import json
import re

import numpy as np
import pytest

from cli_fixtures import RunDir, run_ophook, simple_program


def compare(base, new, *extra):
    return run_ophook("compare", base, new, *extra)


def table_row(stdout, op):
    """The cells of the per-op table row of `op`."""
    for line in stdout.splitlines():
        cells = line.split()
        if cells and cells[0] == op and len(cells) >= 7:
            return cells
    raise AssertionError(f"no per-op row for {op} in:\n{stdout}")


def test_identical_runs_exit_0(tmp_path):
    base = simple_program(RunDir(tmp_path / "a")).write()
    new = simple_program(RunDir(tmp_path / "b")).write()
    proc = compare(base, new)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "first divergent call: none" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1].startswith("verdict: SAME")
    assert table_row(proc.stdout, "numpy.matmul")[1:5] == ["1", "0", "0", "0"]


def test_differences_exit_1_with_first_divergent_call_and_numpy_numbers(tmp_path):
    base = simple_program(RunDir(tmp_path / "a")).write()
    new = simple_program(RunDir(tmp_path / "b"), scale=1.001).write()
    proc = compare(base, new, "--json", tmp_path / "out.json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    at = lines.index("first divergent call:")
    assert lines[at + 1].split() == ["BASE", "seq=2", "op=numpy.matmul",
                                     "source=model.py:33:forward", "module=encoder.0",
                                     "phase=forward", "step=0"]
    assert lines[at + 2].startswith("  NEW   seq=2 op=numpy.matmul")
    assert "outputs[0]" in lines[at + 3]
    # Its inputs are equal in both runs, so the difference starts here.
    assert "first origin: the first divergent call" in proc.stdout
    assert lines[-1].startswith("verdict: DIFFERENT")
    assert lines[0] == lines[-1][len("verdict: "):]

    a = np.load(base / "op_numpy.matmul_output_000002.npy").astype(np.float64)
    b = np.load(new / "op_numpy.matmul_output_000002.npy").astype(np.float64)
    max_abs = np.max(np.abs(a - b))
    max_rel = np.max(np.abs(a - b) / np.abs(a))
    cosine = np.dot(a.ravel(), b.ravel()) / (np.linalg.norm(a) * np.linalg.norm(b))

    result = json.loads((tmp_path / "out.json").read_text())
    assert result["verdict"] == "different"
    assert result["first_divergence"]["base"]["seq"] == 2
    assert result["first_origin"] == result["first_divergence"]
    assert result["first_origin"]["origin"] is True
    # matmul made the difference; the reduction and tanh of its output only pass it on.
    assert [(p["op"], p["origin"]) for p in result["pairs"] if p["differs"]] == [
        ("numpy.matmul", True), ("numpy.add.reduce", False), ("numpy.tanh", False)]
    assert result["origins"] == 1 and result["values_compared"] == 5
    ops = {o["op"]: o for o in result["ops"]}
    assert ops["numpy.matmul"]["differing"] == 1 and ops["numpy.matmul"]["origins"] == 1
    assert ops["numpy.tanh"]["differing"] == 1 and ops["numpy.tanh"]["origins"] == 0
    assert ops["numpy.matmul"]["max_abs_err"] == pytest.approx(max_abs, rel=1e-12)
    assert ops["numpy.matmul"]["max_rel_err"] == pytest.approx(max_rel, rel=1e-12)
    assert ops["numpy.matmul"]["min_cosine"] == pytest.approx(cosine, abs=1e-12)
    assert ops["numpy.add"]["differing"] == 0 and ops["numpy.add"]["max_abs_err"] == 0
    assert not np.allclose(b, a, rtol=1e-5, atol=1e-8)

    row = table_row(proc.stdout, "numpy.matmul")
    assert row[1:4] == ["1", "1", "1"]  # pairs, differing, origins
    assert float(row[4]) == pytest.approx(max_abs, rel=1e-3)
    assert float(row[5]) == pytest.approx(max_rel, rel=1e-3)
    assert table_row(proc.stdout, "numpy.tanh")[1:4] == ["1", "1", "0"]


def test_tolerance_options_follow_numpy_allclose(tmp_path):
    base = simple_program(RunDir(tmp_path / "a")).write()
    new = simple_program(RunDir(tmp_path / "b"), scale=1.001).write()
    a = np.load(base / "op_numpy.tanh_output_000004.npy")
    b = np.load(new / "op_numpy.tanh_output_000004.npy")
    assert np.allclose(b, a, rtol=2e-3, atol=0)
    assert compare(base, new, "--rtol", "2e-3", "--atol", "0").returncode == 0
    assert compare(base, new, "--rtol", "1e-4").returncode == 1


def test_extra_op_is_reported_unmatched_and_the_rest_aligned(tmp_path):
    base = simple_program(RunDir(tmp_path / "a")).write()
    new = simple_program(RunDir(tmp_path / "b"), extra_op=True).write()
    proc = compare(base, new, "--json", tmp_path / "out.json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 unmatched in NEW" in proc.stdout
    assert re.search(r"NEW only\s+seq=2 op=numpy\.exp", proc.stdout)
    assert "extra call in NEW" in proc.stdout  # the first divergence is the extra call
    result = json.loads((tmp_path / "out.json").read_text())
    assert result["differing_pairs"] == 0
    assert result["unmatched_new"] == 1 and result["unmatched_base"] == 0
    assert [(u["side"], u["op"], u["seq"]) for u in result["unmatched"]] == [("new", "numpy.exp", 2)]
    pairs = [(p["base_seq"], p["new_seq"]) for p in result["pairs"]]
    assert pairs == [(0, 0), (1, 1), (2, 3), (3, 4), (4, 5)]
    # The other direction: the call is missing in NEW.
    proc = compare(new, base)
    assert proc.returncode == 1
    assert re.search(r"BASE only\s+seq=2 op=numpy\.exp", proc.stdout)


def test_nan_pattern_shape_and_dtype_mismatches(tmp_path):
    base = simple_program(RunDir(tmp_path / "a")).write()
    new = simple_program(RunDir(tmp_path / "b"), nan_at=(0, 0)).write()
    proc = compare(base, new, "--json", tmp_path / "out.json")
    assert proc.returncode == 1
    ops = {o["op"]: o for o in json.loads((tmp_path / "out.json").read_text())["ops"]}
    assert ops["numpy.matmul"]["nonfinite_mismatches"] == 1
    assert "NaN/Inf" in table_row(proc.stdout, "numpy.matmul")[7]

    x = np.arange(6, dtype=np.float32)
    a = RunDir(tmp_path / "s1")
    a.call("numpy.negative", [x.reshape(2, 3)], [-x.reshape(2, 3)])
    a.call("numpy.sqrt", [x], [np.sqrt(x)])
    b = RunDir(tmp_path / "s2")
    b.call("numpy.negative", [x.reshape(3, 2)], [-x.reshape(3, 2)])
    b.call("numpy.sqrt", [x.astype(np.float64)], [np.sqrt(x.astype(np.float64))])
    proc = compare(a.write(), b.write(), "--json", tmp_path / "shape.json")
    assert proc.returncode == 1
    ops = {o["op"]: o for o in json.loads((tmp_path / "shape.json").read_text())["ops"]}
    assert ops["numpy.negative"]["shape_mismatches"] == 2
    assert ops["numpy.sqrt"]["dtype_mismatches"] == 2
    assert ops["numpy.sqrt"]["max_abs_err"] == pytest.approx(
        np.max(np.abs(np.sqrt(x).astype(np.float64) - np.sqrt(x.astype(np.float64)))))


def test_equal_nans_float16_bool_int_and_big_endian(tmp_path):
    values = np.array([1.0, np.nan, np.inf, -2.5], dtype=np.float32)
    half = np.array([0.1, 0.2, 65504], dtype=np.float16)
    flags = np.array([True, False, True])
    ints = np.arange(5, dtype=np.int64)
    a = RunDir(tmp_path / "a")
    a.call("numpy.positive", [values], [values])
    a.call("numpy.positive", [half], [half])
    a.call("numpy.logical_not", [flags], [~flags])
    a.call("numpy.positive", [ints], [ints])
    b = RunDir(tmp_path / "b")
    b.call("numpy.positive", [values.astype(">f4")], [values.astype(">f4")])
    b.call("numpy.positive", [half.astype(">f2")], [half.astype(">f2")])
    b.call("numpy.logical_not", [flags], [~flags])
    b.call("numpy.positive", [ints.astype(">i8")], [ints.astype(">i8")])
    for rec in b.records:  # numpy names ">f4" float32 too; keep the trace identical
        for v in rec["args"] + rec["outputs"]:
            v["dtype"] = v["dtype"].lstrip(">")
    proc = compare(a.write(), b.write())
    assert proc.returncode == 0, proc.stdout + proc.stderr

    c = RunDir(tmp_path / "c")
    c.call("numpy.positive", [values], [values])
    c.call("numpy.positive", [half], [(half + np.float16(0.001)).astype(np.float16)])
    c.call("numpy.logical_not", [flags], [flags])
    c.call("numpy.positive", [ints], [ints + 1])
    proc = compare(tmp_path / "a", c.write(), "--json", tmp_path / "out.json")
    assert proc.returncode == 1
    pairs = json.loads((tmp_path / "out.json").read_text())["pairs"]
    assert [p["differs"] for p in pairs] == [False, True, True, True]
    expected = np.max(np.abs(half.astype(np.float64)
                             - (half + np.float16(0.001)).astype(np.float16).astype(np.float64)))
    assert pairs[1]["max_abs_err"] == pytest.approx(expected)
    assert pairs[2]["max_abs_err"] == 1 and pairs[3]["max_abs_err"] == 1


def test_stats_only_runs(tmp_path):
    base = simple_program(RunDir(tmp_path / "a", mode="stats")).write()
    same = simple_program(RunDir(tmp_path / "b", mode="stats")).write()
    proc = compare(base, same)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    other = simple_program(RunDir(tmp_path / "c", mode="stats"), scale=1.01).write()
    proc = compare(base, other, "--json", tmp_path / "out.json")
    assert proc.returncode == 1
    assert "statistics only" in proc.stdout
    result = json.loads((tmp_path / "out.json").read_text())
    value = [v for v in result["pairs"][2]["values"] if v["path"] == "outputs[0]"][0]
    assert value["method"] == "stats"
    mm_a = np.load(simple_program(RunDir(tmp_path / "d")).write() / "op_numpy.matmul_output_000002.npy")
    # The largest statistic difference is a lower bound of the true max abs error.
    assert value["max_abs_err"] <= np.max(np.abs(mm_a * 1.01 - mm_a)) * 1.01
    # Trace mode: shapes and dtypes only. The calls match, but no value was compared: not SAME.
    t1 = simple_program(RunDir(tmp_path / "t1", mode="trace")).write()
    t2 = simple_program(RunDir(tmp_path / "t2", mode="trace"), scale=3.0).write()
    proc = compare(t1, t2, "--json", tmp_path / "trace.json")
    assert proc.returncode == 1, proc.stdout
    assert proc.stdout.startswith("SAME CALLS, VALUES NOT RECORDED: 5 paired calls match, 0 of them")
    result = json.loads((tmp_path / "trace.json").read_text())
    assert result["verdict"] == "same_calls_values_not_recorded"
    assert result["values_compared"] == 0 and result["differing_pairs"] == 0


def test_corrupt_and_truncated_npy_exit_2_naming_the_file(tmp_path):
    base = simple_program(RunDir(tmp_path / "a")).write()
    new = simple_program(RunDir(tmp_path / "b")).write()
    target = new / "op_numpy.matmul_output_000002.npy"
    data = target.read_bytes()
    target.write_bytes(data[:-7])
    proc = compare(base, new)
    assert proc.returncode == 2
    assert str(target) in proc.stderr and "truncated" in proc.stderr

    target.write_bytes(b"this is not an npy file at all" * 3)
    proc = compare(base, new)
    assert proc.returncode == 2
    assert str(target) in proc.stderr

    target.unlink()
    proc = compare(base, new)
    assert proc.returncode == 2
    assert str(target) in proc.stderr and "not found" in proc.stderr


def test_truncated_last_trace_line_is_tolerated(tmp_path):
    base = simple_program(RunDir(tmp_path / "a")).write()
    run = simple_program(RunDir(tmp_path / "b"))
    new = run.write(tail=run.lines()[-1][:40])  # a killed writer's half line
    proc = compare(base, new)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning" in proc.stderr and "line 6" in proc.stderr


def test_malformed_middle_line_exit_2_naming_file_and_line(tmp_path):
    base = simple_program(RunDir(tmp_path / "a")).write()
    new = simple_program(RunDir(tmp_path / "b")).write()
    lines = (new / "trace.jsonl").read_text().splitlines()
    lines[2] = lines[2][:30]
    (new / "trace.jsonl").write_text("\n".join(lines) + "\n")
    proc = compare(base, new)
    assert proc.returncode == 2
    assert str(new / "trace.jsonl") in proc.stderr and "line 3" in proc.stderr


def test_usage_and_missing_inputs_exit_2(tmp_path):
    base = simple_program(RunDir(tmp_path / "a")).write()
    assert compare(base, tmp_path / "missing").returncode == 2
    assert "missing" in compare(base, tmp_path / "missing").stderr
    (tmp_path / "empty").mkdir()
    proc = compare(base, tmp_path / "empty")
    assert proc.returncode == 2 and "trace.jsonl" in proc.stderr
    assert run_ophook("compare", base).returncode == 2
    assert compare(base, base, "--rtol", "-1").returncode == 2
    assert compare(base, base, "--bogus").returncode == 2


def test_html_is_self_contained(tmp_path):
    base = simple_program(RunDir(tmp_path / "a")).write()
    new = simple_program(RunDir(tmp_path / "b"), scale=1.001, extra_op=True).write()
    proc = compare(base, new, "--html", tmp_path / "out.html")
    assert proc.returncode == 1
    html = (tmp_path / "out.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html
    assert "http" not in html and "<script" not in html and "<link" not in html
    assert "numpy.matmul" in html and "first divergence" in html


def test_exception_and_scalar_differences(tmp_path):
    x = np.arange(3.0)
    a = RunDir(tmp_path / "a")
    a.call("numpy.log", [x], [np.log(x + 1)])
    a.call("torch.Tensor.item", [x[:1]], [0.5])
    b = RunDir(tmp_path / "b")
    b.call("numpy.log", [x], [], error="ValueError: math domain error")
    b.call("torch.Tensor.item", [x[:1]], [0.75])
    proc = compare(a.write(), b.write(), "--json", tmp_path / "out.json")
    assert proc.returncode == 1
    assert "exception none vs ValueError: math domain error" in proc.stdout
    assert "outputs[0]: only in BASE" in proc.stdout
    pairs = json.loads((tmp_path / "out.json").read_text())["pairs"]
    assert pairs[0]["exception"] and pairs[0]["differs"]
    scalar = pairs[1]["values"][-1]
    assert scalar["method"] == "scalar" and scalar["path"] == "outputs[0]"
    assert scalar["max_abs_err"] == 0.25 and scalar["differs"]


def test_uninitialized_memory_is_not_compared(tmp_path):
    def program(run, garbage, weights):
        run.call("torch.empty", [2, 3], [garbage])
        run.call("torch.nn.init.uniform_", [garbage], [weights])
        run.call("torch.nn.functional.linear", [np.ones((1, 3)), weights], [np.ones((1, 3)) @ weights.T])
        return run.write()
    w = np.arange(6.0).reshape(2, 3)
    base = program(RunDir(tmp_path / "a"), np.full((2, 3), 1e30), w)
    new = program(RunDir(tmp_path / "b"), np.full((2, 3), -7.0), w)
    proc = compare(base, new, "--json", tmp_path / "out.json")
    assert proc.returncode == 0, proc.stdout
    assert "2 values not compared: uninitialized memory" in proc.stdout
    result = json.loads((tmp_path / "out.json").read_text())
    assert [v["method"] for v in result["pairs"][1]["values"]] == ["uninitialized", "data"]
    # What the initialiser wrote is compared as usual.
    new = program(RunDir(tmp_path / "c"), np.full((2, 3), -7.0), w + 1)
    proc = compare(base, new)
    assert proc.returncode == 1
    assert "seq=1 op=torch.nn.init.uniform_" in proc.stdout
