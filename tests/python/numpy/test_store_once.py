"""Content stored once in dump mode: an array equal to a file the process wrote already is a hard
link to it ("same_as"), every name still loads and holds what its record describes, the budget and
summary.json count bytes written apart from bytes named; OPHOOK_DUMP_INCLUDE limits the files to
the ops it matches; compare and replay read linked runs."""
import json
import os
import subprocess

import numpy as np
import pytest

from cli_fixtures import run_ophook
from harness import BUILD_DIR, arrays, clean_env, load, ops

# Every call reads the weight again and the previous call's output: repeats of earlier files.
CHAIN = """
import numpy as np
import pytest
w = (np.arange(4096, dtype=np.float32).reshape(64, 64) % 7 - 3) / 64
x = (np.arange(4096, dtype=np.float32).reshape(64, 64) % 5) / 5
for _ in range(6):
    y = x @ w
    x = np.tanh(y)
print(float(x.sum()).hex())
"""


def names(records):
    return [(r["seq"], v) for r in records for v in arrays(r) + arrays(r, "outputs") if v["file"]]


def test_repeats_are_hard_links_that_load_as_their_records_describe(runner):
    plain = runner.run(CHAIN, how="plain")
    run = runner.run(CHAIN)
    assert run.stdout == plain.stdout
    records = run.records()
    matmuls, tanhs = ops(records, "numpy.matmul"), ops(records, "numpy.tanh")
    assert len(matmuls) == len(tanhs) == 6
    for m in matmuls:
        x, w = (load(run.output, v) for v in arrays(m))
        np.testing.assert_allclose(load(run.output, arrays(m, "outputs")[0]), x @ w, rtol=1e-6)
    for t in tanhs:
        np.testing.assert_allclose(load(run.output, arrays(t, "outputs")[0]), np.tanh(load(run.output, arrays(t)[0])),
                                   rtol=1e-6)
    # The weight's first file serves every later matmul; each matmul's output is tanh's input, and
    # each tanh's output the next matmul's input.
    w0 = arrays(matmuls[0])[1]
    first_w = w0.get("same_as", w0["file"])  # the file of the division that made w
    for m, t in zip(matmuls, tanhs):
        assert arrays(m)[1]["same_as"] == first_w
        assert arrays(t)[0]["same_as"] == arrays(m, "outputs")[0]["file"]
    for m, t in zip(matmuls[1:], tanhs):
        assert arrays(m)[0]["same_as"] == arrays(t, "outputs")[0]["file"]
    # A link is the very file it names, written by an earlier call, and equal to its own record.
    linked = [(seq, v) for seq, v in names(records) if "same_as" in v]
    for seq, value in linked:
        path, first = run.output / value["file"], run.output / value["same_as"]
        assert os.path.samefile(path, first)
        assert int(value["same_as"].rsplit("_", 1)[1][:-4]) <= seq
        assert load(run.output, value).dtype.name == value["dtype"] and list(load(run.output, value).shape) == value["shape"]
    # summary.json: bytes named (every name) against bytes written (every file once).
    files = list(run.output.glob("op_*.npy"))
    inodes = {f.stat().st_ino: f.stat().st_size for f in files}
    totals = run.summary()["totals"]
    assert totals["files"] == len(files) == len(names(records))
    assert totals["files_linked"] == len(linked) >= 16
    assert totals["bytes_named"] == sum(f.stat().st_size for f in files)
    assert totals["bytes_written"] == sum(inodes.values()) == run.summary()["budget"]["used_bytes"]
    assert totals["bytes_written"] < totals["bytes_named"] / 2
    assert run.summary()["store_once"]["links"] == "on"


def test_without_links_every_file_is_written(runner):
    run = runner.run(CHAIN, env={"OPHOOK_TEST_NO_LINKS": "1"})
    files = list(run.output.glob("op_*.npy"))
    assert len({f.stat().st_ino for f in files}) == len(files)
    assert not any("same_as" in v for _, v in names(run.records()))
    totals = run.summary()["totals"]
    assert totals["files_linked"] == 0 and totals["bytes_written"] == totals["bytes_named"]
    assert run.summary()["store_once"]["links"] == "off"


