"""Reads tensors through torch itself: every tensor on a device other than the CPU, and every
tensor under OPHOOK_TENSOR_COPY=torch. The C++ capture (src/python/torch/device_path.cpp) calls
these functions with ophook's own recording suspended (BusyScope); none of them raises: a tensor
that cannot be read comes back as an Unread with the reason the record gives.

While they run no torch function or dispatch mode is reached (neither ophook's nor the
program's), autograd records nothing and autocast casts nothing, so the program's results, modes
and graph never see ophook's own copies and reductions.

docs/devices.md describes what is read how, and which parts were verified on which hardware."""
import atexit
import glob
import os
import sys

import torch

from .. import _ophook

_C = torch._C

# Elements reduced per step: bounds the float64/int64 temporaries on the device (32 MiB each).
_CHUNK = 1 << 22

# Raw-bit and packed dtypes: their statistics are those of the unsigned integers the file holds.
_RAW_BITS = {getattr(torch, name): torch.uint16 if name == "bits16" else torch.uint8
             for name in ("bits8", "bits16", "bits1x8", "bits2x4", "bits4x2", "float4_e2m1fn_x2")
             if hasattr(torch, name)}

# torch.OutOfMemoryError is torch's for every device; older releases raise RuntimeError.
_OOM_TYPES = tuple(t for t in (getattr(torch, "OutOfMemoryError", None),) if t is not None) + (MemoryError,)
_OOM_TEXTS = ("out of memory", "can't allocate memory", "not enough memory")


class Unread:
    """Why a tensor was not read: `reason` goes into the record (a fixed text per kind, so that the
    interned reasons stay few), `detail` (the exception) into the one warning and summary.json."""
    __slots__ = ("reason", "detail", "out_of_memory")

    def __init__(self, reason, detail="", out_of_memory=False):
        self.reason, self.detail, self.out_of_memory = reason, detail, out_of_memory


class Suspended:
    """ophook's own torch work (here and the training monitor's): no torch function or dispatch mode, no
    autograd, no autocast."""
    __slots__ = ("_guards", "_grad")

    def __enter__(self):
        self._guards = (_C.DisableTorchFunction(), _C._DisableTorchDispatch(), _C._DisableAutocast())
        for guard in self._guards:
            guard.__enter__()
        self._grad = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._grad)
        for guard in reversed(self._guards):
            guard.__exit__(None, None, None)
        return False


def _failure(error):
    detail = "%s: %s" % (type(error).__name__, str(error).strip().splitlines()[0] if str(error).strip() else "")
    lowered = str(error).lower()
    if isinstance(error, _OOM_TYPES) or any(text in lowered for text in _OOM_TEXTS):
        return Unread("out of memory while reading it through torch: spec only", detail, True)
    return Unread("reading it through torch failed (%s): spec only" % type(error).__name__, detail)


def _refusal(device):
    """Why a tensor on `device` must not be touched now, or None."""
    if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        # Kernels launched now would go into the program's CUDA graph, and a copy would break it.
        return Unread("not read while a CUDA graph is being captured: spec only")
    return None


def _values(tensor):
    """The tensor's values as torch sees them: detached, conjugate and negative bits resolved."""
    return torch.resolve_neg(torch.resolve_conj(_C.TensorBase.detach(tensor)))  # no subclass's own detach


def copy_into(tensor, target):
    """Copies the tensor's elements, in C order and in its own dtype, into `target` (a writable
    buffer of exactly that many bytes, owned by the caller). One synchronous copy to the host.
    Returns None, or an Unread."""
    try:
        refused = _refusal(tensor.device)
        if refused is not None:
            return refused
        with Suspended():
            destination = torch.frombuffer(target, dtype=tensor.dtype).view(tensor.shape)
            destination.copy_(_values(tensor))
            del destination  # before the caller frees `target`
        return None
    except Exception as error:
        return _failure(error)


def _accumulator(device):
    """float64 where the device has it (MPS has not)."""
    return torch.float32 if device.type == "mps" else torch.float64


def _magnitudes(chunk, accumulator):
    """Real values in `accumulator`: complex numbers by their magnitude, computed as the writer
    computes it from the bytes (src/core/stats/stats.cpp): sqrt(re^2 + im^2) in double for complex64,
    hypot for complex128."""
    if not chunk.is_complex():
        return chunk.to(accumulator)
    parts = torch.view_as_real(chunk).to(accumulator)
    real, imag = parts[..., 0], parts[..., 1]
    if chunk.dtype == torch.complex128:
        return torch.hypot(real, imag)
    return torch.sqrt(real * real + imag * imag)


_INF = float("inf")


def _one(parts, reduce):
    """A statistic over the chunks from its per-chunk `parts` (no extra kernel for one chunk)."""
    return parts[0] if len(parts) == 1 else reduce(torch.stack(parts))


