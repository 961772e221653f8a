"""OPHOOK_NAN respects np.errstate: NaN/Inf that a program declares expected (the context manager,
the decorator, np.seterr) is counted as expected and never named a culprit, under `warn` and
`raise`; the same operations undeclared are. Real programs in subprocesses under LD_PRELOAD,
compared with unhooked runs."""
import pytest

from harness import run_script, summary

# 0/0 and exp overflow, declared expected with np.errstate (context manager, decorator, seterr),
# then the same operations undeclared.
ERRSTATE = """
import numpy as np
zeros, big = np.zeros(3), np.full(2, 1000.0)
with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
    quiet_nan = zeros / zeros
    quiet_inf = np.exp(big)

@np.errstate(all="ignore")
def declared():
    return np.log(zeros), np.true_divide(1.0, zeros)

declared()
old = np.seterr(invalid="ignore")
np.sqrt(np.array([-1.0]))
np.seterr(**old)
print("quiet", np.isnan(quiet_nan).all(), np.isinf(quiet_inf).all())
if __import__("sys").argv[1:] == ["loud"]:
    np.divide(zeros, zeros)
    print("loud done")
"""


@pytest.mark.parametrize("policy", ["warn", "raise"])
def test_errstate_declared_nonfinite_is_not_a_culprit(tmp_path, policy):
    plain = run_script(tmp_path, ERRSTATE, preload=False)
    hooked = run_script(tmp_path, ERRSTATE, nan=policy, mode="stats")
    assert hooked.stdout == plain.stdout == "quiet True True\n"
    assert "NaN/Inf" not in hooked.stderr and "Warning" not in hooked.stderr, hooked.stderr
    facts = summary(tmp_path / "out")
    assert facts["first_nonfinite"] is None
    expected = {op: facts["ops"][op]["nonfinite_expected"] for op in facts["ops"]}
    # np.true_divide is np.divide: 0/0 in the with block, 1/0 in the decorated function
    assert expected["numpy.divide"] == 2 and expected["numpy.exp"] == 1
    assert expected["numpy.log"] == 1 and expected["numpy.sqrt"] == 1
    assert all(facts["ops"][op]["nonfinite"] == 0 for op in facts["ops"])


def test_the_same_operations_outside_errstate_are_reported(tmp_path):
    warned = run_script(tmp_path, ERRSTATE, "loud", nan="warn", mode="trace")
    assert warned.stdout.endswith("loud done\n")
    assert "first NaN/Inf from finite inputs: seq" in warned.stderr and "numpy.divide" in warned.stderr
    raised = run_script(tmp_path, ERRSTATE, "loud", nan="raise", mode="trace", check=False,
                        env={"OPHOOK_OUTPUT": str(tmp_path / "raised")})
    assert raised.returncode == 1 and "loud done" not in raised.stdout
    assert "FloatingPointError: ophook: numpy.divide produced NaN/Inf" in raised.stderr
