"""Throughput of `ophook blame` against `ophook replay --reference float64` on the same recorded
run (replay_throughput.py's NumPy + torch program, recorded in dump mode): blame runs every call in
float64 twice, in order (on its recorded inputs, and on the float64 chain), and here with
--tolerance 0 measures the share of its 16 most severe calls too (a chain run below each), where
replay runs each call once on all cores. Checks that blame judged every call, then times them
interleaved and prints one markdown row:

    | blame N calls | ours calls/s | replay --reference float64 calls/s | ratio | - |

With --gpt2 the recorded run is instead gpt2_loop.py's transformers GPT-2 (from a config, AdamW),
recorded in dump mode for as many steps as --calls needs (a step is about 580 calls).

    blame_throughput.py [--smoke] [--calls N] [--reps N] [--ophook PATH] [--gpt2]
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from replay_throughput import OPS_PER_ROUND, options, record


GPT2_LOOP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "programs", "gpt2_loop.py")
GPT2_CALLS_PER_STEP = 580


def main():
    def more(parser):
        parser.add_argument("--gpt2", action="store_true", help="blame a recorded GPT-2 training run instead")

    args, calls, reps = options(__doc__, 2000, more)
    scratch = tempfile.mkdtemp(prefix="ophook-blame-bench-")
    try:
        build = os.path.dirname(args.ophook)
        if args.gpt2:
            run = _record_gpt2(scratch, max(1, round(calls / GPT2_CALLS_PER_STEP)), build)
        else:
            run = record(scratch, calls // OPS_PER_ROUND, build)
        report = os.path.join(scratch, "blame.json")
        ours_argv = [args.ophook, "blame", run, "--tolerance", "0", "--json", report, "--python", sys.executable]
        replay_argv = [args.ophook, "replay", run, "--reference", "float64", "--python", sys.executable]
        with open(os.path.join(run, "trace.jsonl")) as f:
            calls = sum(1 for _ in f)
        _timed_verdict(replay_argv)  # also warms the page cache
        _timed_verdict(ours_argv)
        with open(report) as f:
            judged = json.load(f)["calls"]
        if len(judged) != calls:
            raise SystemExit("ophook blame judged %d of %d calls" % (len(judged), calls))
        ours, theirs = [], []
        for _ in range(reps):
            ours.append(_timed_verdict(ours_argv))
            theirs.append(_timed_verdict(replay_argv))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    t_ours, t_replay = statistics.median(ours), statistics.median(theirs)
    print("| blame %d calls | %.0f calls/s (%.2f s) | %.0f calls/s (%.2f s) | %.2fx | - |"
          % (calls, calls / t_ours, t_ours, calls / t_replay, t_replay, t_replay / t_ours))


def _record_gpt2(directory, steps, build):
    out = os.path.join(directory, "run")
    env = dict(os.environ, LD_PRELOAD=os.path.join(build, "libophook.so"), OPHOOK_OUTPUT=out, OPHOOK_MODE="dump",
               OPHOOK_LOG_LEVEL="warn")
    subprocess.run([sys.executable, GPT2_LOOP, "--steps", str(steps), "--warmup", "0"], env=env, check=True,
                   capture_output=True)
    return out


def _timed_verdict(argv):
    """A run's time: exit status 1 is a verdict, not a failure (blame's final error above
    --tolerance 0; replay's calls over thresholds, as a GPT-2's are against float64)."""
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit("%s exited %d: %s" % (" ".join(argv[:2]), done.returncode, done.stderr[-400:]))
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
