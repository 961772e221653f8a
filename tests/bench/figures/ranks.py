"""The many-ranks figures (docs/ranks.md): the four-rank DDP loop (tests/bench/programs/ddp_loop.py, gloo on
this machine's CPUs), unhooked and under each row's settings, A/B interleaved
(figures.values.measure_loop), each ratio against a variant measured in the same run; and
`ophook report` and `ophook compare` over runs of 64 to 16,384 rank directories
(report_many_ranks.py), against `cat` of the files each must read."""
import json
import os

from .values import measure_loop
from measure import Group

DDP = "the DDP loop (`tests/bench/programs/ddp_loop.py`: 4 ranks, gloo, MLP width 256, depth 4, 200 SGD steps)"
ROWS = [
    ("ranks-ddp-collectives", DDP + ", `OPHOOK_MODE=trace` with collectives recorded (the default levels): loop "
     "time (baseline: `trace` at `OPHOOK_LEVELS=numpy,torch_function`)", "≤ 1.1x"),
    ("ranks-ddp-replicas", "same, `OPHOOK_MODE=trace` + `OPHOOK_REPLICAS=100` (baseline: `trace`)", "≤ 1.02x"),
    ("ranks-ddp-replicas-thread", "same, what the checks took of rank 0's thread (`notes.replicas.program_thread_ms`: "
     "the digests) against its loop time", "≤ 2%"),
    ("ranks-ddp-watcher", "same, `OPHOOK_NAN=warn` (its ring; the trigger watcher and two store clients per rank, "
     "nothing fires): loop time (baseline: the same job initialised through a FileStore, where no watcher "
     "starts)", "≤ 1.01x"),
]


def measure(group, ctx):
    options = ["--ranks", str(ctx.size(4, 2)), "--steps", str(ctx.size(200, 2)), "--warmup", "2"]
    trace = {"OPHOOK_MODE": "trace"}
    settings = {"ranks-ddp-collectives": trace,
                "trace-without-collectives": dict(trace, OPHOOK_LEVELS="numpy,torch_function"),
                "ranks-ddp-replicas": dict(trace, OPHOOK_REPLICAS="100"),
                "ranks-ddp-watcher": {"OPHOOK_NAN": "warn"},
                "watcher-file-store": {"OPHOOK_NAN": "warn", "DDP_LOOP_STORE": "file"}}
    medians = {}
    rows = measure_loop(group, ctx, options, settings,
                        {"ranks-ddp-collectives": 1.1, "ranks-ddp-replicas": 1.02, "ranks-ddp-watcher": 1.01},
                        {"ranks-ddp-collectives": "trace-without-collectives", "ranks-ddp-replicas": "ranks-ddp-collectives",
                         "ranks-ddp-watcher": "watcher-file-store"},
                        script="ddp_loop.py", medians=medians)
    # The last run's rank 0 (each variant writes into its own directory under the scratch).
    with open(os.path.join(ctx.scratch, "ranks-ddp-replicas", "rank0", "summary.json")) as f:
        spent_s = json.load(f)["notes"]["replicas"]["program_thread_ms"] / 1e3
    loop_s = medians["ranks-ddp-replicas"]
    rows["ranks-ddp-replicas-thread"] = group.row("ranks-ddp-replicas-thread", "%.1f ms" % (spent_s * 1e3),
                                                  "%.2f s" % loop_s, "%.2f%%" % (100 * spent_s / loop_s),
                                                  spent_s <= 0.02 * loop_s)
    return rows


REPORT_RANKS = (64, 512, 4096, 16384)
REPORT = ("`ophook report` over {n} rank directories (copies of a real two-rank DDP job's, `stats`, an Inf "
          "carried by the allreduce): wall time, peak RSS, lines printed (baseline: `cat` of every rank's "
          "`summary.json` and the culprit's `trace.jsonl`)")
REPORT_ROWS = [("ranks-report-%d" % n, REPORT.format(n="{:,}".format(n)),
                "≤ 5 s, ≤ 200 MB, < 200 lines" if n == 4096 else "< 200 lines") for n in REPORT_RANKS]
COMPARE = ("`ophook compare` of {n} rank directories with as many (copies of rank 0 against the same run's, "
           "rank 1 as recorded: one rank differs): wall time, peak RSS, lines printed (baseline: `cat` of every "
           "`trace.jsonl` of both runs)")
COMPARE_ROWS = [("ranks-compare-%d" % n, COMPARE.format(n="{:,}".format(n)),
                 "≤ 200 MB, < 200 lines" if n >= 4096 else "< 200 lines") for n in REPORT_RANKS]


def measure_report(group, ctx):
    ranks = [ctx.size(n, max(2, n // 64)) for n in REPORT_RANKS]  # a smoke run: a 64th of the ranks
    runs = ctx.worker("report_many_ranks.py", ctx.rounds(3), ranks=",".join(map(str, ranks)),
                      steps=ctx.size(6, 4))["runs"]
    rows = {}
    for n, run in zip(REPORT_RANKS, runs):
        met = run["lines"] < 200 and (n != 4096 or (run["wall_s"] <= 5 and run["max_rss_mib"] <= 200))
        rows.update(timed_row(group, "ranks-report-%d" % n, run, met))
        compared = run["compare"]
        met = compared["lines"] < 200 and (n < 4096 or compared["max_rss_mib"] <= 200)
        rows.update(timed_row(group, "ranks-compare-%d" % n, compared, met))
    return rows


def timed_row(group, key, run, met):
    return {key: group.row(key, "%.2f s, %.0f MB, %d lines" % (run["wall_s"], run["max_rss_mib"], run["lines"]),
                           "%.2f s" % run["floor_s"], "%.1fx" % (run["wall_s"] / run["floor_s"]), met)}


GROUPS = [Group("ranks", ROWS, measure), Group("ranks-report", REPORT_ROWS + COMPARE_ROWS, measure_report)]
