"""Arrays too big for OPHOOK_QUEUE_BYTES are not copied: the program's memory stays bounded, the
record and summary.json say why, and smaller arrays of the same run are still dumped whole."""
import numpy as np
import torch

QUEUE_BYTES = 8 << 20
BIG_ELEMENTS = 8 << 20  # 64 MiB of float64

PROGRAM = """
import resource
import numpy as np
big = np.arange(%d, dtype=np.float64)
small = np.linspace(0.0, 1.0, 1000)
result = np.add(big, 1.0)
np.multiply(small, 3.0)
print(float(result[-1]), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
""" % BIG_ELEMENTS


def peak_rss(run):
    last, peak = run.stdout.split()
    assert float(last) == BIG_ELEMENTS  # the program's result is unchanged
    return int(peak)


def bounded_dump(runner, program, **env):
    """Runs `program` plain and hooked (dump, OPHOOK_QUEUE_BYTES) and checks the hooked run's peak
    RSS: copying the 64 MiB input and output would add 128 MiB; the extension itself adds a few."""
    plain = peak_rss(runner.run(program, how="plain"))
    run = runner.run(program, env={"OPHOOK_MODE": "dump", "OPHOOK_QUEUE_BYTES": str(QUEUE_BYTES),
                                   "OPHOOK_STACK": "0", **env})
    hooked = peak_rss(run)
    assert hooked <= plain + QUEUE_BYTES + (32 << 20), (plain, hooked)
    return run


def test_oversized_arrays_are_refused_with_a_reason_and_memory_stays_bounded(runner):
    run = bounded_dump(runner, PROGRAM)

    records = {r["op"]: r for r in run.records()}
    add = records["numpy.add"]
    for value in (add["args"][0], add["outputs"][0]):
        assert value["shape"] == [BIG_ELEMENTS] and value["dtype"] == "float64"
        assert value["file"] is None and value["stats"] is None
        assert "OPHOOK_QUEUE_BYTES=%d" % QUEUE_BYTES in value["reason"]
    note = run.summary()["notes"]["arrays_not_copied"]
    assert note["count"] == 2 and note["last_op"] == "numpy.add"
    assert note["reason"] == add["args"][0]["reason"]

    multiply = records["numpy.multiply"]
    np.testing.assert_array_equal(run.load(multiply["args"][0]["file"]), np.linspace(0.0, 1.0, 1000))
    np.testing.assert_array_equal(run.load(multiply["outputs"][0]["file"]), np.linspace(0.0, 1.0, 1000) * 3.0)


def test_arrays_within_the_cap_are_still_dumped_whole(runner):
    code = "import numpy as np\nnp.negative(np.arange(%d, dtype=np.float64))\n" % (QUEUE_BYTES // 8 // 4)
    run = runner.run(code, env={"OPHOOK_MODE": "dump", "OPHOOK_QUEUE_BYTES": str(QUEUE_BYTES)})
    (record,) = [r for r in run.records() if r["op"] == "numpy.negative"]
    expected = np.arange(QUEUE_BYTES // 8 // 4, dtype=np.float64)
    np.testing.assert_array_equal(run.load(record["args"][0]["file"]), expected)
    np.testing.assert_array_equal(run.load(record["outputs"][0]["file"]), -expected)
    assert "arrays_not_copied" not in run.summary()["notes"]


TORCH_PROGRAM = """
import resource
import torch
big = torch.arange(%d, dtype=torch.float64)
small = torch.linspace(0.0, 1.0, 1000, dtype=torch.float64)
result = torch.add(big, 1.0)
torch.mul(small, 3.0)
print(float(result[-1]), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
""" % BIG_ELEMENTS


def test_oversized_tensors_are_refused_like_arrays(runner):
    run = bounded_dump(runner, TORCH_PROGRAM, OPHOOK_LEVELS="torch_function")

    records = {r["op"]: r for r in run.records()}
    add = records["torch.add"]
    big = add["args"][0]
    assert big["shape"] == [BIG_ELEMENTS] and big["dtype"] == "float64" and big["file"] is None
    assert "OPHOOK_QUEUE_BYTES=%d" % QUEUE_BYTES in big["reason"]
    assert add["outputs"][0]["file"] is None
    # result[-1] is recorded too, with the big result refused again.
    note = run.summary()["notes"]["arrays_not_copied"]
    assert note["count"] >= 2 and note["reason"] == big["reason"]

    mul = records["torch.mul"]
    expected = torch.linspace(0.0, 1.0, 1000, dtype=torch.float64).numpy()
    np.testing.assert_array_equal(run.load(mul["args"][0]["file"]), expected)
    np.testing.assert_array_equal(run.load(mul["outputs"][0]["file"]), (torch.from_numpy(expected) * 3.0).numpy())
