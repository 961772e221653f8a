"""The value modes on the CPU (issue 33): OPHOOK_NAN and `stats` on a memory-bound op, per call,
against the unhooked call and the floor (one read of the same bytes), and on an MLP training
loop against the unhooked loop; and a compiled model recorded as it runs compiled (issue 35): the
MLP's forward compiled, OPHOOK_COMPILE=record against the unhooked compiled loop. Each variant is
its own process, run in turn in this benchmark."""
import json
import os
import subprocess

from measure import Group, interleaved, median, plain_env, preload_env
from table import seconds, times

CALL_ROWS = [
    ("value-numpy-add-nan", "`x + y`, 1 Mi float64 NumPy arrays, `trace` + `OPHOOK_NAN=warn`: time per call "
     "(baseline: the unhooked call)", "≤ 2x"),
    ("value-numpy-add-stats", "same, `stats` (baseline: the unhooked call)", "≤ 2.5x"),
    ("value-numpy-add-stats-changed", "same, `stats`, `x` and `y` changed before each call (one element written "
     "by NumPy's setitem, which no call records): nothing remembered (baseline: the unhooked call, same writes)", "—"),
    ("value-numpy-read-floor", "the floor: one read of `x` (`np.max`), unhooked (baseline: the unhooked call)", "—"),
    ("value-torch-add-nan", "`a + b`, 1 Mi float32 torch tensors, `trace` + `OPHOOK_NAN=warn`: time per call "
     "(baseline: the unhooked call)", "≤ 2x"),
    ("value-torch-add-stats", "same, `stats` (baseline: the unhooked call)", "≤ 2.5x"),
    ("value-torch-add-stats-changed", "same, `stats`, `a` and `b` changed before each call (through NumPy views): "
     "nothing remembered (baseline: the unhooked call, same writes)", "—"),
    ("value-torch-read-floor", "the floor: one read of `a` (`a.max()`), unhooked (baseline: the unhooked call)", "—"),
]

MLP_ROWS = [
    ("value-mlp-nan", "MLP loop (`tests/bench/programs/mlp_loop.py`: width 512, depth 8, batch 128, 20 SGD steps), "
     "`OPHOOK_NAN=warn` with its defaults: loop time (baseline: unhooked)", "≤ 1.5x"),
    ("value-mlp-nan-trace", "same, `trace` + `OPHOOK_NAN=warn` (baseline: unhooked)", "—"),
    ("value-mlp-stats", "same, `stats` (baseline: unhooked)", "≤ 1.2x"),
]

COMPILED_ROWS = [
    ("compiled-record-trace", "compiled MLP step (`tests/bench/programs/mlp_loop.py --compile`: width 256, depth 4, batch 64, "
     "200 SGD steps, forward compiled by Inductor), `OPHOOK_COMPILE=record`, `trace`: loop time "
     "(baseline: unhooked, compiled)", "≤ 1.3x"),
    ("compiled-record-stats", "same, `stats` (baseline: unhooked, compiled)", "≤ 2x"),
    ("compiled-ignore-trace", "same, `OPHOOK_COMPILE=ignore`, `trace`: nothing inside the compiled code recorded "
     "(baseline: unhooked, compiled)", "—"),
]


def call_costs(ctx, env):
    argv = [ctx.python, os.path.join(ctx.root, "tests", "bench", "workers", "value_call_cost.py"),
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
        plain_changed, ours = best["plain"][lib + "_add_changed"], best["stats"][lib + "_add_changed"]
        key = "value-%s-add-stats-changed" % lib
        rows[key] = group.row(key, "%.3f ms" % ours, "%.3f ms" % plain_changed, times(ours / plain_changed), None)
        floor = best["plain"][lib + "_read"]
        key = "value-%s-read-floor" % lib
        rows[key] = group.row(key, "%.3f ms" % floor, "%.3f ms" % plain, times(floor / plain), None)
    return rows


def measure_loop(group, ctx, options, settings, limits, baselines=None, script="mlp_loop.py", medians=None):
    """`script` (a loop of tests/bench/ that prints its timed loop's seconds first) with `options`,
    unhooked and under each row's OPHOOK_ `settings`, in turn; a row per key of `limits` (its
    ratio's bound, or None), against the unhooked loop or the variant `baselines` names for it.
    `medians`, when given, gets each variant's median loop seconds."""
    argv = [ctx.python, os.path.join(ctx.root, "tests", "bench", "programs", script), *options]

    def loop_s(env):
        done = subprocess.run(argv, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError("%s exited with %d: %s" % (script, done.returncode, done.stderr.strip()[-400:]))
        return float(done.stdout.split()[0])

    variants = {"plain": plain_env()}
    for key, setting in settings.items():
        variants[key] = preload_env(ctx.build, OPHOOK_LOG_LEVEL="warn", OPHOOK_OUTPUT=os.path.join(ctx.scratch, key),
                                    **setting)
    walls = interleaved(ctx.rounds(3), {name: (lambda env=env: loop_s(env)) for name, env in variants.items()})
    if medians is not None:
        medians.update({name: median(times) for name, times in walls.items()})
    rows = {}
    for key, limit in limits.items():
        ours, base = median(walls[key]), median(walls[(baselines or {}).get(key, "plain")])
        rows[key] = group.row(key, seconds(ours), seconds(base), times(ours / base),
                              None if limit is None else ours <= limit * base)
    return rows


def measure_mlp(group, ctx):
    options = ["--width", str(ctx.size(512, 32)), "--batch", str(ctx.size(128, 8)), "--steps", str(ctx.size(20, 2))]
    settings = {"value-mlp-nan": {"OPHOOK_NAN": "warn"},
                "value-mlp-nan-trace": {"OPHOOK_MODE": "trace", "OPHOOK_NAN": "warn"},
                "value-mlp-stats": {"OPHOOK_MODE": "stats"}}
    return measure_loop(group, ctx, options, settings,
                        {"value-mlp-nan": 1.5, "value-mlp-nan-trace": None, "value-mlp-stats": 1.2})


def measure_compiled(group, ctx):
    options = ["--compile", "--width", str(ctx.size(256, 32)), "--depth", "4", "--batch", str(ctx.size(64, 8)),
               "--steps", str(ctx.size(200, 2))]
    settings = {"compiled-record-trace": {"OPHOOK_MODE": "trace", "OPHOOK_COMPILE": "record"},
                "compiled-record-stats": {"OPHOOK_MODE": "stats", "OPHOOK_COMPILE": "record"},
                "compiled-ignore-trace": {"OPHOOK_MODE": "trace", "OPHOOK_COMPILE": "ignore"}}
    return measure_loop(group, ctx, options, settings,
                        {"compiled-record-trace": 1.3, "compiled-record-stats": 2.0, "compiled-ignore-trace": None})


GROUPS = [Group("value_calls", CALL_ROWS, measure_calls), Group("value_mlp", MLP_ROWS, measure_mlp),
          Group("compiled_step", COMPILED_ROWS, measure_compiled)]
