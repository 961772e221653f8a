"""monitor.jsonl (docs/monitor.md, "monitor.jsonl"): one line per optimizer step, written with one
write and flushed as the step's values arrive, so that a run killed at any point leaves every
complete step's line whole. Non-finite values are null, named in the line's "nonfinite". And the main scalars as
TensorBoard events (tensorboard_events.py)."""
import json
import math
import os

from .tensorboard_events import TensorBoardEvents

FILE_NAME = "monitor.jsonl"


def _finite_or_none(value, path, nonfinite):
    if isinstance(value, float) and not math.isfinite(value):
        nonfinite[path] = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return None
    return value


def _clean(line):
    """`line` with each non-finite float replaced by null and named in "nonfinite"."""
    nonfinite = {}
    for key in ("loss", "grad_norm"):
        line[key] = _finite_or_none(line.get(key), key, nonfinite)
    for section in ("params", "modules"):
        for name, values in line.get(section, {}).items():
            for stat, value in values.items():
                values[stat] = _finite_or_none(value, "%s.%s" % (name, stat), nonfinite)
    if nonfinite:
        line["nonfinite"] = nonfinite
    return line


class MonitorFile:
    """The file is opened at the first step's line: a process that makes no step (a job's launcher)
    leaves none. TensorBoard's writer is made at start, so that its imports (about half a second)
    fall before the program's loop."""

    def __init__(self, directory, log, encode):
        """`encode(line)`: the line's JSON text (_ophook's monitor_json_line), raising ValueError
        for a non-finite float and TypeError for what it does not write (json.dumps then does)."""
        self.path = os.path.join(directory, FILE_NAME)
        self._file = None
        self._encode = encode
        self._tensorboard = TensorBoardEvents.open(directory, log)

    def write(self, line):
        """Writes one step's line (a dict; its floats may be non-finite)."""
        if self._file is None:
            self._file = open(self.path, "a", encoding="utf-8")
        if self._tensorboard is not None:
            self._tensorboard.put(line)  # its scalars are taken before _clean() nulls the non-finite
        try:  # most lines are finite throughout: cleaned only when one is not (a pass over every value)
            text = self._encode(line)
        except (ValueError, TypeError):
            text = json.dumps(_clean(line), allow_nan=False)
        self._file.write(text + "\n")
        self._file.flush()

    def close(self):
        """Closes both; returns why TensorBoard's events ended early, or None."""
        if self._file is not None:
            self._file.close()
        if self._tensorboard is None:
            return None
        self._tensorboard.close()
        return self._tensorboard.failure
