"""ophook._replay.arrays, recorded arrays in and out: a .npy file back into the array or tensor it
was (its dtype, Python type, element strides, bfloat16 narrowed back exactly, requires_grad as
an activation), an input recorded as a view into another rebuilt as that view only when its
values say so, a result in the form a recording saves it, and the bit-for-bit comparison with
its errors. Called directly on the build tree's package, on files written here."""
import sys

import numpy as np
import pytest
import torch

from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook._replay import arrays  # noqa: E402


def saved(tmp_path, array, name="a.npy"):
    path = tmp_path / name
    np.save(path, array, allow_pickle=False)
    return path


def test_a_numpy_array_comes_back_in_its_dtype(tmp_path):
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    back = arrays.load_array(saved(tmp_path, values), "float32", "numpy.ndarray")
    assert back.dtype == np.float32 and back.shape == (2, 3) and np.array_equal(back, values)


def test_a_numpy_scalar_comes_back_a_scalar(tmp_path):
    back = arrays.load_array(saved(tmp_path, np.array(2.5)), "float64", "numpy.generic")
    assert type(back) is np.float64 and back == 2.5


def test_a_file_in_the_other_byte_order_comes_back_native(tmp_path):
    values = np.arange(4, dtype=">f8")
    back = arrays.load_array(saved(tmp_path, values), "float64", "numpy.ndarray")
    assert back.dtype == np.dtype("=f8") and back.dtype.isnative and back.tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("array, dtype", [(np.array(["ab", "cde"]), "<U3"),
                                          (np.zeros(2, [("a", "<f4"), ("b", "<i8")]), "[('a', '<f4'), ('b', '<i8')]"),
                                          (np.array([1, 2], dtype=np.int8), "int8")])
def test_dtypes_recorded_by_their_description_come_back(tmp_path, array, dtype):
    back = arrays.load_array(saved(tmp_path, array), dtype, "numpy.ndarray")
    assert back.dtype == array.dtype and back.tobytes() == array.tobytes()


def test_a_numpy_array_is_laid_out_with_its_recorded_strides(tmp_path):
    values = np.arange(6.0).reshape(2, 3)
    back = arrays.load_array(saved(tmp_path, values), "float64", "numpy.ndarray", strides=[1, 2])  # Fortran order
    assert np.array_equal(back, values) and back.strides == (8, 16) and back.flags.f_contiguous


def test_a_tensor_comes_back_in_its_dtype_narrowed_exactly(tmp_path):
    """bfloat16 and float8 files hold float32 values: narrowed back, every bit pattern as it was
    (a NaN as a NaN: its payload is not a value)."""
    def same_values(back, original, bits):
        nan = torch.isnan(original.float())
        assert back.dtype == original.dtype and torch.equal(torch.isnan(back.float()), nan)
        assert torch.equal(back.view(bits)[~nan], original.view(bits)[~nan])

    bfloat16 = torch.arange(65536, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    back = arrays.load_array(saved(tmp_path, bfloat16.float().numpy()), "bfloat16", "torch.Tensor")
    same_values(back, bfloat16, torch.int16)
    fp8 = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn)
    back = arrays.load_array(saved(tmp_path, fp8.float().numpy(), "f8.npy"), "float8_e4m3fn", "torch.Tensor")
    same_values(back, fp8, torch.uint8)


def test_a_tensor_that_required_grad_requires_it_and_can_be_written_in_place(tmp_path):
    path = saved(tmp_path, np.ones(3, dtype=np.float32))
    back = arrays.load_array(path, "float32", "torch.Tensor", requires_grad=True)
    assert back.requires_grad and not back.is_leaf
    back.add_(1)  # a leaf that requires grad refuses this
    ints = arrays.load_array(saved(tmp_path, np.ones(3, dtype=np.int64), "i.npy"), "int64", "torch.Tensor",
                             requires_grad=True)
    assert not ints.requires_grad  # integer tensors cannot require grad


