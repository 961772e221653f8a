"""ophook.pytest_plugin as a user runs it: pytest in a subprocess (the recorder is per process)
on a small test module, through pytest's own pytester, with `-p ophook.pytest_plugin` and the build
tree's package on PYTHONPATH (the shim's sitecustomize comes with it; the plugin replaces its
process-wide recording). Each recording is read back: its values against a recomputation, its
files against the schemas; a compare after a numeric change fails the changed test only, naming
the op and its line."""
import os
import re
import sys

import numpy as np
import pytest

from harness import SHIM_DIR, arrays, load, ops, summary, trace

pytest_plugins = ["pytester"]

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it: its test-id paths
from ophook._pytest.node_paths import node_path  # noqa: E402

NUMBERS = """
import os

import numpy as np
import pytest

SCALE = float(os.environ.get("SCALE", "2.0"))


def test_scaled():
    a = np.linspace(0.0, 1.0, 8)
    b = np.multiply(a, SCALE)
    assert b.shape == (8,)


def test_unchanged():
    np.add(np.arange(4.0), 1.0)


@pytest.mark.parametrize("n", [2, "a/b"])
def test_parametrized(n):
    np.subtract(np.ones(3), 1.0)


@pytest.mark.ophook(include="subtract", levels="numpy")
def test_marker():
    np.add(np.ones(2), np.ones(2))
    np.subtract(np.ones(2), 0.5)
"""
# Only where torch matters: its import costs seconds per pytest run.
TORCH_TEST = """
import torch


def test_torch():
    torch.add(torch.ones(3), torch.arange(3.0))
"""
# A compiled module: torch warns at each of its calls while any global module hook exists, as
# ophook's do; unhooked, these tests see no warning.
COMPILED_TEST = """
import torch


def test_compiled_module():
    compiled = torch.compile(torch.nn.Linear(4, 4), backend="eager")
    assert compiled(torch.ones(2, 4)).shape == (2, 4)
"""
NODE_IDS = ["test_numbers.py::test_scaled", "test_numbers.py::test_unchanged",
            "test_numbers.py::test_parametrized[2]", "test_numbers.py::test_parametrized[a/b]",
            "test_numbers.py::test_marker"]


@pytest.fixture
def numbers(pytester, monkeypatch):
    """A pytester directory holding test_numbers.py, run with the build tree's ophook importable."""
    for name in list(os.environ):
        if name.startswith("OPHOOK_") or name in ("LD_PRELOAD", "SCALE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PYTHONPATH", str(SHIM_DIR))
    pytester.makepyfile(test_numbers=NUMBERS)
    return pytester


def scaled_source(pytester):
    """test_scaled's multiply as a record's `source` names it."""
    path = pytester.path / "test_numbers.py"
    line = path.read_text().splitlines().index("    b = np.multiply(a, SCALE)") + 1
    return "%s:%d:test_scaled" % (path, line)


def run_plugin(pytester, *args):
    return pytester.runpytest_subprocess("-p", "ophook.pytest_plugin", "-p", "no:cacheprovider", *args)


