"""Throughput of `ophook compare` against tests/bench/workers/baselines/numpy_compare.py on the same dumps.

Writes two synthetic runs (trace.jsonl + float32 .npy files, --bytes in all, half per run) in which
most arrays differ slightly, a quarter are identical and some hold NaNs, checks once that both tools
report the same per-op numbers, then times them interleaved (ours, baseline, ours, ...) on a warm
page cache and prints one markdown row with the medians:

    | compare 1 GiB | ours | baseline | ratio | target >= 2x |

    compare_throughput.py [--smoke] [--bytes N] [--reps N] [--ophook PATH]
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BASELINE = os.path.join(ROOT, "tests", "bench", "workers", "baselines", "numpy_compare.py")
MIB = 1 << 20
# A run's arrays, in bytes, cycled through (scaled down for small runs): a few big activations,
# many small ones; each size has its op.
SIZE_PATTERN = ([(32 * MIB, "numpy.matmul")] + [(4 * MIB, "numpy.add")] * 4
                + [(256 << 10, "numpy.exp")] * 16 + [(16 << 10, "numpy.multiply")] * 64)


def human_bytes(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", 1 << 10)):
        if n >= size:
            return "%g %s" % (round(n / size, 2), unit)
    return "%d B" % n


def arrays(run_bytes):
    """(op, bytes) of each call of a run holding `run_bytes` of arrays."""
    scale = min(1.0, run_bytes / sum(size for size, _ in SIZE_PATTERN))
    calls, total, k = [], 0, 0
    while total < run_bytes:
        size, op = SIZE_PATTERN[k % len(SIZE_PATTERN)]
        size = max(64, min(int(size * scale), run_bytes - total) // 4 * 4)
        calls.append((op, size))
        total += size
        k += 1
    return calls


def variant(seq, base):
    """NEW's array for call `seq`: every 4th identical to BASE; every 8th (from 1) scaled by
    1 + 1e-3 (not close); the rest scaled by 1 + 1e-6 (close, but not bitwise equal, so every metric
    is computed); every 16th (from 3) also gets a NaN that BASE lacks."""
    if seq % 4 == 0:
        new = base
    else:
        new = base * np.float32(1 + 1e-3 if seq % 8 == 1 else 1 + 1e-6)
    if seq % 16 == 3:
        new = new.copy()
        new[len(new) // 2] = np.nan
    return new


def write_runs(directory, total_bytes):
    """Two run directories (base, new) holding `total_bytes` of .npy data together."""
    rng = np.random.default_rng(0)
    dirs = [os.path.join(directory, name) for name in ("base", "new")]
    for d in dirs:
        os.makedirs(d)
    traces = [open(os.path.join(d, "trace.jsonl"), "w") for d in dirs]
    for seq, (op, size) in enumerate(arrays(total_bytes // 2)):
        base = rng.standard_normal(size // 4, dtype=np.float32)
        if seq % 5 == 0:
            base[0] = np.nan
        name = "op_%s_output_%06d.npy" % (op, seq)
        for d, trace, array in zip(dirs, traces, (base, variant(seq, base))):
            np.save(os.path.join(d, name), array)
            value = {"kind": "array", "shape": [array.size], "dtype": "float32", "device": "cpu",
                     "file": name, "stats": None}
            record = {"seq": seq, "op": op, "framework": "numpy", "level": "ufunc", "args": [],
                      "kwargs": {}, "outputs": [value], "error": None, "t_ns": seq * 1000,
                      "dur_ns": 1000, "pid": 1, "tid": 1, "depth": 0,
                      "source": "model.py:%d:forward" % (10 + seq % 50), "module": None,
                      "phase": None}
            trace.write(json.dumps(record) + "\n")
    for trace in traces:
        trace.close()
    return dirs


def rate(total, seconds):
    return "%.2f s (%.0f MiB/s)" % (seconds, total / MIB / seconds)


def timed(argv):
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 1:  # the runs differ: anything else is a failure of the tool
        raise SystemExit("%s exited %d: %s" % (argv[:2], done.returncode, done.stderr[-400:]))
    return elapsed


def check_same_numbers(ours_json, baseline_json):
    """Both tools must have done the same work: per op, the same pair counts and NaN/Inf
    mismatches, and the same errors and cosines."""
    ours = {o["op"]: o for o in json.load(open(ours_json))["ops"]}
    theirs = {o["op"]: o for o in json.load(open(baseline_json))["ops"]}
    assert ours.keys() == theirs.keys(), (sorted(ours), sorted(theirs))
    for op, b in theirs.items():
        o = ours[op]
        for key in ("pairs", "differing", "nonfinite_mismatches"):
            assert o[key] == b[key], (op, key, o, b)
        for key in ("max_abs_err", "max_rel_err", "min_cosine"):
            assert math.isclose(o[key], b[key], rel_tol=1e-9), (op, key, o, b)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="8 MiB, one round: does it run?")
    parser.add_argument("--bytes", type=int, help="dump bytes of both runs together (1 GiB)")
    parser.add_argument("--reps", type=int, help="timed rounds of each tool (5; smoke 1)")
    build = os.environ.get("OPHOOK_BUILD_DIR", os.path.join(ROOT, "build"))
    parser.add_argument("--ophook", default=os.path.join(build, "ophook"))
    args = parser.parse_args()
    total = args.bytes or (8 * MIB if args.smoke else 1 << 30)
    reps = args.reps or (1 if args.smoke else 5)

    scratch = tempfile.mkdtemp(prefix="ophook-compare-bench-")
    try:
        base, new = write_runs(scratch, total)
        ours_argv = [args.ophook, "compare", base, new]
        baseline_argv = [sys.executable, BASELINE, base, new]
        ours_json, baseline_json = (os.path.join(scratch, n) for n in ("ours.json", "baseline.json"))
        timed(ours_argv + ["--json", ours_json])  # also warms the page cache
        timed(baseline_argv + ["--json", baseline_json])
        check_same_numbers(ours_json, baseline_json)
        ours, theirs = [], []
        for _ in range(reps):
            ours.append(timed(ours_argv))
            theirs.append(timed(baseline_argv))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    t_ours, t_base = statistics.median(ours), statistics.median(theirs)
    print("| compare %s | %s | %s | %.1fx | target >= 2x |"
          % (human_bytes(total), rate(total, t_ours), rate(total, t_base), t_base / t_ours))


if __name__ == "__main__":
    main()
