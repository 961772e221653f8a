"""`ophook report` end to end on synthetic run directories: terminal summary, Chrome trace,
HTML page, per-process subdirectories and input errors."""
import json
import re

import numpy as np

from cli_fixtures import RunDir, run_ophook, simple_program


def make_run(tmp_path, with_summary=True, first_nonfinite="absent"):
    root = simple_program(RunDir(tmp_path / "run"), nan_at=(1, 2))
    root.call("numpy.exp", [np.ones(3)], [np.exp(np.ones(3))], dur_ns=50_000, tid=2)
    root.write()
    child = simple_program(RunDir(tmp_path / "run" / "pid4242"))
    for record in child.records:
        record["pid"] = 4242
    child.write()
    rank = RunDir(tmp_path / "run" / "rank0", mode="stats")
    rank.call("numpy.sqrt", [np.arange(4.0)], [np.sqrt(np.arange(4.0))], pid=777)
    rank.write()
    # An older recorder's summary (no index): the rank is counted from its records, and the run of
    # one rank is whole (a rank without its summary.json would make it incomplete: exit status 3).
    (tmp_path / "run" / "rank0" / "summary.json").write_text(json.dumps({"pid": 777}))
    (tmp_path / "run" / "pidnotanumber").mkdir()  # not a process directory
    if with_summary:
        summary = {"pid": 1000,
                   "totals": {"calls": 6, "ops": 6, "files": 17, "bytes_written": 3 << 20,
                              "write_errors": 2},
                   "budget": {"max_bytes": 1 << 30, "used_bytes": 3 << 20, "exhausted": True,
                              "exhausted_at_seq": 4},
                   "write_errors": {"count": 2, "first": "op_x.npy: No space left on device"}}
        if first_nonfinite != "absent":
            summary["first_nonfinite"] = first_nonfinite
        (tmp_path / "run" / "summary.json").write_text(json.dumps(summary))
    return tmp_path / "run", root, child, rank


def test_terminal_summary(tmp_path):
    run, root, child, rank = make_run(tmp_path)
    proc = run_ophook("report", run)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "3 (root: 6 calls; rank0: 1 calls; pid4242: 5 calls)" in out
    assert "12 in 7 distinct ops" in out
    assert "17 .npy files, 3.0 MiB" in out
    # First NaN/Inf: the matmul output, found by scanning (the summary does not say).
    assert "seq=2 op=numpy.matmul" in out and "outputs[0]: 1 NaN" in out
    assert "EXHAUSTED at seq 4" in out
    assert "No space left on device" in out
    by_count = out[out.index("top ops by count"):out.index("top ops by total time")]
    by_time = out[out.index("top ops by total time"):]
    assert by_count.splitlines()[2].split()[:2] == ["numpy.add", "2"]
    assert by_time.splitlines()[2].split()[:2] == ["numpy.exp", "1"]


def test_first_nonfinite_comes_from_summary_when_present(tmp_path):
    run, *_ = make_run(tmp_path, first_nonfinite={"seq": 3, "op": "numpy.add.reduce",
                                                    "source": "x.py:1:f"})
    proc = run_ophook("report", run)
    assert proc.returncode == 0
    line = [l for l in proc.stdout.splitlines() if "first NaN/Inf" in l][0]
    assert "seq=3 op=numpy.add.reduce" in line


def test_a_null_first_nonfinite_is_the_recorders_answer(tmp_path):
    # The recorder knew the matmul's NaN was the program's own (a scalar NaN argument, np.errstate).
    run, *_ = make_run(tmp_path, first_nonfinite=None)
    proc = run_ophook("report", run)
    assert proc.returncode == 0
    assert re.search(r"^  first NaN/Inf +none$", proc.stdout, re.M), proc.stdout


