"""Reading a run's trace.jsonl, and choosing the calls to replay."""
import bisect
import json
import os
import re
import sys


class InputError(Exception):
    """Bad input (a missing run, a malformed trace line, an unknown seq): exit status 2."""


def read_records(run_dir):
    """The records of RUN_DIR/trace.jsonl, each with the thread count torch ran it with where the
    run noted one (under TORCH_THREADS). A truncated last line (a killed run) is left out with a
    warning; any other malformed line is an InputError naming the file and line."""
    path = os.path.join(run_dir, "trace.jsonl")
    try:
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")
    except OSError as error:
        raise InputError("%s: %s" % (path, error.strerror or error))
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict) or "seq" not in record or "op" not in record:
                raise ValueError("not a trace record")
        except ValueError as error:
            if number == len(lines):  # no newline after it: the line being written when the run died
                sys.stderr.write("ophook replay: warning: %s:%d: truncated last line ignored\n" % (path, number))
                continue
            raise InputError("%s:%d: malformed trace line: %s" % (path, number, error))
        records.append(record)
    _note_torch_threads(run_dir, records)
    return records


# The record key under which read_records puts the intra-op thread count torch ran the call with.
TORCH_THREADS = "_torch_threads"


def _note_torch_threads(run_dir, records):
    """Gives each record the intra-op thread count torch ran it with, from summary.json's
    notes.torch_threads (noted in dump mode at the first call after each change): a product's or a
    reduction's bits depend on it. Nothing when the run has no such note (a killed run, trace or
    stats mode, no torch)."""
    try:
        with open(os.path.join(run_dir, "summary.json"), encoding="utf-8") as f:
            changes = sorted((int(c["seq"]), int(c["threads"])) for c in json.load(f)["notes"]["torch_threads"]["changes"])
    except (OSError, ValueError, KeyError, TypeError):
        return
    starts = [seq for seq, _ in changes]
    for record in records:
        at = bisect.bisect_right(starts, record["seq"]) - 1
        if at >= 0:
            record[TORCH_THREADS] = changes[at][1]


def select(records, include=None, exclude=None, seqs=None):
    """The records whose op matches `include` and not `exclude` (regexes searched in the op name)
    and, when `seqs` is given, whose seq is in it; an unknown seq is an InputError."""
    try:
        include_re = re.compile(include) if include else None
        exclude_re = re.compile(exclude) if exclude else None
    except re.error as error:
        raise InputError("bad regular expression %r: %s" % (error.pattern, error))
    if seqs:
        known = {r["seq"] for r in records}
        missing = sorted(set(seqs) - known)
        if missing:
            raise InputError("no call with seq %s in the trace" % ", ".join(map(str, missing)))
        wanted = set(seqs)
        records = [r for r in records if r["seq"] in wanted]
    return [r for r in records
            if (include_re is None or include_re.search(r["op"])) and not (exclude_re and exclude_re.search(r["op"]))]
