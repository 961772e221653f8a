"""`ophook bisect`'s runs on the planted precision losses of its tests
(tests/python/support/precision_programs.py), each against its bound ⌈2·log2 G⌉ + 3 for G groups:
how many runs of the program a bisection takes to name the planted op. Runs, not seconds: a run's
time is the program's."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

from measure import Group

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "support"))
from precision_programs import CANCELLATION, LONG_REDUCTION, OVERFLOW, write_program  # noqa: E402

CASES = {"bisect-runs-cancellation": (CANCELLATION, "line"),
         "bisect-runs-overflow": (OVERFLOW, "op"),
         "bisect-runs-long-reduction": (LONG_REDUCTION, "module")}
ROWS = [("bisect-runs-cancellation", "`ophook bisect --by line` on float32 cancellation inside one NumPy call "
         "among benign calls: runs of the program (baseline: the bound ⌈2·log2 G⌉ + 3 for its G groups)", "≤ 1x"),
        ("bisect-runs-overflow", "same, `--by op`, a float16 matmul that overflows under autocast", "≤ 1x"),
        ("bisect-runs-long-reduction", "same, `--by module`, a bfloat16 module whose long reduction loses the "
         "result", "≤ 1x")]


def _runs(ctx, key, source, by):
    work = Path(ctx.scratch) / key
    work.mkdir(parents=True, exist_ok=True)
    program = write_program(work, source)
    done = subprocess.run([os.path.join(ctx.build, "ophook"), "bisect", "--by", by, "--output", str(work / "runs"),
                           "--", ctx.python, str(program)], cwd=work, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError("ophook bisect exited with %d: %s" % (done.returncode, done.stderr.strip()[-400:]))
    state = json.loads((work / "runs" / "state.json").read_text())
    groups = len(state["groups"])
    return state["answer"]["runs"], (math.ceil(2 * math.log2(groups)) + 3 if groups > 1 else 3), groups


def measure(group, ctx):
    rows = {}
    for key, (source, by) in CASES.items():  # the smoke run too: the cases are small already
        runs, bound, groups = _runs(ctx, key, source, by)
        rows[key] = group.row(key, "%d runs" % runs, "%d (G = %d)" % (bound, groups), "%.2fx" % (runs / bound),
                              runs <= bound)
    return rows


GROUPS = [Group("bisect", ROWS, measure)]
