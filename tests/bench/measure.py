"""The pieces every figure group uses: the run's context (build, sizes, repetitions), workers run as
subprocesses that print a JSON line, whole-process timing with peak RSS, and the table row."""
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from typing import Callable, Optional


@dataclasses.dataclass
class Row:
    figure: str
    ours: str
    baseline: str
    ratio: str
    target: str
    met: Optional[bool]  # None: no target, or not judged


@dataclasses.dataclass
class Context:
    build: str
    python: str
    smoke: bool
    reps: Optional[int]
    scratch: str
    root: str

    def size(self, full, smoke):
        return smoke if self.smoke else full

    def rounds(self, full):
        return self.reps or (1 if self.smoke else full)

    def worker(self, script, rounds, **options):
        """Runs tests/bench/workers/<script> with --build/--out/--rounds and `options`; its JSON line."""
        argv = [self.python, os.path.join(self.root, "tests", "bench", "workers", script), "--build", self.build,
                "--out", os.path.join(self.scratch, script), "--rounds", str(rounds)]
        for name, value in options.items():
            argv += ["--" + name.replace("_", "-"), str(value)]
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError("%s exited with %d: %s" % (script, done.returncode, done.stderr.strip()[-400:]))
        return json.loads(done.stdout.strip().splitlines()[-1])


def markdown_row_of(ctx, script, reps, *options):
    """Runs tests/bench/workers/<script> --ophook <build>/ophook --reps <reps> [--smoke] [options...], a
    script that ends its output with one markdown table row, and returns that row's cells."""
    argv = [ctx.python, os.path.join(ctx.root, "tests", "bench", "workers", script), "--ophook",
            os.path.join(ctx.build, "ophook"), "--reps", str(reps), *options]
    if ctx.smoke:
        argv.append("--smoke")
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("%s exited with %d: %s" % (script, done.returncode, done.stderr.strip()[-300:]))
    return [c.strip() for c in done.stdout.strip().splitlines()[-1].strip("|").split("|")]


@dataclasses.dataclass
class Process:
    wall_s: float
    max_rss_mib: float


def run_process(argv, env=None, statuses=(0,)):
    """Runs argv to its end (stdout/stderr discarded); its wall time and peak RSS (wait4). An exit
    status outside `statuses` raises."""
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        actions = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1),
                   (os.POSIX_SPAWN_DUP2, devnull, 2)]
        start = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, env if env is not None else os.environ, file_actions=actions)
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - start
    finally:
        os.close(devnull)
    if os.waitstatus_to_exitcode(status) not in statuses:
        raise RuntimeError("%s exited with status %d" % (" ".join(argv), os.waitstatus_to_exitcode(status)))
    return Process(wall, usage.ru_maxrss / 1024)


def interleaved(rounds, variants: dict):
    """{name: [result per round]}, calling each variant once per round, in turn."""
    results = {name: [] for name in variants}
    for _ in range(rounds):
        for name, run in variants.items():
            results[name].append(run())
    return results


median = statistics.median


def preload_env(build, **settings):
    env = dict(os.environ)
    env["LD_PRELOAD"] = os.path.join(build, "libophook.so")
    env.update({k: str(v) for k, v in settings.items()})
    return env


def plain_env():
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


class Group:
    """A set of figures measured together. `rows` lists (key, figure text, target text);
    `measure(context)` returns {key: Row}."""

    def __init__(self, name, rows, measure: Callable):
        self.name = name
        self.rows = [(key, text) for key, text, _ in rows]
        self.targets = {key: target for key, _, target in rows}
        self.texts = dict(self.rows)
        self.measure = measure

    def row(self, key, ours, baseline, ratio, met):
        return Row(self.texts[key], ours, baseline, ratio, self.targets[key], met)

    def error_row(self, key, error):
        return Row(self.texts[key], "error: " + error.replace("|", "\\|"), "", "", self.targets[key], None)

    def run(self, context):
        """({key: Row}, error text or None); a failure is reported, never raised."""
        os.makedirs(context.scratch, exist_ok=True)
        try:
            return self.measure(self, context), None
        except Exception as e:  # the table still prints; bench.py exits non-zero
            traceback.print_exc(file=sys.stderr)
            return {}, str(e).splitlines()[0][:200] if str(e) else type(e).__name__
