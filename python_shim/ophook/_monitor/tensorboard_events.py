"""The monitor's scalars as TensorBoard events, where the tensorboard package is installed: one
event per step holding all of its scalars (SummaryWriter.add_scalar makes an event per scalar, ten
times the Python per step), made on a thread of their own and written by event_records. The
queue is bounded: a program faster than the events waits for them rather than losing any."""
import os
import queue
import threading

from .event_records import EventRecords

DIRECTORY = "tensorboard"
PARAMETER_STATISTICS = ("norm", "grad_norm", "update_ratio")
_QUEUED_STEPS = 16
_END = None


def scalars(line):
    """(tag, value) of a monitor line's scalars that TensorBoard shows."""
    out = [(key, line[key]) for key in ("loss", "grad_norm") if line.get(key) is not None]
    for name, values in line.get("params", {}).items():
        out += [("params/%s/%s" % (name, stat), values[stat])
                for stat in PARAMETER_STATISTICS if values.get(stat) is not None]
    for name, values in line.get("modules", {}).items():
        if values.get("act_norm") is not None:
            out.append(("modules/%s/act_norm" % name, values["act_norm"]))
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
            from tensorboard.compat.proto.event_pb2 import Event
            from tensorboard.compat.proto.summary_pb2 import Summary
        except ImportError:
            return None
        try:
            events = os.path.join(directory, DIRECTORY)
            _remove_earlier_events(events)
            return TensorBoardEvents(EventRecords(events, Event), Summary, log)
        except Exception as error:
            log("warn", "monitor: TensorBoard events not written (%s: %s)" % (type(error).__name__, error))
            return None

    def __init__(self, writer, summary_type, log):
        self._writer = writer
        self._summary = summary_type
        self._log = log
        self.failure = None  # why the events ended early, for summary.json
        self._queue = queue.Queue(maxsize=_QUEUED_STEPS)
        self._thread = threading.Thread(target=self._run, name="ophook-monitor-tensorboard", daemon=True)
        self._thread.start()

    def put(self, line):
        self._queue.put((line["step"], scalars(line)))

    def _run(self):
        summary, value = self._summary, self._summary.Value
        while True:
            item = self._queue.get()
            if item is _END:
                return
            if self._writer is None:
                continue  # a write failed: the queue is still emptied, so that the program never waits on it
            step, step_scalars = item
            try:
                self._writer.summary(step, summary(value=[value(tag=tag, simple_value=v) for tag, v in step_scalars]))
            except OSError as error:
                self.failure = "step %d: %s" % (step, error)
                self._log("warn", "monitor: TensorBoard events end at %s (monitor.jsonl goes on)" % self.failure)
                self._writer.close()
                self._writer = None

    def close(self):
        self._queue.put(_END)
        self._thread.join()
        if self._writer is not None:
            self._writer.close()
