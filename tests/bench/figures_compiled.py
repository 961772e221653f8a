"""Compiled models recorded as they run compiled (issue 35): a torch.compile'd MLP's training step
under OPHOOK_COMPILE=record in `trace` and `stats`, against the unhooked compiled step and beside
`ignore` (the same program with nothing inside the compiled code recorded). Each variant is its
own process, run in turn; compilation happens in warm-up steps outside the timed loop."""
import os
import subprocess

from measure import Group, interleaved, median, plain_env, preload_env
from table import seconds, times

ROWS = [
    ("compiled-record-trace", "compiled MLP step (`tests/bench/compiled_loop.py`: width 256, depth 4, batch 64, "
     "200 SGD steps, forward compiled by Inductor), `OPHOOK_COMPILE=record`, `trace`: loop time "
     "(baseline: unhooked, compiled)", "≤ 1.3x"),
    ("compiled-record-stats", "same, `stats` (baseline: unhooked, compiled)", "≤ 2x"),
    ("compiled-ignore-trace", "same, `OPHOOK_COMPILE=ignore`, `trace`: nothing inside the compiled code recorded "
     "(baseline: unhooked, compiled)", "—"),
]


def measure_compiled(group, ctx):
    argv = [ctx.python, os.path.join(ctx.root, "tests", "bench", "compiled_loop.py"),
            "--width", str(ctx.size(256, 32)), "--steps", str(ctx.size(200, 2))]
    scratch = os.path.join(ctx.scratch, "compiled_loop")

    def loop_s(env):
        done = subprocess.run(argv, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError("compiled_loop.py exited with %d: %s" % (done.returncode, done.stderr.strip()[-400:]))
        return float(done.stdout.split()[0])

    variants = {
        "plain": plain_env(),
        "compiled-record-trace": preload_env(ctx.build, OPHOOK_MODE="trace", OPHOOK_COMPILE="record",
                                             OPHOOK_LOG_LEVEL="warn", OPHOOK_OUTPUT=scratch + "_trace"),
        "compiled-record-stats": preload_env(ctx.build, OPHOOK_MODE="stats", OPHOOK_COMPILE="record",
                                             OPHOOK_LOG_LEVEL="warn", OPHOOK_OUTPUT=scratch + "_stats"),
        "compiled-ignore-trace": preload_env(ctx.build, OPHOOK_MODE="trace", OPHOOK_COMPILE="ignore",
                                             OPHOOK_LOG_LEVEL="warn", OPHOOK_OUTPUT=scratch + "_ignore"),
    }
    walls = interleaved(ctx.rounds(3), {name: (lambda env=env: loop_s(env)) for name, env in variants.items()})
    base = median(walls["plain"])
    limits = {"compiled-record-trace": 1.3, "compiled-record-stats": 2.0, "compiled-ignore-trace": None}
    rows = {}
    for key, limit in limits.items():
        ours = median(walls[key])
        rows[key] = group.row(key, seconds(ours), seconds(base), times(ours / base),
                              None if limit is None else ours <= limit * base)
    return rows


GROUPS = [Group("compiled_step", ROWS, measure_compiled)]
