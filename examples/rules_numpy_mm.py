"""OPHOOK_OVERRIDES rules: every CPU `aten.mm` computed by NumPy instead of PyTorch — the seeds'
HijackMode, without touching the program. Used by examples/hijack_mm.py:

    OPHOOK_LEVELS=torch_dispatch OPHOOK_OVERRIDES=$PWD/examples/rules_numpy_mm.py \\
      LD_PRELOAD=$PWD/build/libophook.so .venv/bin/python examples/hijack_mm.py

ophook imports this file at start-up; the program can reach its state with
`import rules_numpy_mm` (the same module object).
"""
import contextlib

import numpy as np
import torch

import ophook

hijacked = []  # (shape of a, shape of b, dtype) of every call the rule replaced
_native = False


@contextlib.contextmanager
def native():
    """Inside this block aten.mm runs PyTorch's own kernel (the reference to verify against)."""
    global _native
    previous, _native = _native, True
    try:
        yield
    finally:
        _native = previous


def numpy_mm(a, b):
    """a @ b by NumPy, as a tensor of a's dtype on a's device."""
    product = np.matmul(a.detach().numpy(), b.detach().numpy())
    return torch.from_numpy(product).to(a.device)


@ophook.override("aten.mm.default")
def mm(original, a, b):
    # Conditional interception: NumPy knows neither other devices nor bfloat16/complex32.
    if _native or a.device.type != "cpu" or a.dtype not in (torch.float32, torch.float64):
        return original(a, b)
    hijacked.append((tuple(a.shape), tuple(b.shape), str(a.dtype)))
    return numpy_mm(a, b)
