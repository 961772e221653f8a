"""OPHOOK_NAN (warn/raise) and @ophook.override rules on the NumPy levels."""
import json
import textwrap

import numpy as np
import pytest

from cli_fixtures import run_ophook
from harness import arrays_in

PIPELINE = textwrap.dedent("""
    import numpy as np

    def features(x):
        shifted = x - 5.0
        return np.log(shifted)        # line 6: NaN for x < 5

    x = np.linspace(0.0, 10.0, 11)
    y = x * 2.0
    ceiling = y + np.inf              # Inf passed in: no finding
    z = features(y)
    w = np.nan_to_num(z) + 1.0        # NaN in, no new NaN out
    print(int(np.isnan(z).sum()))
""")


@pytest.mark.parametrize("mode", ["trace", "dump"])
def test_nan_warn_reports_the_first_producer_once(runner, mode):
    plain = runner.run(PIPELINE, how="plain")
    run = runner.run(PIPELINE, env={"OPHOOK_NAN": "warn", "OPHOOK_MODE": mode})
    assert run.stdout == plain.stdout == "3\n"
    warnings = [l for l in run.stderr.splitlines() if "NaN/Inf" in l]
    assert len(warnings) == 1
    log = next(r for r in run.records() if r["op"] == "numpy.log")
    assert "seq %d numpy.log" % log["seq"] in warnings[0] and ":6:features" in warnings[0]
    first = run.summary()["first_nonfinite"]
    assert first["op"] == "numpy.log" and first["seq"] == log["seq"] and first["source"].endswith(":6:features")
    assert run.summary()["ops"]["numpy.log"]["nonfinite"] == 1
    assert run.summary()["ops"]["numpy.add"]["nonfinite"] == 0


def test_nan_raise_stops_at_the_users_line(runner):
    run = runner.run(PIPELINE, env={"OPHOOK_NAN": "raise"}, check=False)
    assert run.proc.returncode == 1
    lines = run.stderr.strip().splitlines()
    end = next(i for i, l in enumerate(lines) if l.startswith("FloatingPointError"))
    assert lines[end].startswith("FloatingPointError: ophook: numpy.log produced NaN/Inf")
    tail = lines[:end]
    frames = [l for l in tail if l.strip().startswith('File "')]
    assert frames[-1].endswith("line 6, in features")
    log = next(r for r in run.records() if r["op"] == "numpy.log")
    produced = run.load(log["outputs"][0]["file"])
    assert np.isnan(produced).sum() == 3
    np.testing.assert_array_equal(run.load(arrays_in(log["args"])[0]["file"]), np.linspace(0, 20, 11) - 5.0)


RULES = textwrap.dedent("""
    import numpy as np
    import ophook

    @ophook.override("numpy.add")
    def add_small_as_subtract(original, a, b, **kwargs):
        if np.size(a) < 4:
            return np.subtract(a, b)          # replaced for small arrays
        return original(a, b, **kwargs)       # conditional: fall through

    @ophook.override("numpy.add.reduce")
    def sum_plus_one(original, array, *args, **kwargs):
        return original(array, *args, **kwargs) + 1

    @ophook.override("numpy.concatenate")
    def concatenate_reversed(original, arrays, *args, **kwargs):
        return original(list(arrays)[::-1], *args, **kwargs)

    @ophook.override("numpy.multiply")
    def broken(original, a, b, **kwargs):
        return [1, 2, 3]

    @ophook.override("numpy.divide")
    def raising(original, a, b, **kwargs):
        raise ZeroDivisionError("rule says no")
""")

PROGRAM = textwrap.dedent("""
    import numpy as np
    small, big = np.array([5.0, 6.0]), np.arange(8.0)
    print((small + 1.0).tolist(), float((big + big)[3]))
    print(float(np.arange(4.0).sum()))
    print(np.concatenate([np.zeros(1), np.ones(1)]).tolist())
    try:
        np.divide(small, 2.0)
    except ZeroDivisionError as e:
        print("ZeroDivisionError", e)
    try:
        small * 2.0
    except TypeError as e:
        print("TypeError", e)
""")


