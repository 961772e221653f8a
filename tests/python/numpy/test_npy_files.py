"""Every dtype and layout that numpy.save writes without pickle comes back from the dumps equal,
with its dtype; unsavable arrays are described without a file."""
import numpy as np

CASES = """
import numpy as np
base = np.arange(24).reshape(2, 3, 4)
cases = {
    "bool": np.array([True, False, True]),
    "int8": np.array([-128, 0, 127], np.int8), "int16": np.array([-3, 4], np.int16),
    "int32": base.astype(np.int32), "int64": base.astype(np.int64),
    "uint8": np.array([0, 255], np.uint8), "uint16": np.array([65535], np.uint16),
    "uint32": np.array([7], np.uint32), "uint64": np.array([2**64 - 1], np.uint64),
    "float16": np.array([0.5, -2.25, np.inf], np.float16), "float32": base.astype(np.float32) / 7,
    "float64": base / 3.0, "complex64": np.array([1 + 2j, -3j], np.complex64),
    "complex128": np.array([1e300 + 1j]), "datetime64": np.array(["2024-01-01", "1970-01-02"], "datetime64[D]"),
    "timedelta64": np.array([1, -5], "timedelta64[ns]"), "bytes": np.array([b"ab", b"xyz"]),
    "str": np.array(["hé", "wörld"]), "big_endian": np.arange(5, dtype=">i4"),
    "big_float": np.linspace(0, 1, 4).astype(">f8"),
    "zero_d": np.array(3.5), "empty": np.zeros((0, 3)), "fortran": np.asfortranarray(base[0] * 1.5),
    "strided": base[:, ::2, 1::2], "negative": base[::-1, :, ::-2], "broadcast": np.broadcast_to(np.arange(3.0), (4, 3)),
    "readonly": np.frombuffer(b"abcdefgh", dtype=np.uint8),
    "matrix": np.matrix([[1.0, 2.0], [3.0, 4.0]]), "masked": np.ma.masked_array([1.0, 2.0], mask=[0, 1]),
}
for name, x in cases.items():
    np.copy(x)
np.save("names.npy", np.array(list(cases)))
np.savez("expected.npz", **{k: np.asarray(v) for k, v in cases.items()})
np.copy(np.array([object(), 1], dtype=object))
np.copy(np.zeros(2, dtype=[("x", "<i4"), ("y", "<f8")]))
"""


def test_every_dtype_and_layout_round_trips(runner, tmp_path):
    run = runner.run(CASES, env={"OPHOOK_INCLUDE": "^numpy\\.copy$"})
    names = list(np.load(tmp_path / "names.npy"))
    expected = np.load(tmp_path / "expected.npz")
    records = [r for r in run.records() if r["op"] == "numpy.copy"]
    assert len(records) == len(names) + 2
    for name, record in zip(names, records):
        spec = record["args"][0]
        saved_in = run.load(spec["file"])
        saved_out = run.load(record["outputs"][0]["file"])
        want = expected[name]
        assert saved_in.dtype == want.dtype, name
        assert saved_in.shape == want.shape and spec["shape"] == list(want.shape), name
        np.testing.assert_array_equal(saved_in, want, err_msg=name)
        np.testing.assert_array_equal(saved_out, want, err_msg=name)
        assert spec["dtype"] == str(want.dtype), name
    obj, structured = records[-2], records[-1]
    assert obj["args"][0]["file"] is None and "object" in obj["args"][0]["reason"]
    assert obj["args"][0]["dtype"] == "object"
    saved = run.load(structured["args"][0]["file"])  # structured: saved with its descr, as numpy.save
    assert saved.dtype == np.dtype([("x", "<i4"), ("y", "<f8")]) and saved.tolist() == [(0, 0.0), (0, 0.0)]


def test_files_are_standard_npy_with_aligned_headers(runner):
    run = runner.run("import numpy as np\nnp.copy(np.arange(10.0).reshape(2, 5))\n")
    record = run.records()[0]
    path = run.output / record["args"][0]["file"]
    raw = path.read_bytes()
    assert raw[:8] == b"\x93NUMPY\x01\x00"
    header_len = int.from_bytes(raw[8:10], "little")
    assert (10 + header_len) % 64 == 0
    assert raw[10:10 + header_len].decode("latin1").startswith("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 5), }")
    np.testing.assert_array_equal(np.load(path, allow_pickle=False), np.arange(10.0).reshape(2, 5))


def test_statistics_match_numpy(runner):
    code = "import numpy as np\nx = np.array([1.0, np.nan, -3.0, np.inf, 5.0])\nnp.negative(x)\n"
    run = runner.run(code, env={"OPHOOK_MODE": "stats"})
    record = run.records()[0]
    stats = record["args"][0]["stats"]
    finite = np.array([1.0, -3.0, 5.0])
    assert stats["nan"] == 1 and stats["inf"] == 1
    assert stats["min"] == -3.0 and stats["max"] == 5.0
    assert abs(stats["mean"] - finite.mean()) < 1e-12 and abs(stats["std"] - finite.std()) < 1e-12
    assert record["args"][0]["file"] is None
    assert not list(run.output.glob("*.npy"))
