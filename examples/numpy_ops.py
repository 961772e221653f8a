"""A mix of NumPy operations in the style of the seed's example_5: every one of them is recorded
by ophook without any change to this file.

    LD_PRELOAD=$PWD/build/libophook.so .venv/bin/python examples/numpy_ops.py
"""
import numpy as np


def normalise(x):
    return (x - x.mean(axis=0)) / (x.std(axis=0) + 1e-8)


def main():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 3))
    b = np.ones((4, 3))

    c = a + b            # numpy.add
    c *= 2.0             # numpy.multiply, in place
    d = np.exp(-a ** 2)  # numpy.square, numpy.negative, numpy.exp
    e = a @ b.T          # numpy.matmul
    s = a.sum()          # numpy.add.reduce
    m = np.maximum.accumulate(a, axis=0)
    stacked = np.concatenate([a, b])           # array_function
    norm = np.linalg.norm(a, axis=1)           # array_function, numpy.linalg
    z = normalise(a)
    mask = a > 0                               # numpy.greater
    picked = np.where(mask, a, 0.0)

    print("c", np.round(c, 4).tolist())
    print("d sum", round(float(d.sum()), 6))
    print("e", e.shape, "s", round(float(s), 6))
    print("m last", np.round(m[-1], 4).tolist())
    print("stacked", stacked.shape, "norm", np.round(norm, 4).tolist())
    print("z mean", np.round(z.mean(axis=0), 6).tolist())
    print("picked", int(np.count_nonzero(picked)))


if __name__ == "__main__":
    main()
