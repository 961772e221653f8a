"""The many-ranks figures (docs/ranks.md): the four-rank DDP loop (tests/bench/ddp_loop.py, gloo on
this machine's CPUs), unhooked and under each row's settings, A/B interleaved
(figures_values.measure_loop); each ratio against a variant measured in the same run."""
from figures_values import measure_loop
from measure import Group

DDP = "the DDP loop (`tests/bench/ddp_loop.py`: 4 ranks, gloo, MLP width 256, depth 4, 200 SGD steps)"
ROWS = [
    ("ranks-ddp-collectives", DDP + ", `OPHOOK_MODE=trace` with collectives recorded (the default levels): loop "
     "time (baseline: `trace` at `OPHOOK_LEVELS=numpy,torch_function`)", "≤ 1.1x"),
    ("ranks-ddp-replicas", "same, `OPHOOK_MODE=trace` + `OPHOOK_REPLICAS=100` (baseline: `trace`)", "≤ 1.02x"),
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
    return measure_loop(group, ctx, options, settings,
                        {"ranks-ddp-collectives": 1.1, "ranks-ddp-replicas": 1.02, "ranks-ddp-watcher": 1.01},
                        {"ranks-ddp-collectives": "trace-without-collectives", "ranks-ddp-replicas": "ranks-ddp-collectives",
                         "ranks-ddp-watcher": "watcher-file-store"},
                        script="ddp_loop.py")


GROUPS = [Group("ranks", ROWS, measure)]
