"""`ophook compare BASE NEW --referee float64`: for the ops whose outputs differ between two runs,
which run is closer to the float64 answer? Each side's call is re-run in float64 on that side's own
recorded inputs, and its recorded output's maximum relative error (MARE, reference.py) against
that answer is taken; per op the largest over its judged pairs decides.

Request (JSON, from `ophook compare`): {"base": DIR, "new": DIR, "ops": [{"op": NAME, "pairs":
[[BASE_SEQ, NEW_SEQ(, BASE_PROCESS_DIR, NEW_PROCESS_DIR(, KERNEL))], ...]}]} (`compare` chooses the
pairs; a pair of a worker or rank names its processes' directories, else the runs' own). KERNEL,
for a compiled kernel paired with an eager call ({"kernel": "base"|"new", "output": the eager
call's output path, "file": the kernel output's .npy}): a kernel cannot be re-run, so its output
stands in for the eager call's in a copy of that call, judged against the same float64 re-run. Response: {"ops": [{"op", "closer": "base"|"new"|"tie"|null,
"base_max_rel", "new_max_rel", "pairs_judged", "reason"}]}."""
import json
import re

from .runner import run_tasks
from .trace_file import InputError, read_records

# Errors closer than this (relatively) are a tie.
TIE_RATIO = 1.01


def judge(request, jobs):
    records = {}  # process directory -> {seq: record}

    def record(run_dir, seq):
        if run_dir not in records:
            records[run_dir] = {r["seq"]: r for r in read_records(run_dir)}
        if seq not in records[run_dir]:
            raise InputError("referee: no call with seq %s in %s" % (seq, run_dir))
        return records[run_dir][seq]

    tasks, owners = [], []
    for index, entry in enumerate(request["ops"]):
        for pair in entry["pairs"]:
            base_seq, new_seq = pair[:2]
            base_dir, new_dir = pair[2:4] if len(pair) >= 4 else (request["base"], request["new"])
            kernel = pair[4] if len(pair) >= 5 else None
            sides = [(base_dir, record(base_dir, base_seq)), (new_dir, record(new_dir, new_seq))]
            if kernel:
                at = 0 if kernel["kernel"] == "base" else 1
                eager_dir, eager = sides[1 - at]
                sides[at] = (eager_dir, _with_output(eager, kernel["output"], kernel["file"]))
            for run_dir, call in sides:
                tasks.append((run_dir, call, "reference", 0))
            owners.append(index)
    results = run_tasks(tasks, jobs, "referee")
    verdicts = [{"op": entry["op"], "closer": None, "base_max_rel": None, "new_max_rel": None, "pairs_judged": 0,
                 "reason": ""} for entry in request["ops"]]
    for pair, index in enumerate(owners):
        _add_pair(verdicts[index], results[2 * pair], results[2 * pair + 1])
    for verdict in verdicts:
        _decide(verdict)
    return {"ops": verdicts}


def _with_output(record, path, file):
    """A copy of `record` whose output at flattened `path` ("outputs[0]", "outputs[1][0]") is read
    from `file` (an absolute path)."""
    copy = json.loads(json.dumps(record))
    indices = [int(i) for i in re.findall(r"\[(\d+)\]", path[len("outputs"):])]
    if not path.startswith("outputs[") or not indices:
        raise InputError("referee: output path %r of seq %s is not an output" % (path, record.get("seq")))
    holder = copy["outputs"]
    for index in indices[:-1]:
        holder = holder[index]
    holder[indices[-1]] = dict(holder[indices[-1]], file=file)
    return copy


def _add_pair(verdict, base, new):
    if base["max_rel"] is None or new["max_rel"] is None:
        skipped = base if base["max_rel"] is None else new
        verdict["reason"] = verdict["reason"] or "seq %s: %s" % (skipped["seq"], skipped["reason"] or "no error")
        return
    verdict["pairs_judged"] += 1
    for key, result in (("base_max_rel", base), ("new_max_rel", new)):
        verdict[key] = result["max_rel"] if verdict[key] is None else max(verdict[key], result["max_rel"])


def _decide(verdict):
    if not verdict["pairs_judged"]:
        return
    b, n = verdict["base_max_rel"], verdict["new_max_rel"]
    if max(b, n) <= min(b, n) * TIE_RATIO:
        verdict["closer"] = "tie"
    else:
        verdict["closer"] = "base" if b < n else "new"
    verdict["reason"] = ""