def test_a_tensor_is_laid_out_with_its_recorded_strides(tmp_path):
    values = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    back = arrays.load_array(saved(tmp_path, values), "float32", "torch.Tensor", strides=[1, 2])
    assert back.stride() == (1, 2) and back.tolist() == values.tolist()


def test_a_dtype_this_torch_does_not_have_is_an_attribute_error(tmp_path):
    with pytest.raises(AttributeError):
        arrays.load_array(saved(tmp_path, np.ones(2)), "float128x", "torch.Tensor")


@pytest.mark.parametrize("shape, strides, extent", [
    ((2, 3), (3, 1), (0, 6)), ((2, 3), (1, 2), (0, 6)), ((3,), (-1,), (2, 3)), ((2, 3), (-3, 1), (3, 6)),
    ((4, 3), (0, 1), (0, 3)), ((3,), (2,), (0, 5)), ((), (), None), ((2, 0), (1, 1), None), ((2,), None, None),
    ((2, 2), (1,), None),
])
def test_a_layout_spans_from_its_lowest_to_its_highest_element(shape, strides, extent):
    assert arrays.layout_extent(shape, strides) == extent


@pytest.mark.parametrize("strides", [(3, 1), (1, 2), (-3, 1), (3, -1), (-1, -2), (6, 2)])
def test_a_numpy_layout_holds_the_values_at_the_strides(strides):
    values = np.arange(6.0).reshape(2, 3)
    out = arrays.numpy_layout(values, strides)
    assert np.array_equal(out, values) and out.strides == tuple(8 * s for s in strides)


def test_a_broadcast_layout_is_a_read_only_broadcast_view():
    values = np.tile(np.arange(3.0), (4, 1))
    out = arrays.numpy_layout(values, (0, 1))
    assert np.array_equal(out, values) and out.strides == (0, 8) and not out.flags.writeable


@pytest.mark.parametrize("strides", [(3, 1), (1, 2), (6, 2), (0, 1)])
def test_a_torch_layout_holds_the_values_at_the_strides(strides):
    values = torch.arange(6.0).reshape(2, 3) if strides != (0, 1) else torch.arange(3.0).expand(2, 3).clone()
    out = arrays.torch_layout(values, strides)
    assert out.stride() == strides and torch.equal(out, values)


def test_an_overlapping_torch_layout_keeps_the_values():
    """A window view (elements shared between rows): laid out so where torch writes it, else left
    in C order; either way the values are the recorded ones."""
    values = torch.tensor([[0.0, 1.0], [1.0, 2.0], [2.0, 3.0]])
    out = arrays.torch_layout(values, (1, 1))
    assert torch.equal(out, values) and out.stride() in ((1, 1), (2, 1))


def test_an_input_recorded_as_a_view_is_rebuilt_as_that_view():
    base = np.arange(12.0).reshape(3, 4)
    loaded = base.T.copy()  # x.T: its own file holds its values in C order
    view = arrays.shared_view(base, {"view_offset": 0, "strides": [1, 4]}, loaded)
    assert np.shares_memory(view, base) and np.array_equal(view, base.T)
    row = arrays.shared_view(base, {"view_offset": 4}, base[1].copy())
    assert np.shares_memory(row, base) and np.array_equal(row, base[1])


def test_a_base_in_fortran_order_is_viewed_in_its_memory_order():
    base = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    view = arrays.shared_view(base, {"view_offset": 2, "strides": [1]}, base[:, 1].copy())
    assert np.shares_memory(view, base) and np.array_equal(view, base[:, 1])


@pytest.mark.parametrize("spec, loaded", [
    ({"view_offset": 0}, np.arange(4.0) + 100),              # values that are not the base's there
    ({"view_offset": 10}, np.arange(4.0)),                   # past the base's memory
    ({"view_offset": 0}, np.arange(4, dtype=np.float32)),    # another dtype
    ({"view_offset": 0}, np.zeros(0)),                       # no element
    ({"view_offset": -1, "strides": [1]}, np.arange(4.0)),   # before the base's memory
])
def test_a_view_whose_file_disagrees_is_its_own_file(spec, loaded):
    base = np.arange(12.0)
    assert arrays.shared_view(base, spec, loaded) is loaded


