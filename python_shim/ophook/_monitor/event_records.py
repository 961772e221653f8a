"""TensorBoard's event file, written here: TFRecord framing (length, masked CRC-32C of the
length, the serialized Event, masked CRC-32C of it) around tensorboard's own Event protos.
tensorboard's RecordWriter computes the CRC in pure Python, about 1 ms for one step's event, on a
thread that holds the GIL the program's thread waits for; google-crc32c computes it in C where
it is installed, and tensorboard's function is the fallback (the same value, slower)."""
import os
import socket
import struct
import time

_MASK_DELTA = 0xA282EAD8


def _crc32c():
    """The CRC-32C function: google_crc32c's C implementation, else tensorboard's."""
    try:
        import google_crc32c

        if google_crc32c.implementation == "c":
            return google_crc32c.value
    except ImportError:
        pass
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import crc32c

    return crc32c


class EventRecords:
    """One event file in `directory`, named as TensorBoard's writers name theirs, opened with the
    file-version event its readers expect first; each event is flushed as written, so that a
    killed run keeps every step it wrote."""

    def __init__(self, directory, event_type):
        os.makedirs(directory, exist_ok=True)
        self._crc = _crc32c()
        name = "events.out.tfevents.%010d.%s.%d.0" % (time.time(), socket.gethostname(), os.getpid())
        self.path = os.path.join(directory, name)
        self._file = open(self.path, "wb")
        self.write(event_type(wall_time=time.time(), file_version="brain.Event:2"))

    def _masked(self, data):
        crc = self._crc(data)
        return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF

    def write(self, event):
        data = event.SerializeToString()
        header = struct.pack("<Q", len(data))
        self._file.write(header + struct.pack("<I", self._masked(header)) + data + struct.pack("<I", self._masked(data)))
        self._file.flush()

    def close(self):
        self._file.close()