def _first_pass(values, floating):
    """(finite mask, NaN count, finite count, min, max, sum) over the finite values of one chunk;
    the mask and the counts are None for integer values, which are all finite. Few kernels: each
    one is a launch on a device, which costs more than a small tensor's work."""
    if not floating:
        return None, None, None, values.amin(), values.amax(), values.sum()
    finite = values.abs() < _INF  # False for NaN too; torch.isfinite takes one kernel more
    return (finite, (values != values).sum(), finite.sum(), torch.where(finite, values, _INF).amin(),
            torch.where(finite, values, -_INF).amax(), torch.where(finite, values, 0.0).sum())


def _squared_deviations(values, finite, mean):
    deviations = values - mean
    if finite is not None:
        deviations = torch.where(finite, deviations, 0.0)
    return deviations.square().sum()


def _fingerprint(flat):
    """Two sums over the tensor's raw bytes read as little-endian int32 words (bytes when the size
    is not a multiple of 4), modulo 2**64: sum(w_i * (2i + 1)) and sum(w_i * w_i). Integer sums do
    not depend on the order of the reduction, so every device gives the same pair for the same
    bytes; the caller turns it into the digest."""
    raw = flat.view(torch.uint8)
    if raw.numel() % 4 == 0 and raw.storage_offset() % 4 != 0:
        raw = raw.clone()  # int32 words need an aligned start
    words = raw.view(torch.int32) if raw.numel() % 4 == 0 else raw
    position, by_value = [], []
    for start in range(0, words.numel(), _CHUNK):
        chunk = words[start:start + _CHUNK].to(torch.int64)
        odd = torch.arange(2 * start + 1, 2 * (start + chunk.numel()) + 1, 2, dtype=torch.int64, device=chunk.device)
        position.append((chunk * odd).sum())  # wraps modulo 2**64, as intended
        by_value.append((chunk * chunk).sum())
    return _one(position, torch.sum), _one(by_value, torch.sum)


def _counts(flat):
    """NaN count and finite count, for OPHOOK_NAN's check in trace mode: a complex number is
    finite when both parts are, as the CPU path's check has it."""
    if flat.is_floating_point() and flat.element_size() == 1:
        flat = flat.float()  # float8 has no comparison kernels; widening is exact
    finite = torch.isfinite(flat) if flat.is_complex() else flat.abs() < _INF
    return torch.stack([flat != flat, finite]).sum(1)


def _statistics(tensor):
    """The int64 vector of 8 that statistics() describes, and the counts when they are known on
    the host without a kernel (integer values: no NaN, all finite), else None."""
    values = _values(tensor)
    if values.dtype in _RAW_BITS:
        values = values.view(_RAW_BITS[values.dtype])
    flat = values.reshape(-1)
    if flat.numel() == 0:
        return torch.zeros(8, dtype=torch.int64, device=flat.device), (0, 0)
    floating = flat.is_floating_point() or flat.is_complex()
    accumulator = _accumulator(flat.device)
    chunks = [flat[start:start + _CHUNK] for start in range(0, flat.numel(), _CHUNK)]
    converted = [_magnitudes(chunks[0], accumulator)] if len(chunks) == 1 else None  # converted once
    firsts = [_first_pass(converted[0] if converted else _magnitudes(c, accumulator), floating) for c in chunks]
    _, nans, finites, lows, highs, totals = zip(*firsts)
    low, high = _one(lows, torch.amin), _one(highs, torch.amax)
    finite = _one(finites, torch.sum) if floating else flat.numel()
    # As the writer: the mean kept within [min, max] against rounding.
    mean = torch.clamp(_one(totals, torch.sum) / finite, low, high)
    squares = _one([_squared_deviations(converted[0] if converted else _magnitudes(c, accumulator), first[0], mean)
                    for c, first in zip(chunks, firsts)], torch.sum)
    position, by_value = _fingerprint(flat.contiguous())
    floats = [low, high, mean, squares]
    if accumulator == torch.float64:
        bits = [f.view(torch.int64) for f in floats]  # the floats' bits, unchanged by the copies
    else:
        bits = [f.view(torch.int32).to(torch.int64) for f in floats]
    counts = [_one(nans, torch.sum), finite] if floating else [position, position]  # placeholders: host counts
    return torch.stack([*counts, *bits, position, by_value]), None if floating else (0, flat.numel())


def _current_stream(device):
    """The stream work on `device` is queued on now, for devices that have streams."""
    if device.type in ("cpu", "meta"):
        return None
    try:
        return torch.accelerator.current_stream(device)
    except Exception:
        return None


class _Pending:
    """Work queued on a device for resolve(): a tensor's bytes (uint8) or its statistics (int64),
    the stream it was queued on, and counts the host knows already (integer values)."""
    __slots__ = ("tensor", "stream", "counts")

    def __init__(self, tensor, counts=None):
        self.tensor, self.stream, self.counts = tensor, _current_stream(tensor.device), counts


