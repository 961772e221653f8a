"""ophook._monitor.tensorboard_events and event_records: one step's scalars are one event that
TensorBoard's own reader reads back, with the checksum from google-crc32c or, without it,
tensorboard's, also when a step's scalars are not the step before's; a write that fails ends the
events with a warning and the failure kept for summary.json, and the program's further steps go
on. Called directly on the build tree's package."""
import sys

import pytest

from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook._monitor import event_records  # noqa: E402
from ophook._monitor.tensorboard_events import TensorBoardEvents  # noqa: E402

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402


def _line(step, loss):
    return {"step": step, "loss": loss, "grad_norm": 2.0 * loss, "params": {"fc.weight": {"norm": 1.0 + step}}}


@pytest.mark.parametrize("checksum", ["google_crc32c", "tensorboard"])
def test_the_scalars_read_back_with_tensorboards_reader(tmp_path, monkeypatch, checksum):
    if checksum == "tensorboard":
        from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import crc32c

        monkeypatch.setattr(event_records, "_crc32c", lambda: crc32c)
    events = TensorBoardEvents.open(str(tmp_path), lambda level, message: None)
    for step in range(3):
        events.put(_line(step, 0.5 * step))
    events.close()
    assert events.failure is None
    reader = EventAccumulator(str(tmp_path / "tensorboard"))
    reader.Reload()  # a bad checksum is a DataLossError here
    assert [(s.step, s.value) for s in reader.Scalars("loss")] == [(0, 0.0), (1, 0.5), (2, 1.0)]
    assert [s.value for s in reader.Scalars("params/fc.weight/norm")] == [1.0, 2.0, 3.0]


def test_a_step_with_other_scalars_than_the_step_before_reads_back_as_its_own(tmp_path):
    events = TensorBoardEvents.open(str(tmp_path), lambda level, message: None)
    lines = [{"step": 0, "loss": 1.5, "params": {"w": {"norm": 3.0}}},  # no gradient yet
             {"step": 1, "loss": 1.25, "grad_norm": 0.5, "params": {"w": {"norm": 2.5, "grad_norm": 0.5}}},
             {"step": 2, "loss": None, "grad_norm": 0.25, "params": {"w": {"norm": 2.0, "grad_norm": 0.25}}}]
    for line in lines:
        events.put(line)
    events.close()
    reader = EventAccumulator(str(tmp_path / "tensorboard"))
    reader.Reload()
    assert [(s.step, s.value) for s in reader.Scalars("loss")] == [(0, 1.5), (1, 1.25)]
    assert [(s.step, s.value) for s in reader.Scalars("grad_norm")] == [(1, 0.5), (2, 0.25)]
    assert [(s.step, s.value) for s in reader.Scalars("params/w/norm")] == [(0, 3.0), (1, 2.5), (2, 2.0)]
    assert [(s.step, s.value) for s in reader.Scalars("params/w/grad_norm")] == [(1, 0.5), (2, 0.25)]


class _FailingRecords:
    def __init__(self):
        self.closed = False

    def write(self, event):
        if event.step >= 1:
            raise OSError(28, "No space left on device")

    def close(self):
        self.closed = True


def test_a_failed_write_ends_the_events_and_says_so():
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary

    told = []
    records = _FailingRecords()
    events = TensorBoardEvents(records, Event, Summary, lambda level, message: told.append((level, message)))
    for step in range(40):
        events.put(_line(step, 1.0))
    events.close()
    assert records.closed
    assert events.failure == "step 1: [Errno 28] No space left on device"
    assert told == [("warn", "monitor: TensorBoard events end at step 1: [Errno 28] No space left on device "
                             "(monitor.jsonl goes on)")]
