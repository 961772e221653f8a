"""C++ figures from the Google Benchmark binary (tests/bench/cpp): each `<figure>:ours` /
`<figure>:baseline` pair becomes a row; repetitions randomly interleaved, medians compared."""
import json
import os
import re
import subprocess

from measure import Group
from table import nanos, times

ROWS = [
    ("cpp-npy_header", ".npy header encoding, 1-d float64 (baseline: one snprintf of the same dict)", "—"),
    ("cpp-npy_file_16", ".npy file, 16 float64, written unnamed and linked "
     "(baseline: open/write/close of the same bytes)",
     "—"),
    ("cpp-npy_file_4MiB", ".npy file, 4 MiB (baseline: open/write/close of the same bytes)", "—"),
    ("cpp-array_files_16x4MiB", "the writer's files for a batch of 16 different 4 MiB float32 arrays: digest, "
     "statistics and file of each (baseline: the writer thread alone, without file helpers)", "—"),
    ("cpp-record_queue", "record queue push + pop + release, per record (baseline: mutex + std::deque)", "—"),
    ("cpp-trace_line", "trace.jsonl line of np.add on 16 float64, with source (baseline: one snprintf of the "
     "same text)", "—"),
    ("cpp-api_line", "api_trace.txt line of the same call (baseline: one snprintf of the same text)", "—"),
    ("cpp-stats_f32_16", "statistics of 16 float32 (baseline: their plain sum)", "—"),
    ("cpp-stats_f32_16MiB", "statistics of 16 MiB of float32 (baseline: their plain sum, one pass)", "—"),
    ("cpp-stats_f64_64MiB", "statistics of 64 MiB of float64, more than the last-level cache (baseline: their plain "
     "sum, one pass)", "—"),
    ("cpp-compare_f32_16MiB_differing", "compare kernel, 2 x 16 MiB float32 that differ "
     "(baseline: max \\|a-b\\| loop), one thread", "—"),
    ("cpp-compare_f32_16MiB_identical", "compare kernel, 2 x 16 MiB identical float32 (baseline: memcmp)", "—"),
]


def medians(binary, smoke, reps):
    argv = [binary, "--benchmark_format=json", "--benchmark_repetitions=%d" % max(2, reps),  # aggregates need 2
            "--benchmark_enable_random_interleaving=true", "--benchmark_report_aggregates_only=true"]
    if smoke:
        argv.append("--benchmark_min_time=0.01")
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    result = {}
    for b in json.loads(done.stdout)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            figure, variant = re.match(r"([^:]+):(ours|baseline)", b["name"]).groups()
            per_item = b["real_time"] * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
            result.setdefault(figure, {})[variant] = (per_item, b.get("bytes_per_second"), b.get("items_per_second"))
    return result


def cell(time_ns, bytes_per_s, items_per_s):
    if bytes_per_s and bytes_per_s >= 100 * (1 << 20):  # small files: time per file says more
        return "%.0f MiB/s" % (bytes_per_s / (1 << 20))
    if items_per_s:
        return nanos(1e9 / items_per_s)
    return nanos(time_ns)


def measure(group, ctx):
    binary = os.path.join(ctx.build, "tests", "bench", "ophook_benchmarks")
    if not os.path.exists(binary):
        raise RuntimeError("%s is not built" % binary)
    os.environ["OPHOOK_BENCH_SCRATCH"] = ctx.scratch
    rows = {}
    for figure, pair in medians(binary, ctx.smoke, ctx.rounds(5)).items():
        ours, base = pair["ours"], pair["baseline"]
        rows["cpp-" + figure] = group.row("cpp-" + figure, cell(*ours), cell(*base), times(ours[0] / base[0]), None)
    return rows


GROUPS = [Group("cpp", ROWS, measure)]
