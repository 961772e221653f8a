"""The markdown table bench.py prints, and the number formats its cells use."""


def format_table(rows, verdicts):
    lines = ["| figure | ours | baseline | ratio | target | met? |", "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        met = "—" if not verdicts or r.met is None else ("yes" if r.met else "**no**")
        lines.append("| %s | %s | %s | %s | %s | %s |" % (r.figure, r.ours, r.baseline, r.ratio, r.target, met))
    return "\n".join(lines)


def micros(ns):
    return "%.2f µs" % (ns / 1000)


def nanos(ns):
    return "%.0f ns" % ns


def times(x):
    return "%.2fx" % x


def times_less(ours, baseline):
    """How many times less `ours` costs than `baseline` (both added costs)."""
    return "%.1fx less" % (baseline / ours) if ours > 0 else "— (ours ≤ 0: within noise)"


def per_second(x, unit):
    return "%.3g %s/s" % (x, unit)


def mebibytes(n):
    return "%.0f MiB" % (n / (1 << 20))


def mib_per_second(bytes_per_s):
    return "%.0f MiB/s" % (bytes_per_s / (1 << 20))


def seconds(s):
    return "%.2f s" % s


def millis(s):
    return "%.2f ms" % (s * 1000)
