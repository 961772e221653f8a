"""Runs ophook's benchmarks and prints one markdown table: every figure against a baseline measured
in the same run (A/B interleaved, median of repetitions), with the target of issue 6 and whether
it is met. Called by scripts/bench.sh (see there for the options)."""
import argparse
import datetime
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

from figures import FIGURE_GROUPS
from measure import Context
from table import format_table

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"), help="build directory (build/)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one repetition, no verdicts")
    parser.add_argument("--only", help="regular expression: only the figures whose key or text it finds")
    parser.add_argument("--reps", type=int, help="repetitions (rounds) per figure instead of the default")
    parser.add_argument("--list", action="store_true", help="print the figure keys and exit")
    return parser.parse_args()


def command_output(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "?"


def versions(python):
    probe = ("import sys, numpy\n"
             "try:\n import torch; t = torch.__version__\nexcept ImportError:\n t = 'absent'\n"
             "print('Python %d.%d.%d' % sys.version_info[:3], 'NumPy', numpy.__version__, 'torch', t)")
    commit = command_output(["git", "-C", ROOT, "describe", "--always", "--dirty"])
    compiler = command_output(["c++", "--version"]).splitlines()[0]
    return "%s, ophook %s, %s" % (command_output([python, "-c", probe]), commit, compiler)


def header(args, python):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0]
    kind = "smoke run (tiny sizes, no verdicts)" if args.smoke else "full run"
    return ["ophook benchmarks, %s, %s" % (kind, now),
            "machine: %d cores (nproc), %s, Linux %s, load average %.1f at start"
            % (os.cpu_count(), cpu_model(), platform.release(), load),
            "versions: " + versions(python), ""]


def main():
    args = arguments()
    if args.list:
        for group in FIGURE_GROUPS:
            for key, text in group.rows:
                print("%-28s %s" % (key, text))
        return 0
    only = re.compile(args.only, re.I) if args.only else None
    python = os.path.join(ROOT, ".venv", "bin", "python")
    print("\n".join(header(args, python)), flush=True)
    scratch = tempfile.mkdtemp(prefix="ophook-bench-")
    rows, failed = [], False
    try:
        for group in FIGURE_GROUPS:
            wanted = [key for key, text in group.rows if not only or only.search(key) or only.search(text)]
            if not wanted:
                continue
            context = Context(build=os.path.abspath(args.build), python=python, smoke=args.smoke,
                              reps=args.reps, scratch=os.path.join(scratch, group.name), root=ROOT)
            started = time.monotonic()
            produced, error = group.run(context)
            # Progress on stderr (the table goes to stdout): which groups the run's time goes to.
            print("[bench] %s: %.0f s" % (group.name, time.monotonic() - started), file=sys.stderr, flush=True)
            for key in wanted:
                if key not in produced:
                    failed = True
                    produced[key] = group.error_row(key, error or "no figure produced")
                rows.append(produced[key])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(format_table(rows, verdicts=not args.smoke))
    print("\nload average %.1f at the end" % os.getloadavg()[0])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
