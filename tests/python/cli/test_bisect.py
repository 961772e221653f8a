"""`ophook bisect` on real programs, each run many times under the hook by the built `ophook`:
one planted precision loss among benign ops (float32 cancellation inside one NumPy call, a float16
matmul that overflows under autocast, a bfloat16 module whose long reduction loses the result),
a benign program, a program too noisy to bisect, a bisection interrupted by its budget and
continued, one judged by a --check command, and one whose program fails in one of its runs. The planted lines are found by their marker in each program's source, and each
program's loss is recomputed here in NumPy, so nothing depends on numbers written down."""
import json
import math
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from cli_fixtures import run_ophook
from harness import VENV_PYTHON, clean_env
from precision_programs import BENIGN, CANCELLATION, LONG_REDUCTION, OVERFLOW, planted_site, write_program

# Every run differs from the last by a known step, not by a random draw: drawn noise lands under the
# tolerance in one try of several, and the test must never see a quiet run by chance.
NOISY = """
    from pathlib import Path
    import numpy as np

    counter = Path(__file__).with_suffix(".runs")
    run = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(run + 1))
    a = np.linspace(1.0, 2.0, 32).astype(np.float32)
    print(np.mean(np.sqrt(a * np.float32(1 + 0.05 * run))))
"""


def _bisect(tmp_path, program, *options):
    proc = run_ophook("bisect", "--output", tmp_path / "runs", *options, "--", VENV_PYTHON, program,
                      cwd=tmp_path, env=clean_env(), timeout=300)
    state_file = tmp_path / "runs" / "state.json"
    state = json.loads(state_file.read_text()) if state_file.exists() else None
    return proc, state


def _run_bound(state):
    groups = len(state["groups"])
    return math.ceil(2 * math.log2(groups)) + 3 if groups > 1 else 3


def _assert_names_only(proc, state, planted, field):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    answer = state["answer"]
    assert answer["complete"]
    assert len(answer["groups"]) == 1, proc.stdout
    group = answer["groups"][0]
    if field == "lines":
        assert any(value.startswith(planted) for value in group[field]), group
    elif field == "modules":  # a module's path as ophook names it: Model.contrast
        assert any(value.split(".")[-1] == planted for value in group[field]), group
    else:
        assert planted in group[field], group
    # within tolerance with it, not without it: the unchanged run is the set minus its one group
    assert group["with"] <= answer["tolerance"] < group["without"]
    assert answer["runs"] <= _run_bound(state), (answer["runs"], len(state["groups"]))
    assert len(state["runs"]) == answer["runs"]
    return group


def _float32_loss(widened_sum):
    """The cancellation program's loss recomputed, its planted sum in float32 or float64."""
    rng = np.random.default_rng(0)
    x = rng.uniform(1.0, 2.0, 64).astype(np.float32)
    shifted = np.tanh(x * np.float32(0.5)) + np.float32(1)
    offset = np.full_like(x, 1e8)
    terms = np.stack([shifted, offset, -offset])
    recovered = np.sum(terms.astype(np.float64), axis=0).astype(np.float32) if widened_sum else np.sum(terms, axis=0)
    return float(np.mean(np.sqrt(recovered * recovered + np.float32(1))))


def test_bisect_names_the_line_of_a_float32_cancellation(tmp_path):
    program = write_program(tmp_path, CANCELLATION)
    proc, state = _bisect(tmp_path, program, "--by", "line")
    group = _assert_names_only(proc, state, planted_site(program), "lines")
    assert group["ops"] == ["numpy.sum"]
    assert "%s" % planted_site(program) in proc.stdout
    # the loss bisect judged moves as a recomputation says: far without the fix, close with it
    exact, lost = _float32_loss(True), _float32_loss(False)
    assert abs(lost - exact) / abs(exact) > group["with"] * 10
    assert re.search(r"run \d+ of at most", proc.stderr)  # the progress lines


def test_bisect_names_the_float16_matmul_that_overflows(tmp_path):
    program = write_program(tmp_path, OVERFLOW)
    proc, state = _bisect(tmp_path, program, "--by", "op")
    group = _assert_names_only(proc, state, "torch.matmul", "ops")
    assert group["lines"][0].startswith(planted_site(program))
    assert group["without"] == float("inf")  # unchanged, the result is NaN: no finite error
    # float16 cannot hold the scores: keys in [20, 60) over 64 terms reach 1.6e5, above its maximum
    assert (40.0 + 20.0) ** 2 * 64 / 1.5 > float(np.finfo(np.float16).max)


def test_bisect_names_the_bfloat16_module_whose_reduction_loses_the_result(tmp_path):
    program = write_program(tmp_path, LONG_REDUCTION)
    proc, state = _bisect(tmp_path, program, "--by", "module")
    group = _assert_names_only(proc, state, "contrast", "modules")
    assert group["key"].split(".")[-1] == "contrast" and group["ops"] == ["torch.matmul"]
    assert any(line.startswith(planted_site(program)) for line in group["lines"])
    # bfloat16 rounds every input near 100 to a multiple of 0.5: the ramp is gone, the sum is 0
    signal = 100.0 + np.concatenate([np.linspace(0.0, 0.1, 2048), np.zeros(2048)])
    assert np.all(np.abs(signal - 100.0) < 0.25)
    assert abs(signal[:2048].mean() - signal[2048:].mean()) > 0.04


