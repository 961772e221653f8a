"""`ophook replay` throughput against a one-process Python loop doing the same loads, calls and
comparisons (baselines/numpy_replay.py): measured by replay_throughput.py, which prints one markdown
row | replay <calls> | ours | baseline | <ratio>x | - |; this group runs it and reads that row."""
from measure import Group, markdown_row_of

ROWS = [("replay-calls", "`ophook replay` of a recorded NumPy + torch run (3501 calls on 16x16 float32), "
         "calls per second, both cores, the engine's start included (baseline: a Python loop doing the same "
         "loads, calls and comparisons, one process)", "—")]


def measure(group, ctx):
    cells = markdown_row_of(ctx, "replay_throughput.py", ctx.rounds(3))
    return {"replay-calls": group.row("replay-calls", cells[1], cells[2], cells[3], None)}


GROUPS = [Group("replay", ROWS, measure)]
