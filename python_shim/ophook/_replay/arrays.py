"""Recorded arrays in and out: loading a call's .npy file back into the array or tensor it was,
and comparing a result with a recorded file bit for bit.

Standalone on purpose (numpy, and torch only when a tensor is asked for): `ophook replay
--emit-script` copies these functions into the scripts it writes, which run without ophook."""
import numpy as np


def load_array(path, dtype, python_type, device="cpu", strides=None, requires_grad=False):
    """The array a recorded value names: the .npy file at `path` as what it was (`python_type`:
    "numpy.ndarray", "numpy.generic" for a NumPy scalar, or "torch.Tensor" on `device`), in the
    recorded `dtype`, laid out with the recorded element `strides` when given (the file holds the
    values in C order). bfloat16 and float8 files hold float32 values, narrowed back exactly. A
    tensor that `requires_grad` requires it, as the program's did: kernels choose their path by it
    (an RNN, attention); it is not a leaf, so that in-place ops may write it as they wrote the
    program's activations."""
    data = np.load(path, allow_pickle=False)
    if not data.dtype.isnative:
        data = data.astype(data.dtype.newbyteorder("="))
    if python_type != "torch.Tensor":
        # the recorded dtype is str(dtype): a name ("float64"), or a description for the dtypes
        # whose str is not their name ("<U5", "[('a', '<f4'), ('b', '<i8')]")
        same = dtype in (data.dtype.name, str(data.dtype))
        array = numpy_layout(data if same else data.astype(np.dtype(dtype)), strides)
        return array[()] if python_type == "numpy.generic" else array
    import torch

    tensor = torch.from_numpy(data)
    wanted = getattr(torch, dtype)
    if tensor.dtype != wanted:
        tensor = tensor.to(wanted)
    if requires_grad and (tensor.is_floating_point() or tensor.is_complex()):
        tensor = tensor.requires_grad_(True).clone()
    tensor = torch_layout(tensor, strides)
    return tensor if device == "cpu" else tensor.to(device)


def layout_extent(shape, strides):
    """(offset of the first element, elements spanned) of a layout; None when there is nothing to
    lay out (no strides, no element)."""
    if not strides or len(strides) != len(shape) or 0 in shape:
        return None
    low = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    return -low, high - low + 1


def broadcast_dims(shape, strides):
    """Index of a C-order array that keeps one element along each broadcast (stride 0) dimension."""
    return tuple(slice(0, 1) if s == 0 and n > 1 else slice(None) for n, s in zip(shape, strides))


def numpy_layout(array, strides):
    """`array` copied into memory with the element `strides`; broadcast dimensions as numpy's own
    broadcast views (read-only, like most of those a program passes)."""
    extent = layout_extent(array.shape, strides)
    if extent is None:
        return array
    if any(s == 0 and n > 1 for n, s in zip(array.shape, strides)):
        return np.broadcast_to(numpy_layout(array[broadcast_dims(array.shape, strides)], strides), array.shape)
    offset, size = extent
    base = np.empty(size, array.dtype)
    out = np.lib.stride_tricks.as_strided(base[offset:], array.shape, [s * array.itemsize for s in strides])
    out[...] = array
    return out


def torch_layout(tensor, strides):
    """`tensor` copied into memory with the element `strides`; broadcast dimensions expanded. A
    layout whose elements overlap otherwise (a window view) is left in C order."""
    shape = tuple(tensor.shape)
    extent = layout_extent(shape, strides)
    if extent is None:
        return tensor
    if any(s == 0 and n > 1 for n, s in zip(shape, strides)):
        return torch_layout(tensor[broadcast_dims(shape, strides)], strides).expand(shape)
    import torch

    out = torch.empty(extent[1], dtype=tensor.dtype).as_strided(shape, list(strides))
    try:
        out.copy_(tensor)
    except RuntimeError:
        return tensor
    return out


def shared_view(base, spec, loaded):
    """An input recorded as a view into an earlier input of its call ("view_of": `base` as rebuilt,
    "view_offset": where its element 0 lies in `base`'s memory, in elements) rebuilt as that view,
    so that the op sees the sharing it saw (NumPy computes x.T @ x with BLAS syrk, two arrays with
    gemm). `loaded` — the input's own file — when `base` is not one block of memory or the view's
    values are not the file's."""
    if not (isinstance(base, np.ndarray) and isinstance(loaded, np.ndarray)) or base.dtype != loaded.dtype:
        return loaded
    if loaded.size == 0 or not (base.flags.c_contiguous or base.flags.f_contiguous):
        return loaded
    memory = base.ravel(order="K")  # a view, element 0 first, for a base in C or Fortran order
    offset = spec.get("view_offset", 0)
    strides = spec.get("strides") or [int(np.prod(loaded.shape[i + 1:])) for i in range(loaded.ndim)]
    first, span = layout_extent(loaded.shape, strides)
    if offset < first or offset - first + span > memory.size:
        return loaded
    view = np.lib.stride_tricks.as_strided(memory[offset:], loaded.shape, [s * loaded.itemsize for s in strides])
    return view if view.tobytes() == loaded.tobytes() else loaded


def saved_form(value):
    """`value` (ndarray, NumPy scalar or tensor) as the ndarray a recording would save: on the CPU,
    bfloat16 and float8 widened to float32 (exactly)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    import torch

    tensor = value.detach().cpu().resolve_conj().resolve_neg()
    if tensor.dtype == torch.bfloat16 or "float8" in str(tensor.dtype):
        tensor = tensor.float()
    return tensor.contiguous().numpy()


def compare_exact(actual, expected):
    """Compares two ndarrays bit for bit, a NaN matching any NaN. Returns (same, max_abs, max_rel,
    why): the largest absolute and relative (to `expected`; inf where it is 0) differences, None
    when the arrays cannot be subtracted; `why` says what differs, or is "" when they are the same."""
    if actual.shape != expected.shape:
        return False, None, None, "shape %s, recorded %s" % (list(actual.shape), list(expected.shape))
    if actual.dtype != expected.dtype:
        return False, None, None, "dtype %s, recorded %s" % (actual.dtype.name, expected.dtype.name)
    if actual.tobytes() == expected.tobytes():
        return True, 0.0, 0.0, ""
    if actual.dtype.kind not in "biufc":
        return False, None, None, "bytes differ"
    equal = actual == expected
    if actual.dtype.kind in "fc":
        equal |= np.isnan(actual) & np.isnan(expected)
    if equal.all():
        return True, 0.0, 0.0, ""  # NaN payloads or signed zeros
    a = actual.astype(np.complex128 if actual.dtype.kind == "c" else np.float64)
    e = expected.astype(a.dtype)
    with np.errstate(all="ignore"):
        diff = np.where(equal, 0.0, np.abs(a - e))
        diff = np.where(np.isnan(diff), np.inf, diff)  # a NaN against a number, or inf - inf
        rel = np.where(diff == 0, 0.0, diff / np.abs(e))
    count = int((~equal).sum())
    return False, float(diff.max()), float(rel.max()), "%d of %d elements differ" % (count, equal.size)
