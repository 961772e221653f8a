"""What the in-process measurement workers share: the command line every worker takes, ophook
imported from a build tree (without its preload start-up), and the JSON result line the driver
(bench.py) reads from the worker's last stdout line."""
import argparse
import json
import os
import math
import statistics
import sys
import time


def arguments(doc, **defaults):
    """--build DIR, --out DIR (scratch directory), --rounds R, plus `defaults` (name -> int)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--build", required=True, help="build directory with python_shim/")
    parser.add_argument("--out", required=True, help="scratch directory for recorded output")
    parser.add_argument("--rounds", type=int, default=5)
    for name, value in defaults.items():
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=value)
    return parser.parse_args()


def load_ophook(build_dir, links=True):
    """The ophook package of `build_dir`. `links=False`: dump mode writes every file, none linked to
    an earlier one of the same bytes, for figures about writing files from arrays that repeat (the
    store-once figures are figures/storage.py's)."""
    if not links:
        os.environ["OPHOOK_TEST_NO_LINKS"] = "1"
    sys.path.insert(0, os.path.join(os.path.abspath(build_dir), "python_shim"))
    import ophook

    return ophook


BURST_CALLS = 2000


def fastest_burst_ns(run_calls, calls):
    """ns per call of the fastest burst of BURST_CALLS calls, running `calls` calls in all through
    run_calls(count). The machines this runs on are shared: another tenant's work only ever adds
    time, in stretches of milliseconds (back-to-back 4 ms bursts of one bare torch.add loop took
    1.6 to 3.6 µs per op), so the fastest burst is what the code itself costs. Figures that must
    include everything (until every record is written) time the whole run instead."""
    burst = min(calls, BURST_CALLS)
    best = math.inf
    for _ in range(max(1, calls // burst)):
        start = time.perf_counter_ns()
        run_calls(burst)
        best = min(best, (time.perf_counter_ns() - start) / burst)
    return best


def op_timer(op, calls, warm_up):
    """A function that returns the ns per call of op() — by the fastest burst of `calls` calls,
    after `warm_up` calls (first-call caches, the writer's start)."""
    def loop(count):
        for _ in range(count):
            op()

    def per_op_ns():
        loop(min(calls, warm_up))
        return fastest_burst_ns(loop, calls)

    return per_op_ns


def clear_directory(path):
    """Removes the files in `path` (recorded output between rounds), keeps the directory."""
    os.makedirs(path, exist_ok=True)
    for entry in os.scandir(path):
        if entry.is_file(follow_symlinks=False):
            os.unlink(entry.path)
        elif entry.is_dir(follow_symlinks=False):
            clear_directory(entry.path)
            os.rmdir(entry.path)


def fresh_directory(*parts):
    """A new, empty directory at os.path.join(*parts), for one configuration's turn in one round.
    Workers that count files per second keep every turn's files until the driver removes the
    scratch tree: for a minute or more after many files are deleted, ext4 scans the freed inodes
    on every file creation (`recently_deleted`), which made creating a file 25x slower (530 against
    19 µs) for whichever configuration ran after another's files were cleared."""
    path = os.path.join(*parts)
    os.makedirs(path)
    return path


def file_stats(path):
    """(number of .npy files, their total bytes) under `path`."""
    files = total = 0
    for root, _, names in os.walk(path):
        for name in names:
            if name.endswith(".npy"):
                files += 1
                total += os.path.getsize(os.path.join(root, name))
    return files, total


def paired_medians(rounds, reference):
    """{config: median over rounds of (value - reference's value in the same round)}."""
    return {name: statistics.median(r[name] - r[reference] for r in rounds) for name in rounds[0]}


def emit(result):
    print(json.dumps(result))
