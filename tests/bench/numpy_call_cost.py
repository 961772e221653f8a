"""Per-call cost of a small NumPy ufunc call in one process: prints ns per call (best of 5).

Run it plain and under LD_PRELOAD with different OPHOOK_* settings; the difference between the two
figures, measured in the same session, is what ophook adds per call."""
import sys
import time

import numpy as np


def per_call_ns(n):
    a = np.ones(16)
    b = np.ones(16)
    add = np.add
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            add(a, b)
        best = min(best, (time.perf_counter_ns() - t0) / n)
    return best


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    print("%.1f" % per_call_ns(n))
