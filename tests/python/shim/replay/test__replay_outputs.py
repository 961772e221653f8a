"""ophook._replay.outputs, what an op returned against what was recorded, value by value in the
recorder's order: arrays through a judge (bit for bit, or by the reference thresholds), plain
values equal (a NaN matching a NaN), other values by their repr as the recorder cut it, and every
difference, missing file or object identity said where it is. Called directly on the build tree's
package, on files written here."""
import sys

import numpy as np
import pytest
import torch

from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook._replay import outputs  # noqa: E402
from ophook._replay.values import Unreadable  # noqa: E402


def test_a_tuple_result_is_its_items_and_anything_else_one_value():
    assert outputs.as_outputs((1, 2)) == [1, 2]
    assert outputs.as_outputs([1, 2]) == [[1, 2]]
    assert outputs.as_outputs(None) == [None]


@pytest.mark.parametrize("value, array", [(np.zeros(2), True), (np.float32(1), True), (torch.zeros(2), True),
                                          (np.ndarray, False), ([1.0], False), (1.0, False), (np.dtype("f4"), False)])
def test_arrays_are_numpy_and_torch_values_with_a_shape_and_dtype(value, array):
    assert outputs.is_array(value) is array


def test_dtype_names_are_the_recorders():
    assert outputs.dtype_name(torch.zeros(1, dtype=torch.bfloat16)) == "bfloat16"
    assert outputs.dtype_name(np.zeros(1, np.float16)) == "float16" and outputs.dtype_name(np.int8(1)) == "int8"


def test_a_tally_keeps_the_largest_errors_and_the_tightest_threshold():
    tally = outputs.Tally()
    tally.note_errors(1e-6, 1e-3, 1e-5, 2.0 ** -10)
    tally.note_errors(1e-4, None, 1e-7, 2.0 ** -13)
    tally.note_errors(None, 1e-2)
    assert (tally.max_abs, tally.max_rel, tally.mean_rel, tally.threshold, tally.arrays) == (
        1e-4, 1e-2, 1e-5, 2.0 ** -13, 3)


def written(tmp_path, name, array):
    np.save(tmp_path / name, array, allow_pickle=False)
    return {"kind": "array", "file": name, "dtype": str(np.asarray(array).dtype)}


def compare(tmp_path, specs, produced, judge_plain_values=True):
    tally = outputs.Tally()
    tally.judge_plain_values = judge_plain_values
    outputs.compare_recorded(specs, outputs.as_outputs(produced), str(tmp_path), tally, outputs.exact_judge(tally))
    return tally


def test_equal_outputs_have_no_difference(tmp_path):
    specs = [written(tmp_path, "a.npy", np.arange(3.0)), [written(tmp_path, "b.npy", np.ones(2, np.int32)), 3], None]
    tally = compare(tmp_path, specs, (np.arange(3.0), (np.ones(2, np.int32), 3), None))
    assert tally.differences == [] and tally.unavailable == [] and tally.arrays == 2 and tally.max_abs == 0.0


def test_an_array_that_differs_says_where_and_how(tmp_path):
    specs = [np.nan, [written(tmp_path, "b.npy", np.array([1.0, 2.0]))]]
    tally = compare(tmp_path, specs, (float("nan"), [np.array([1.0, 2.5])]))
    assert tally.differences == ["outputs[1][0]: 1 of 2 elements differ"] and tally.max_abs == 0.5


def test_a_tensor_result_is_compared_with_its_saved_form(tmp_path):
    spec = written(tmp_path, "t.npy", np.array([1.5, -2.0], np.float32))
    spec["dtype"] = "bfloat16"
    assert compare(tmp_path, [spec], torch.tensor([1.5, -2.0], dtype=torch.bfloat16)).differences == []
    assert compare(tmp_path, [spec], torch.tensor([1.5, -2.5], dtype=torch.bfloat16)).differences == [
        "outputs[0]: 1 of 2 elements differ"]


@pytest.mark.parametrize("specs, produced, difference", [
    ([{"kind": "array", "file": "x.npy"}], 3, "outputs[0]: returned int, recorded an array"),
    ([[1, 2]], ([1, 2, 3],), "outputs[0]: returned list, recorded a sequence of 2"),
    ([[1, 2]], (5,), "outputs[0]: returned int, recorded a sequence of 2"),
    ([[1]], (np.zeros(2),), "outputs[0]: returned an array float64 [2], recorded a sequence of 1"),
    ([1], ("1",), "outputs[0]: returned str, recorded 1"),
    ([True], (1,), "outputs[0]: returned int, recorded True"),
    ([2], (3,), "outputs[0]: returned 3, recorded 2"),
    ([0.5], (float("nan"),), "outputs[0]: returned nan, recorded 0.5"),
    ([{"kind": "torch.dtype", "repr": "torch.float32"}], (torch.float16,),
     "outputs[0]: returned torch.float16, recorded torch.float32"),
])
def test_a_value_that_differs_says_where_and_how(tmp_path, specs, produced, difference):
    assert compare(tmp_path, specs, produced).differences == [difference]