def test_a_view_of_a_base_that_is_no_block_of_memory_is_its_own_file():
    base = np.arange(12.0)[::2]
    loaded = base[:3].copy()
    assert arrays.shared_view(base, {"view_offset": 0}, loaded) is loaded
    assert arrays.shared_view(torch.arange(4.0), {"view_offset": 0}, loaded) is loaded


def test_results_are_compared_in_the_form_a_recording_saves():
    assert arrays.saved_form(np.float32(1.5)).shape == () and arrays.saved_form(np.float32(1.5)).dtype == np.float32
    widened = arrays.saved_form(torch.tensor([1.5, -2.0], dtype=torch.bfloat16))
    assert widened.dtype == np.float32 and widened.tolist() == [1.5, -2.0]
    conj = arrays.saved_form((torch.arange(3.0) * (1 + 1j)).conj())
    assert conj.tolist() == [0j, 1 - 1j, 2 - 2j]
    t = arrays.saved_form(torch.arange(6.0).reshape(2, 3).t())
    assert t.flags.c_contiguous and t.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    leaf = torch.ones(2, requires_grad=True)
    assert arrays.saved_form(leaf * 2).tolist() == [2.0, 2.0]


def test_equal_bytes_are_the_same():
    a = np.array([1.0, -0.0, np.nan])
    assert arrays.compare_exact(a, a.copy()) == (True, 0.0, 0.0, "")


def test_a_nan_matches_any_nan_and_zeros_match_whatever_their_sign():
    a = np.array([np.nan, 0.0, 1.0])
    b = np.array([np.float64(np.nan) * -1, -0.0, 1.0])  # another NaN payload, the other zero
    assert a.tobytes() != b.tobytes()
    assert arrays.compare_exact(a, b) == (True, 0.0, 0.0, "")


def test_values_that_differ_give_the_largest_errors_and_how_many():
    same, max_abs, max_rel, why = arrays.compare_exact(np.array([1.0, 2.5, 4.0]), np.array([1.0, 2.0, 5.0]))
    assert not same and (max_abs, max_rel) == (1.0, 0.25) and why == "2 of 3 elements differ"


def test_a_difference_from_zero_is_infinitely_relative():
    same, max_abs, max_rel, why = arrays.compare_exact(np.array([1e-30, 1.0]), np.array([0.0, 1.0]))
    assert not same and max_abs == 1e-30 and max_rel == np.inf and why == "1 of 2 elements differ"


def test_a_nan_against_a_number_is_an_infinite_error():
    same, max_abs, max_rel, _ = arrays.compare_exact(np.array([np.nan, 1.0]), np.array([3.0, 1.0]))
    assert not same and max_abs == np.inf and max_rel == np.inf


def test_integers_and_complex_numbers_are_compared_by_value():
    assert arrays.compare_exact(np.array([3, 5]), np.array([3, 7]))[:3] == (False, 2.0, 2 / 7)
    same, max_abs, _, _ = arrays.compare_exact(np.array([1 + 1j]), np.array([1 + 2j]))
    assert not same and max_abs == 1.0


@pytest.mark.parametrize("actual, expected, why", [
    (np.zeros((2, 3)), np.zeros((3, 2)), "shape [2, 3], recorded [3, 2]"),
    (np.zeros(3, np.float32), np.zeros(3), "dtype float32, recorded float64"),
    (np.array(["a", "b"]), np.array(["a", "c"]), "bytes differ"),
])
def test_arrays_that_cannot_be_subtracted_say_what_differs(actual, expected, why):
    assert arrays.compare_exact(actual, expected) == (False, None, None, why)
