"""The program's side of `ophook bisect`: each run's generated OPHOOK_OVERRIDES file calls
`install`, which registers one rule per chosen op. A rule computes the chosen calls with their
floating inputs widened (float64 or float32) and gives back outputs in the dtype the program would
have got, so that nothing downstream changes but the rounding of those calls.

A call is named by its op and its ordinal among that op's outermost recorded calls (the records
whose parent is null): seq numbers would not do, since a call an override handles records none
of the calls it makes, which shifts every later seq."""
import atexit
import contextlib
import sys

from .. import _import_hooks, _ophook
from .._overrides import override


def install(to, chosen):
    """Registers the rules of one run: `to` is "float64" or "float32", `chosen` maps an op name
    to the ordinals of its outermost calls to widen. Every run, an unchanged one too, writes dump
    mode's ring at exit: the result bisect judges is the last calls' outputs, and the ring holds
    only those."""
    for op_name, ordinals in chosen.items():
        override(op_name)(_rule(frozenset(ordinals), to))
    registered = []

    def write_ring_at_exit(_module):
        # Registered once a framework is imported, after the recorder's own exit handler (rules load
        # before start-up registers it): atexit runs the later first, so the ring is written before
        # the recorder finishes.
        if not registered:
            registered.append(True)
            atexit.register(_ophook.dump_ring, "ophook bisect: the run's result")

    for framework in ("numpy", "torch"):
        _import_hooks.when_imported(framework, write_ring_at_exit)


def _rule(ordinals, to):
    seen = [0]  # outermost calls of this op so far

    def widen_chosen(original, *args, **kwargs):
        if not _ophook.in_outermost_call():
            return original(*args, **kwargs)
        ordinal = seen[0]
        seen[0] += 1
        if ordinal not in ordinals:
            return original(*args, **kwargs)
        return widened_call(original, args, kwargs, to)

    return widen_chosen


def widened_call(original, args, kwargs, to):
    """original(*args, **kwargs) on widened floating inputs, its floating outputs cast back."""
    torch = sys.modules.get("torch")
    if torch is not None and any(isinstance(v, torch.Tensor) for v in _leaves(args, kwargs)):
        return _widened_torch_call(torch, original, args, kwargs, getattr(torch, to))
    import numpy as np

    return _widened_numpy_call(np, original, args, kwargs, np.dtype(to))


def _leaves(args, kwargs):
    """The values inside args and kwargs, lists and tuples opened."""
    stack = [list(args), list(kwargs.values())]
    while stack:
        for value in stack.pop():
            if isinstance(value, (list, tuple)):
                stack.append(value)
            else:
                yield value


def _rebuild(value, convert):
    """`value` with `convert` applied to every leaf inside lists and tuples (named ones too)."""
    if isinstance(value, (list, tuple)):
        items = [_rebuild(item, convert) for item in value]
        if isinstance(value, list):
            return items
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    return convert(value)


def _widened_torch_call(torch, original, args, kwargs, wide):
    def widen(value):
        if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype.itemsize < wide.itemsize:
            return value.to(wide)
        return value

    program_dtypes = _torch_output_dtypes(torch, original, args, kwargs)
    with _autocast_off(torch):
        result = original(*_rebuild(args, widen), **{k: _rebuild(v, widen) for k, v in kwargs.items()})
    from torch.utils._pytree import tree_flatten, tree_unflatten

    leaves, spec = tree_flatten(result)
    fallback = _promoted_torch_dtype(torch, args, kwargs)
    narrowed = []
    for index, leaf in enumerate(leaves):
        if isinstance(leaf, torch.Tensor) and leaf.is_floating_point():
            dtype = program_dtypes[index] if program_dtypes and index < len(program_dtypes) else fallback
            if dtype is not None and dtype != leaf.dtype:
                leaf = leaf.to(dtype)
        narrowed.append(leaf)
    return tree_unflatten(narrowed, spec)


@contextlib.contextmanager
def _autocast_off(torch):
    """Autocast would narrow the widened inputs again: the widened call runs outside it, as a
    program does when it keeps an op in float32 under autocast."""
    with contextlib.ExitStack() as stack:
        for device in ("cpu", "cuda"):
            if torch.is_autocast_enabled(device):
                stack.enter_context(torch.autocast(device_type=device, enabled=False))
        yield


def _torch_output_dtypes(torch, original, args, kwargs):
    """The dtypes of the op's outputs outside autocast, from a run on meta tensors (shapes only,
    no data); None when the op has no meta implementation. Under autocast these are the dtypes the
    program's own values have before autocast narrows them (float32 for a linear layer)."""
    from torch.utils._pytree import tree_flatten, tree_map

    def to_meta(value):
        if not isinstance(value, torch.Tensor):
            return value
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")

    try:
        with _autocast_off(torch):
            leaves, _ = tree_flatten(original(*tree_map(to_meta, args), **tree_map(to_meta, kwargs)))
    except Exception:
        return None
    return [leaf.dtype if isinstance(leaf, torch.Tensor) else None for leaf in leaves]


def _promoted_torch_dtype(torch, args, kwargs):
    """The dtype the floating tensor inputs promote to: where the op has no meta implementation."""
    promoted = None
    for value in _leaves(args, kwargs):
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            promoted = value.dtype if promoted is None else torch.promote_types(promoted, value.dtype)
    return promoted


def _widened_numpy_call(np, original, args, kwargs, wide):
    dtypes = []

    def widen(value):
        if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind == "f":
            dtypes.append(value.dtype)
            if value.dtype.itemsize < wide.itemsize:
                return value.astype(wide)
        return value

    widened_args = _rebuild(args, widen)
    widened_kwargs = {k: v if k == "dtype" else _rebuild(v, widen) for k, v in kwargs.items()}
    result = original(*widened_args, **widened_kwargs)
    # NumPy has no meta arrays: the program's dtype is the one its floating inputs promote to, or
    # the one the call asked for.
    program = np.dtype(kwargs["dtype"]) if kwargs.get("dtype") is not None else (
        np.result_type(*dtypes) if dtypes else None)

    def narrow(value):
        if program is not None and isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind == "f" \
                and value.dtype != program:
            return value.astype(program)
        return value

    return _rebuild(result, narrow)