@pytest.mark.parametrize("spec, produced", [(1, 1.0), (2.0, 2), (float("nan"), float("nan")), ("a", "a"), (None, None),
                                            ({"kind": "torch.dtype", "repr": "torch.float32"}, torch.float32),
                                            ({"kind": "slice", "repr": "slice(1, None, None)"}, slice(1, None))])
def test_plain_values_that_are_equal_match(tmp_path, spec, produced):
    assert compare(tmp_path, [spec], (produced,)).differences == []


def test_a_long_repr_matches_the_recorders_cut(tmp_path):
    value = "x" * 300
    assert compare(tmp_path, [{"kind": "str", "repr": repr(value)[:200]}], (value,)).differences == []
    assert compare(tmp_path, [{"kind": "str", "repr": repr("y" * 300)[:200]}], (value,)).differences != []


def test_an_objects_identity_is_not_a_value(tmp_path):
    spec = {"kind": "Generator", "repr": "<torch._C.Generator object at 0x7f00deadbeef>"}
    tally = compare(tmp_path, [spec], (torch.Generator(),))
    assert tally.differences == [] and tally.unavailable == ["outputs[0] is an object (Generator), not a value"]


def test_an_array_recorded_without_a_file_is_not_compared(tmp_path):
    tally = compare(tmp_path, [{"kind": "array", "file": None, "reason": "larger than OPHOOK_MAX_BYTES"}],
                    np.zeros(2))
    assert tally.differences == [] and tally.arrays == 0
    assert tally.unavailable == ["outputs[0] has no file (larger than OPHOOK_MAX_BYTES)"]


def test_plain_values_are_left_alone_when_the_reference_changes_them(tmp_path):
    """Widened to float64, a call that returns a dtype returns float64: not a difference."""
    tally = compare(tmp_path, [{"kind": "numpy.dtype", "repr": "dtype('float32')"}, 4], (np.dtype("f8"), 5),
                    judge_plain_values=False)
    assert tally.differences == []


def test_a_missing_or_damaged_output_file_is_unreadable(tmp_path):
    with pytest.raises(Unreadable, match=r"^outputs\[0\]: gone\.npy: "):
        compare(tmp_path, [{"kind": "array", "file": "gone.npy"}], np.zeros(2))
    (tmp_path / "bad.npy").write_bytes(b"\x93NUMPY garbage")
    with pytest.raises(Unreadable, match=r"^outputs\[0\]: bad\.npy: "):
        compare(tmp_path, [{"kind": "array", "file": "bad.npy"}], np.zeros(2))


def test_a_file_in_the_other_byte_order_is_read_native(tmp_path):
    spec = written(tmp_path, "be.npy", np.arange(3, dtype=">f8"))
    assert compare(tmp_path, [spec], np.arange(3.0)).differences == []


def test_reference_outputs_are_judged_by_the_recorded_dtypes_thresholds(tmp_path):
    spec = written(tmp_path, "r.npy", np.full(100, 1.0, np.float32))
    tally = outputs.Tally()
    outputs.compare_recorded([spec], [np.full(100, 1.0 + 1e-6)], str(tmp_path), tally, outputs.reference_judge(tally))
    assert tally.differences == [] and tally.threshold == 2.0 ** -13 and 0 < tally.max_rel < 2.0 ** -13
    outputs.compare_recorded([spec], [np.full(100, 1.01)], str(tmp_path), tally, outputs.reference_judge(tally))
    assert len(tally.differences) == 1 and tally.differences[0].startswith("outputs[0]: mean rel ")


def test_two_produced_results_are_judged_side_by_side():
    tally = outputs.Tally()
    outputs.compare_produced([np.ones(4, np.float32), (np.zeros(2, np.float16), 3)],
                             [np.ones(4), (np.zeros(2), 3)], tally)
    assert tally.differences == [] and tally.arrays == 2 and tally.threshold == 2.0 ** -13
    outputs.compare_produced(torch.full((4,), 1.1, dtype=torch.bfloat16), torch.ones(4, dtype=torch.float64), tally)
    assert len(tally.differences) == 1 and tally.differences[0].startswith("outputs: mean rel ")
