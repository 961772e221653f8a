"""The blamed calls added up per op, module and source line, and ranked: by the share of the final
error their calls explain (shares.py; summed over a group's calls, first order), then by how far
their local error is over its threshold."""
from .._bisect.groups import group_key
from .shares import severity

BY = ("op", "module", "line")
# A group is named as a culprit when its calls explain at least this much of the final error.
MIN_SHARE = 0.1


def _rank_key(entry):
    share = entry.get("share")
    return (-(share if share is not None else -1.0), -entry["severity"], entry.get("seq", 0))


def ranked_calls(results):
    """The replayed calls, most to blame first."""
    scored = [dict(r, severity=severity(r)) for r in results if r["status"] != "skipped"]
    return sorted(scored, key=_rank_key)


def groups(results, by):
    """One entry per key of `by` over the replayed calls, most to blame first: key, ops, modules,
    lines, phases, calls, share (None when no call of it was measured), max local error (max_rel,
    mean_rel), severity, the largest propagated error, and the seq of its worst call."""
    table = {}
    for r in results:
        if r["status"] == "skipped":
            continue
        key = group_key(r, by)
        entry = table.setdefault(key, {"key": key, "ops": [], "modules": [], "lines": [], "phases": [], "calls": 0,
                                       "share": None, "max_rel": None, "mean_rel": None, "severity": 0.0,
                                       "propagated": None, "worst_seq": r["seq"]})
        entry["calls"] += 1
        for field, value in (("ops", r["op"]), ("modules", r.get("module") or "-"),
                             ("lines", r.get("source") or "?"), ("phases", r.get("phase") or "-")):
            if value not in entry[field]:
                entry[field].append(value)
        if r.get("share") is not None:
            entry["share"] = r["share"] + (entry["share"] or 0.0)
        for field in ("max_rel", "mean_rel", "propagated"):
            if r.get(field) is not None and (entry[field] is None or r[field] > entry[field]):
                entry[field] = r[field]
        if severity(r) > entry["severity"]:
            entry["severity"], entry["worst_seq"] = severity(r), r["seq"]
    return sorted(table.values(), key=_rank_key)


def culprits(entries):
    return [e for e in entries if e.get("share") is not None and e["share"] >= MIN_SHARE]
