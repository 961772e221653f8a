"""Throughput of `ophook blame` against `ophook replay --reference float64` on the same recorded
run (replay_throughput.py's NumPy + torch program, recorded in dump mode): blame runs every call in
float64 twice, in order (on its recorded inputs, and on the float64 chain), and here with
--tolerance 0 measures the share of its 16 most severe calls too (a chain run below each), where
replay runs each call once on all cores. Checks that blame judged every call, then times them
interleaved and prints one markdown row:

    | blame N calls | ours calls/s | replay --reference float64 calls/s | ratio | - |

    blame_throughput.py [--smoke] [--calls N] [--reps N] [--ophook PATH]
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from replay_throughput import OPS_PER_ROUND, options, record, timed


def main():
    args, calls, reps = options(__doc__, 2000)
    scratch = tempfile.mkdtemp(prefix="ophook-blame-bench-")
    try:
        run = record(scratch, calls // OPS_PER_ROUND, os.path.dirname(args.ophook))
        report = os.path.join(scratch, "blame.json")
        ours_argv = [args.ophook, "blame", run, "--tolerance", "0", "--json", report, "--python", sys.executable]
        replay_argv = [args.ophook, "replay", run, "--reference", "float64", "--python", sys.executable]
        with open(os.path.join(run, "trace.jsonl")) as f:
            calls = sum(1 for _ in f)
        timed(replay_argv)  # also warms the page cache
        _timed_blame(ours_argv)
        with open(report) as f:
            judged = json.load(f)["calls"]
        if len(judged) != calls:
            raise SystemExit("ophook blame judged %d of %d calls" % (len(judged), calls))
        ours, theirs = [], []
        for _ in range(reps):
            ours.append(_timed_blame(ours_argv))
            theirs.append(timed(replay_argv)[0])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    t_ours, t_replay = statistics.median(ours), statistics.median(theirs)
    print("| blame %d calls | %.0f calls/s (%.2f s) | %.0f calls/s (%.2f s) | %.2fx | - |"
          % (calls, calls / t_ours, t_ours, calls / t_replay, t_replay, t_replay / t_ours))


def _timed_blame(argv):
    """blame's time: its exit status 1 (the final error above --tolerance 0) is its answer."""
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit("ophook blame exited %d: %s" % (done.returncode, done.stderr[-400:]))
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
