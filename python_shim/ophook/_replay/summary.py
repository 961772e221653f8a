"""What a replay found, added up: totals, the ops ranked by error, the reasons calls were skipped."""
import math

STATUSES = ("match", "mismatch", "skipped")


def totals(results):
    counts = {status: 0 for status in STATUSES}
    for r in results:
        counts[r["status"]] += 1
    return {"calls": len(results), "replayed": counts["match"] + counts["mismatch"], **counts}


def per_op(results):
    """One entry per op: counts by status, the largest errors and the call that had them; the ops
    with mismatches first, then by max_rel (largest first), then by name."""
    ops = {}
    for r in results:
        entry = ops.setdefault(r["op"], {"op": r["op"], "calls": 0, "match": 0, "mismatch": 0, "skipped": 0,
                                         "max_abs": None, "max_rel": None, "mean_rel": None,
                                         "threshold": None, "worst_seq": None})
        entry["calls"] += 1
        entry[r["status"]] += 1
        if r.get("max_rel") is not None and (entry["max_rel"] is None or r["max_rel"] > entry["max_rel"]):
            entry["max_rel"], entry["worst_seq"] = r["max_rel"], r["seq"]
        for key in ("max_abs", "mean_rel"):
            if r.get(key) is not None and (entry[key] is None or r[key] > entry[key]):
                entry[key] = r[key]
        if r.get("threshold") is not None:
            entry["threshold"] = r["threshold"] if entry["threshold"] is None else min(entry["threshold"], r["threshold"])
    return sorted(ops.values(), key=lambda e: (e["mismatch"] == 0, -_sortable(e["max_rel"]), e["op"]))


def skip_reasons(results):
    """[(count, reason, ops)] of the skipped calls, most frequent first."""
    groups = {}
    for r in results:
        if r["status"] == "skipped":
            count, ops = groups.get(r["reason"], (0, []))
            if r["op"] not in ops:
                ops.append(r["op"])
            groups[r["reason"]] = (count + 1, ops)
    return sorted(((c, reason, ops) for reason, (c, ops) in groups.items()), key=lambda g: (-g[0], g[1]))


def _sortable(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return -1.0
    return value


def number_text(value):
    """A short number for the reports: '-' when unknown."""
    if value is None:
        return "-"
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return str(value)
    return "%.3g" % value


def json_number(value):
    """A number for JSON: NaN and infinities as strings, as `ophook compare --json` writes them."""
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value