def snapshot(tensor):
    """Queues a copy of the tensor's bytes, in C order and in its own dtype, on its device (one
    kernel): its values as they are now, brought to the host later by resolve(), together with
    other tensors' in one copy. For small tensors, whose statistics would cost more kernel
    launches than their bytes cost to copy. Returns a pending object, or an Unread."""
    try:
        refused = _refusal(tensor.device)
        if refused is not None:
            return refused
        with Suspended():
            copy = _values(tensor).clone(memory_format=torch.contiguous_format)
            return _Pending(copy.reshape(-1).view(torch.uint8))
    except Exception as error:
        return _failure(error)


def statistics(tensor, counts_only):
    """Queues the statistics of the tensor's values on its device, without waiting for them: an
    int64 vector of 8 (NaN count, finite count, min, max, mean and sum of squared deviations as
    the bits of floats, the two fingerprint sums). `counts_only`: the two counts alone, a vector of
    2 (a NaN check). Returns a pending object for resolve(), or an Unread."""
    try:
        refused = _refusal(tensor.device)
        if refused is not None:
            return refused
        with Suspended():
            if counts_only:
                return _Pending(_counts(_values(tensor).reshape(-1)))
            vector, counts = _statistics(tensor)
            return _Pending(vector, counts)
    except Exception as error:
        return _failure(error)


def _host_values(items, length):
    """The host values of statistics vectors of one device and `length`, as resolve() gives them."""
    host = torch.stack([item.tensor for item in items]).cpu()
    rows = host.tolist()
    if length == 2:
        return [tuple(item.counts or row) for item, row in zip(items, rows)]
    floats = host[:, 2:6].contiguous()
    floats = (floats.view(torch.float64) if _accumulator(items[0].tensor.device) == torch.float64
              else floats.to(torch.int32).view(torch.float32).double()).tolist()
    return [(*(item.counts or row[:2]), *f, *row[6:]) for item, row, f in zip(items, rows, floats)]


def _host_bytes(items):
    """The bytes of snapshots of one device, as host uint8 tensors (views of one copy)."""
    host = torch.cat([item.tensor for item in items]).cpu()
    out, start = [], 0
    for item in items:
        out.append(host[start:start + item.tensor.numel()])
        start += item.tensor.numel()
    return out


def resolve(pending):
    """What pending objects queued, on the host: per item, for a snapshot a uint8 CPU tensor of its
    bytes; for statistics a tuple (NaN count, finite count, min, max, mean, squares, position sum,
    value sum), for counts alone (NaN count, finite count); or an Unread. Once the streams that
    queued them have finished: one copy to the host per device and kind."""
    results = [None] * len(pending)
    groups = {}
    for index, item in enumerate(pending):
        kind = "bytes" if item.tensor.dtype == torch.uint8 else item.tensor.numel()
        groups.setdefault((item.tensor.device, kind), []).append(index)
    for (_, kind), indices in groups.items():
        items = [pending[i] for i in indices]
        try:
            with Suspended():
                for stream in {id(item.stream): item.stream for item in items if item.stream is not None}.values():
                    stream.synchronize()
                values = _host_bytes(items) if kind == "bytes" else _host_values(items, kind)
        except Exception as error:
            values = [_failure(error)] * len(items)
        for index, value in zip(indices, values):
            results[index] = value
    return results


def nvrtc_libraries():
    """Paths of NVRTC libraries for ophook's statistics kernel (src/device), the one
    this torch was built against first: one already loaded, torch's own lib directory's, the
    NVIDIA wheels' (nvidia/*/lib, nvidia/cu*/lib)."""
    found = []
    try:
        with open("/proc/self/maps") as maps:
            found += [line.split()[-1] for line in maps if "libnvrtc.so" in line]
    except OSError:
        pass
    roots = [os.path.join(os.path.dirname(torch.__file__), "lib")]
    for entry in sys.path:
        roots += [os.path.join(entry, "nvidia", "*", "lib"), os.path.join(entry, "nvidia", "*", "*", "lib")]
    for root in roots:
        found += sorted(glob.glob(os.path.join(root, "libnvrtc.so*")))
    major = (getattr(torch.version, "cuda", None) or "").split(".")[0]
    ordered = sorted(dict.fromkeys(found), key=lambda path: (".so." + major) not in path if major else False)
    return [path for path in ordered if "builtins" not in os.path.basename(path)]


def local_shard(tensor):
    """(local tensor, what the record says about it) of a DTensor, or None."""
    local = getattr(tensor, "_local_tensor", None)
    if not isinstance(local, torch.Tensor):
        return None
    placements = getattr(tensor, "placements", "?")
    return local, "DTensor: this rank's local shard (global shape %s, placements %s)" % (
        list(tensor.shape), tuple(placements))


# Before the interpreter tears torch down: records held for their device values are read back and
# written, also when no one finishes the run (a Tracer never stopped). Registered after the
# start-up's own exit handler, so it runs before that one finishes the run.
atexit.register(_ophook.torch_read_back_held)
