"""A tiny NumPy network for examples/ci_regression.sh: fixed inputs, one hidden layer with a layer
norm, a softmax. OPHOOK_EXAMPLE_PERTURB=1 stands for a code change that moves the numbers: the
layer norm's epsilon grows from 1e-5 to 1e-2, so the numpy.add in layer_norm is the first call
whose result differs (the same calls run in both cases)."""
import os

import numpy as np

EPSILON = 1e-2 if os.environ.get("OPHOOK_EXAMPLE_PERTURB") == "1" else 1e-5


def layer_norm(x):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPSILON)


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def main():
    # Inputs and weights from closed formulas rather than numpy.random: importing numpy.random
    # seeds its legacy global generator from OS entropy, calls that a recording would see too.
    x = np.sin(np.arange(8 * 16, dtype=np.float32).reshape(8, 16) * 0.37)
    w1 = np.cos(np.arange(16 * 32, dtype=np.float32).reshape(16, 32) * 0.11) / 4
    w2 = np.sin(np.arange(32 * 4, dtype=np.float32).reshape(32, 4) * 0.23 + 1.0) / 6
    hidden = np.maximum(layer_norm(x @ w1), 0.0)
    probs = softmax(hidden @ w2)
    print("class of each row:", probs.argmax(axis=1).tolist())


if __name__ == "__main__":
    main()
