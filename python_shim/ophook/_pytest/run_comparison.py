"""`ophook compare --json` on two recordings, its verdict worded for a pytest failure."""
import json
import os
import subprocess
import tempfile

from ..__main__ import executable_path


class Comparison:
    """The outcome of comparing a test's recording with its baseline: `same`, and for a test
    whose numbers moved (or that could not be compared) the failure `message`."""

    def __init__(self, same, message=""):
        self.same = same
        self.message = message


def _call_text(record):
    """`op at source (seq N)`: the call as compare recorded it, module and phase when torch's."""
    where = record.get("source") or "an unknown line"
    torch_context = ", ".join("%s %s" % (key, record[key]) for key in ("module", "phase") if record.get(key))
    return "%s at %s (seq %d%s)" % (record["op"], where, record["seq"], ", " + torch_context if torch_context else "")


def _first_divergence_lines(divergence):
    if divergence is None:
        return []
    base, new = divergence.get("base"), divergence.get("new")
    if base is None:
        lines = ["first divergent call: %s, a call this run made that the baseline did not" % _call_text(new)]
    elif new is None:
        lines = ["first divergent call: %s, a call of the baseline that this run did not make" % _call_text(base)]
    else:
        lines = ["first divergent call: %s" % _call_text(new)]
        if (base["op"], base.get("source")) != (new["op"], new.get("source")):
            lines.append("  in the baseline: %s" % _call_text(base))
    return lines + ["  " + reason for reason in divergence.get("reasons", [])]


def _moved_message(result, base, new, command):
    lines = ["ophook: this test's numbers moved against its baseline",
             "  " + result["summary"]]
    lines += _first_divergence_lines(result.get("first_divergence"))
    lines += ["baseline: %s" % base, "this run: %s" % new,
              "every difference: %s compare %s %s --html diff.html" % (command, base, new)]
    return "\n".join(lines)


def compare_runs(base, new, rtol=None, atol=None):
    """Compares the recordings in directories `base` and `new` (ophook compare's pairing and
    tolerances; None: its defaults). Runs the ophook executable; returns a Comparison."""
    command = executable_path()
    with tempfile.TemporaryDirectory(prefix="ophook-compare-json-") as scratch:
        result_path = os.path.join(scratch, "result.json")
        args = [command, "compare", base, new, "--json", result_path]
        for name, value in (("--rtol", rtol), ("--atol", atol)):
            if value is not None:
                args += [name, repr(value)]
        proc = subprocess.run(args, capture_output=True, text=True, errors="backslashreplace")
        if proc.returncode == 0:
            return Comparison(True)
        if proc.returncode != 1 or not os.path.exists(result_path):
            return Comparison(False, "ophook: this test's recording could not be compared with its baseline "
                                     "(ophook compare exit status %d):\n%s" % (proc.returncode, proc.stderr.strip()))
        with open(result_path) as stream:
            result = json.load(stream)
    return Comparison(False, _moved_message(result, base, new, command))
