"""The seeds' operator hijack, verified: torch.mm replaced by a NumPy implementation through
OPHOOK_OVERRIDES (examples/rules_numpy_mm.py), checked against native torch.mm for float32 and
float64 — direct calls, `@`, and a model's forward — as the seed's verify_numpy_op.py does.

    OPHOOK_LEVELS=torch_dispatch OPHOOK_OVERRIDES=$PWD/examples/rules_numpy_mm.py \\
      LD_PRELOAD=$PWD/build/libophook.so .venv/bin/python examples/hijack_mm.py

trace.jsonl then holds both kinds of aten.mm.default call, each with "overridden": true (the rule
handled it): the hijacked ones with NumPy's result as output, the native reference ones (where the
rule fell through to `original`) with PyTorch's. Exit status 1 if a check fails.
"""
import sys

import torch

rules = sys.modules.get("rules_numpy_mm")  # loaded by ophook from OPHOOK_OVERRIDES
if rules is None:
    sys.exit("hijack_mm.py: run it with OPHOOK_OVERRIDES=examples/rules_numpy_mm.py (see its docstring)")

TOLERANCE = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float64: dict(rtol=1e-12, atol=1e-12)}


class Projection(torch.nn.Module):
    """A model whose forward multiplies matrices with `@` (aten.mm for 2-D operands)."""

    def __init__(self, dtype):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(32, 16, dtype=dtype))

    def forward(self, x):
        return torch.tanh(x @ self.weight)


def check(what, hijacked, native):
    """verify_numpy_op.py's checks: shape, dtype, device and values within the dtype's tolerance."""
    assert hijacked.shape == native.shape, (what, hijacked.shape, native.shape)
    assert hijacked.dtype == native.dtype, (what, hijacked.dtype, native.dtype)
    assert hijacked.device == native.device, (what, hijacked.device, native.device)
    torch.testing.assert_close(hijacked, native, **TOLERANCE[native.dtype])
    error = (hijacked - native).abs().max().item()
    print("%-38s ok  max abs error %.3g" % (what, error))


def main():
    torch.manual_seed(0)
    for dtype in (torch.float32, torch.float64):
        name = str(dtype).replace("torch.", "")
        for m, k, n in ((3, 4, 5), (64, 128, 32)):
            a, b = torch.randn(m, k, dtype=dtype), torch.randn(k, n, dtype=dtype)
            before = len(rules.hijacked)
            hijacked = torch.mm(a, b)
            assert len(rules.hijacked) == before + 1, "torch.mm was not hijacked (OPHOOK_LEVELS lacks torch_dispatch?)"
            with rules.native():
                native = torch.mm(a, b)
            check("torch.mm %s %dx%d @ %dx%d" % (name, m, k, k, n), hijacked, native)
        model, x = Projection(dtype), torch.randn(8, 32, dtype=dtype)
        with torch.no_grad():
            hijacked = model(x)
            with rules.native():
                native = model(x)
        check("model forward (x @ W) %s" % name, hijacked, native)
    print("hijacked %d aten.mm calls; every result matches native torch.mm" % len(rules.hijacked))


if __name__ == "__main__":
    main()
