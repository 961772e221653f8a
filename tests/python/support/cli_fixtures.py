"""Helpers of the `ophook` command-line tests: build synthetic run directories (np.save plus a
trace.jsonl in the contract's format) and run the built `ophook` binary."""
import hashlib
import json
import subprocess
from pathlib import Path

import numpy as np

from harness import BUILD_DIR

OPHOOK = BUILD_DIR / "ophook"


def run_ophook(*args, timeout=120, **kwargs):
    """Runs build/ophook with `args`; returns the CompletedProcess (text mode, output captured)."""
    return subprocess.run([str(OPHOOK), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, **kwargs)


def array_stats(arr):
    """The contract's stats object, computed with numpy. The digest only has to be equal for
    equal bytes, which is all `compare` relies on."""
    arr = np.asarray(arr)
    stats = {"min": None, "max": None, "mean": None, "std": None, "nan": 0, "inf": 0,
             "xxh64": hashlib.blake2b(arr.tobytes(), digest_size=8).hexdigest()}
    if arr.dtype.kind in "biufc":
        values = np.abs(arr) if arr.dtype.kind == "c" else arr.astype(np.float64)
        stats["nan"] = int(np.isnan(values).sum()) if arr.dtype.kind in "fc" else 0
        stats["inf"] = int(np.isinf(values).sum()) if arr.dtype.kind in "fc" else 0
        finite = values[np.isfinite(values)]
        if finite.size:
            stats.update(min=float(finite.min()), max=float(finite.max()),
                         mean=float(finite.mean()), std=float(finite.std()))
    return stats


class RunDir:
    """A synthetic output directory. `call()` appends one record (and its .npy files in dump
    mode); `write()` writes trace.jsonl. Arrays are numpy arrays; anything else is stored as is."""

    def __init__(self, path, mode="dump"):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.mode = mode
        self.records = []

    def _value(self, value, op, seq, role):
        if not isinstance(value, np.ndarray):
            return value
        spec = {"kind": "array", "shape": list(value.shape), "dtype": value.dtype.name,
                "device": "cpu", "file": None, "stats": None}
        if self.mode in ("stats", "dump"):
            spec["stats"] = array_stats(value)
        if self.mode == "dump":
            name = f"op_{op}_{role}_{seq:06d}.npy"
            np.save(self.path / name, value)
            spec["file"] = name
        return spec

    def call(self, op, inputs=(), outputs=(), kwargs=None, source=None, module=None, phase=None,
             error=None, dur_ns=1000, tid=1, pid=1000):
        seq = len(self.records)
        args = [self._value(v, op, seq, f"input{k + 1}") for k, v in enumerate(inputs)]
        kw = {name: self._value(v, op, seq, f"input{len(inputs) + k + 1}")
              for k, (name, v) in enumerate((kwargs or {}).items())}
        single = len(outputs) == 1
        outs = [self._value(v, op, seq, "output" if single else f"output{k + 1}")
                for k, v in enumerate(outputs)]
        self.records.append({
            "seq": seq, "op": op, "framework": op.split(".")[0], "level": "ufunc",
            "args": args, "kwargs": kw, "outputs": outs, "error": error,
            "t_ns": 1_000_000 + seq * 10_000, "dur_ns": dur_ns, "pid": pid, "tid": tid,
            "depth": 0, "source": source or f"script.py:{10 + seq}:main", "module": module,
            "phase": phase})
        return seq

    def lines(self):
        return [json.dumps(r) for r in self.records]

    def write(self, tail=""):
        """Writes trace.jsonl; `tail` is appended verbatim after the last newline."""
        (self.path / "trace.jsonl").write_text("".join(line + "\n" for line in self.lines()) + tail)
        return self.path


def simple_program(run, scale=1.0, extra_op=False, nan_at=None):
    """A small deterministic 'program': the same calls in every run, values scaled by `scale`
    from the third call on; `extra_op` inserts a numpy.exp call after the second call."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    s = a + b
    run.call("numpy.add", [a, b], [s])
    m = a * b
    run.call("numpy.multiply", [a, b], [m])
    if extra_op:
        run.call("numpy.exp", [a], [np.exp(a)])
    w = rng.standard_normal((5, 3)).astype(np.float32)
    mm = (s @ w) * np.float32(scale)
    if nan_at is not None:
        mm = mm.copy()
        mm[nan_at] = np.nan
    run.call("numpy.matmul", [s, w], [mm], source="model.py:33:forward", module="encoder.0",
             phase="forward")
    total = mm.sum()
    run.call("numpy.add.reduce", [mm], [np.asarray(total)], kwargs={"axis": None})
    run.call("numpy.tanh", [mm], [np.tanh(mm)])
    return run
