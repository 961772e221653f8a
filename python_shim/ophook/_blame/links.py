"""Which recorded call made each input of a call, and which calls are blamed at all.

An input is linked to the latest earlier call whose output has the same dtype, shape and content
digest (the `xxh64` of the values' statistics, which `dump` mode records for every array): the
recorder writes the bytes of an op's output and of the same array when the next op reads it, so
equal digests are the producer→consumer edges of the run. Arrays with no digest (no statistics,
no file) are not linked: the chain reads them from their files."""
from .._replay import ops
from .._replay.values import escape_pointer_key


def arrays_at(value, pointer):
    """(JSON Pointer, spec) of each recorded array in `value`, in the order the recorder wrote them."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield from arrays_at(item, "%s/%d" % (pointer, i))
    elif isinstance(value, dict) and value.get("kind") == "array":
        yield pointer, value


def input_arrays(record):
    yield from arrays_at(record.get("args") or [], "/args")
    for key, value in (record.get("kwargs") or {}).items():
        yield from arrays_at(value, "/kwargs/" + escape_pointer_key(key))


def output_arrays(record):
    return arrays_at(record.get("outputs") or [], "/outputs")


def content_key(spec):
    """What identifies an array's content across records, or None when the record holds no digest."""
    digest = (spec.get("stats") or {}).get("xxh64")
    if not digest or not spec.get("file"):
        return None
    return spec.get("dtype"), tuple(spec.get("shape") or ()), digest


def blamed_calls(records):
    """The calls blame judges, in seq order: those no replayable recorded call encloses. That is
    the outermost calls, and the calls inside one replay must skip (the aten ops of a backward pass
    inside `torch.Tensor.backward`): what a replayable call runs inside it is part of that call."""
    by_seq = {r["seq"]: r for r in records}
    enclosed = {}

    def inside_a_replayable_call(record):
        parent = by_seq.get(record.get("parent"))
        if parent is None:
            return False
        if parent["seq"] not in enclosed:
            enclosed[parent["seq"]] = ops.skip_reason(parent) is None or inside_a_replayable_call(parent)
        return enclosed[parent["seq"]]

    return [r for r in sorted(records, key=lambda r: r["seq"]) if not inside_a_replayable_call(r)]


def producers(calls):
    """{seq: {input pointer: (producer seq, output pointer)}} over `calls` (in seq order): each
    input linked to the latest earlier call among them whose output has its content."""
    latest = {}
    links = {}
    for record in calls:
        found = {}
        for pointer, spec in input_arrays(record):
            key = content_key(spec)
            if key in latest:
                found[pointer] = latest[key]
        links[record["seq"]] = found
        for pointer, spec in output_arrays(record):
            key = content_key(spec)
            if key is not None:
                latest[key] = (record["seq"], pointer)
    return links
