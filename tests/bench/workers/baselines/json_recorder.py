"""A fair pure-Python recorder: the fields of ophook's trace.jsonl records (docs/outputs.md),
one json.dumps line per call written to a buffered file, the source line found with
sys._getframe (the skip verdict cached per code object, as ophook caches it). What a careful
Python implementation of the same job costs; the numpy and torch baselines feed it their calls."""
import json
import os
import sys
import threading
import time


def _package_dir(name):
    module = sys.modules.get(name)
    return os.path.dirname(module.__file__) + os.sep if module is not None else None


class JsonRecorder:
    """record() is called by the interception layer with the call's pieces. Not thread-safe
    (one seq counter, one file): the benchmarks are single-threaded."""

    def __init__(self, path, stack=True):
        self.out = open(path, "w", buffering=1 << 16)
        self.stack = stack
        self.seq = 0
        self.pid = os.getpid()
        here = os.path.dirname(os.path.abspath(__file__)) + os.sep
        self.skip_prefixes = tuple(p for p in (_package_dir("numpy"), _package_dir("torch"), here) if p)
        self.skipped_code = {}

    def close(self):
        self.out.close()

    def spec(self, value):
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            device = getattr(value, "device", "cpu")
            return {"kind": "array", "shape": list(value.shape), "dtype": str(value.dtype).replace("torch.", ""),
                    "device": str(device), "file": None, "stats": None}
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return value if value == value and abs(value) != float("inf") else repr(value)
        if isinstance(value, (list, tuple)):
            return [self.spec(v) for v in value]
        return {"kind": type(value).__name__, "repr": repr(value)[:200]}

    def source(self):
        frame = sys._getframe(2)
        skipped = self.skipped_code
        while frame is not None:
            code = frame.f_code
            skip = skipped.get(code)
            if skip is None:
                skip = skipped[code] = code.co_filename.startswith(self.skip_prefixes)
            if not skip:
                return "%s:%d:%s" % (code.co_filename, frame.f_lineno, code.co_name)
            frame = frame.f_back
        return None

    def begin(self):
        """Call before running the op: returns the record's seq (call-start order)."""
        seq = self.seq
        self.seq += 1
        return seq

    def record(self, seq, op, framework, level, args, kwargs, outputs, error, t_ns, dur_ns, depth=0,
               module=None, phase=None):
        line = {
            "seq": seq, "op": op, "framework": framework, "level": level,
            "args": [self.spec(a) for a in args],
            "kwargs": {k: self.spec(v) for k, v in kwargs.items()},
            "outputs": [self.spec(o) for o in outputs],
            "error": error, "t_ns": t_ns, "dur_ns": dur_ns, "pid": self.pid,
            "tid": threading.get_native_id(), "depth": depth,
            "source": self.source() if self.stack else None, "module": module, "phase": phase,
        }
        self.out.write(json.dumps(line, separators=(",", ":")))
        self.out.write("\n")


def timed_call(recorder, op, framework, level, fn, args, kwargs, **extra):
    """Runs fn(*args, **kwargs) and records it (outputs [] and the error text when it raises)."""
    seq = recorder.begin()
    t = time.monotonic_ns()
    start = time.perf_counter_ns()
    try:
        result = fn(*args, **kwargs)
    except Exception as e:
        recorder.record(seq, op, framework, level, args, kwargs, [], "%s: %s" % (type(e).__name__, e), t,
                        time.perf_counter_ns() - start, **extra)
        raise
    dur = time.perf_counter_ns() - start
    outputs = list(result) if isinstance(result, tuple) else [result]
    recorder.record(seq, op, framework, level, args, kwargs, outputs, None, t, dur, **extra)
    return result
