"""`ophook replay` throughput against a one-process Python loop doing the same loads, calls and
comparisons (baselines/numpy_replay.py), and `ophook blame`'s against `replay --reference float64`:
measured by replay_throughput.py and blame_throughput.py, which each print one markdown row
| <what> <calls> | ours | baseline | <ratio>x | - |; this group runs them and reads those rows."""
from measure import Group, markdown_row_of

ROWS = [("replay-calls", "`ophook replay` of a recorded NumPy + torch run (3501 calls on 16x16 float32), "
         "calls per second, both cores, the engine's start included (baseline: a Python loop doing the same "
         "loads, calls and comparisons, one process)", "—"),
        ("blame-rate", "`ophook blame` of a recorded NumPy + torch run (1751 calls on 16x16 float32, `--tolerance 0`: "
         "the shares of its 16 most severe calls measured), calls per second, the engine's start included "
         "(baseline: `ophook replay --reference float64` of the same run, both cores)", "—"),
        ("blame-rate-gpt2", "same, of a recorded transformers GPT-2 training run (`tests/bench/programs/gpt2_loop.py`, "
         "3 steps, dump mode)", "—")]


def measure(group, ctx):
    cells = markdown_row_of(ctx, "replay_throughput.py", ctx.rounds(3))
    blame = markdown_row_of(ctx, "blame_throughput.py", ctx.rounds(3))
    gpt2 = markdown_row_of(ctx, "blame_throughput.py", ctx.rounds(3), "--gpt2", "--calls", str(ctx.size(1740, 580)))
    return {"replay-calls": group.row("replay-calls", cells[1], cells[2], cells[3], None),
            "blame-rate": group.row("blame-rate", blame[1], blame[2], blame[3], None),
            "blame-rate-gpt2": group.row("blame-rate-gpt2", gpt2[1], gpt2[2], gpt2[3], None)}


GROUPS = [Group("replay", ROWS, measure)]
