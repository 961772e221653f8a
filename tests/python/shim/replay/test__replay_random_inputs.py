"""ophook._replay.random_inputs, the inputs of `ophook replay --random`: made from a record's shape,
dtype and recorded range, the same for the same record and seed; floats uniform in [min, max]
(standard normal without a range), integers only within a recorded range (an index drawn from
nowhere would index out of bounds), booleans fair, anything else refused with the reason; each in
the recorded Python type, dtype and layout. Called directly on the build tree's package."""
import sys

import numpy as np
import pytest
import torch

from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook._replay.random_inputs import RandomArrays  # noqa: E402
from ophook._replay.values import CannotRebuild  # noqa: E402


def spec(dtype, shape, low=None, high=None, **fields):
    stats = {"min": low, "max": high} if low is not None or high is not None else None
    return {"kind": "array", "dtype": dtype, "shape": shape, "stats": stats, **fields}


def make(value_spec, seq=3, seed=0, framework="numpy"):
    return RandomArrays({"seq": seq, "framework": framework}, seed)(value_spec, "/args/1")


def test_the_same_record_and_seed_make_the_same_inputs():
    value = spec("float64", [50], -2.0, 3.0)
    first, again = make(value), make(value)
    assert np.array_equal(first, again)
    assert not np.array_equal(first, make(value, seq=4)) and not np.array_equal(first, make(value, seed=1))


def test_one_record_makes_different_arrays_for_its_inputs():
    arrays = RandomArrays({"seq": 3, "framework": "numpy"}, 0)
    assert not np.array_equal(arrays(spec("float64", [8]), "/args/0"), arrays(spec("float64", [8]), "/args/1"))


def test_floats_are_uniform_in_their_recorded_range():
    values = make(spec("float32", [4000], -1.5, 2.5))
    assert values.dtype == np.float32 and values.shape == (4000,)
    assert values.min() >= -1.5 and values.max() <= 2.5
    assert values.min() < -1.4 and values.max() > 2.4 and abs(values.mean() - 0.5) < 0.1


def test_a_range_of_one_value_is_that_value():
    assert make(spec("float64", [3], 7.25, 7.25)).tolist() == [7.25, 7.25, 7.25]


def test_floats_without_a_range_are_standard_normal():
    values = make(spec("float64", [4000]))
    assert abs(values.mean()) < 0.1 and abs(values.std() - 1) < 0.1 and np.isfinite(values).all()


def test_integers_are_drawn_within_their_recorded_range_both_ends_included():
    values = make(spec("int64", [2000], 3, 6))
    assert values.dtype == np.int64 and set(values.tolist()) == {3, 4, 5, 6}


@pytest.mark.parametrize("low, high", [(None, None), (0, None), (None, 9)])
def test_integers_without_a_range_are_refused(low, high):
    with pytest.raises(CannotRebuild) as raised:
        make(spec("int32", [4], low, high))
    assert str(raised.value) == ("args[1]: an integer array without a recorded range "
                                 "(record with OPHOOK_MODE=stats)")


def test_booleans_are_fair_coin_flips():
    values = make(spec("bool", [4000]))
    assert values.dtype == np.bool_ and 0.45 < values.mean() < 0.55


def test_complex_values_have_both_parts():
    values = make(spec("complex64", [100]))
    assert values.dtype == np.complex64 and (values.imag != 0).all() and (values.real != 0).all()


@pytest.mark.parametrize("dtype", ["<U4", "object", "datetime64[s]", None, "no_such_dtype"])
def test_dtypes_without_random_values_are_refused(dtype):
    with pytest.raises(CannotRebuild, match=r"^args\[1\]: no random values for dtype %s$" % (dtype if dtype is None else
                                                                                         dtype.replace("[", r"\["))):
        make(spec(dtype, [2]))


def test_a_numpy_scalar_is_made_a_scalar():
    value = make(spec("float32", [], 1.0, 2.0, python_type="numpy.generic"))
    assert type(value) is np.float32 and 1.0 <= value <= 2.0


def test_an_array_is_laid_out_with_its_recorded_strides():
    value = make(spec("float64", [3, 4], 0.0, 1.0, strides=[1, 3]))
    assert value.strides == (8, 24)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float8_e4m3fn", "float16", "int64", "bool", "complex64"])
def test_a_tensor_is_made_a_tensor_of_its_dtype(dtype):
    value = make(spec(dtype, [2, 3], 0, 4), framework="torch")
    assert isinstance(value, torch.Tensor) and value.dtype == getattr(torch, dtype) and value.shape == (2, 3)
    if dtype != "complex64":
        assert 0 <= value.float().min() and value.float().max() <= 4


def test_a_tensor_is_laid_out_with_its_recorded_strides():
    value = make(spec("float32", [3, 4], 0.0, 1.0, strides=[1, 3]), framework="torch")
    assert value.stride() == (1, 3)


def test_a_dtype_this_torch_does_not_have_is_refused():
    with pytest.raises(CannotRebuild, match="^torch has no dtype float8_e9m9 here$"):
        make(spec("float8_e9m9", [2]), framework="torch")
