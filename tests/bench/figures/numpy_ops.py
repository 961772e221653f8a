"""NumPy figures: per-call cost of a 16-element ufunc call (trace, stack, filtered out, dump) and
sustained dump throughput on 64 MiB arrays; workers numpy_call_cost.py, numpy_dump_throughput.py."""
from measure import Group
from table import micros, mib_per_second, nanos, per_second, times, times_less

CALL_ROWS = [
    ("numpy-trace-stack0", "NumPy ufunc, 16 elements, `trace`, `OPHOOK_STACK=0`: added per call "
     "(baseline: pure-Python recorder, no source)", "≤ 0.3 µs and ≥ 20x less"),
    ("numpy-trace-stack1", "same, `OPHOOK_STACK=1` (baseline: pure-Python recorder with sys._getframe source)",
     "≤ 0.6 µs"),
    ("numpy-trace-stack0-written", "same as `OPHOOK_STACK=0`, until every record is written (loop, then flush: the "
     "writer's sustained rate) (baseline: pure-Python recorder, loop, then close)", "≤ 0.3 µs and ≥ 20x less"),
    ("numpy-trace-stack0-written-floor", "same, until every record is written: whole time per call, the plain call "
     "included (baseline: write() of as many bytes as that run's trace.jsonl and api_trace.txt into a new file, "
     "64 KiB at a time, right after it: the page cache's floor)", "—"),
    ("numpy-filtered-out", "a call filtered out by `OPHOOK_INCLUDE`: added per call (baseline: plain call)",
     "≤ 30 ns added"),
    ("numpy-step-filtered-out", "a call outside the steps `OPHOOK_STEPS` selects: added per call "
     "(baseline: plain call)", "≤ 30 ns added"),
    ("numpy-dump16-call", "`dump`, 16 elements: time the program's thread pays per call "
     "(baseline: seed wrapper + np.save)", "≤ 2 µs"),
    ("numpy-dump16-files", "`dump`, 16 elements: files per second, until on disk (baseline: seed approach)",
     "≥ 3x"),
    ("numpy-dump16-files-floor", "`dump`, 16 elements: files per second (baseline: as many files of the same size "
     "created as ophook creates them, unnamed then linked, by a C loop on two threads right after it: the "
     "kernel's floor)", "—"),
    ("numpy-dump16-files-npsave", "`dump`, 16 elements: files per second (baseline: bare np.save loop)", "—"),
]

DUMP_ROWS = [
    ("numpy-dump64-dd", "`dump`, 64 MiB arrays: sustained bytes per second, until on disk "
     "(baseline: dd to the same directory)", "≥ 90%"),
    ("numpy-dump64-npsave", "`dump`, 64 MiB arrays: bytes per second (baseline: bare np.save loop)", "—"),
    ("numpy-dump64-write", "`dump`, 64 MiB arrays: bytes per second (baseline: write() of the arrays' own bytes)",
     "—"),
    ("numpy-dump64-copy-write", "`dump`, 64 MiB arrays: bytes per second (baseline: copy of each array, then "
     "write() of the copy: a snapshotting recorder's floor)", "—"),
    ("memory-retouch", "this machine: 1 GiB allocated and written 3 s after the last one was freed (baseline: "
     "right after): what a host that takes back idle guest memory adds to every fresh copy buffer above", "—"),
]