def test_record_writes_one_directory_per_test_with_its_values(numbers):
    numbers.makepyfile(test_torch_numbers=TORCH_TEST)
    numbers.makeconftest("import numpy as np\n\nONES = np.add(np.zeros(2), 1.0)  # at collection: recorded nowhere\n")
    result = run_plugin(numbers, "--ophook-record=ref")
    result.assert_outcomes(passed=6)
    ref = numbers.path / "ref"
    assert "recorded 6 tests into %s" % ref in result.stdout.str()
    directories = {nodeid: ref / node_path(nodeid) for nodeid in NODE_IDS + ["test_torch_numbers.py::test_torch"]}
    assert all((d / "summary.json").exists() for d in directories.values()), sorted(map(str, ref.rglob("*")))
    # The process-wide recording of the shim never started: pytest's own calls are nowhere.
    assert not (numbers.path / "np_op_dumps").exists()

    scaled = trace(directories["test_numbers.py::test_scaled"])
    (multiply,) = ops(scaled, "numpy.multiply")
    assert multiply["source"] == scaled_source(numbers)
    a = load(directories["test_numbers.py::test_scaled"], arrays(multiply)[0])
    np.testing.assert_array_equal(a, np.linspace(0.0, 1.0, 8))
    np.testing.assert_array_equal(load(directories["test_numbers.py::test_scaled"], arrays(multiply, "outputs")[0]),
                                  a * 2.0)
    # Each test is a run of its own: seq from 0, its calls only, its summary.
    unchanged = trace(directories["test_numbers.py::test_unchanged"])
    assert unchanged[0]["seq"] == 0 and {r["op"] for r in unchanged} == {"numpy.add"}
    assert summary(directories["test_numbers.py::test_unchanged"])["totals"]["calls"] == len(unchanged)
    # The marker's options apply to its test alone.
    marker = directories["test_numbers.py::test_marker"]
    assert [r["op"] for r in trace(marker)] == ["numpy.subtract"]
    assert summary(marker)["config"]["levels"] == ["numpy"]
    torch_records = trace(directories["test_torch_numbers.py::test_torch"])
    assert any(r["op"] == "torch.add" and r["level"] == "torch_function" for r in torch_records)
    # Parametrized ids: two directories, the one with "/" hashed rather than nested.
    assert directories["test_numbers.py::test_parametrized[a/b]"].parent == ref / "test_numbers.py"
    assert len(set(directories.values())) == len(directories)


def test_compare_passes_unchanged_and_fails_the_test_whose_numbers_moved(numbers, monkeypatch):
    run_plugin(numbers, "--ophook-record=ref").assert_outcomes(passed=5)

    same = run_plugin(numbers, "--ophook-compare=ref")
    same.assert_outcomes(passed=5)
    assert "compared 5 tests with %s: 5 unchanged, 0 moved, 0 without a baseline" % (numbers.path / "ref") \
        in same.stdout.str()

    monkeypatch.setenv("SCALE", "2.5")
    moved = run_plugin(numbers, "--ophook-compare=ref", "--ophook-record=new")
    moved.assert_outcomes(passed=4, failed=1)
    output = moved.stdout.str()
    assert re.search(r"^FAILED test_numbers.py::test_scaled\b", output, re.M), output
    assert "first divergent call: numpy.multiply at %s (seq 1)" % scaled_source(numbers) in output
    assert "max abs err 5.000e-01" in output  # |1.0 * 2.5 - 1.0 * 2.0| at the last element
    assert "args[1]: 2.0 vs 2.5" in output  # the scale is a Python float in both runs
    # --ophook-record kept this run's recordings: the moved output holds the new scale.
    new = numbers.path / "new" / node_path("test_numbers.py::test_scaled")
    (multiply,) = ops(trace(new), "numpy.multiply")
    np.testing.assert_array_equal(load(new, arrays(multiply, "outputs")[0]), np.linspace(0.0, 1.0, 8) * 2.5)

    # Within tolerance, the same change passes.
    run_plugin(numbers, "--ophook-compare=ref", "--ophook-rtol=0.3").assert_outcomes(passed=5)


def test_a_test_without_baseline_is_reported_not_failed(numbers):
    numbers.makepyfile(test_fails="""
        import numpy as np

        def test_fails():
            np.add(np.ones(2), np.random.default_rng().random(2))
            assert False, "its own failure"
    """)
    run_plugin(numbers, "--ophook-record=ref", "-k", "not marker").assert_outcomes(passed=4, failed=1, deselected=1)
    result = run_plugin(numbers, "--ophook-compare=ref")
    result.assert_outcomes(passed=5, failed=1)
    output = result.stdout.str()
    # A test that fails by itself is not compared (its numbers would have moved: a random input).
    assert "its own failure" in output and "numbers moved" not in output
    assert "compared 5 tests with %s: 4 unchanged, 0 moved, 1 without a baseline" % (numbers.path / "ref") in output
    assert "no baseline (reported, not failed):\n  test_numbers.py::test_marker" in output
    # Nothing of a compare-only run is left behind when no test moved.
    assert "this run's recordings" not in output


