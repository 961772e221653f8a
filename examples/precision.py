"""One layer, x @ w then tanh, in the dtype DTYPE names (default float32): two runs at float32 and
float16 are what `ophook compare --referee float64` judges (README, "Replay an op")."""
import os

import numpy as np

dtype = np.dtype(os.environ.get("DTYPE", "float32"))
rng = np.random.default_rng(0)
w, x = rng.standard_normal((64, 64)).astype(dtype), rng.standard_normal((16, 64)).astype(dtype)
print(float(np.tanh(x @ w).sum()))
