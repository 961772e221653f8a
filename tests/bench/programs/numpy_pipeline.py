"""A NumPy pipeline in which every call's output is the next call's input and a weight is read by
every step, as in a model: the workload of the store-once dump figures (figures/storage.py).

    python numpy_pipeline.py N STEPS      # N x N float32 activations and weight"""
import sys

import numpy as np

n, steps = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
w = rng.standard_normal((n, n), dtype=np.float32) / np.float32(np.sqrt(n))
x = rng.standard_normal((n, n), dtype=np.float32)
for _ in range(steps):
    h = np.maximum(x @ w, 0.0)
    h = h - h.mean(axis=0)
    x = h / (np.linalg.norm(h) + 1e-6)
print(float(x.sum()))
