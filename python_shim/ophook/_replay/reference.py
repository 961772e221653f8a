"""The float64 reference: widening a call's floating inputs, the error of a recorded output against
the reference's, and the per-dtype thresholds that judge it.

The standard is MindStudio's single-benchmark one (msprobe's family of tools; Ascend ATK's
SingleBenchmarkCompareStandard, CANN's ops precision standard): with the relative error of each
element |out - golden| / (|golden| + 1e-7), an output passes when its mean relative error (MERE)
is below the threshold of its dtype and its maximum (MARE) below 10 times that."""
import numpy as np

RELATIVE_FLOOR = 1e-7
MAX_TO_MEAN_RATIO = 10
# Per output dtype. float64 has no entry in the standard: its reference is itself, so only a
# nondeterministic kernel can move it.
THRESHOLDS = {
    "float16": 2.0 ** -10,
    "bfloat16": 2.0 ** -7,
    "float32": 2.0 ** -13,
    "complex64": 2.0 ** -13,
    "float8_e4m3fn": 2.0 ** -3,
    "float8_e4m3fnuz": 2.0 ** -3,
    "float8_e5m2": 2.0 ** -2,
    "float8_e5m2fnuz": 2.0 ** -2,
    "float64": 2.0 ** -40,
    "complex128": 2.0 ** -40,
}


def widen(value):
    """`value` with floating arrays, tensors and dtypes of less than 64 bits made 64-bit (complex
    to complex128); anything else unchanged. Lists, tuples and dicts are widened item by item."""
    if isinstance(value, list):
        return [widen(v) for v in value]
    if isinstance(value, tuple):
        return tuple(widen(v) for v in value)
    if isinstance(value, dict):
        return {k: widen(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return value.astype(_wide_numpy(value.dtype))
    if isinstance(value, np.dtype):
        return _wide_numpy(value)
    if isinstance(value, type) and issubclass(value, np.generic):
        return _wide_numpy(np.dtype(value)).type
    torch = _torch()
    if torch is not None:
        if isinstance(value, torch.Tensor):
            wide = _wide_torch(value.dtype, torch)
            return value if wide == value.dtype else value.to(wide)
        if isinstance(value, torch.dtype):
            return _wide_torch(value, torch)
    return value


def _wide_numpy(dtype):
    if dtype.kind == "f" and dtype.itemsize < 8:
        return np.dtype(np.float64)
    if dtype.kind == "c" and dtype.itemsize < 16:
        return np.dtype(np.complex128)
    return dtype


def _wide_torch(dtype, torch):
    if dtype.is_complex:
        return torch.complex128
    if dtype.is_floating_point:
        return torch.float64
    return dtype


def _torch():
    import sys

    return sys.modules.get("torch")  # a value can only be a tensor once torch is imported


def threshold_of(dtype_name):
    """The dtype's threshold, or None for integer, bool and other exact dtypes."""
    return THRESHOLDS.get(dtype_name)


def reference_error(recorded, golden, dtype_name):
    """The error of `recorded` (an ndarray in its saved form, of dtype `dtype_name` as recorded)
    against `golden` (the reference's result). Returns a dict: passed, max_abs, max_rel (MARE),
    mean_rel (MERE), threshold, and why (empty when it passed)."""
    threshold = threshold_of(dtype_name)
    if recorded.shape != golden.shape:
        return _failed("shape %s, reference %s" % (list(recorded.shape), list(golden.shape)), threshold)
    if threshold is None or recorded.dtype.kind not in "fc":
        same = recorded.shape == golden.shape and np.array_equal(recorded, golden.astype(recorded.dtype))
        result = {"passed": bool(same), "max_abs": 0.0 if same else None, "max_rel": 0.0 if same else None,
                  "mean_rel": 0.0 if same else None, "threshold": None, "why": "" if same else "values differ"}
        return result
    complex_ = recorded.dtype.kind == "c" or golden.dtype.kind == "c"
    a = recorded.astype(np.complex128 if complex_ else np.float64)
    g = golden.astype(a.dtype)
    with np.errstate(all="ignore"):
        same_special = (np.isnan(a) & np.isnan(g)) | (a == g)
        diff = np.where(same_special, 0.0, np.abs(a - g))
        diff = np.where(np.isnan(diff), np.inf, diff)
        rel = np.where(same_special, 0.0, diff / (np.abs(g) + RELATIVE_FLOOR))
        rel = np.where(np.isnan(rel), np.inf, rel)  # a number against a NaN reference
    if rel.size == 0:
        return {"passed": True, "max_abs": 0.0, "max_rel": 0.0, "mean_rel": 0.0, "threshold": threshold, "why": ""}
    max_rel, mean_rel = float(rel.max()), float(rel.mean())
    passed = mean_rel < threshold and max_rel < MAX_TO_MEAN_RATIO * threshold
    why = "" if passed else "mean rel %.3g (limit %.3g), max rel %.3g (limit %.3g)" % (
        mean_rel, threshold, max_rel, MAX_TO_MEAN_RATIO * threshold)
    return {"passed": passed, "max_abs": float(diff.max()), "max_rel": max_rel, "mean_rel": mean_rel,
            "threshold": threshold, "why": why}


def _failed(why, threshold):
    return {"passed": False, "max_abs": None, "max_rel": None, "mean_rel": None, "threshold": threshold, "why": why}
