"""The monitor's scalars as TensorBoard events (torch.utils.tensorboard), where the tensorboard
package is installed: made on a thread of their own, since each scalar costs tens of microseconds
of Python and a step has one per parameter and statistic. The queue is bounded: a program faster
than the events waits for them rather than losing any."""
import os
import queue
import threading

DIRECTORY = "tensorboard"
PARAMETER_STATISTICS = ("norm", "grad_norm", "update_ratio")
_QUEUED_STEPS = 16
_END = None


def scalars(line):
    """(tag, value, step) of a monitor line's scalars that TensorBoard shows."""
    step = line["step"]
    out = [(key, line[key], step) for key in ("loss", "grad_norm") if line.get(key) is not None]
    for name, values in line.get("params", {}).items():
        out += [("params/%s/%s" % (name, stat), values[stat], step)
                for stat in PARAMETER_STATISTICS if values.get(stat) is not None]
    for name, values in line.get("modules", {}).items():
        if values.get("act_norm") is not None:
            out.append(("modules/%s/act_norm" % name, values["act_norm"], step))
    return out


def _remove_earlier_events(directory):
    """An earlier run's event files in ophook's own directory: TensorBoard would show both runs
    as one (as a new run removes the earlier one's other files)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if name.startswith("events.out.tfevents."):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


class TensorBoardEvents:
    @staticmethod
    def open(directory, log):
        """The events' writer, or None where tensorboard is not installed (no message) or fails."""
        try:
            import tensorboard  # noqa: F401  (torch.utils.tensorboard needs it)
        except ImportError:
            return None
        try:
            from torch.utils.tensorboard import SummaryWriter

            events = os.path.join(directory, DIRECTORY)
            _remove_earlier_events(events)
            return TensorBoardEvents(SummaryWriter(log_dir=events))
        except Exception as error:
            log("warn", "monitor: TensorBoard events not written (%s: %s)" % (type(error).__name__, error))
            return None

    def __init__(self, writer):
        self._writer = writer
        self._queue = queue.Queue(maxsize=_QUEUED_STEPS)
        self._thread = threading.Thread(target=self._run, name="ophook-monitor-tensorboard", daemon=True)
        self._thread.start()

    def put(self, line):
        self._queue.put(scalars(line))

    def _run(self):
        while True:
            step_scalars = self._queue.get()
            if step_scalars is _END:
                return
            for tag, value, step in step_scalars:
                self._writer.add_scalar(tag, value, step)

    def close(self):
        self._queue.put(_END)
        self._thread.join()
        self._writer.close()
