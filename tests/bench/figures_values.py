"""The value modes on the CPU (issue 33): OPHOOK_NAN and `stats` on a memory-bound op, per call,
against the unhooked call and the floor (one read of the same bytes), and on an MLP training
loop against the unhooked loop. Each variant is its own process, run in turn in this benchmark."""
import json
import os
import subprocess

from measure import Group, interleaved, median, plain_env, preload_env
from table import seconds, times

CALL_ROWS = [
    ("value-numpy-add-nan", "`x + y`, 1 Mi float64 NumPy arrays, `trace` + `OPHOOK_NAN=warn`: time per call "
     "(baseline: the unhooked call)", "≤ 2x"),
    ("value-numpy-add-stats", "same, `stats` (baseline: the unhooked call)", "≤ 2.5x"),
    ("value-numpy-read-floor", "the floor: one read of `x` (`np.max`), unhooked (baseline: the unhooked call)", "—"),
    ("value-torch-add-nan", "`a + b`, 1 Mi float32 torch tensors, `trace` + `OPHOOK_NAN=warn`: time per call "
     "(baseline: the unhooked call)", "≤ 2x"),
    ("value-torch-add-stats", "same, `stats` (baseline: the unhooked call)", "≤ 2.5x"),
    ("value-torch-read-floor", "the floor: one read of `a` (`a.max()`), unhooked (baseline: the unhooked call)", "—"),
]

MLP_ROWS = [
    ("value-mlp-nan", "MLP loop (`tests/bench/mlp_loop.py`: width 512, depth 8, batch 128, 20 SGD steps), "
     "`OPHOOK_NAN=warn` with its defaults: loop time (baseline: unhooked)", "≤ 1.5x"),
    ("value-mlp-nan-trace", "same, `trace` + `OPHOOK_NAN=warn` (baseline: unhooked)", "—"),
    ("value-mlp-stats", "same, `stats` (baseline: unhooked)", "≤ 1.2x"),
]


def call_costs(ctx, env):
    argv = [ctx.python, os.path.join(ctx.root, "tests", "bench", "value_call_cost.py"),
            "--elements", str(ctx.size(1 << 20, 1 << 12)), "--rounds", str(ctx.rounds(5)),
            "--calls", str(ctx.size(40, 3))]
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("value_call_cost.py exited with %d: %s" % (done.returncode, done.stderr.strip()[-400:]))
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure_calls(group, ctx):
    scratch = os.path.join(ctx.scratch, "value_calls")
    variants = {
        "plain": plain_env(),
        "nan": preload_env(ctx.build, OPHOOK_MODE="trace", OPHOOK_NAN="warn", OPHOOK_LOG_LEVEL="warn",
                           OPHOOK_OUTPUT=scratch + "_nan"),
        "stats": preload_env(ctx.build, OPHOOK_MODE="stats", OPHOOK_LOG_LEVEL="warn", OPHOOK_OUTPUT=scratch + "_stats"),
    }
    costs = interleaved(ctx.rounds(3), {name: (lambda env=env: call_costs(ctx, env)) for name, env in variants.items()})
    best = {name: {key: min(run[key] for run in runs) for key in runs[0]} for name, runs in costs.items()}
    rows = {}
    for lib in ("numpy", "torch"):
        plain = best["plain"][lib + "_add"]
        for variant, limit in (("nan", 2.0), ("stats", 2.5)):
            ours = best[variant][lib + "_add"]
            key = "value-%s-add-%s" % (lib, variant)
            rows[key] = group.row(key, "%.3f ms" % ours, "%.3f ms" % plain, times(ours / plain),
                                  ours <= limit * plain)
        floor = best["plain"][lib + "_read"]
        key = "value-%s-read-floor" % lib
        rows[key] = group.row(key, "%.3f ms" % floor, "%.3f ms" % plain, times(floor / plain), None)
    return rows


def measure_mlp(group, ctx):
    argv = [ctx.python, os.path.join(ctx.root, "tests", "bench", "mlp_loop.py"), "--width", str(ctx.size(512, 32)),
            "--batch", str(ctx.size(128, 8)), "--steps", str(ctx.size(20, 2))]
    scratch = os.path.join(ctx.scratch, "value_mlp")

    def loop_s(env):
        done = subprocess.run(argv, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError("mlp_loop.py exited with %d: %s" % (done.returncode, done.stderr.strip()[-400:]))
        return float(done.stdout.split()[0])

    variants = {
        "plain": plain_env(),
        "value-mlp-nan": preload_env(ctx.build, OPHOOK_NAN="warn", OPHOOK_LOG_LEVEL="warn", OPHOOK_OUTPUT=scratch + "_nan"),
        "value-mlp-nan-trace": preload_env(ctx.build, OPHOOK_MODE="trace", OPHOOK_NAN="warn", OPHOOK_LOG_LEVEL="warn",
                                           OPHOOK_OUTPUT=scratch + "_trace"),
        "value-mlp-stats": preload_env(ctx.build, OPHOOK_MODE="stats", OPHOOK_LOG_LEVEL="warn",
                                       OPHOOK_OUTPUT=scratch + "_stats"),
    }
    walls = interleaved(ctx.rounds(3), {name: (lambda env=env: loop_s(env)) for name, env in variants.items()})
    base = median(walls["plain"])
    limits = {"value-mlp-nan": 1.5, "value-mlp-nan-trace": None, "value-mlp-stats": 1.2}
    rows = {}
    for key, limit in limits.items():
        ours = median(walls[key])
        rows[key] = group.row(key, seconds(ours), seconds(base), times(ours / base),
                              None if limit is None else ours <= limit * base)
    return rows


GROUPS = [Group("value_calls", CALL_ROWS, measure_calls), Group("value_mlp", MLP_ROWS, measure_mlp)]