def test_chrome_trace_has_one_complete_event_per_record(tmp_path):
    run, root, child, rank = make_run(tmp_path, with_summary=False)
    proc = run_ophook("report", run, "--chrome-trace", tmp_path / "trace.json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "trace.json").read_text())
    events = doc["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert len(complete) == len(root.records) + len(child.records) + len(rank.records)
    first = next(e for e in complete if e["pid"] == 1000 and e["args"]["seq"] == 2)
    record = root.records[2]
    assert first["name"] == "numpy.matmul"
    assert first["ts"] == record["t_ns"] / 1000 and first["dur"] == record["dur_ns"] / 1000
    assert first["tid"] == record["tid"]
    assert first["args"]["source"] == "model.py:33:forward"
    assert first["args"]["module"] == "encoder.0" and first["args"]["phase"] == "forward"
    assert first["args"]["shapes"] == [[4, 5], [5, 3]]
    meta = [e for e in events if e["ph"] == "M"]
    assert {e["pid"] for e in meta if e["name"] == "process_name"} == {1000, 4242, 777}
    assert {(e["pid"], e["tid"]) for e in meta if e["name"] == "thread_name"} == {
        (1000, 1), (1000, 2), (4242, 1), (777, 1)}
    assert "unknown (no summary.json)" in proc.stdout


def test_html_is_self_contained_with_charts(tmp_path):
    run, *_ = make_run(tmp_path)
    proc = run_ophook("report", run, "--html", tmp_path / "report.html")
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert html.count("<svg") >= 3  # calls per op, time per op, timeline
    assert "http" not in html and "<script" not in html and "<link" not in html
    assert "first NaN/Inf" in html and "numpy.matmul" in html


def test_input_errors_exit_2_naming_the_file(tmp_path):
    proc = run_ophook("report", tmp_path / "missing")
    assert proc.returncode == 2 and "missing" in proc.stderr
    (tmp_path / "empty").mkdir()
    proc = run_ophook("report", tmp_path / "empty")
    assert proc.returncode == 2 and "trace.jsonl" in proc.stderr
    run, *_ = make_run(tmp_path)
    trace = run / "trace.jsonl"
    lines = trace.read_text().splitlines()
    lines[1] = "{not json"
    trace.write_text("\n".join(lines) + "\n")
    proc = run_ophook("report", run)
    assert proc.returncode == 2 and str(trace) in proc.stderr and "line 2" in proc.stderr
    trace.write_text("\n".join(lines[2:]) + "\n" + lines[0][:25])  # only the last line is cut
    proc = run_ophook("report", run)
    assert proc.returncode == 0 and "warning" in proc.stderr
    (run / "summary.json").write_text("{truncated")
    proc = run_ophook("report", run)
    assert proc.returncode == 2 and "summary.json" in proc.stderr
    assert run_ophook("report").returncode == 2


def test_first_nonfinite_is_the_earliest_over_the_ranks_by_step_then_time(tmp_path):
    """A NaN on each of two ranks: the run's first is the one of the earlier step, whichever rank
    and whenever on the clock; within a step, the earlier on the clock. The line names the rank."""
    def rank_run(rank, step, t0):
        run = simple_program(RunDir(tmp_path / "run" / ("rank%d" % rank), mode="stats"), nan_at=(0, rank))
        for record in run.records:
            record["step"], record["t_ns"] = step, t0 + record["seq"] * 10_000
        run.write()
        return run

    rank_run(0, step=3, t0=1_000_000)
    rank_run(1, step=2, t0=9_000_000)   # later on the clock, but an earlier step
    line = next(l for l in run_ophook("report", tmp_path / "run").stdout.splitlines() if "first NaN/Inf" in l)
    assert "op=numpy.matmul" in line and "step=2" in line and line.endswith("in rank1"), line

    rank_run(0, step=2, t0=1_000_000)   # the same step, earlier on the clock
    line = next(l for l in run_ophook("report", tmp_path / "run").stdout.splitlines() if "first NaN/Inf" in l)
    assert "step=2" in line and line.endswith("in rank0"), line
