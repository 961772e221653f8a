"""A dump-heavy program for the peak-memory figure: np.add on two MIB-MiB float64 arrays, CALLS
times (each call hands ophook three arrays of that size to write). Run plain and under LD_PRELOAD
with OPHOOK_MODE=dump; the driver compares the two processes' peak RSS.

    python dump_memory_load.py MIB CALLS"""
import sys

import numpy as np

mib, calls = int(sys.argv[1]), int(sys.argv[2])
a = np.ones(mib * (1 << 20) // 8)
b = np.ones(mib * (1 << 20) // 8)
for _ in range(calls):
    c = np.add(a, b)
