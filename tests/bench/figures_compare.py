"""`ophook compare` on 1 GiB of dumps against the NumPy script doing its work
(baselines/numpy_compare.py): measured by compare_throughput.py, which prints one markdown row
| compare <size> | ours | baseline | <ratio>x | target |; this group runs it and reads that row."""
import os
import subprocess

from measure import Group

ROWS = [("compare-1GiB", "`ophook compare` on 1 GiB of dumps, medians of interleaved runs "
         "(baseline: NumPy script doing its work, both cores)", "≥ 2x")]


def measure(group, ctx):
    argv = [ctx.python, os.path.join(ctx.root, "tests", "bench", "compare_throughput.py"),
            "--ophook", os.path.join(ctx.build, "ophook"), "--reps", str(ctx.rounds(5))]
    if ctx.smoke:
        argv.append("--smoke")
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("compare_throughput.py exited with %d: %s" % (done.returncode, done.stderr.strip()[-300:]))
    cells = [c.strip() for c in done.stdout.strip().splitlines()[-1].strip("|").split("|")]
    ours, baseline, ratio = cells[1], cells[2], cells[3]
    return {"compare-1GiB": group.row("compare-1GiB", ours, baseline, ratio, float(ratio.rstrip("x")) >= 2)}


GROUPS = [Group("compare", ROWS, measure)]
