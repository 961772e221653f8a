"""ophook._replay.call, one recorded call replayed: `exact` calls the op on the recorded inputs and
compares bit for bit, `reference` judges the recorded outputs against the op in float64,
`random` judges the op on generated inputs against itself in float64; a call that raised matches
when it raises the same exception type; calls that must not be replayed, inputs without a file
and damaged files each end in the status and reason a report shows. Called directly on the build
tree's package, on run directories written here."""
import sys

import numpy as np
import pytest
import torch

from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook._replay import call  # noqa: E402
from ophook._replay.trace_file import TORCH_THREADS  # noqa: E402


def array(run, name, values, **fields):
    values = np.asarray(values)
    np.save(run / name, values, allow_pickle=False)
    return {"kind": "array", "file": name, "dtype": str(values.dtype), "shape": list(values.shape),
            "stats": {"min": float(values.min()), "max": float(values.max())} if values.size else None, **fields}


def add_call(run, produced=None, seq=4):
    a, b = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.25, 0.125])
    return {"seq": seq, "op": "numpy.add", "framework": "numpy", "level": "ufunc", "source": "/prog.py:3",
            "args": [array(run, "a.npy", a), array(run, "b.npy", b)],
            "outputs": [array(run, "out.npy", a + b if produced is None else produced)]}


def test_an_exact_replay_of_an_unchanged_call_matches(tmp_path):
    result = call.replay(str(tmp_path), add_call(tmp_path), "exact")
    assert result == {"seq": 4, "op": "numpy.add", "status": "match", "reason": "", "max_abs": 0.0, "max_rel": 0.0,
                      "source": "/prog.py:3"}


def test_an_exact_replay_of_a_changed_output_is_a_mismatch_with_its_errors(tmp_path):
    result = call.replay(str(tmp_path), add_call(tmp_path, produced=[1.5, 2.25, 3.0]), "exact")
    assert result["status"] == "mismatch" and result["reason"] == "outputs[0]: 1 of 3 elements differ"
    assert result["max_abs"] == 0.125 and result["max_rel"] == 0.125 / 3.0


def test_a_reference_replay_judges_the_recorded_output_against_float64(tmp_path):
    a = np.array([0.1, 0.2, 0.3], np.float32)
    record = {"seq": 0, "op": "numpy.multiply", "framework": "numpy",
              "args": [array(tmp_path, "a.npy", a), 3.0], "outputs": [array(tmp_path, "o.npy", a * np.float32(3))]}
    result = call.replay(str(tmp_path), record, "reference")
    assert result["status"] == "match" and result["threshold"] == 2.0 ** -13 and 0 < result["max_rel"] < 2.0 ** -13
    record["outputs"] = [array(tmp_path, "o.npy", a * np.float32(3.01))]
    result = call.replay(str(tmp_path), record, "reference")
    assert result["status"] == "mismatch" and result["reason"].startswith("outputs[0]: mean rel ")


def test_a_random_replay_needs_no_file(tmp_path):
    record = {"seq": 2, "op": "numpy.sin", "framework": "numpy",
              "args": [{"kind": "array", "file": None, "dtype": "float32", "shape": [64],
                        "stats": {"min": -3, "max": 3}}],
              "outputs": [{"kind": "array", "file": None, "dtype": "float32", "shape": [64]}]}
    result = call.replay(str(tmp_path), record, "random", seed=5)
    assert result["status"] == "match" and result["threshold"] == 2.0 ** -13 and result["max_rel"] < 2.0 ** -13
    assert call.replay(str(tmp_path), record, "random", seed=5) == result  # the same inputs again


def test_a_random_replay_of_inputs_the_op_refuses_is_skipped(tmp_path):
    record = {"seq": 2, "op": "numpy.matmul", "framework": "numpy",
              "args": [{"kind": "array", "dtype": "float64", "shape": [2, 3]}, {"kind": "array", "dtype": "float64",
                                                                                "shape": [2, 3]}], "outputs": []}
    result = call.replay(str(tmp_path), record, "random")
    assert result["status"] == "skipped" and result["reason"].startswith("the float64 reference failed: ValueError: ")