def measure_calls(group, ctx):
    r = ctx.worker("numpy_call_cost.py", ctx.rounds(7), calls=ctx.size(100_000, 2_000))
    added, files = r["added_ns"], r["files_per_s"]
    s0, s1 = added["ophook_trace_stack0"], added["ophook_trace_stack1"]
    w0, wp0 = r["added_until_written_ns"]["ophook_trace_stack0"], r["added_until_written_ns"]["python_recorder_stack0"]
    p0, p1 = added["python_recorder_stack0"], added["python_recorder_stack1"]
    filtered, plain = added["ophook_filtered_out"], r["plain_ns"]
    step_filtered = added["ophook_step_filtered_out"]
    page_cache, kernel_files = r["floors"]["page_cache_stack0"], r["floors"]["atomic_files"]
    dump, seed = added["ophook_dump"], added["seed_dump"]
    return {
        "numpy-trace-stack0": group.row("numpy-trace-stack0", micros(s0), micros(p0), times_less(s0, p0),
                                        s0 <= 300 and p0 >= 20 * s0),
        "numpy-trace-stack1": group.row("numpy-trace-stack1", micros(s1), micros(p1), times_less(s1, p1), s1 <= 600),
        "numpy-trace-stack0-written": group.row("numpy-trace-stack0-written", micros(w0), micros(wp0),
                                                times_less(w0, wp0), w0 <= 300 and wp0 >= 20 * w0),
        "numpy-trace-stack0-written-floor": group.row("numpy-trace-stack0-written-floor", micros(plain + w0),
                                                      micros(page_cache), times((plain + w0) / page_cache), None),
        "numpy-filtered-out": group.row("numpy-filtered-out", nanos(filtered), nanos(plain) + " per plain call",
                                        times((plain + filtered) / plain), filtered <= 30),
        "numpy-step-filtered-out": group.row("numpy-step-filtered-out", nanos(step_filtered),
                                             nanos(plain) + " per plain call",
                                             times((plain + step_filtered) / plain), step_filtered <= 30),
        "numpy-dump16-call": group.row("numpy-dump16-call", micros(dump), micros(seed), times_less(dump, seed),
                                       dump <= 2000),
        "numpy-dump16-files": group.row("numpy-dump16-files", per_second(files["ophook_dump"], "files"),
                                        per_second(files["seed_dump"], "files"),
                                        times(files["ophook_dump"] / files["seed_dump"]),
                                        files["ophook_dump"] >= 3 * files["seed_dump"]),
        "numpy-dump16-files-floor": group.row("numpy-dump16-files-floor", per_second(files["ophook_dump"], "files"),
                                              per_second(kernel_files, "files"),
                                              "%.0f%%" % (100 * files["ophook_dump"] / kernel_files), None),
        "numpy-dump16-files-npsave": group.row("numpy-dump16-files-npsave", per_second(files["ophook_dump"], "files"),
                                               per_second(files["np_save_loop"], "files"),
                                               times(files["ophook_dump"] / files["np_save_loop"]), None),
    }


def measure_dump(group, ctx):
    rates = ctx.worker("numpy_dump_throughput.py", ctx.rounds(5), mib=ctx.size(64, 1),
                       calls=ctx.size(4, 2))["bytes_per_s"]
    ours = rates["ophook_dump"]
    touch = ctx.worker("memory_retouch.py", ctx.rounds(3), mib=ctx.size(1024, 64), idle_s=ctx.size(3, 1))["ms"]
    return {
        "numpy-dump64-dd": group.row("numpy-dump64-dd", mib_per_second(ours), mib_per_second(rates["dd"]),
                                     "%.0f%%" % (100 * ours / rates["dd"]), ours >= 0.9 * rates["dd"]),
        "numpy-dump64-npsave": group.row("numpy-dump64-npsave", mib_per_second(ours),
                                         mib_per_second(rates["np_save_loop"]),
                                         "%.0f%%" % (100 * ours / rates["np_save_loop"]), None),
        "numpy-dump64-write": group.row("numpy-dump64-write", mib_per_second(ours),
                                        mib_per_second(rates["write_loop"]),
                                        "%.0f%%" % (100 * ours / rates["write_loop"]), None),
        "numpy-dump64-copy-write": group.row("numpy-dump64-copy-write", mib_per_second(ours),
                                             mib_per_second(rates["copy_write_loop"]),
                                             "%.0f%%" % (100 * ours / rates["copy_write_loop"]), None),
        "memory-retouch": group.row("memory-retouch", "%.0f ms" % touch["idle"], "%.0f ms" % touch["just_freed"],
                                    times(touch["idle"] / touch["just_freed"]), None),
    }


GROUPS = [Group("numpy_calls", CALL_ROWS, measure_calls), Group("numpy_dump", DUMP_ROWS, measure_dump)]
