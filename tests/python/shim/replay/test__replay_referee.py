"""ophook._replay.referee, `ophook compare --referee float64`: for each op whose outputs differ, the
pairs of calls `compare` chose are re-run in float64 on each side's own inputs, and the side whose
largest relative error is smaller is closer (within 1%: a tie); pairs that cannot be judged say
why; a compiled kernel's output stands in for its eager call's. Called directly on the build
tree's package, the re-runs replaced by given errors."""
import json
import re
import sys

import pytest

from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook._replay import referee  # noqa: E402
from ophook._replay.trace_file import InputError  # noqa: E402


def call(seq, op="numpy.add", outputs=None):
    return {"seq": seq, "op": op, "args": [], "outputs": outputs or [{"kind": "array", "file": "out%d.npy" % seq}]}


def run_dir(directory, *records):
    directory.mkdir(parents=True)
    (directory / "trace.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(directory)


class Reruns:
    """Stands in for run_tasks: each task's result is the max_rel given for its (run_dir, seq)."""

    def __init__(self, errors):
        self.errors = errors
        self.tasks = []

    def __call__(self, tasks, jobs, label):
        assert label == "referee"
        self.tasks += tasks
        results = []
        for run, record, mode, seed in tasks:
            assert (mode, seed) == ("reference", 0)
            error = self.errors[run, record["seq"]]
            results.append({"seq": record["seq"], "max_rel": error, "reason": "" if error is not None else "no output"})
        return results


@pytest.fixture
def runs(tmp_path):
    base = run_dir(tmp_path / "base", call(1), call(2), call(3, "numpy.matmul"))
    new = run_dir(tmp_path / "new", call(11), call(12), call(13, "numpy.matmul"))
    return base, new


def judge(monkeypatch, request, errors):
    reruns = Reruns(errors)
    monkeypatch.setattr(referee, "run_tasks", reruns)
    return referee.judge(request, jobs=2)["ops"], reruns


def test_the_side_with_the_smaller_largest_error_is_closer(monkeypatch, runs):
    base, new = runs
    request = {"base": base, "new": new, "ops": [{"op": "numpy.add", "pairs": [[1, 11], [2, 12]]},
                                                 {"op": "numpy.matmul", "pairs": [[3, 13]]}]}
    verdicts, reruns = judge(monkeypatch, request, {(base, 1): 1e-6, (new, 11): 1e-3, (base, 2): 5e-6,
                                                    (new, 12): 2e-7, (base, 3): 0.5, (new, 13): 0.01})
    assert verdicts == [
        {"op": "numpy.add", "closer": "base", "base_max_rel": 5e-6, "new_max_rel": 1e-3, "pairs_judged": 2,
         "reason": ""},
        {"op": "numpy.matmul", "closer": "new", "base_max_rel": 0.5, "new_max_rel": 0.01, "pairs_judged": 1,
         "reason": ""}]
    assert [(run, record["seq"]) for run, record, _, _ in reruns.tasks] == [
        (base, 1), (new, 11), (base, 2), (new, 12), (base, 3), (new, 13)]


@pytest.mark.parametrize("base_error, new_error, closer", [
    (1.0, 1.009, "tie"), (1.009, 1.0, "tie"), (0.0, 0.0, "tie"), (1.0, 1.02, "base"), (1.02, 1.0, "new"),
    (0.0, 1e-300, "base"),
])
def test_errors_within_one_percent_are_a_tie(monkeypatch, runs, base_error, new_error, closer):
    base, new = runs
    request = {"base": base, "new": new, "ops": [{"op": "numpy.add", "pairs": [[1, 11]]}]}
    (verdict,), _ = judge(monkeypatch, request, {(base, 1): base_error, (new, 11): new_error})
    assert verdict["closer"] == closer


def test_a_pair_that_cannot_be_judged_says_why_and_counts_for_nothing(monkeypatch, runs):
    base, new = runs
    request = {"base": base, "new": new, "ops": [{"op": "numpy.add", "pairs": [[1, 11], [2, 12]]},
                                                 {"op": "numpy.matmul", "pairs": [[3, 13]]}]}
    verdicts, _ = judge(monkeypatch, request, {(base, 1): None, (new, 11): 1e-3, (base, 2): 1e-4, (new, 12): 1e-2,
                                               (base, 3): 1e-4, (new, 13): None})
    assert verdicts[0] == {"op": "numpy.add", "closer": "base", "base_max_rel": 1e-4, "new_max_rel": 1e-2,
                           "pairs_judged": 1, "reason": ""}  # judged by its other pair
    assert verdicts[1] == {"op": "numpy.matmul", "closer": None, "base_max_rel": None, "new_max_rel": None,
                           "pairs_judged": 0, "reason": "seq 13: no output"}


def test_the_first_reason_a_pair_was_not_judged_is_kept(monkeypatch, runs):
    base, new = runs
    request = {"base": base, "new": new, "ops": [{"op": "numpy.add", "pairs": [[1, 11], [2, 12]]}]}
    (verdict,), _ = judge(monkeypatch, request, {(base, 1): None, (new, 11): 1.0, (base, 2): 1.0, (new, 12): None})
    assert verdict["closer"] is None and verdict["reason"] == "seq 1: no output"


def test_a_pair_of_workers_is_re_run_in_their_own_directories(monkeypatch, runs, tmp_path):
    base, new = runs
    base_worker = run_dir(tmp_path / "base" / "pid7", call(1, "numpy.matmul"))
    new_worker = run_dir(tmp_path / "new" / "pid9", call(4, "numpy.matmul"))
    request = {"base": base, "new": new, "ops": [{"op": "numpy.matmul", "pairs": [[1, 4, base_worker, new_worker]]}]}
    (verdict,), reruns = judge(monkeypatch, request, {(base_worker, 1): 2.0, (new_worker, 4): 1.0})
    assert verdict["closer"] == "new"
    assert [(run, record["op"]) for run, record, _, _ in reruns.tasks] == [(base_worker, "numpy.matmul"),
                                                                           (new_worker, "numpy.matmul")]


def test_a_compiled_kernel_is_judged_by_its_eager_call_with_the_kernels_output(monkeypatch, runs, tmp_path):
    """A kernel cannot be re-run: a copy of the eager call, its output read from the kernel's file,
    is judged against the eager call's float64 re-run, in the eager side's directory."""
    base, new = runs
    kernel = {"kernel": "new", "output": "outputs[0]", "file": str(tmp_path / "kernel_out.npy")}
    request = {"base": base, "new": new, "ops": [{"op": "numpy.add", "pairs": [[1, 11, base, new, kernel]]}]}
    (verdict,), reruns = judge(monkeypatch, request, {(base, 1): 1e-3})
    (base_run, base_call, _, _), (new_run, new_call, _, _) = reruns.tasks
    assert base_run == new_run == base and base_call["seq"] == new_call["seq"] == 1
    assert base_call["outputs"][0]["file"] == "out1.npy" and new_call["outputs"][0]["file"] == kernel["file"]
    assert verdict["closer"] == "tie"


def test_a_seq_the_run_does_not_have_is_an_input_error(monkeypatch, runs):
    base, new = runs
    request = {"base": base, "new": new, "ops": [{"op": "numpy.add", "pairs": [[1, 42]]}]}
    with pytest.raises(InputError, match=r"^referee: no call with seq 42 in .*new$"):
        judge(monkeypatch, request, {})


def test_a_kernels_output_replaces_the_eager_output_at_its_path_in_a_copy():
    record = call(5, outputs=[{"kind": "array", "file": "a.npy"}, [{"kind": "array", "file": "b.npy"}, 3]])
    copy = referee._with_output(record, "outputs[1][0]", "/runs/kernel.npy")
    assert copy["outputs"][1][0] == {"kind": "array", "file": "/runs/kernel.npy"}
    assert copy["outputs"][0]["file"] == "a.npy" and copy["outputs"][1][1] == 3
    assert record["outputs"][1][0]["file"] == "b.npy"  # the record itself unchanged


@pytest.mark.parametrize("path", ["args[0]", "outputs", "outputs.0", "kwargs[out][0]"])
def test_a_path_that_is_no_output_is_an_input_error(path):
    with pytest.raises(InputError, match="^referee: output path %s of seq 5 is not an output$" % re.escape(repr(path))):
        referee._with_output(call(5), path, "/runs/kernel.npy")
