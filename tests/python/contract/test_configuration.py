"""OPHOOK_* settings end to end: modes, filters, byte budget, queue backpressure, stack, log level,
strict mode and bad values."""
import os

import numpy as np
import pytest

LOOP = """
import numpy as np
a = np.arange(1000.0)
for i in range(%d):
    a = np.add(a, 1.0)
print(float(a.sum()))
"""


def test_modes(runner):
    trace = runner.run(LOOP % 5, env={"OPHOOK_MODE": "trace"})
    stats = runner.run(LOOP % 5, env={"OPHOOK_MODE": "stats"})
    dump = runner.run(LOOP % 5, env={"OPHOOK_MODE": "dump"})
    assert trace.stdout == stats.stdout == dump.stdout
    for run in (trace, stats, dump):
        assert len(run.records()) == 6
    t, s, d = trace.records()[0]["args"][0], stats.records()[0]["args"][0], dump.records()[0]["args"][0]
    assert t["stats"] is None and t["file"] is None
    assert s["stats"]["max"] == 999.0 and s["file"] is None
    assert d["stats"]["max"] == 999.0 and d["file"]
    assert not list(trace.output.glob("*.npy")) and not list(stats.output.glob("*.npy"))
    assert len(list(dump.output.glob("*.npy"))) == 6 * 2  # one array in, one out per call


def test_include_and_exclude_filters(runner):
    code = "import numpy as np\na = np.ones(3)\na + a; a * a; a - a; a.sum()\n"
    only = runner.run(code, env={"OPHOOK_INCLUDE": r"multiply|subtract"})
    assert [r["op"] for r in only.records()] == ["numpy.multiply", "numpy.subtract"]
    without = runner.run(code, env={"OPHOOK_EXCLUDE": r"^numpy\.add|copyto"})
    assert [r["op"] for r in without.records()] == ["numpy.multiply", "numpy.subtract"]
    nothing = runner.run(code, env={"OPHOOK_INCLUDE": "^$"})
    assert nothing.records() == []
    assert nothing.summary()["totals"]["calls"] == 0


def test_byte_budget_degrades_to_stats(runner):
    run = runner.run(LOOP % 50, env={"OPHOOK_MAX_BYTES": "40K"})
    records = run.records()
    assert len(records) == 51
    files = list(run.output.glob("*.npy"))
    # The budget counts bytes written: a call's input is the previous call's output, a hard link.
    total = sum({f.stat().st_ino: f.stat().st_size for f in files}.values())
    assert 0 < total <= 40 * 1024 < sum(f.stat().st_size for f in files)
    late = records[-2]["args"][0]
    assert late["file"] is None and late["stats"]["max"] > 0 and late["reason"] == "OPHOOK_MAX_BYTES reached"
    summary = run.summary()
    assert summary["budget"]["exhausted"] is True and summary["budget"]["used_bytes"] == total
    assert run.stderr.count("OPHOOK_MAX_BYTES") == 1
    # The warning says where the budget ran out and how to spend it better.
    (warning,) = [line for line in run.stderr.splitlines() if "OPHOOK_MAX_BYTES" in line]
    assert "at call %d (numpy.add, step 0)" % summary["budget"]["exhausted_at_seq"] in warning
    assert all(name in warning for name in ("OPHOOK_STEPS", "OPHOOK_DUMP_INCLUDE", "OPHOOK_RING_BYTES"))
    assert summary["budget"]["exhausted_at_step"] == 0


def test_small_queue_waits_and_loses_nothing(runner):
    # A 64 KiB queue with 8 KiB arrays: producers must wait for the writer, every call arrives.
    run = runner.run(LOOP % 400, env={"OPHOOK_QUEUE_BYTES": "64K", "OPHOOK_MODE": "dump"})
    records = run.records()
    assert [r["seq"] for r in records] == list(range(401))
    last = records[-2]
    np.testing.assert_array_equal(run.load(last["outputs"][0]["file"]), np.arange(1000.0) + 400)
    queue = run.summary()["queue"]
    assert queue["producer_waits"] > 0 and 0 < queue["producer_wait_ms"] < 60_000  # the time lost to them


def test_stack_off_and_on(runner):
    code = "import numpy as np\ndef f(a):\n    return a + a\nf(np.ones(2))\n"
    on = runner.run(code)
    assert on.records()[-1]["source"].endswith(":3:f")
    off = runner.run(code, env={"OPHOOK_STACK": "0"})
    assert off.records()[-1]["source"] is None


def test_log_levels(runner):
    quiet = runner.run(LOOP % 2, env={"OPHOOK_LOG_LEVEL": "off"})
    assert quiet.stderr == ""
    normal = runner.run(LOOP % 2)
    lines = normal.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("[ophook ") and "recorded 3 calls" in lines[1]


@pytest.mark.parametrize("variable,value,accepted", [
    ("OPHOOK_MODE", "fast", "trace, stats, dump"),
    ("OPHOOK_LEVELS", "numpy,jax", "numpy"),
    ("OPHOOK_INCLUDE", "([", "regular expression"),
    ("OPHOOK_MAX_BYTES", "12Q", "K"),
    ("OPHOOK_NAN", "maybe", "raise"),
    # A misspelled name: silently ignored, it would record with defaults the user did not want.
    ("OPHOOK_OUTPUT_DIR", "runs", "is not an ophook setting (did you mean OPHOOK_OUTPUT?)"),
    ("OPHOOK_LEVEL", "torch_dispatch", "(did you mean OPHOOK_LEVELS?)"),
])
def test_bad_values_run_unhooked_with_one_clear_line(runner, variable, value, accepted):
    run = runner.run(LOOP % 2, env={variable: value})
    assert run.stdout == "501500.0\n"  # the program still ran, unhooked
    first = run.stderr.splitlines()[0]
    assert variable in first and value in first and accepted in first
    assert not run.output.exists()


def test_strict_mode_exits_with_2_before_user_code(runner):
    run = runner.run("print('user code ran')\n", env={"OPHOOK_MODE": "fast", "OPHOOK_STRICT": "1"}, check=False)
    assert run.proc.returncode == 2
    assert "user code ran" not in run.stdout
    assert "OPHOOK_MODE" in run.stderr


def test_output_path_that_is_not_utf8(runner, tmp_path):
    # A directory named in a latin-1 locale: its bytes are not UTF-8, which Python hands over
    # surrogate-escaped. The run must record there, not die or fall back to unhooked.
    output = tmp_path / os.fsdecode(b"r\xe9sultats")
    hooked = runner.run(LOOP % 3, env={"OPHOOK_OUTPUT": output})
    assert hooked.stdout == runner.run(LOOP % 3, how="plain").stdout
    assert "Traceback" not in hooked.stderr and "unhooked" not in hooked.stderr
    assert [r["op"] for r in hooked.records()] == ["numpy.add"] * 3 + ["numpy.add.reduce"]
    summary = hooked.summary()
    assert summary["totals"]["calls"] == 4
    assert summary["output"].endswith("r\ufffdsultats")  # JSON is UTF-8: the odd byte is replaced
