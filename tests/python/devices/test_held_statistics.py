"""Statistics the device path holds for their batch (OPHOOK_TENSOR_COPY=torch) still reach
trace.jsonl, with their values, at ophook.flush(), at a termination signal and at os._exit."""
import signal
import subprocess

import pytest

from harness import LIBRARY, VENV_PYTHON, arrays, clean_env, summary, trace


HELD = """
import json, os, sys, time
import torch
import ophook
x = torch.arange(4.0)
for _ in range(5):
    x = torch.add(x, 1)
if sys.argv[1] == "flush":
    ophook.flush()
    print(sum(1 for _ in open(os.path.join(os.environ["OPHOOK_OUTPUT"], "trace.jsonl"))), flush=True)
elif sys.argv[1] == "term":
    print("ready", flush=True)
    for _ in range(6000):
        time.sleep(0.01)  # back in the interpreter often: the pause for the signal runs between bytecodes
else:
    os._exit(0)
"""


def run_held(tmp_path, how):
    (tmp_path / "held.py").write_text(HELD)
    env = clean_env(LD_PRELOAD=LIBRARY, OPHOOK_OUTPUT=tmp_path / "out", OPHOOK_MODE="stats",
                    OPHOOK_LEVELS="torch_function", OPHOOK_TENSOR_COPY="torch")
    proc = subprocess.Popen([str(VENV_PYTHON), str(tmp_path / "held.py"), how], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if how == "term":
        assert proc.stdout.readline() == "ready\n"
        proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    return proc.returncode, stdout, tmp_path / "out"


@pytest.mark.parametrize("how", ["flush", "term"])
def test_held_statistics_are_written_at_a_flush_and_a_termination_signal(tmp_path, how):
    """Five torch.add calls stay held (fewer than a batch, within 0.1 s) until ophook.flush() or
    SIGTERM reads their statistics back: every record reaches trace.jsonl, with its statistics."""
    returncode, stdout, out = run_held(tmp_path, how)
    assert returncode == (0 if how == "flush" else -signal.SIGTERM)
    records = trace(out)
    adds = [r for r in records if r["op"] == "torch.add"]
    if how == "flush":
        assert int(stdout) == len(records)
    assert [arrays(r, "outputs")[0]["stats"]["max"] for r in adds] == [4.0, 5.0, 6.0, 7.0, 8.0]


def test_records_held_at_os_exit_are_written(tmp_path):
    """os._exit runs no atexit handler: the preload's _exit reads the held records back first (the
    exiting thread holds the GIL), as DataLoader workers need; none is dropped."""
    returncode, _, out = run_held(tmp_path, "exit")
    assert returncode == 0
    totals = summary(out)["totals"]
    assert (totals["calls"], totals["dropped_after_exit"]) == (6, 0)
    adds = [r for r in trace(out) if r["op"] == "torch.add"]
    assert [arrays(r, "outputs")[0]["stats"]["max"] for r in adds] == [4.0, 5.0, 6.0, 7.0, 8.0]
