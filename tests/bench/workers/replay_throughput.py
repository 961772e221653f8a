"""Throughput of `ophook replay` (both cores) against tests/bench/workers/baselines/numpy_replay.py (one
process) on the same recorded run: a small NumPy + torch program recorded in dump mode, --calls
calls of eight ops on small arrays. Checks once that both replay every call and find them all
equal, then times them interleaved (ours, baseline, ...) and prints one markdown row:

    | replay N calls | ours calls/s | baseline calls/s | ratio | - |

    replay_throughput.py [--smoke] [--calls N] [--reps N] [--ophook PATH]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BASELINE = os.path.join(ROOT, "tests", "bench", "workers", "baselines", "numpy_replay.py")
OPS_PER_ROUND = 8
PROGRAM = """
import sys
import numpy as np
import torch
rng = np.random.default_rng(0)
a, b = rng.standard_normal((2, 16, 16)).astype(np.float32)
w = torch.from_numpy(rng.standard_normal((16, 16)).astype(np.float32))
for _ in range(int(sys.argv[1])):
    s = np.add(a, b)
    p = np.multiply(s, b)
    t = np.tanh(p)
    m = np.matmul(t, a)
    x = torch.from_numpy(m)
    y = torch.add(x, x)
    z = torch.nn.functional.linear(y, w)
    r = torch.relu(z)
"""


def record(directory, rounds, build):
    script = os.path.join(directory, "program.py")
    with open(script, "w") as f:
        f.write(PROGRAM)
    out = os.path.join(directory, "run")
    env = dict(os.environ, LD_PRELOAD=os.path.join(build, "libophook.so"), OPHOOK_OUTPUT=out, OPHOOK_MODE="dump",
               OPHOOK_LOG_LEVEL="warn")
    subprocess.run([sys.executable, script, str(rounds)], env=env, check=True)
    return out


def timed(argv):
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit("%s exited %d: %s" % (argv[:3], done.returncode, done.stderr[-400:]))
    return elapsed, done.stdout


def options(doc, default_calls, more=None):
    """(args, calls, reps) of a throughput script's command line: --smoke (400 calls, one round),
    --calls N (`default_calls`), --reps N (3), --ophook PATH (the build's), and what `more(parser)`
    adds."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    if more is not None:
        more(parser)
    parser.add_argument("--smoke", action="store_true", help="400 calls, one round: does it run?")
    parser.add_argument("--calls", type=int, help="calls recorded (%d)" % default_calls)
    parser.add_argument("--reps", type=int, help="timed rounds of each (3; smoke 1)")
    build = os.environ.get("OPHOOK_BUILD_DIR", os.path.join(ROOT, "build"))
    parser.add_argument("--ophook", default=os.path.join(build, "ophook"))
    args = parser.parse_args()
    return args, args.calls or (400 if args.smoke else default_calls), args.reps or (1 if args.smoke else 3)


def main():
    args, calls, reps = options(__doc__, 4000)
    scratch = tempfile.mkdtemp(prefix="ophook-replay-bench-")
    try:
        run = record(scratch, calls // OPS_PER_ROUND, os.path.dirname(args.ophook))
        ours_argv = [args.ophook, "replay", run, "--python", sys.executable]
        baseline_argv = [sys.executable, BASELINE, run]
        with open(os.path.join(run, "trace.jsonl")) as f:
            calls = sum(1 for _ in f)  # the program's calls, torch.from_numpy & co. included
        _, text = timed(ours_argv)  # also warms the page cache
        if "all %d replayed calls match" % calls not in text:
            raise SystemExit("ophook replay did not replay every call: %s" % text[-400:])
        _, counts = timed(baseline_argv)
        replayed, matched = map(int, counts.split())
        # The baseline passes over the one call with a list argument (default_rng's concatenate).
        if matched != replayed or replayed < calls - 1:
            raise SystemExit("the baseline replayed/matched %s of %d calls" % (counts.strip(), calls))
        ours, theirs = [], []
        for _ in range(reps):
            ours.append(timed(ours_argv)[0])
            theirs.append(timed(baseline_argv)[0])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    t_ours, t_base = statistics.median(ours), statistics.median(theirs)
    print("| replay %d calls | %.0f calls/s (%.2f s) | %.0f calls/s (%.2f s) | %.2fx | - |"
          % (calls, calls / t_ours, t_ours, replayed / t_base, t_base, (calls / t_ours) / (replayed / t_base)))


if __name__ == "__main__":
    main()
