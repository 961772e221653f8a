"""Milliseconds per call of `a + b` and of one read of `a` (the floor: np.max / Tensor.max) on
1 Mi elements - float64 NumPy arrays and float32 torch tensors, one thread - in this process,
hooked or not as its environment says (LD_PRELOAD, OPHOOK_*); and of `a + b` with both operands
changed before each call (one element written through NumPy's setitem, which no call records), so
that no array holds what it held at the last call. Prints one JSON line: {"numpy_add": ms,
"numpy_read": ms, "numpy_add_changed": ms, "torch_add": ms, ...}, each the fastest of `--rounds`
bursts of `--calls` calls."""
import argparse
import itertools
import json
import time

import numpy as np


def fastest_ms(call, rounds, calls):
    for _ in range(max(2, calls // 5)):
        call()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e3


def changing(first, second, add):
    """`add`, after writing a value never written before into element 0 of `first` and `second`
    (NumPy arrays, or NumPy views of the tensors)."""
    count = itertools.count(1)

    def call():
        value = next(count) * 1e-9
        first[0] = value
        second[0] = value
        return add()
    return call


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=1 << 20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=40)
    options = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    x, y = np.random.rand(options.elements), np.random.rand(options.elements)
    a, b = torch.rand(options.elements), torch.rand(options.elements)
    result = {
        "numpy_add": fastest_ms(lambda: x + y, options.rounds, options.calls),
        "numpy_read": fastest_ms(lambda: np.max(x), options.rounds, options.calls),
        "numpy_add_changed": fastest_ms(changing(x, y, lambda: x + y), options.rounds, options.calls),
        "torch_add": fastest_ms(lambda: a + b, options.rounds, options.calls),
        "torch_read": fastest_ms(lambda: a.max(), options.rounds, options.calls),
        "torch_add_changed": fastest_ms(changing(a.numpy(), b.numpy(), lambda: a + b), options.rounds, options.calls),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
