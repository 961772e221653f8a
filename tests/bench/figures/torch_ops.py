"""PyTorch figures: per-op cost of ophook's torch modes (worker torch_op_cost.py), of reading
tensors through torch beside the direct path (worker torch_copy_cost.py) and the wall time of
examples/torch_mlp.py at a realistic width, hooked (LD_PRELOAD, trace) against unhooked."""
import os

from measure import Group, interleaved, median, plain_env, preload_env, run_process
from table import nanos, seconds, times, times_less

OP_ROWS = [
    ("torch-function-floor", "torch op (4 elements), `torch_function` level, `trace`: added per op "
     "(baseline: do-nothing Python TorchFunctionMode)", "≤ 1.3x"),
    ("torch-function-recording", "same (baseline: Python TorchFunctionMode recording the same fields)", "≥ 3x less"),
    ("torch-dispatch-floor", "torch op (4 elements), `torch_dispatch` level, `trace`: added per op "
     "(baseline: do-nothing Python TorchDispatchMode)", "≤ 1.3x"),
    ("torch-dispatch-recording", "same (baseline: Python TorchDispatchMode recording the same fields)", "≥ 3x less"),
]

COPY_ROWS = [
    ("torch-copy-stats", "torch op (4 elements, 3 tensors read), `torch_function` level, `stats`: added per op "
     "with `OPHOOK_TENSOR_COPY=torch` (baseline: the direct path, same run)", "—"),
    ("torch-copy-dump", "same, `dump` (baseline: the direct path, same run)", "—"),
    ("torch-copy-stats-large", "same, `stats`, 1 Mi elements (4 MiB: statistics reduced by torch, not copied) "
     "(baseline: the direct path, same run)", "—"),
]

MLP_ROWS = [
    ("torch-mlp", "`examples/torch_mlp.py` width 1024, batch 256, 30 steps, `trace`: wall time "
     "(baseline: unhooked)", "≤ 1.15x"),
]


def measure_ops(group, ctx):
    added = ctx.worker("torch_op_cost.py", ctx.rounds(7), calls=ctx.size(20_000, 300))["added_ns"]
    rows = {}
    for level in ("function", "dispatch"):
        ours, floor, recording = (added["ophook_torch_" + level], added["noop_%s_mode" % level],
                                  added["recording_%s_mode" % level])
        rows["torch-%s-floor" % level] = group.row("torch-%s-floor" % level, nanos(ours), nanos(floor),
                                                   times(ours / floor), ours <= 1.3 * floor)
        rows["torch-%s-recording" % level] = group.row("torch-%s-recording" % level, nanos(ours), nanos(recording),
                                                       times_less(ours, recording), recording >= 3 * ours)
    return rows


def measure_copies(group, ctx):
    small = ctx.worker("torch_copy_cost.py", ctx.rounds(5), calls=ctx.size(2_000, 100))["added_ns"]
    large = ctx.worker("torch_copy_cost.py", ctx.rounds(5), calls=ctx.size(100, 4), elements=ctx.size(1 << 20, 1 << 17),
                       with_dump=0)["added_ns"]
    rows = {}
    for key, added, mode in (("torch-copy-stats", small, "stats"), ("torch-copy-dump", small, "dump"),
                             ("torch-copy-stats-large", large, "stats")):
        ours, direct = added[mode + "_torch"], added[mode + "_auto"]
        rows[key] = group.row(key, nanos(ours), nanos(direct), times(ours / direct), None)
    return rows


def measure_mlp(group, ctx):
    script = os.path.join(ctx.root, "examples", "torch_mlp.py")
    argv = [ctx.python, script, "--width", str(ctx.size(1024, 64)), "--batch", str(ctx.size(256, 32)),
            "--steps", str(ctx.size(30, 2))]
    hooked_env = preload_env(ctx.build, OPHOOK_MODE="trace", OPHOOK_LOG_LEVEL="warn",
                             OPHOOK_OUTPUT=os.path.join(ctx.scratch, "mlp"))
    walls = interleaved(ctx.rounds(5), {
        "plain": lambda: run_process(argv, plain_env()).wall_s,
        "hooked": lambda: run_process(argv, hooked_env).wall_s,
    })
    ours, base = median(walls["hooked"]), median(walls["plain"])
    return {"torch-mlp": group.row("torch-mlp", seconds(ours), seconds(base), times(ours / base), ours <= 1.15 * base)}


GROUPS = [Group("torch_ops", OP_ROWS, measure_ops), Group("torch_copies", COPY_ROWS, measure_copies),
          Group("torch_mlp", MLP_ROWS, measure_mlp)]
