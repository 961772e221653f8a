"""Inputs for config replay (--random): arrays made from a record's shape, dtype and, when the run
recorded statistics (OPHOOK_MODE=stats or dump), their min and max, as msprobe's random mode and
PaddleAPITest's config replay do.

Floating and complex arrays can always be made: uniform in [min, max] when recorded, standard
normal otherwise. Integer arrays need their recorded range (an index tensor drawn from nowhere
would index out of bounds); booleans are fair coin flips. Anything else cannot be made."""
import numpy as np

from .arrays import numpy_layout, torch_layout
from .values import CannotRebuild, pointer_label, python_type_of


class RandomArrays:
    """Makes a record's array inputs, the same ones each time for the same record and seed."""

    def __init__(self, record, seed):
        self._rng = np.random.default_rng([seed, int(record["seq"])])
        self._framework = record.get("framework")

    def __call__(self, spec, pointer):
        dtype, shape = spec.get("dtype"), tuple(spec.get("shape") or ())
        stats = spec.get("stats") or {}
        low, high = stats.get("min"), stats.get("max")
        kind = _kind(dtype)
        if kind == "f":
            values = self._floats(shape, low, high)
        elif kind == "c":
            values = self._rng.standard_normal(shape) + 1j * self._rng.standard_normal(shape)
        elif kind == "b":
            values = self._rng.integers(0, 2, size=shape).astype(bool)
        elif kind in "iu":
            if low is None or high is None:
                raise CannotRebuild("%s: an integer array without a recorded range (record with OPHOOK_MODE=stats)"
                                    % pointer_label(pointer))
            values = self._rng.integers(int(low), int(high), size=shape, endpoint=True)
        else:
            raise CannotRebuild("%s: no random values for dtype %s" % (pointer_label(pointer), dtype))
        return _as_recorded(values, dtype, python_type_of(spec, self._framework), spec.get("device") or "cpu",
                            spec.get("strides"))

    def _floats(self, shape, low, high):
        if low is None or high is None:
            return self._rng.standard_normal(shape)
        return self._rng.uniform(low, high, size=shape) if high > low else np.full(shape, float(low))


def _kind(dtype):
    """NumPy's kind letter of a recorded dtype name, torch's names included."""
    if dtype is None:
        return "?"
    if dtype.startswith(("bfloat16", "float8")):
        return "f"
    if dtype == "complex32":
        return "c"
    try:
        return np.dtype(dtype).kind
    except TypeError:
        return "?"


def _as_recorded(values, dtype, python_type, device, strides):
    """The values as the recorded Python type, dtype, device and layout."""
    if python_type != "torch.Tensor":
        array = numpy_layout(values.astype(dtype), strides)
        return array[()] if python_type == "numpy.generic" else array
    import torch

    wanted = getattr(torch, dtype, None)
    if wanted is None:
        raise CannotRebuild("torch has no dtype %s here" % dtype)
    tensor = torch_layout(torch.from_numpy(np.ascontiguousarray(values)).to(wanted), strides)
    return tensor if device == "cpu" else tensor.to(device)
