"""Dump mode's storage figures: bytes on disk and wall time of `dump` on examples/torch_mlp.py and
on a NumPy pipeline whose outputs feed its next calls (numpy_pipeline.py), content stored once
(repeats are hard links) against the same run writing every file (OPHOOK_TEST_NO_LINKS=1), and
against the unhooked run; `stats` mode (the copies and statistics, no file) is the floor below
which `dump` cannot go."""
import json
import os

from measure import Group, interleaved, median, plain_env, preload_env, run_process
from table import mebibytes, seconds, times

MLP = "`examples/torch_mlp.py` width 512, depth 8, batch 128, 10 steps"
PIPELINE = "NumPy pipeline (`tests/bench/programs/numpy_pipeline.py`: 512 x 512 float32, matmul, maximum, mean, " \
           "subtract, norm, divide; 100 steps)"


def rows(key, workload, bytes_target, wall_target):
    return [
        (key + "-bytes", "`dump`, %s: bytes on disk (baseline: bytes the records name)" % workload, bytes_target),
        (key + "-bytes-before", "same: bytes on disk (baseline: the same run writing every file, no links)", "—"),
        (key + "-wall", "same: wall time (baseline: unhooked)", wall_target),
        (key + "-wall-before", "same: wall time writing every file, no links (baseline: unhooked)", "—"),
        (key + "-wall-floor", "the floor: the same run in `stats` mode, copies and statistics but no file "
         "(baseline: unhooked)", "—"),
    ]


ROWS = rows("dump-mlp", MLP, "≤ 35%", "≤ 1.6x") + rows("dump-pipeline", PIPELINE, "—", "—")


def bytes_on_disk(directory):
    """(bytes the records name, bytes of distinct files) of one run's .npy files."""
    named, distinct = 0, {}
    for entry in os.scandir(directory):
        if entry.name.endswith(".npy"):
            st = entry.stat(follow_symlinks=False)
            named += st.st_size
            distinct[st.st_ino] = st.st_size
    return named, sum(distinct.values())


def measure_workload(group, ctx, key, argv):
    out = os.path.join(ctx.scratch, key)
    common = dict(OPHOOK_LOG_LEVEL="warn", OPHOOK_MAX_BYTES="1T", OPHOOK_OUTPUT=out)
    envs = {
        "plain": plain_env(),
        "dump": preload_env(ctx.build, OPHOOK_MODE="dump", **common),
        "before": preload_env(ctx.build, OPHOOK_MODE="dump", OPHOOK_TEST_NO_LINKS="1", **common),
        "stats": preload_env(ctx.build, OPHOOK_MODE="stats", **common),
    }
    sizes = {}

    def run(name):
        wall = run_process(argv, envs[name]).wall_s
        if name in ("dump", "before"):
            sizes[name] = bytes_on_disk(out)
            with open(os.path.join(out, "summary.json")) as f:
                totals = json.load(f)["totals"]
            assert totals["bytes_written"] == sizes[name][1], (totals, sizes[name])
        return wall

    walls = interleaved(ctx.rounds(3), {name: lambda name=name: run(name) for name in envs})
    plain, dump, before, stats = (median(walls[name]) for name in envs)
    (named, ours), (_, written_before) = sizes["dump"], sizes["before"]
    return {
        key + "-bytes": group.row(key + "-bytes", mebibytes(ours), mebibytes(named), "%.0f%%" % (100 * ours / named),
                                  ours <= 0.35 * named if key == "dump-mlp" else None),
        key + "-bytes-before": group.row(key + "-bytes-before", mebibytes(ours), mebibytes(written_before),
                                         "%.0f%%" % (100 * ours / written_before), None),
        key + "-wall": group.row(key + "-wall", seconds(dump), seconds(plain), times(dump / plain),
                                 dump <= 1.6 * plain if key == "dump-mlp" else None),
        key + "-wall-before": group.row(key + "-wall-before", seconds(before), seconds(plain), times(before / plain), None),
        key + "-wall-floor": group.row(key + "-wall-floor", seconds(stats), seconds(plain), times(stats / plain), None),
    }


def measure(group, ctx):
    mlp = [ctx.python, os.path.join(ctx.root, "examples", "torch_mlp.py"), "--width", str(ctx.size(512, 32)),
           "--depth", str(ctx.size(8, 2)), "--batch", str(ctx.size(128, 8)), "--steps", str(ctx.size(10, 2))]
    pipeline = [ctx.python, os.path.join(ctx.root, "tests", "bench", "programs", "numpy_pipeline.py"), str(ctx.size(512, 16)),
                str(ctx.size(100, 3))]
    return {**measure_workload(group, ctx, "dump-mlp", mlp), **measure_workload(group, ctx, "dump-pipeline", pipeline)}


GROUPS = [Group("storage", ROWS, measure)]
