"""`ophook compare` on 1 GiB of dumps against the NumPy script doing its work
(baselines/numpy_compare.py): measured by compare_throughput.py, which prints one markdown row
| compare <size> | ours | baseline | <ratio>x | target |; this group runs it and reads that row."""
from measure import Group, markdown_row_of

ROWS = [("compare-1GiB", "`ophook compare` on 1 GiB of dumps, medians of interleaved runs "
         "(baseline: NumPy script doing its work, both cores)", "≥ 2x")]


def measure(group, ctx):
    cells = markdown_row_of(ctx, "compare_throughput.py", ctx.rounds(5))
    ours, baseline, ratio = cells[1], cells[2], cells[3]
    return {"compare-1GiB": group.row("compare-1GiB", ours, baseline, ratio, float(ratio.rstrip("x")) >= 2)}


GROUPS = [Group("compare", ROWS, measure)]