def test_a_process_wide_recording_already_running_ends_before_the_tests(numbers, monkeypatch):
    """A plugin loaded before the conftest files imports NumPy, so the shim's recording of the
    whole process has begun when pytest configures: it ends there with its own files."""
    monkeypatch.setenv("OPHOOK_IMPORTS", "1")  # the plugin's call runs while it is imported
    numbers.makepyfile(early_plugin="import numpy as np\n\nEARLY = np.multiply(np.arange(2.0), 3.0)\n")
    result = run_plugin(numbers, "-p", "early_plugin", "--ophook-record=ref", "-k", "unchanged")
    result.assert_outcomes(passed=1, deselected=4)
    process_wide = numbers.path / "np_op_dumps"
    assert "the recording of the whole process into %s ends here" % process_wide in result.stderr.str()
    assert [r["op"] for r in trace(process_wide)] == ["numpy.multiply"]
    assert {r["op"] for r in trace(numbers.path / "ref" / node_path("test_numbers.py::test_unchanged"))} == {"numpy.add"}


@pytest.mark.parametrize("recording", ["whole process", "per test"])
def test_warnings_as_errors_see_no_warning_of_ophooks_making(numbers, recording):
    """ophook filters the warning its module hooks cause, but pytest's filters for each test
    (-W error, filterwarnings = error) come first: the plugin repeats ophook's after them."""
    numbers.makepyfile(test_compiled=COMPILED_TEST)
    numbers.makeini("[pytest]\nfilterwarnings =\n    error\n")
    per_test = ["--ophook-record=ref"] if recording == "per test" else []
    run_plugin(numbers, "test_compiled.py", "-W", "error", *per_test).assert_outcomes(passed=1)
    recorded = numbers.path / ("ref/" + node_path("test_compiled.py::test_compiled_module") if per_test
                               else "np_op_dumps")
    assert "torch.ones" in {r["op"] for r in trace(recorded)}


def test_without_options_the_plugin_stays_idle(numbers, monkeypatch):
    monkeypatch.setenv("OPHOOK_DISABLE", "1")  # the shim stays dormant too: nothing may record
    numbers.makepyfile(test_idle="""
        import sys

        def test_idle(pytestconfig):
            assert pytestconfig.pluginmanager.get_plugin("ophook-per-test-recording") is None
            assert "ophook._pytest.recording" not in sys.modules
            assert "numpy" not in sys.modules and "torch" not in sys.modules
    """)
    run_plugin(numbers, "test_idle.py").assert_outcomes(passed=1)
    assert not list(numbers.path.rglob("trace.jsonl"))


def test_bad_options_and_markers_are_named(numbers):
    result = run_plugin(numbers, "--ophook-record=ref", "--ophook-mode=fast")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "OPHOOK_MODE='fast' is not valid (accepted: trace, stats, dump)" in result.stderr.str()

    result = run_plugin(numbers, "--ophook-compare=nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--ophook-compare=nowhere: no such directory" in result.stderr.str()

    numbers.makepyfile(test_marked="""
        import pytest

        @pytest.mark.ophook(colour="red")
        def test_bad_keyword():
            pass
    """)
    result = run_plugin(numbers, "--ophook-record=ref", "test_marked.py")
    result.assert_outcomes(failed=1)
    assert "unknown ophook option 'colour'" in result.stdout.str()


def test_test_ids_become_safe_distinct_paths():
    plain = "tests/test_model.py::TestNorm::test_layer_norm"
    assert node_path(plain) == "tests/test_model.py/TestNorm/test_layer_norm"  # readable as it is
    alike = ["t.py::test_x[a/b]", "t.py::test_x[a_b]", "t.py::test_x[a b]", "t.py::test_x_a_b_"]
    assert len({node_path(nodeid) for nodeid in alike}) == len(alike)
    for nodeid in alike + ["../up/t.py::test_x[..]", "t.py::test_" + "x" * 300, "t.py::test_é"]:
        parts = node_path(nodeid).split(os.sep)
        assert not os.path.isabs(node_path(nodeid)) and ".." not in parts and "." not in parts, nodeid
        assert all(re.fullmatch(r"[A-Za-z0-9._-]{1,100}", part) for part in parts), nodeid