def test_dump_include_gives_files_to_the_matching_ops_only(runner):
    run = runner.run(CHAIN, env={"OPHOOK_DUMP_INCLUDE": r"\.tanh$"})
    records = run.records()
    assert {r["op"] for r in records} >= {"numpy.matmul", "numpy.tanh"}
    for r in records:
        for value in arrays(r) + arrays(r, "outputs"):
            assert value["stats"] is not None  # statistics for every recorded call
            assert bool(value["file"]) == (r["op"] == "numpy.tanh"), r
    assert {f.name.split("_input")[0].split("_output")[0] for f in run.output.glob("op_*.npy")} == {"op_numpy.tanh"}
    assert run.summary()["config"]["dump_include"] == r"\.tanh$"


def test_compare_and_replay_read_runs_of_linked_files(runner):
    base, new = runner.run(CHAIN), runner.run(CHAIN)
    assert base.summary()["totals"]["files_linked"] > 0
    done = subprocess.run([str(BUILD_DIR / "ophook"), "compare", str(base.output), str(new.output)],
                          capture_output=True, text=True, env=clean_env(), timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    # Replay rebuilds each call from the names its record gives, links or not: all replay as recorded.
    report = base.output.parent / "replay.json"
    done = run_ophook("replay", "--jobs", "1", "--json", report, base.output, timeout=300, env=clean_env())
    assert done.returncode == 0, done.stdout + done.stderr
    calls = json.loads(report.read_text())["calls"]
    linked_seqs = {seq for seq, v in names(base.records()) if "same_as" in v}
    assert {c["seq"] for c in calls if c["status"] == "match"} >= linked_seqs
    assert not [c for c in calls if "no file" in c["reason"]]


# 512 KiB operands read unchanged by every call but those after an unrecorded write (NumPy's
# setitem, a tensor's NumPy view): those calls must see the new bytes, not the copy made before it.
COPIED_ONCE = """
import numpy as np, torch
w = np.arange(65536) / 65536.0
t = torch.arange(65536, dtype=torch.float64) / 65536.0
for step in range(4):
    a = np.add(w, 1.0)
    b = np.multiply(w, 2.0)
    c = torch.mul(t, 3.0)
    d = torch.add(t, 4.0)
    if step == 1:
        w[100] = 7.0
        t.numpy()[200] = 8.0
print(float(a[100] + b[100]), float(c[200] + d[200]))
try:
    import ophook
    ophook.dump_ring()
except ImportError:  # unhooked
    pass
"""
# (op, what it computes from its operand)
COPIED_ONCE_CALLS = [("numpy.add", lambda x: x + 1.0), ("numpy.multiply", lambda x: x * 2.0),
                     ("torch.mul", lambda x: x * 3.0), ("torch.add", lambda x: x + 4.0)]


@pytest.mark.parametrize("settings", [{}, {"OPHOOK_RING_BYTES": "64M"}], ids=["dump", "ring"])
def test_unchanged_arrays_are_copied_once_and_changed_ones_again(runner, settings):
    plain = runner.run(COPIED_ONCE, how="plain")
    run = runner.run(COPIED_ONCE, env=settings)
    assert run.stdout == plain.stdout
    records = run.records()
    for op, compute in COPIED_ONCE_CALLS:
        calls = ops(records, op)
        assert len(calls) == 4
        for step, call in enumerate(calls):
            expected = np.arange(65536) / 65536.0
            if step >= 2:  # after the writes
                expected[100 if op.startswith("numpy") else 200] = 7.0 if op.startswith("numpy") else 8.0
            operand, result = arrays(call)[0], arrays(call, "outputs")[0]
            assert operand["file"] and result["file"], call  # the ring holds the whole run
            np.testing.assert_array_equal(load(run.output, operand), expected)
            np.testing.assert_array_equal(load(run.output, result), compute(expected))
    counts = run.summary()["copies_shared"]
    # w and t: copied at their first call and after the write, shared by the other 12 calls.
    assert counts["shared"] >= 12 and counts["copied"] >= 4, counts
