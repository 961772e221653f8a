"""examples/ci_regression.sh end to end: an unchanged re-run compares equal (exit 0), the
perturbed one differs (exit 1) first at the layer norm's numpy.add, whose recorded values match a
recomputation from the recorded inputs with each run's epsilon."""
import json
import os
import re
import subprocess

import numpy as np

from harness import BUILD_DIR, SOURCE_DIR, summary, trace

SCRIPT = SOURCE_DIR / "examples" / "ci_regression.sh"
PROGRAM = SOURCE_DIR / "examples" / "regression_model.py"


def statuses(stdout):
    return [int(s) for s in re.findall(r"^compare exit status: (\d+)$", stdout, re.M)]


def eps_add_line():
    """The line of `var + EPSILON` in the example program."""
    lines = PROGRAM.read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if "var + EPSILON" in line)


def test_unchanged_run_passes_and_perturbed_run_names_the_op(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPHOOK_") and k != "LD_PRELOAD"}
    env.update(OPHOOK=str(BUILD_DIR / "ophook"), PYTHON=str(SOURCE_DIR / ".venv" / "bin" / "python"))
    work = tmp_path / "ci"
    proc = subprocess.run(["bash", str(SCRIPT), str(work)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert statuses(proc.stdout) == [0, 1], proc.stdout

    changed_part = proc.stdout.split("== 3.")[1]
    lines = changed_part.splitlines()
    base_line = lines[lines.index("first divergent call:") + 1].split()
    assert base_line[0] == "BASE" and base_line[2] == "op=numpy.add", base_line
    assert base_line[3] == f"source={PROGRAM}:{eps_add_line()}:layer_norm", base_line

    result = json.loads((work / "changed.json").read_text())
    assert result["verdict"] == "different"
    first = result["first_divergence"]["base"]
    assert first["op"] == "numpy.add"
    assert (work / "changed.html").stat().st_size > 0

    # The recorded call is the epsilon add: output = input + that run's epsilon.
    for run in ("reference", "unchanged", "changed"):
        assert summary(work / run)["totals"]["calls"] == len(trace(work / run))  # and both match the schemas
    for run, epsilon in (("reference", 1e-5), ("changed", 1e-2)):
        records = trace(work / run)
        call = next(r for r in records if r["seq"] == first["seq"])
        assert call["op"] == "numpy.add" and call["args"][1] == epsilon
        var = np.load(work / run / call["args"][0]["file"])
        out = np.load(work / run / call["outputs"][0]["file"])
        np.testing.assert_array_equal(out, var + np.float32(epsilon))
