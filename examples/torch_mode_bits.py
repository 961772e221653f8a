"""Which torch ops change their results' bits merely because a do-nothing mode is active?

    .venv/bin/python examples/torch_mode_bits.py [--kind dispatch|function] [--ops REGEX] [--dtypes float32,float64]

Runs PyTorch's own OpInfo samples (torch.testing._internal.common_methods_invocations.op_db, needs
expecttest) on the CPU twice — plainly, then inside a TorchDispatchMode (or TorchFunctionMode)
whose handler only calls func(*args, **kwargs) — with the same seed and fresh copies of the
inputs, and compares every output tensor bit for bit. Prints the OpInfo names whose bits differ
(with how many samples) — the list the README's "PyTorch" section reproduces for this torch
version. Exit status 0; ops that raise in either run are counted, not compared.
"""
import argparse
import copy
import re
import warnings

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


class NoopDispatchMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class NoopFunctionMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


# Their results are uninitialized memory: bits differ between any two runs.
UNINITIALIZED = {"empty", "empty_like", "empty_permuted", "empty_strided", "new_empty", "new_empty_strided"}


def outputs(op, sample, mode):
    """The sample's output tensors (run on copies of its inputs, seed fixed), or None if it raised."""
    try:
        args = copy.deepcopy((sample.input, sample.args, sample.kwargs))
        torch.manual_seed(0)
        if mode is None:
            result = op(args[0], *args[1], **args[2])
        else:
            with mode:
                result = op(args[0], *args[1], **args[2])
    except Exception:
        return None
    return [t for t in tree_flatten(result)[0] if isinstance(t, torch.Tensor)]


def same_bits(a, b):
    if a.dtype != b.dtype or a.shape != b.shape or a.layout != b.layout or a.layout != torch.strided:
        return a.dtype == b.dtype and a.shape == b.shape and a.layout == b.layout
    if a.numel() == 0:
        return True

    def raw(t):  # a dense 1-D copy, viewed as bytes (so NaN payloads and signed zeros count)
        t = t.detach().resolve_conj().resolve_neg()
        return torch.empty(t.shape, dtype=t.dtype).copy_(t).reshape(-1).view(torch.uint8)

    return torch.equal(raw(a), raw(b))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=["dispatch", "function"], default="dispatch")
    parser.add_argument("--ops", default="", help="regex searched in OpInfo names (default: every op)")
    parser.add_argument("--dtypes", default="float32,float64")
    options = parser.parse_args()
    warnings.filterwarnings("ignore")
    from torch.testing._internal.common_methods_invocations import op_db

    mode_class = NoopDispatchMode if options.kind == "dispatch" else NoopFunctionMode
    dtypes = [getattr(torch, name) for name in options.dtypes.split(",")]
    pattern = re.compile(options.ops)
    differing, compared, failed = {}, 0, 0
    for op in op_db:
        name = op.name + ("." + op.variant_test_name if op.variant_test_name else "")
        if not pattern.search(name) or op.name in UNINITIALIZED:
            continue
        for dtype in dtypes:
            if dtype not in op.supported_dtypes("cpu"):
                continue
            try:
                samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))
            except Exception:
                continue
            for sample in samples:
                plain, moded = outputs(op, sample, None), outputs(op, sample, mode_class())
                if plain is None or moded is None:
                    failed += 1
                    continue
                compared += 1
                if len(plain) != len(moded) or not all(same_bits(a, b) for a, b in zip(plain, moded)):
                    differing[name] = differing.get(name, 0) + 1
    print("torch %s, do-nothing %s mode, dtypes %s: %d samples compared (%d raised)"
          % (torch.__version__, options.kind, options.dtypes, compared, failed))
    print("ops whose bits differ: %s" % (", ".join("%s (%d)" % item for item in sorted(differing.items())) or "none"))


if __name__ == "__main__":
    main()