def test_a_call_that_raised_matches_when_it_raises_the_same_type(tmp_path):
    record = {"seq": 1, "op": "numpy.add", "framework": "numpy",
              "args": [array(tmp_path, "a.npy", np.ones(2)), array(tmp_path, "b.npy", np.ones(3))],
              "outputs": [], "error": "ValueError: operands could not be broadcast together"}
    result = call.replay(str(tmp_path), record, "exact")
    assert result["status"] == "match" and result["reason"].startswith("raised as recorded: ValueError: ")
    record["error"] = "TypeError: something else"
    result = call.replay(str(tmp_path), record, "exact")
    assert result["status"] == "mismatch" and result["reason"].startswith("raised ValueError: ")
    assert result["reason"].endswith("; recorded: TypeError: something else")


def test_a_call_that_raised_but_now_returns_is_a_mismatch(tmp_path):
    record = add_call(tmp_path)
    record["error"] = "FloatingPointError: overflow"
    result = call.replay(str(tmp_path), record, "exact")
    assert result["status"] == "mismatch"
    assert result["reason"] == "returned a value; recorded: FloatingPointError: overflow"
    assert call.replay(str(tmp_path), record, "reference")["reason"] == "the recorded call raised: no output to judge"


def test_a_call_that_now_raises_is_a_mismatch(tmp_path):
    record = add_call(tmp_path)
    record["args"][1] = array(tmp_path, "b.npy", np.ones(2))
    result = call.replay(str(tmp_path), record, "exact")
    assert result["status"] == "mismatch" and result["reason"].startswith("raised ValueError: operands could not be")


@pytest.mark.parametrize("op, reason", [
    ("numpy.random.mtrand.RandomState.rand", "random: draws from a random generator"),
    ("numpy.no_such_op", "numpy.no_such_op is not found here"),
])
def test_a_call_not_to_replay_is_skipped_with_the_reason(tmp_path, op, reason):
    record = dict(add_call(tmp_path), op=op)
    result = call.replay(str(tmp_path), record, "exact")
    assert result["status"] == "skipped" and result["reason"].startswith(reason)


def test_an_input_without_a_file_is_skipped_and_a_missing_file_is_damage(tmp_path):
    record = add_call(tmp_path)
    record["args"][0] = dict(record["args"][0], file=None, reason="larger than OPHOOK_MAX_BYTES")
    result = call.replay(str(tmp_path), record, "exact")
    assert (result["status"], result["reason"]) == ("skipped", "args[0] has no file (larger than OPHOOK_MAX_BYTES)")
    record = add_call(tmp_path)
    (tmp_path / "b.npy").unlink()
    result = call.replay(str(tmp_path), record, "exact")
    assert result["status"] == "mismatch" and result["reason"].startswith("recorded data unreadable: args[1]: b.npy: ")


def test_an_output_without_a_file_alone_is_skipped(tmp_path):
    record = add_call(tmp_path)
    record["outputs"] = [{"kind": "array", "file": None, "reason": "stats mode"}]
    result = call.replay(str(tmp_path), record, "exact")
    assert (result["status"], result["reason"]) == ("skipped", "outputs[0] has no file (stats mode)")


def test_a_call_with_no_array_output_matches_on_its_values(tmp_path):
    record = {"seq": 3, "op": "numpy.shape", "framework": "numpy", "args": [array(tmp_path, "a.npy", np.ones((2, 5)))],
              "outputs": [2, 5]}  # a returned tuple: its items are the outputs
    result = call.replay(str(tmp_path), record, "exact")
    assert (result["status"], result["reason"]) == ("match", "no array output")
    record["outputs"] = [2, 6]
    assert call.replay(str(tmp_path), record, "exact")["reason"] == "outputs[1]: returned 5, recorded 6"


def test_a_torch_call_runs_with_the_recorded_thread_count_and_grad_mode(tmp_path):
    x = torch.arange(4.0)
    record = {"seq": 0, "op": "torch.mul", "framework": "torch", "grad_enabled": False, TORCH_THREADS: 1,
              "args": [array(tmp_path, "x.npy", x.numpy(), requires_grad=True), 2.0],
              "outputs": [array(tmp_path, "y.npy", (x * 2).numpy())]}
    threads = torch.get_num_threads()
    try:
        assert call.replay(str(tmp_path), record, "exact")["status"] == "match"
        assert torch.get_num_threads() == 1
        del record[TORCH_THREADS]
        assert call.replay(str(tmp_path), record, "exact")["status"] == "match"
        assert torch.get_num_threads() == threads  # back to this process's own
    finally:
        torch.set_num_threads(threads)


def test_error_texts_are_one_line_of_at_most_300_characters():
    assert call.error_text(ValueError("first line\nsecond line")) == "ValueError: first line"
    assert len(call.error_text(RuntimeError("x" * 1000))) == 300
