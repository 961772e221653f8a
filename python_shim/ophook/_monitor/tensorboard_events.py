"""The monitor's scalars as TensorBoard events, where the tensorboard package is installed: one
event per step holding all of its scalars (SummaryWriter.add_scalar makes an event per scalar, ten
times the Python per step), written by event_records as the step's line is. The step's Event is
tensorboard's own proto, made once for a set of tags and given each step's values: a few
microseconds where making it anew took a tenth of a millisecond, and on the program's thread,
where a thread of its own cost more in handing the GIL back and forth than the work itself."""
import os
import time

from .event_records import EventRecords

DIRECTORY = "tensorboard"
PARAMETER_STATISTICS = ("norm", "grad_norm", "update_ratio")


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
            return TensorBoardEvents(EventRecords(events, Event), Event, Summary, log)
        except Exception as error:
            log("warn", "monitor: TensorBoard events not written (%s: %s)" % (type(error).__name__, error))
            return None

    def __init__(self, writer, event_type, summary_type, log):
        self._writer = writer
        self._event, self._summary = event_type, summary_type
        self._log = log
        self.failure = None  # why the events ended early, for summary.json
        self._tags = None  # the tags of self._step_event's values, in order
        self._step_event, self._slots = None, []  # the Event, and its Summary's values

    def put(self, line):
        """Writes the line's scalars as the event of its step."""
        if self._writer is None:
            return  # a write failed: the events ended there
        step_scalars = scalars(line)
        tags = [tag for tag, _ in step_scalars]
        if tags != self._tags:
            value = self._summary.Value
            self._tags = tags
            self._step_event = self._event(summary=self._summary(value=[value(tag=tag) for tag in tags]))
            self._slots = list(self._step_event.summary.value)
        for slot, (_, scalar) in zip(self._slots, step_scalars):
            slot.simple_value = scalar
        event = self._step_event
        event.wall_time, event.step = time.time(), line["step"]
        try:
            self._writer.write(event)
        except OSError as error:
            self.failure = "step %d: %s" % (line["step"], error)
            self._log("warn", "monitor: TensorBoard events end at %s (monitor.jsonl goes on)" % self.failure)
            self._writer.close()
            self._writer = None

    def close(self):
        if self._writer is not None:
            self._writer.close()