def test_bisect_of_a_benign_program_finds_nothing_to_widen(tmp_path):
    proc, state = _bisect(tmp_path, write_program(tmp_path, BENIGN))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "nothing needs more precision" in proc.stdout
    assert "noise floor 0" in proc.stdout
    assert state["answer"]["groups"] == [] and state["answer"]["runs"] == 3


def test_bisect_refuses_a_program_noisier_than_the_tolerance(tmp_path):
    proc, state = _bisect(tmp_path, write_program(tmp_path, NOISY))
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "not deterministic enough" in proc.stdout
    floor = state["floor"]
    assert floor > state["answer"]["tolerance"]
    # the first two runs are the unchanged ones: their results part by sqrt(1.05)
    assert floor == pytest.approx(math.sqrt(1.05) - 1, rel=1e-3)
    assert "Noise floor %.3g" % floor in proc.stdout
    assert state["answer"]["runs"] == 3  # refused before any bisecting run


def test_bisect_continues_an_interrupted_bisection_from_its_state(tmp_path):
    program = write_program(tmp_path, CANCELLATION)
    first, state = _bisect(tmp_path, program, "--by", "line", "--max-runs", "4")
    assert first.returncode == 1, first.stdout + first.stderr
    assert "--max-runs spent" in first.stdout
    assert len(state["runs"]) == 4
    again, state = _bisect(tmp_path, program, "--by", "line")
    group = _assert_names_only(again, state, planted_site(program), "lines")
    assert group["ops"] == ["numpy.sum"]
    # the second session ran only what the first had not: its first run is the fifth
    numbers = [int(n) for n in re.findall(r"run (\d+) of at most", again.stderr)]
    assert numbers and numbers[0] == 5
    other, _ = _bisect(tmp_path, program, "--by", "op")
    assert other.returncode == 2 and "holds another bisection" in other.stderr


def test_bisect_judges_each_run_by_the_check_command(tmp_path):
    # The program's loss goes to a file; the check passes a run whose loss is the exact one.
    program = write_program(tmp_path, CANCELLATION.replace(
        "print(np.mean(features))", "open('loss.txt', 'w').write(repr(float(np.mean(features))))"))
    exact = _float32_loss(True)
    check = tmp_path / "check.py"
    check.write_text(textwrap.dedent("""
        import os, sys
        with open("checked_runs.txt", "a") as seen:
            seen.write(os.environ["OPHOOK_BISECT_RUN"] + "\\n")
        loss = float(open("loss.txt").read())
        sys.exit(0 if abs(loss - %r) <= 1e-6 * abs(%r) else 1)
    """ % (exact, exact)))
    proc, state = _bisect(tmp_path, program, "--by", "line", "--check", "%s %s" % (VENV_PYTHON, check))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    answer = state["answer"]
    assert answer["complete"] and len(answer["groups"]) == 1, proc.stdout
    assert any(line.startswith(planted_site(program)) for line in answer["groups"][0]["lines"])
    assert answer["runs"] <= _run_bound(state)
    # the check judged every run, told where its recording is (the three first runs keep theirs)
    judged = [r for r in state["runs"].values() if "check" in r]
    assert len(judged) == len(state["runs"]) and {r["check"] for r in judged} == {0, 1}
    seen = (tmp_path / "checked_runs.txt").read_text().split()
    assert len(seen) == len(judged) and len(set(seen[:3])) == 3
    assert all((Path(run) / "trace.jsonl").is_file() for run in set(seen))
    assert abs(_float32_loss(False) - exact) > 1e-6 * abs(exact)  # the unchanged loss fails the check


def test_bisect_marks_a_failing_run_failed_and_goes_on(tmp_path):
    # The program raises in its fourth run only (the first run that widens a set of groups).
    program = write_program(tmp_path, textwrap.dedent(CANCELLATION) + textwrap.dedent("""
        import pathlib
        count = pathlib.Path("runs.txt")
        runs = int(count.read_text()) + 1 if count.exists() else 1
        count.write_text(str(runs))
        if runs == 4:
            raise RuntimeError("planted failure in run 4")
    """))
    proc, state = _bisect(tmp_path, program, "--by", "line")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    failed = [r for r in state["runs"].values() if r["status"] == "failed"]
    assert len(failed) == 1 and "planted failure in run 4" in failed[0]["stderr"]
    assert "this set is marked failed" in proc.stderr and "planted failure in run 4" in proc.stderr
    answer = state["answer"]
    assert answer["complete"] and len(answer["groups"]) == 1, proc.stdout
    assert any(line.startswith(planted_site(program)) for line in answer["groups"][0]["lines"])
    assert int((tmp_path / "runs.txt").read_text()) == answer["runs"]


def test_bisect_help_answers_what_it_does():
    proc = run_ophook("bisect", "--help")
    assert proc.returncode == 0
    for words in ("--by", "--to", "--max-runs", "--tolerance", "--check", "--state", "noise", "Exit status"):
        assert words in proc.stdout
