"""Whole-process figures: dormant non-Python processes and `python -c pass` under LD_PRELOAD, and
peak RSS of a dump-heavy program (dump_memory_load.py) hooked against unhooked."""
import os
import tempfile

from measure import Group, interleaved, median, plain_env, preload_env, run_process
from table import millis, times

DORMANT_ROWS = [
    ("dormant-true", "dormant: `/bin/true` under `LD_PRELOAD`: wall time per run (baseline: without)", "≤ 1.05x"),
    ("dormant-sh", "dormant: `sh -c :` under `LD_PRELOAD`: wall time per run (baseline: without)", "≤ 1.05x"),
    ("dormant-floor-true", "the floor: an empty library under `LD_PRELOAD`, linked as the stub is: `/bin/true` "
     "(baseline: without)", "—"),
    ("dormant-floor-sh", "the floor: the same empty library: `sh -c :` (baseline: without)", "—"),
    ("python-pass", "`python -c pass` under `LD_PRELOAD` (no numpy imported), output on tmpfs: wall time "
     "per run (baseline: without)", "≤ 3 ms added"),
    ("python-pass-scratch", "same, output in the benchmark's scratch directory, after the benchmark's own "
     "file deletions (baseline: without)", "—"),
    ("python-pass-child", "same, as a child of a recorded run (`OPHOOK_ROOT_*` inherited: writes nothing) "
     "(baseline: without)", "≤ 3 ms added"),
]

MEMORY_ROWS = [
    ("memory-dump", "peak RSS, dump-heavy run (3 x 32 MiB arrays per call, `OPHOOK_QUEUE_BYTES=64M`) "
     "(baseline: unhooked)", "≤ unhooked + 64 MiB queue + 64 MiB"),
]


def batch_wall(argv, env, runs):
    """Mean wall seconds per run over `runs` runs in a row."""
    return sum(run_process(argv, env).wall_s for _ in range(runs)) / runs


def hooked_vs_plain(ctx, argv, runs, hooked_env, **other_envs):
    """Median wall seconds per run: hooked, plain, then each of `other_envs`, all interleaved."""
    envs = dict(hooked=hooked_env, plain=plain_env(), **other_envs)
    walls = interleaved(ctx.rounds(7), {name: lambda env=env: batch_wall(argv, env, runs) for name, env in envs.items()})
    return tuple(median(walls[name]) for name in envs)


def measure_dormant(group, ctx):
    env = preload_env(ctx.build, OPHOOK_OUTPUT=os.path.join(ctx.scratch, "out"))
    empty_env = dict(plain_env(), LD_PRELOAD=os.path.join(ctx.build, "tests", "bench", "libophook_bench_empty_preload.so"))
    rows = {}
    for name, argv, runs in (("true", ["/bin/true"], ctx.size(100, 3)), ("sh", ["/bin/sh", "-c", ":"], ctx.size(100, 3))):
        ours, base, floor = hooked_vs_plain(ctx, argv, runs, env, empty=empty_env)
        key, floor_key = "dormant-" + name, "dormant-floor-" + name
        rows[key] = group.row(key, millis(ours), millis(base), times(ours / base), ours <= 1.05 * base)
        rows[floor_key] = group.row(floor_key, millis(floor), millis(base), times(floor / base), None)
    # As a user's interpreter runs: with the shim's bytecode cached (PYTHONDONTWRITEBYTECODE, set
    # in some CI environments, would have every run compile the ophook modules anew).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    run_process([ctx.python, "-c", "pass"], env)
    child_env = dict(env, OPHOOK_ROOT_PID="1", OPHOOK_ROOT_OUTPUT=os.path.join(ctx.scratch, "out"))
    # The root replaces its previous run's six files on every run. On an ext4 scratch directory each
    # creation then walks the inodes freed in the last half minute, by the root's earlier runs and
    # the benchmark's other figures (about 1 ms per file here; README, "Measuring file figures"),
    # which measures the file system's recent past. On tmpfs a creation costs what the kernel
    # needs for it.
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None) as quiet:
        runs = (("python-pass", dict(env, OPHOOK_OUTPUT=os.path.join(quiet, "out"))), ("python-pass-scratch", env),
                ("python-pass-child", child_env))
        for key, hooked_env in runs:
            ours, base = hooked_vs_plain(ctx, [ctx.python, "-c", "pass"], ctx.size(10, 2), hooked_env)
            met = None if key == "python-pass-scratch" else ours - base <= 0.003
            rows[key] = group.row(key, "%s (+%s)" % (millis(ours), millis(ours - base)), millis(base),
                                  times(ours / base), met)
    return rows


def measure_memory(group, ctx):
    mib, calls, queue_mib = ctx.size(32, 1), ctx.size(20, 3), 64
    argv = [ctx.python, os.path.join(ctx.root, "tests", "bench", "programs", "dump_memory_load.py"), str(mib), str(calls)]
    out = os.path.join(ctx.scratch, "dumps")
    hooked_env = preload_env(ctx.build, OPHOOK_MODE="dump", OPHOOK_STACK=0, OPHOOK_LOG_LEVEL="warn",
                             OPHOOK_QUEUE_BYTES="%dM" % queue_mib, OPHOOK_MAX_BYTES="1T", OPHOOK_OUTPUT=out)
    rss = interleaved(ctx.rounds(3), {
        "plain": lambda: run_process(argv, plain_env()).max_rss_mib,
        "hooked": lambda: run_process(argv, hooked_env).max_rss_mib,
    })
    ours, base = median(rss["hooked"]), median(rss["plain"])
    return {"memory-dump": group.row("memory-dump", "%.0f MiB" % ours, "%.0f MiB" % base, times(ours / base),
                                     ours <= base + queue_mib + 64)}


GROUPS = [Group("dormant", DORMANT_ROWS, measure_dormant), Group("memory", MEMORY_ROWS, measure_memory)]