@pytest.mark.parametrize("include", [None, "^$"])
def test_numpy_overrides(runner, tmp_path, include):
    rules = tmp_path / "rules.py"
    rules.write_text(RULES)
    env = {"OPHOOK_OVERRIDES": str(rules)}
    if include:
        env["OPHOOK_INCLUDE"] = include  # pure hijacking: nothing recorded, rules still apply
    run = runner.run(PROGRAM, env=env)
    lines = run.stdout.splitlines()
    assert lines[0] == "[4.0, 5.0] 6.0"
    assert lines[1] == "7.0"
    assert lines[2] == "[1.0, 0.0]"
    assert lines[3] == "ZeroDivisionError rule says no"
    assert lines[4].startswith("TypeError ophook override broken") and "numpy.multiply" in lines[4]
    assert "list" in lines[4]
    records = run.records()
    if include:
        assert records == []
        return
    adds = [r for r in records if r["op"] == "numpy.add"]
    assert all(r.get("overridden") for r in adds)
    small_add = adds[0]
    np.testing.assert_array_equal(run.load(small_add["outputs"][0]["file"]), [4.0, 5.0])
    divide = next(r for r in records if r["op"] == "numpy.divide")
    assert divide["error"] == "ZeroDivisionError: rule says no" and divide["overridden"]
    reduce = next(r for r in records if r["op"] == "numpy.add.reduce")
    assert float(run.load(reduce["outputs"][0]["file"])) == 7.0


def test_bad_rules_file_is_reported_and_program_runs(runner, tmp_path):
    run = runner.run("import numpy as np\nprint((np.ones(2) + 1).tolist())\n",
                     env={"OPHOOK_OVERRIDES": str(tmp_path / "missing.py")})
    assert run.stdout == "[2.0, 2.0]\n"
    assert "OPHOOK_OVERRIDES" in run.stderr and "missing.py" in run.stderr


# OPHOOK_NAN in `trace` mode reads arrays where they lie, with no copy: inputs before the call only
# when it can write into them, else after it and only for a NaN/Inf in its outputs. Each program
# plants one culprit that writes into its own input (so a look after the call would see the NaN
# in the input too and excuse it) among calls whose inputs already hold NaN (no culprits). The
# culprit must be the same as with copies (`stats`) and where the program says it is.
IN_PLACE_CULPRITS = {
    "out_keyword": ("a = np.linspace(-1.0, 1.0, 8)\nb = a * 2.0\nnp.log(a, out=a)", "numpy.log"),
    "positional_out": ("a = np.linspace(-1.0, 1.0, 8)\nb = a * 2.0\nnp.sqrt(a, a)", "numpy.sqrt"),
    "augmented": ("a = np.full(8, 1e308)\nb = a + 1.0\na *= 10.0", "numpy.multiply"),
    "copyto": ("a = np.ones(4)\nb = a + 1.0\nnp.copyto(a, np.log(-b))", "numpy.log"),
    "strided": ("m = np.linspace(-1.0, 1.0, 16).reshape(4, 4)\nv = m[:, ::2]\nnp.log(v, out=v)", "numpy.log"),
    "torch_inplace_method": ("import torch\nt = torch.linspace(-1.0, 1.0, 8)\nu = t * 2.0\nt.log_()", "torch.Tensor.log_"),
    "torch_out": ("import torch\nt = torch.linspace(-1.0, 1.0, 8)\nu = t * 2.0\ntorch.log(t, out=t)", "torch.log"),
    "torch_inplace_operator": ("import torch\nt = torch.full((8,), 3e38)\nu = t + 1.0\nt *= 10.0",
                               "torch.Tensor.mul_"),
    "torch_transposed": ("import torch\nt = torch.linspace(-1.0, 1.0, 16).reshape(4, 4).t()\nu = t + 1.0\nt.log_()",
                         "torch.Tensor.log_"),
}
NOT_CULPRITS = """
import numpy as np
n = np.array([np.nan, 1.0, 2.0])
n2 = n * 3.0               # NaN in: not fresh
n += 1.0                   # NaN in, in place: not fresh
"""


