"""What `ophook blame` prints and writes: a verdict line, the groups of --by and the calls most to
blame (at most --top of each), and the JSON report."""
import json

from .._replay.summary import json_number, number_text
from .ranking import BY, culprits, groups, ranked_calls


def _percent(share):
    if share is None:
        return "-"
    if share >= 0.01:
        return "%.0f%%" % (100 * share)
    return "<1%" if share > 0 else "0%"


def _first(values):
    return values[0] + (" (+%d)" % (len(values) - 1) if len(values) > 1 else "")


def verdict(blame, by):
    """The lines that say what blame found: the calls it ran, the final result's error and what
    needs more precision."""
    final = blame["final"]
    lines = ["ophook blame: %d calls, %d replayed in float64 (%d fed by the chain), %d skipped" % (
        blame["calls"], blame["replayed"], blame["chained"], blame["calls"] - blame["replayed"]),
        "final result: %s (seq %s, %s) %s: error %s against the float64 chain, tolerance %s" % (
            final["op"], final["seq"], final["source"] or "?", final["dtype"], number_text(final["error"]),
            number_text(final["tolerance"]))]
    if final["error"] <= final["tolerance"]:
        lines.append("nothing needs more precision: the final error is within the tolerance, no op is blamed")
        return lines
    named = culprits(groups(blame["results"], by))
    if named:
        lines.append("needs more precision (by %s): %s" % (by, ", ".join(
            "%s (%s of the final error)" % (e["key"], _percent(e["share"])) for e in named)))
    else:
        lines.append("no call's own rounding explains the final error: it is lost between calls, or in calls "
                     "blame skips")
    return lines


def tables(blame, by, top):
    """The two tables, most to blame first (at most `top` rows each): [(title, header, rows,
    shares)], each row's cells as text and its share of the final error (None: not measured)."""
    entries = groups(blame["results"], by)[:top]
    others = [(name, field) for name, field in (("op", "ops"), ("module", "modules"), ("line", "lines")) if name != by]
    calls = ranked_calls(blame["results"])[:top]
    return [("by %s, most to blame first" % by,
             ["share", "local max rel", "propagated", "calls", by] + [name for name, _ in others],
             [[_percent(e["share"]), number_text(e["max_rel"]), number_text(e["propagated"]), str(e["calls"]),
               e["key"]] + [_first(e[field]) for _, field in others] for e in entries],
             [e["share"] for e in entries]),
            ("calls, most to blame first",
             ["share", "local max rel", "propagated", "seq", "op", "phase", "module", "line"],
             [[_percent(r.get("share")), number_text(r["max_rel"]), number_text(r.get("propagated")), str(r["seq"]),
               r["op"], r.get("phase") or "-", r.get("module") or "-", r.get("source") or "?"] for r in calls],
             [r.get("share") for r in calls])]


def print_text(blame, by, top, out):
    for line in verdict(blame, by):
        out.write(line + "\n")
    for title, header, rows, _ in tables(blame, by, top):
        _table(out, title, header, rows)


def _table(out, title, header, rows):
    if not rows:
        return
    widths = [max(len(row[i]) for row in rows + [header]) for i in range(len(header))]
    out.write("\n%s:\n" % title)
    for row in [header] + rows:
        out.write("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() + "\n")


def _clean(value):
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return json_number(value)


def write_json(path, blame):
    final = blame["final"]
    within = final["error"] <= final["tolerance"]
    document = {"run": blame["run"], "final": final, "calls": blame["results"], "within_tolerance": within}
    for by in BY:
        entries = groups(blame["results"], by)
        document["by_" + by] = entries
        document["culprits_by_" + by] = [] if within else [e["key"] for e in culprits(entries)]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(_clean(document), f, indent=1)
        f.write("\n")
