"""The training monitor's figures (docs/monitor.md): whole training loops, unhooked and under
OPHOOK_MONITOR, A/B interleaved (figures.values.measure_loop), timed after two untimed steps: the
first step also names the parameters (one scan of the live modules, tens of milliseconds once)."""
from .values import measure_loop
from measure import Group

MLP = "the MLP loop (`tests/bench/programs/mlp_loop.py`: width 512, depth 8, batch 128, 20 SGD steps after 2 untimed)"
ROWS = [
    ("monitor-mlp", MLP + ", `OPHOOK_MONITOR=1` alone (parameters, gradients, updates, loss): loop time "
     "(baseline: unhooked)", "≤ 1.05x"),
    ("monitor-mlp-modules", "same, `OPHOOK_MONITOR=modules` (and every module's activations)", "≤ 1.2x"),
    ("monitor-mlp-stats", "same, `OPHOOK_MONITOR=1` + `OPHOOK_MODE=stats` (every op's statistics: the spike's op "
     "named)", "≤ 1.25x"),
    ("monitor-mlp-ring-steps", "same, `OPHOOK_MONITOR=1` + `OPHOOK_RING_STEPS=2` (the arrays of the last 2 steps "
     "held, written on a trigger)", "—"),
    ("monitor-gpt2", "transformers GPT-2 from a config (`tests/bench/programs/gpt2_loop.py`: 2 layers, width 64, AdamW, "
     "DataLoader, 60 steps after 2 untimed), `OPHOOK_MONITOR=1` alone: loop time (baseline: unhooked)", "≤ 1.05x"),
]


def measure(group, ctx):
    options = ["--width", str(ctx.size(512, 32)), "--batch", str(ctx.size(128, 8)), "--steps", str(ctx.size(20, 2)),
               "--warmup", "2"]
    settings = {"monitor-mlp": {"OPHOOK_MONITOR": "1"},
                "monitor-mlp-modules": {"OPHOOK_MONITOR": "modules"},
                "monitor-mlp-stats": {"OPHOOK_MONITOR": "1", "OPHOOK_MODE": "stats"},
                "monitor-mlp-ring-steps": {"OPHOOK_MONITOR": "1", "OPHOOK_RING_STEPS": "2"}}
    rows = measure_loop(group, ctx, options, settings,
                        {"monitor-mlp": 1.05, "monitor-mlp-modules": 1.2, "monitor-mlp-stats": 1.25,
                         "monitor-mlp-ring-steps": None})
    # 60 steps of about 19 ms: at 20 the loop's 0.4 s moved with the machine's load by more than the monitor's cost.
    rows.update(measure_loop(group, ctx, ["--steps", str(ctx.size(60, 2)), "--warmup", str(ctx.size(2, 1))],
                             {"monitor-gpt2": {"OPHOOK_MONITOR": "1"}}, {"monitor-gpt2": 1.05}, script="gpt2_loop.py"))
    return rows


GROUPS = [Group("monitor", ROWS, measure)]
