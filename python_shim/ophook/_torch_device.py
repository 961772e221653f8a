"""Reads tensors through torch itself: every tensor on a device other than the CPU, and every
tensor under OPHOOK_TENSOR_COPY=torch. The C++ capture (src/python/torch_device_path.cpp) calls
these functions with ophook's own recording suspended (BusyScope); none of them raises: a tensor
that cannot be read comes back as an Unread with the reason the record gives.

While they run no torch function or dispatch mode is reached (neither ophook's nor the
program's), autograd records nothing and autocast casts nothing, so the program's results, modes
and graph never see ophook's own copies and reductions.

docs/devices.md describes what is read how, and which parts were verified on which hardware."""
import torch

_C = torch._C

# Elements reduced per step: bounds the float64/int64 temporaries on the device (32 MiB each).
_CHUNK = 1 << 22

# Raw-bit and packed dtypes: their statistics are those of the unsigned integers the file holds.
_RAW_BITS = {name: torch.uint16 if name == "bits16" else torch.uint8
             for name in ("bits8", "bits16", "bits1x8", "bits2x4", "bits4x2", "float4_e2m1fn_x2")
             if hasattr(torch, name)}
_RAW_BITS = {getattr(torch, name): dtype for name, dtype in _RAW_BITS.items()}

# torch.OutOfMemoryError is torch's for every device; older releases raise RuntimeError.
_OOM_TYPES = tuple(t for t in (getattr(torch, "OutOfMemoryError", None),) if t is not None) + (MemoryError,)
_OOM_TEXTS = ("out of memory", "can't allocate memory", "not enough memory")


class Unread:
    """Why a tensor was not read: `reason` goes into the record (a fixed text per kind, so that the
    interned reasons stay few), `detail` (the exception) into the one warning and summary.json."""
    __slots__ = ("reason", "detail", "out_of_memory")

    def __init__(self, reason, detail="", out_of_memory=False):
        self.reason, self.detail, self.out_of_memory = reason, detail, out_of_memory


class _Suspended:
    """ophook's own torch work: no torch function or dispatch mode, no autograd, no autocast."""
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
        with _Suspended():
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
    computes it from the bytes (src/core/stats.cpp): sqrt(re^2 + im^2) in double for complex64,
    hypot for complex128."""
    if not chunk.is_complex():
        return chunk.to(accumulator)
    parts = torch.view_as_real(chunk).to(accumulator)
    real, imag = parts[..., 0], parts[..., 1]
    if chunk.dtype == torch.complex128:
        return torch.hypot(real, imag)
    return torch.sqrt(real * real + imag * imag)


def _first_pass(values, floating):
    """(nan count, finite count, min, max, sum) over the finite values of one chunk."""
    if not floating:
        return (torch.zeros((), dtype=torch.int64, device=values.device),
                torch.full((), values.numel(), dtype=torch.int64, device=values.device),
                values.amin(), values.amax(), values.sum())
    finite = torch.isfinite(values)
    return (torch.isnan(values).sum(), finite.sum(), torch.where(finite, values, float("inf")).amin(),
            torch.where(finite, values, float("-inf")).amax(), torch.where(finite, values, 0.0).sum())


def _squared_deviations(values, floating, mean):
    deviations = values - mean
    if floating:
        deviations = torch.where(torch.isfinite(values), deviations, 0.0)
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
    return torch.stack(position).sum(), torch.stack(by_value).sum()


def _statistics(tensor, counts_only):
    values = _values(tensor)
    if values.dtype in _RAW_BITS:
        values = values.view(_RAW_BITS[values.dtype])
    flat = values.reshape(-1)
    device = flat.device
    zero = torch.zeros((), dtype=torch.int64, device=device)
    if flat.numel() == 0:
        return torch.zeros(8, dtype=torch.int64, device=device)
    if counts_only:  # OPHOOK_NAN in trace mode: is anything NaN or infinite?
        return torch.stack([torch.isnan(flat).sum(), torch.isfinite(flat).sum(), zero, zero, zero, zero, zero, zero])
    floating = flat.is_floating_point() or flat.is_complex()
    accumulator = _accumulator(device)
    chunks = [flat[start:start + _CHUNK] for start in range(0, flat.numel(), _CHUNK)]
    kept = _magnitudes(chunks[0], accumulator) if len(chunks) == 1 else None  # the common case: one pass of conversion
    firsts = [_first_pass(kept if kept is not None else _magnitudes(c, accumulator), floating) for c in chunks]
    nan, finite, low, high, total = (torch.stack(column) for column in zip(*firsts))
    nan, finite, low, high = nan.sum(), finite.sum(), low.amin(), high.amax()
    # As the writer: the mean kept within [min, max] against rounding.
    mean = torch.clamp(total.sum() / finite, low, high)
    squares = torch.stack([_squared_deviations(kept if kept is not None else _magnitudes(c, accumulator), floating, mean)
                           for c in chunks]).sum()
    position, by_value = _fingerprint(flat.contiguous())
    floats = torch.stack([low, high, mean, squares]).to(accumulator)
    bits = floats.view(torch.int64) if accumulator == torch.float64 else floats.view(torch.int32).to(torch.int64)
    return torch.cat([torch.stack([nan, finite]), bits, torch.stack([position, by_value])])


def _current_stream(device):
    """The stream the statistics were queued on, for devices that have streams."""
    if device.type in ("cpu", "meta"):
        return None
    try:
        return torch.accelerator.current_stream(device)
    except Exception:
        return None


def statistics(tensor, counts_only):
    """Queues the statistics of the tensor's values on its device, without waiting for them: an
    int64 vector of 8 (nan count, finite count, min, max, mean, sum of squared deviations as the
    bits of floats, the two fingerprint sums). `counts_only`: the two counts alone (a NaN check).
    Returns an opaque pending object for resolve(), or an Unread."""
    try:
        refused = _refusal(tensor.device)
        if refused is not None:
            return refused
        with _Suspended():
            vector = _statistics(tensor, counts_only)
        return vector, _current_stream(vector.device)
    except Exception as error:
        return _failure(error)


def resolve(pending):
    """The host values of pending statistics: per item, a tuple (nan, finite, min, max, mean,
    squares, position sum, value sum) or an Unread. One copy to the host per device, once the
    streams that queued them have finished."""
    results = [None] * len(pending)
    by_device = {}
    for index, (vector, stream) in enumerate(pending):
        by_device.setdefault(vector.device, []).append(index)
    for device, indices in by_device.items():
        try:
            with _Suspended():
                streams = {id(pending[i][1]): pending[i][1] for i in indices if pending[i][1] is not None}
                for stream in streams.values():
                    stream.synchronize()
                host = torch.stack([pending[i][0] for i in indices]).cpu()
                floats = host[:, 2:6].contiguous()
                floats = (floats.view(torch.float64) if _accumulator(device) == torch.float64
                          else floats.to(torch.int32).view(torch.float32).double())
            counts, sums, floats = host[:, :2].tolist(), host[:, 6:].tolist(), floats.tolist()
        except Exception as error:
            failure = _failure(error)
            for index in indices:
                results[index] = failure
            continue
        for row, index in enumerate(indices):
            results[index] = (*counts[row], *floats[row], *sums[row])
    return results


def local_shard(tensor):
    """(local tensor, what the record says about it) of a DTensor, or None."""
    local = getattr(tensor, "_local_tensor", None)
    if not isinstance(local, torch.Tensor):
        return None
    placements = getattr(tensor, "placements", "?")
    return local, "DTensor: this rank's local shard (global shape %s, placements %s)" % (
        list(tensor.shape), tuple(placements))
