"""ophook._replay.reference, the float64 reference of `--mode reference` and `--referee float64`:
floating inputs widened to 64 bits (complex to complex128) and nothing else changed, and a
recorded output judged by the per-dtype thresholds: mean relative error below T and maximum below
10 T, relative to |reference| + 1e-7, NaN matching NaN, exact dtypes compared exactly. Called
directly on the build tree's package."""
import sys

import numpy as np
import pytest
import torch

from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook._replay import reference  # noqa: E402
from ophook._replay.reference import MAX_TO_MEAN_RATIO, THRESHOLDS  # noqa: E402


@pytest.mark.parametrize("dtype, wide", [(np.float16, np.float64), (np.float32, np.float64), (np.float64, np.float64),
                                         (np.complex64, np.complex128), (np.int32, np.int32), (np.bool_, np.bool_),
                                         (np.uint8, np.uint8)])
def test_numpy_arrays_dtypes_and_scalar_types_are_widened(dtype, wide):
    assert reference.widen(np.ones(2, dtype)).dtype == wide
    assert reference.widen(np.dtype(dtype)) == np.dtype(wide)
    assert reference.widen(dtype) is wide


@pytest.mark.parametrize("dtype, wide", [(torch.bfloat16, torch.float64), (torch.float16, torch.float64),
                                         (torch.float32, torch.float64), (torch.complex64, torch.complex128),
                                         (torch.int64, torch.int64), (torch.bool, torch.bool)])
def test_tensors_and_torch_dtypes_are_widened(dtype, wide):
    tensor = torch.ones(2, dtype=dtype)
    widened = reference.widen(tensor)
    assert widened.dtype == wide and (widened is tensor) == (dtype == wide)
    assert reference.widen(dtype) == wide


def test_containers_are_widened_item_by_item_and_keep_their_type():
    value = {"x": [np.ones(1, np.float32), (torch.ones(1), 3)], "eps": 1e-5, "name": "sum"}
    widened = reference.widen(value)
    assert widened["x"][0].dtype == np.float64 and widened["x"][1][0].dtype == torch.float64
    assert type(widened["x"]) is list and type(widened["x"][1]) is tuple
    assert widened["x"][1][1] == 3 and widened["eps"] == 1e-5 and widened["name"] == "sum"


def test_the_widened_values_are_the_same_numbers():
    values = np.array([0.1, -3.5, np.inf, np.nan], dtype=np.float32)
    wide = reference.widen(values)
    assert wide[:3].tolist() == [float(np.float32(0.1)), -3.5, np.inf] and np.isnan(wide[3])


def test_each_floating_dtype_has_its_threshold_and_exact_ones_none():
    assert reference.threshold_of("float16") == 2.0 ** -10 and reference.threshold_of("bfloat16") == 2.0 ** -7
    assert reference.threshold_of("float32") == 2.0 ** -13 and reference.threshold_of("float64") == 2.0 ** -40
    for name in ("int64", "bool", "uint8", "complex32", "", None):
        assert reference.threshold_of(name) is None


def test_an_output_within_the_thresholds_passes():
    golden = np.linspace(1.0, 2.0, 1000)
    recorded = (golden * (1 + 2.0 ** -15)).astype(np.float32)
    error = reference.reference_error(recorded, golden, "float32")
    assert error["passed"] and error["why"] == "" and error["threshold"] == THRESHOLDS["float32"]
    assert 0 < error["mean_rel"] < THRESHOLDS["float32"] and 0 < error["max_rel"]


def test_a_mean_error_over_the_threshold_fails_and_says_by_how_much():
    golden = np.ones(100)
    recorded = np.full(100, 1 + 2.0 ** -12, np.float32)  # each element 2^-12 off: twice float32's limit
    error = reference.reference_error(recorded, golden, "float32")
    assert not error["passed"]
    assert error["why"] == "mean rel %.3g (limit %.3g), max rel %.3g (limit %.3g)" % (
        error["mean_rel"], 2.0 ** -13, error["max_rel"], 10 * 2.0 ** -13)


def test_one_element_far_off_fails_by_the_maximum_alone():
    golden = np.ones(10000)
    recorded = golden.astype(np.float32)
    recorded[7] = 1.01  # mean rel 1e-6, under 2^-13; max rel 0.01, over 10 * 2^-13
    error = reference.reference_error(recorded, golden, "float32")
    assert error["mean_rel"] < THRESHOLDS["float32"] < MAX_TO_MEAN_RATIO * THRESHOLDS["float32"] < error["max_rel"]
    assert not error["passed"]


def test_errors_are_relative_to_the_reference_plus_a_floor():
    """A reference of 0 does not make every difference infinite: 1e-9 off 0 is 1e-9 / 1e-7 = 1%."""
    error = reference.reference_error(np.array([1e-9], np.float32), np.zeros(1), "float32")
    assert error["max_rel"] == pytest.approx(np.float32(1e-9) / 1e-7) and not error["passed"]
    assert reference.reference_error(np.zeros(1, np.float32), np.zeros(1), "float32")["passed"]


def test_nan_matches_nan_and_infinities_match_themselves():
    recorded = np.array([np.nan, np.inf, -np.inf, 1.0], np.float16)
    error = reference.reference_error(recorded, np.array([np.nan, np.inf, -np.inf, 1.0]), "float16")
    assert error["passed"] and error["max_rel"] == 0


@pytest.mark.parametrize("recorded, golden", [([np.nan], [1.0]), ([1.0], [np.nan]), ([np.inf], [1.0]),
                                              ([np.inf], [-np.inf])])
def test_a_nan_or_inf_the_reference_does_not_have_fails(recorded, golden):
    error = reference.reference_error(np.array(recorded, np.float32), np.array(golden), "float32")
    assert not error["passed"] and error["max_rel"] == np.inf


def test_complex_outputs_are_judged_by_their_distance():
    golden = np.array([1 + 1j, 2 - 1j])
    assert reference.reference_error(golden.astype(np.complex64), golden, "complex64")["passed"]
    assert not reference.reference_error(np.array([1 + 1.1j, 2 - 1j], np.complex64), golden, "complex64")["passed"]


def test_exact_dtypes_are_compared_exactly():
    same = reference.reference_error(np.array([1, 2, 3]), np.array([1.0, 2.0, 3.0]), "int64")
    assert same == {"passed": True, "max_abs": 0.0, "max_rel": 0.0, "mean_rel": 0.0, "threshold": None, "why": ""}
    differ = reference.reference_error(np.array([True, False]), np.array([True, True]), "bool")
    assert differ == {"passed": False, "max_abs": None, "max_rel": None, "mean_rel": None, "threshold": None,
                      "why": "values differ"}


def test_a_shape_that_differs_fails_without_errors():
    error = reference.reference_error(np.zeros((2, 3), np.float32), np.zeros((3, 2)), "float32")
    assert error == {"passed": False, "max_abs": None, "max_rel": None, "mean_rel": None,
                     "threshold": THRESHOLDS["float32"], "why": "shape [2, 3], reference [3, 2]"}


def test_an_empty_output_passes():
    error = reference.reference_error(np.zeros((0, 4), np.float32), np.zeros((0, 4)), "float32")
    assert error["passed"] and error["max_rel"] == 0.0
