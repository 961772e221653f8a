"""Per-call cost of np.add on 16-element arrays under ophook and under the Python baselines, in one
process: every round runs each configuration once, in turn (A/B interleaved), ophook started and
stopped through its Python API around its turn (the per-call path is the one LD_PRELOAD installs).
Prints one JSON line: per configuration, the median over rounds of (its ns per call - the plain
call's ns per call in the same round), measured twice: by the fastest burst of the loop (what the
program's thread pays while the writer catches up on the other core; worker_support's
fastest_burst_ns says why the fastest) and over the whole loop until every record is written (the
loop, then a flush: the sustained rate, which the writer bounds once a run outlasts the queue);
for dump configurations also files per second, counting the time until every file is on disk;
and the machine's floors for two of them: the page cache's for the sustained rate of `trace`, the
kernel's for dump files per second."""
import os
import statistics
import subprocess
import time

import numpy as np

from baselines.json_recorder import JsonRecorder
from baselines.numpy_recorder import NumpyJsonRecorder
from baselines.seed_dump import SeedDumper
from worker_support import (arguments, emit, fastest_burst_ns, file_stats, fresh_directory, load_ophook,
                            paired_medians)

args = arguments(__doc__, calls=100_000)
# Every call dumps the same arrays: these figures are about writing files (see load_ophook).
ophook = load_ophook(args.build, links=False)
a = np.ones(16)
b = np.ones(16)


def loop(n):
    for _ in range(n):
        np.add(a, b)  # through the namespace, so that the seed-style wrappers see it too


def warm_up_calls(n):
    return min(n, 1000)


def timed_loop(n):
    """(start ns, ns per call of the fastest burst) of n calls, after a warm-up (first-call caches,
    the writer's start)."""
    loop(warm_up_calls(n))
    start = time.perf_counter_ns()
    return start, fastest_burst_ns(loop, n)


def plain(n, out):
    start, fastest = timed_loop(n)
    return fastest, time.perf_counter_ns() - start


def ophook_run(**options):
    def run(n, out):
        with ophook.Tracer(output=out, levels=["numpy"], log_level="warn", **options):
            start, fastest = timed_loop(n)
            ophook.flush()  # every record written and every file on disk
            return fastest, time.perf_counter_ns() - start

    return run


def python_recorder(stack):
    def run(n, out):
        recorder = JsonRecorder(os.path.join(out, "trace.jsonl"), stack=stack)
        patch = NumpyJsonRecorder(recorder)
        patch.install()
        try:
            start, fastest = timed_loop(n)
        finally:
            patch.uninstall()
            recorder.close()
        return fastest, time.perf_counter_ns() - start

    return run


def seed(n, out):
    dumper = SeedDumper(out)
    dumper.install()
    try:
        start, fastest = timed_loop(n)
        return fastest, time.perf_counter_ns() - start
    finally:
        dumper.uninstall()


def page_cache_floor(n, out, done):
    """The page cache's floor for the sustained figure of the run of n calls that wrote into `done`:
    write() of as many bytes as that run left in its text files (trace.jsonl, api_trace.txt), 64 KiB
    at a time as ophook's writer does, into a new file. Returns ns per call of that run (n calls
    plus the warm-up's, whose lines are in those files too). On a host that takes back idle guest
    memory every fresh page-cache page costs several times a reused one (memory_retouch.py), and
    this floor moves with it."""
    size = sum(os.path.getsize(os.path.join(done, name)) for name in ("trace.jsonl", "api_trace.txt"))
    chunk = b"x" * (64 * 1024)
    fd = os.open(os.path.join(out, "floor.txt"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        start = time.perf_counter_ns()
        for offset in range(0, size, len(chunk)):
            os.write(fd, chunk[:size - offset])
        elapsed = time.perf_counter_ns() - start
    finally:
        os.close(fd)
    return elapsed / (n + warm_up_calls(n))


def atomic_files_floor(n, out, done):
    """The kernel's floor for the files per second of the dump run that wrote into `done`: as many
    files of the same mean size, created atomically as ophook does, by a plain C loop on two
    threads (baselines/atomic_files.c). Returns files per second."""
    files, total = file_stats(done)
    seconds = subprocess.run([os.path.join(args.build, "tests", "bench", "ophook_bench_atomic_files"), out, str(files),
                              str(total // files), "2"], check=True, capture_output=True, text=True).stdout
    return files / float(seconds)


def np_save_loop(n, out):
    def body(count):
        for i in range(count):
            np.save(os.path.join(out, "a_%d.npy" % i), a)
            np.save(os.path.join(out, "b_%d.npy" % i), b)
            np.save(os.path.join(out, "out_%d.npy" % i), np.add(a, b))

    start = time.perf_counter_ns()
    body(n)
    elapsed = time.perf_counter_ns() - start
    return elapsed / n, elapsed


# configuration -> (floor name, run(n, out, that configuration's directory) -> ns per call or
# files per second): what the machine needs for a configuration's output, right after its turn.
FLOORS = {"ophook_trace_stack0": ("page_cache_stack0", page_cache_floor),
          "ophook_dump": ("atomic_files", atomic_files_floor)}

# name -> (run(n, out) -> (ns per call of the fastest burst, ns until every record and file is
# written), share of --calls)
CONFIGS = {
    "plain": (plain, 1),
    "ophook_trace_stack0": (ophook_run(mode="trace", stack=0), 1),
    "ophook_trace_stack1": (ophook_run(mode="trace", stack=1), 1),
    "ophook_filtered_out": (ophook_run(mode="trace", include="^nothing$"), 1),
    "ophook_step_filtered_out": (ophook_run(mode="trace", steps="1-"), 1),  # the loop stays at step 0
    "python_recorder_stack0": (python_recorder(False), 1 / 20),
    "python_recorder_stack1": (python_recorder(True), 1 / 20),
    "ophook_dump": (ophook_run(mode="dump", stack=0, max_bytes="64G"), 1 / 20),
    "seed_dump": (seed, 1 / 50),
    "np_save_loop": (np_save_loop, 1 / 50),
}


def main():
    per_call, per_call_written, files_per_s, floors = [], [], {}, {}
    for round_number in range(args.rounds):
        loop_round, written_round = {}, {}
        for name, (run, share) in CONFIGS.items():
            n = max(1, int(args.calls * share))
            out = fresh_directory(args.out, "round%d" % round_number, name)
            fastest_ns, written_ns = run(n, out)
            loop_round[name], written_round[name] = fastest_ns, written_ns / n
            files, _ = file_stats(out)
            if files:
                files *= n / (n + warm_up_calls(n))  # the warm-up's files were not timed
                files_per_s.setdefault(name, []).append(files / (written_ns / 1e9))
            if name in FLOORS:
                floor, measure_floor = FLOORS[name]
                floor_out = fresh_directory(args.out, "round%d" % round_number, floor)
                floors.setdefault(floor, []).append(measure_floor(n, floor_out, out))
        per_call.append(loop_round)
        per_call_written.append(written_round)
    emit({
        "plain_ns": statistics.median(r["plain"] for r in per_call),
        "added_ns": paired_medians(per_call, "plain"),
        "added_until_written_ns": paired_medians(per_call_written, "plain"),
        "files_per_s": {name: statistics.median(v) for name, v in files_per_s.items()},
        "floors": {name: statistics.median(v) for name, v in floors.items()},
    })


if __name__ == "__main__":
    main()
