"""Sustained dump throughput on large arrays, in one process, rounds interleaved: np.negative on a
--mib MiB float64 array, --calls times, recorded by ophook in dump mode (input and output files,
with statistics), timed until every file is on disk; against dd writing the same number of bytes
into the same directory, against np.save of the same arrays in a loop, and against the two floors
of a recorder: write() of the arrays' own bytes (no copy) and a copy of each array then write() of
the copy (what any recorder that snapshots arrays must at least do). Prints one JSON line: median
bytes per second of each."""
import os
import statistics
import subprocess
import time

import numpy as np

from worker_support import arguments, clear_directory, emit, file_stats, load_ophook

args = arguments(__doc__, mib=64, calls=4)
# Every call dumps the same arrays: these figures are about writing files (see load_ophook).
ophook = load_ophook(args.build, links=False)
array = np.arange(args.mib * (1 << 20) // 8, dtype=np.float64)


def ophook_dump(out):
    with ophook.Tracer(output=out, levels=["numpy"], mode="dump", stack=0, max_bytes="1T", log_level="warn"):
        start = time.perf_counter_ns()
        for _ in range(args.calls):
            np.negative(array)
        ophook.flush()
        elapsed = time.perf_counter_ns() - start
    return file_stats(out)[1], elapsed


def np_save_loop(out):
    start = time.perf_counter_ns()
    for i in range(args.calls):
        np.save(os.path.join(out, "in_%d.npy" % i), array)
        np.save(os.path.join(out, "out_%d.npy" % i), np.negative(array))
    return file_stats(out)[1], time.perf_counter_ns() - start


def write_files(out, i, arrays):
    for name, data in zip(("in", "out"), arrays):
        fd = os.open(os.path.join(out, "%s_%d.bin" % (name, i)), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data).cast("B")
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
    return sum(a.nbytes for a in arrays)


def write_loop(out):
    """write() of the input's and the output's own bytes: the floor without any copy."""
    start = time.perf_counter_ns()
    written = sum(write_files(out, i, (array, np.negative(array))) for i in range(args.calls))
    return written, time.perf_counter_ns() - start


def copy_write_loop(out):
    """A copy of the input before the call and of the output after it, then write() of the copies:
    the floor of a recorder that must snapshot the arrays (the program may change them later)."""
    start = time.perf_counter_ns()
    written = 0
    for i in range(args.calls):
        snapshot = array.copy()
        result = np.negative(array)
        written += write_files(out, i, (snapshot, result.copy()))
    return written, time.perf_counter_ns() - start


def dd(out):
    """dd from /dev/zero, one file: the floor of writing these bytes into this directory."""
    block = array.nbytes
    count = 2 * args.calls
    start = time.perf_counter_ns()
    subprocess.run(["dd", "if=/dev/zero", "of=" + os.path.join(out, "dd.bin"), "bs=%d" % block,
                    "count=%d" % count], check=True, stderr=subprocess.DEVNULL)
    return block * count, time.perf_counter_ns() - start


CONFIGS = {"ophook_dump": ophook_dump, "dd": dd, "np_save_loop": np_save_loop, "write_loop": write_loop,
           "copy_write_loop": copy_write_loop}


def main():
    rates = {name: [] for name in CONFIGS}
    for _ in range(args.rounds):
        for name, run in CONFIGS.items():
            out = os.path.join(args.out, name)
            clear_directory(out)
            # Every turn starts with nothing dirty in the page cache: the previous turn's 512 MiB
            # being written back (and its deleted files' blocks discarded) during this one made the
            # figures of a turn depend on the turn before it.
            os.sync()
            written, elapsed = run(out)
            rates[name].append(written / (elapsed / 1e9))
            clear_directory(out)
    emit({"bytes_per_s": {name: statistics.median(v) for name, v in rates.items()}})


if __name__ == "__main__":
    main()
