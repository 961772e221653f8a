"""monitor.jsonl (docs/monitor.md, "monitor.jsonl"): one line per optimizer step, written with one
write and flushed as the step's values arrive, so that a run killed at any point leaves every
complete step's line whole. Non-finite values are null, named in the line's "nonfinite". And the
same scalars as TensorBoard events (torch.utils.tensorboard) where the tensorboard package is
installed: loss, gradient norm, and each parameter's norm, gradient norm and update ratio."""
import json
import math
import os

FILE_NAME = "monitor.jsonl"
TENSORBOARD_DIRECTORY = "tensorboard"
TENSORBOARD_STATISTICS = ("norm", "grad_norm", "update_ratio")


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
    """Opened at the first step's line: a process that makes no step (a job's launcher) leaves none."""

    def __init__(self, directory, log):
        self.path = os.path.join(directory, FILE_NAME)
        self._directory, self._log = directory, log
        self._file = None
        self._tensorboard = None

    @staticmethod
    def _open_tensorboard(directory, log):
        try:
            import tensorboard  # noqa: F401  (torch.utils.tensorboard needs it; absent: no events)
        except ImportError:
            return None
        try:
            from torch.utils.tensorboard import SummaryWriter

            return SummaryWriter(log_dir=os.path.join(directory, TENSORBOARD_DIRECTORY))
        except Exception as error:
            log("warn", "monitor: TensorBoard events not written (%s: %s)" % (type(error).__name__, error))
            return None

    def write(self, line):
        """Writes one step's line (a dict; its floats may be non-finite)."""
        if self._file is None:
            self._file = open(self.path, "a", encoding="utf-8")
            self._tensorboard = self._open_tensorboard(self._directory, self._log)
        self._write_tensorboard(line)
        self._file.write(json.dumps(_clean(line), allow_nan=False) + "\n")
        self._file.flush()

    def _write_tensorboard(self, line):
        writer = self._tensorboard
        if writer is None:
            return
        step = line["step"]
        for key in ("loss", "grad_norm"):
            if line.get(key) is not None:
                writer.add_scalar(key, line[key], step)
        for name, values in line.get("params", {}).items():
            for stat in TENSORBOARD_STATISTICS:
                if values.get(stat) is not None:
                    writer.add_scalar("params/%s/%s" % (name, stat), values[stat], step)
        for name, values in line.get("modules", {}).items():
            if values.get("act_norm") is not None:
                writer.add_scalar("modules/%s/act_norm" % name, values["act_norm"], step)

    def close(self):
        if self._file is None:
            return
        self._file.close()
        if self._tensorboard is not None:
            self._tensorboard.close()
