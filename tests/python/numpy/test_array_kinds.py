"""Arrays users actually have, passed through real ufunc calls: what is saved equals a recomputation
of the call from the program's own values, and the program's results are unchanged."""
import numpy as np

from harness import arrays_in

# Each case: np.add(x, 1) or np.negative(x); the program saves what it computed, for comparison.
PROGRAM = """
import numpy as np
base = np.arange(24.0).reshape(2, 3, 4)
mm = np.memmap("mapped.bin", dtype=np.float32, mode="w+", shape=(3, 4))
mm[:] = np.arange(12.0).reshape(3, 4)
readonly = np.arange(5.0)
readonly.flags.writeable = False

class Celsius:
    '''A small __array_ufunc__ overrider: unwraps, calls the ufunc, wraps again.'''
    def __init__(self, values):
        self.values = np.asarray(values)
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = [i.values if isinstance(i, Celsius) else i for i in inputs]
        return Celsius(getattr(ufunc, method)(*inputs, **kwargs))

cases = {
    "zero_d": np.array(2.5), "empty": np.zeros((0, 3)), "negative": base[::-1, :, ::-2],
    "broadcast": np.broadcast_to(np.arange(3.0), (4, 3)), "readonly": readonly, "memmap": mm,
    "memmap_view": mm[::2, 1:], "matrix": np.matrix([[1.0, 2.0], [3.0, 4.0]]),
    "masked": np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0]),
}
results = {}
for name, x in cases.items():
    results[name] = np.asarray(np.add(x, 1))
results["celsius"] = np.negative(Celsius([1.5, -2.0])).values
np.savez("results.npz", **results)
print(sorted(results))
"""


def test_every_kind_is_saved_as_its_values(runner, tmp_path):
    plain = runner.run(PROGRAM, how="plain")
    plain_results = dict(np.load(tmp_path / "results.npz"))
    run = runner.run(PROGRAM)
    assert run.stdout == plain.stdout
    results = np.load(tmp_path / "results.npz")
    for name, value in plain_results.items():
        np.testing.assert_array_equal(results[name], value, err_msg=name)
    recorded = [r for r in run.records() if r["op"] in ("numpy.add", "numpy.negative")]
    names = ["zero_d", "empty", "negative", "broadcast", "readonly", "memmap", "memmap_view", "matrix",
             "masked"]
    # The overrider's call is the outermost one: recorded with the object itself (its __array_ufunc__
    # made the inner call, which OPHOOK_NESTED=0 leaves out).
    celsius = [r for r in recorded if r["op"] == "numpy.negative"]
    assert len(celsius) == 1 and celsius[0]["args"][0]["kind"] == "Celsius"
    assert celsius[0]["outputs"][0]["kind"] == "Celsius"
    by_output = {}
    for r in recorded:
        out = arrays_in(r["outputs"])
        if out and out[0]["file"]:
            by_output.setdefault(r["op"], []).append(run.load(out[0]["file"]))
    for name in names:
        want = results[name]
        assert any(got.shape == want.shape and np.array_equal(got, want) for got in by_output["numpy.add"]), name
    # Inputs hold the program's values in C order, whatever their strides or memory.
    inputs = [run.load(spec["file"]) for r in recorded for spec in arrays_in(r["args"])[:1] if spec["file"]]
    for want in (np.arange(24.0).reshape(2, 3, 4)[::-1, :, ::-2], np.broadcast_to(np.arange(3.0), (4, 3)),
                 np.arange(12.0, dtype=np.float32).reshape(3, 4)[::2, 1:], np.array(2.5)):
        assert any(got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want)
                   for got in inputs), want


STRUCTURED = """
import numpy as np
plain = np.dtype([("x", "<i4"), ("y", "<f8", (2,)), ("name", "S3")])
aligned = np.dtype({"names": ["a", "b"], "formats": ["u1", "<f8"]}, align=True)   # with padding
nested = np.dtype([("pos", [("lat", ">f4"), ("lon", ">f4")]), ("tag", "<U2")])
named = np.dtype([("t\u00e9", "<i2")])                                          # non-ASCII name
arrays = [np.array([(1, (2.0, 3.0), b"ab"), (4, (5.0, 6.0), b"cde")], dtype=plain),
          np.array([(7, 1.5)], dtype=aligned),
          np.array([((1.0, 2.0), "xy")], dtype=nested)[::-1],
          np.array([(3,), (4,)], dtype=named), np.zeros(2, dtype="V4")]
for a in arrays:
    np.copy(a)
np.save("structured0.npy", arrays[0])
for i, a in enumerate(arrays):
    np.save("want%d.npy" % i, a)
"""


def test_structured_dtypes_are_saved_with_their_descr(runner, tmp_path):
    run = runner.run(STRUCTURED, env={"OPHOOK_INCLUDE": "^numpy\\.copy$"})
    records = run.records()
    assert len(records) == 5
    for i, record in enumerate(records):
        want = np.load(tmp_path / ("want%d.npy" % i))
        spec = record["args"][0]
        assert spec["file"], spec
        got = run.load(spec["file"])
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
        assert got.tobytes() == want.tobytes() or np.array_equal(got, want)
        np.testing.assert_array_equal(run.load(record["outputs"][0]["file"]), want)
        assert spec["stats"]["xxh64"] and spec["stats"]["min"] is None
    # The header is numpy.save's, byte for byte, for the plain structured case.
    ours = (run.output / records[0]["args"][0]["file"]).read_bytes()
    assert ours == (tmp_path / "structured0.npy").read_bytes()
