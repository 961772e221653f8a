"""The candidates of a bisection, from the first unchanged run's trace: the calls that may run in
higher precision, grouped by op, module or source line."""
import collections

_EIGHT_BITS = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
# The floating dtypes that widening to float64 / float32 changes.
NARROWER_THAN = {"float64": ("float16", "bfloat16", "float32") + _EIGHT_BITS, "float32": ("float16", "bfloat16") + _EIGHT_BITS}


def arrays_in(value):
    if isinstance(value, list):
        for item in value:
            yield from arrays_in(item)
    elif isinstance(value, dict) and value.get("kind") == "array":
        yield value


def _writes_an_argument(record):
    """In-place calls (x.add_(y), a += b, out=) write into the program's own array: widening their
    inputs would write a copy instead, so they stay as they are."""
    name = record["op"].rsplit(".", 1)[-1]
    in_place = (name.endswith("_") and not name.endswith("__")) or (name.startswith("__i") and name.endswith("__"))
    return in_place or "out" in (record.get("kwargs") or {})


def candidate(record, to):
    """Whether widening the call to `to` can change it: an outermost call, not in place, that
    returned and reads a floating array narrower than `to`."""
    narrower = NARROWER_THAN[to]
    return (record.get("parent") is None and not record.get("error") and not _writes_an_argument(record)
            and any(a.get("dtype") in narrower for a in arrays_in([record.get("args"), list((record.get("kwargs") or {}).values())])))


def group_key(record, by):
    if by == "op":
        return record["op"]
    if by == "module":
        return record.get("module") or "-"
    return record.get("source") or "?"


def build_groups(records, by, to):
    """The groups in the order their first call ran, each {"key", "ops", "modules", "lines",
    "calls": {op: [ordinals]}}: a call is its op and its ordinal among the op's outermost calls,
    which is how the program's side (upcast.py) finds it again."""
    ordinals = collections.Counter()
    groups = {}
    for record in sorted(records, key=lambda r: r["seq"]):
        if record.get("parent") is not None:
            continue
        op = record["op"]
        ordinal = ordinals[op]
        ordinals[op] += 1
        if not candidate(record, to):
            continue
        key = group_key(record, by)
        group = groups.setdefault(key, {"key": key, "ops": [], "modules": [], "lines": [], "calls": {}})
        for field, value in (("ops", op), ("modules", record.get("module") or "-"), ("lines", record.get("source") or "?")):
            if value not in group[field]:
                group[field].append(value)
        group["calls"].setdefault(op, []).append(ordinal)
    return list(groups.values())


def chosen_calls(groups, indices):
    """{op: ordinals} of the groups at `indices`: what one run widens."""
    calls = collections.defaultdict(list)
    for index in indices:
        for op, ordinals in groups[index]["calls"].items():
            calls[op].extend(ordinals)
    return {op: sorted(ordinals) for op, ordinals in calls.items()}