@pytest.mark.parametrize("case", sorted(IN_PLACE_CULPRITS))
def test_nan_check_in_place_finds_culprits_that_write_into_their_inputs(runner, case):
    code, op = IN_PLACE_CULPRITS[case]
    program = "import numpy as np\n" + NOT_CULPRITS + code
    culprit_line = program.count("\n") + 1  # the code's last line
    program += "\nprint('done')\n"
    levels = "numpy,torch_function"
    firsts = {}
    for mode in ("trace", "stats"):
        run = runner.run(program, env={"OPHOOK_NAN": "warn", "OPHOOK_MODE": mode, "OPHOOK_LEVELS": levels})
        assert run.stdout == "done\n"
        first = run.summary()["first_nonfinite"]
        assert first is not None and first["op"] == op, (mode, first, run.stderr)
        assert first["source"].split(":")[-2] == str(culprit_line), first
        firsts[mode] = (first["seq"], first["op"], first["source"].split(":", 1)[1])  # each run its own script
        warnings = [l for l in run.stderr.splitlines() if "first NaN/Inf" in l]
        assert len(warnings) == 1 and op in warnings[0]
    assert firsts["trace"] == firsts["stats"]


# Values NumPy takes through the buffer protocol (as scikit-learn's Cython code hands it typed
# memoryviews): a NaN or Inf they hold is an input's, not the call's making.
BUFFERS = textwrap.dedent("""
    import array
    import numpy as np
    held = np.array([np.nan, 1.0, 2.0, 3.0])
    y = np.add(memoryview(held), 1.0)                          # NaN held in a memoryview
    z = np.sqrt(array.array("d", [float("inf"), 4.0]))       # Inf held in an array.array
    s = np.multiply(memoryview(held)[1::2], 2.0)              # a strided memoryview: finite
    w = np.log(np.array([-1.0, 1.0]))                         # line 8: the first NaN made here
    raw = np.bitwise_xor(bytearray(b"ab"), 1)                 # raw bytes
    print(y, z, s, w, raw)
""")


@pytest.mark.parametrize("mode", ["trace", "stats", "dump"])
def test_nan_held_by_a_buffer_exporter_is_an_inputs(runner, mode):
    plain = runner.run(BUFFERS, how="plain")
    run = runner.run(BUFFERS, env={"OPHOOK_NAN": "warn", "OPHOOK_MODE": mode})
    assert run.stdout == plain.stdout
    first = run.summary()["first_nonfinite"]
    assert first["op"] == "numpy.log" and first["source"].endswith(":8:<module>"), first
    records = {}
    for r in run.records():
        records.setdefault(r["op"], r)  # the program's own: printing the arrays makes calls after them
    held = {"numpy.add": [np.nan, 1.0, 2.0, 3.0], "numpy.sqrt": [np.inf, 4.0], "numpy.multiply": [1.0, 3.0]}
    for op, values in held.items():
        arg = arrays_in(records[op]["args"])[0]
        assert (arg["kind"], arg["python_type"], arg["shape"], arg["dtype"]) == ("array", "buffer", [len(values)], "float64")
        if mode != "trace":
            assert (arg["stats"]["nan"], arg["stats"]["inf"]) == (int(np.isnan(values).sum()), int(np.isinf(values).sum()))
        if mode == "dump":
            np.testing.assert_array_equal(run.load(arg["file"]), values)
    # Raw bytes stay a value (a bytearray, an mmap: often a whole file, np.frombuffer reads a slice).
    assert records["numpy.bitwise_xor"]["args"][0]["kind"] == "bytearray"
    if mode == "dump":  # replay rebuilds them as arrays: the same bits
        replay = run_ophook("replay", str(run.output))
        assert replay.returncode == 0 and "0 mismatch), 1 skipped" in replay.stdout, replay.stdout
        assert "(bytearray" in replay.stdout  # the one skipped: raw bytes are not rebuilt
