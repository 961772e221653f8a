"""The project's own examples under level combinations: each runs without the hook and under
LD_PRELOAD with OPHOOK_LEVELS and OPHOOK_MODE set; stdout and exit status must be identical, every
trace.jsonl line and summary.json must match the schemas in docs/schema/, every .npy must load, and
only calls of the enabled levels' frameworks may be recorded.

Matrix (kept under ~2 minutes of CI): the NumPy examples start in a fraction of a second, so they
run every one of the 7 level combinations in both modes. The PyTorch examples pay a torch import per
run, so torch_mlp.py runs each combination in one mode, alternating (all three levels in both),
torch_compile.py every second of those (torch_mode_bits.py, which also imports PyTorch's OpInfo database, runs at torch_function only: it
measures what any active TorchDispatchMode changes, and under the torch_dispatch level its "plain"
half already runs inside ophook's mode, so it rightly reports no difference — README "PyTorch").
api_tracer.py (chooses its levels in code) and hijack_mm.py (needs OPHOOK_OVERRIDES) are covered
by torch/test_torch_capture.py and torch/test_torch_nan_and_overrides.py.
"""
import itertools
import subprocess

import numpy as np
import pytest

from harness import EXAMPLES, LIBRARY, VENV_PYTHON, clean_env, summary, trace

LEVELS = ("numpy", "torch_function", "torch_dispatch")
COMBINATIONS = [",".join(c) for n in (1, 2, 3) for c in itertools.combinations(LEVELS, n)]
# Each torch combination in one mode, alternating; "all" in both.
TORCH_MATRIX = [("numpy", "trace"), ("torch_function", "dump"), ("torch_dispatch", "trace"),
                ("numpy,torch_function", "trace"), ("numpy,torch_dispatch", "dump"),
                ("torch_function,torch_dispatch", "dump"), (",".join(LEVELS), "trace"),
                (",".join(LEVELS), "dump")]

EXAMPLES_RUN = {  # name: (arguments, extra environment, [(levels, mode)])
    "numpy_ops.py": ((), {}, [(c, m) for c in COMBINATIONS for m in ("trace", "dump")]),
    "regression_model.py": ((), {}, [(c, m) for c in COMBINATIONS for m in ("trace", "dump")]),
    "precision.py": ((), {"DTYPE": "float16"}, [("numpy", "dump"), (",".join(LEVELS), "trace")]),
    "torch_mlp.py": (("--steps", "5"), {}, TORCH_MATRIX),
    # aot_eager: the compile path without code generation (inductor would add minutes of C++).
    "torch_compile.py": ((), {"TORCH_COMPILE_BACKEND": "aot_eager"}, TORCH_MATRIX[1::2]),
    "torch_mode_bits.py": (("--ops", "^(add|matmul|softmax)$", "--dtypes", "float32"), {},
                           [("torch_function", "trace"), ("numpy,torch_function", "dump")]),
}
FRAMEWORK = {"numpy": "numpy", "torch_function": "torch", "torch_dispatch": "torch"}


def run_example(name, cwd, env):
    args, extra, _ = EXAMPLES_RUN[name]
    proc = subprocess.run([str(VENV_PYTHON), str(EXAMPLES / name), *args], cwd=cwd, env=clean_env(**extra, **env),
                          capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout


@pytest.fixture(scope="module")
def plain_outcomes(tmp_path_factory):
    """Each example's (exit status, stdout) without the hook, computed once."""
    cache = {}

    def outcome(name):
        if name not in cache:
            cache[name] = run_example(name, tmp_path_factory.mktemp("plain"), {})
        return cache[name]
    return outcome


CASES = [(name, levels, mode) for name, (_, _, matrix) in EXAMPLES_RUN.items() for levels, mode in matrix]


@pytest.mark.parametrize("name,levels,mode", CASES, ids=["%s-%s-%s" % case for case in CASES])
def test_example_unchanged_and_output_readable(name, levels, mode, tmp_path, plain_outcomes):
    output = tmp_path / "out"
    hooked = run_example(name, tmp_path, {"LD_PRELOAD": LIBRARY, "OPHOOK_LEVELS": levels, "OPHOOK_MODE": mode,
                                          "OPHOOK_OUTPUT": output})
    assert hooked == plain_outcomes(name)
    assert hooked[0] == 0

    # Every process's records and summary, each checked against docs/schema/.
    directories = sorted(path.parent for path in output.rglob("summary.json"))
    records = [record for directory in directories for record in trace(directory)]
    assert len(records) == sum(summary(directory)["totals"]["calls"] for directory in directories)
    allowed = {FRAMEWORK[level] for level in levels.split(",")}
    assert {r["framework"] for r in records} <= allowed
    if name.startswith("torch_") and "torch" in allowed:
        assert any(r["framework"] == "torch" for r in records)
    if name in ("numpy_ops.py", "regression_model.py"):
        assert bool(records) == ("numpy" in allowed)

    files = sorted(output.rglob("*.npy"))
    assert bool(files) == (mode == "dump" and bool(records))
    for path in files:
        np.load(path, allow_pickle=False)
