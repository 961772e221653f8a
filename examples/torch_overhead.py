"""Per-op cost of ophook's C++-backed torch modes, against a do-nothing Python mode of the same kind
and a Python mode that records the same information — all in one process, interleaved.

    .venv/bin/python examples/torch_overhead.py          # ophook imported from build/python_shim

BENCH_N calls per round (5000), BENCH_ROUNDS rounds (8; the best round counts), BENCH_CLOCK
thread (CPU time of the calling thread: ophook's writer thread is not counted) or wall.
"""
import os
import shutil
import sys
import tempfile
import time

import torch
from torch.overrides import TorchFunctionMode, resolve_name
from torch.utils._python_dispatch import TorchDispatchMode

# ophook from the build tree, without its start-up (the shim's sitecustomize is not run this way)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "python_shim"))
import ophook  # noqa: E402

N = int(os.environ.get("BENCH_N", "5000"))
a = torch.ones(4)
b = torch.ones(4)


CLOCK = time.thread_time_ns if os.environ.get("BENCH_CLOCK", "thread") == "thread" else time.perf_counter_ns


def per_op_ns(fn):
    """CPU time of this thread per call (thread clock: ophook's writer thread is not counted)."""
    t = CLOCK()
    for _ in range(N):
        fn(a, b)
    return (CLOCK() - t) / N


class NoopFunctionMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class NoopDispatchMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _spec(v, copy):
    if isinstance(v, torch.Tensor):
        d = {"shape": tuple(v.shape), "dtype": str(v.dtype), "device": str(v.device)}
        if copy:
            d["data"] = v.detach().cpu().clone()
        return d
    return v


class RecordingFunctionMode(TorchFunctionMode):
    """What a pure-Python recorder does per call: name, input/output specs (+ copies), timing, source."""

    def __init__(self, copy):
        super().__init__()
        self.copy = copy
        self.names = {}
        self.records = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = self.names.get(func)
        if name is None:
            name = self.names[func] = resolve_name(func) or repr(func)
        inputs = [_spec(x, self.copy) for x in args]
        kw = {k: _spec(v, self.copy) for k, v in kwargs.items()}
        t = time.perf_counter_ns()
        out = func(*args, **kwargs)
        dur = time.perf_counter_ns() - t
        f = sys._getframe(1)
        self.records.append((name, inputs, kw, _spec(out, self.copy), t, dur, f.f_code.co_filename, f.f_lineno))
        return out


def with_mode(mode, fn):
    with mode:
        return per_op_ns(fn)


def with_tracer(fn, **options):
    out = tempfile.mkdtemp()
    try:
        with ophook.Tracer(output_path=out, **options):
            return per_op_ns(fn)
    finally:
        shutil.rmtree(out, ignore_errors=True)


CONFIGS = [
    ("no mode", lambda f: per_op_ns(f)),
    ("TorchFunctionMode, Python, do-nothing", lambda f: with_mode(NoopFunctionMode(), f)),
    ("ophook torch_function, op filtered out (gate only)",
     lambda f: with_tracer(f, levels=["torch_function"], mode="trace", exclude="^torch\\.add$")),
    ("ophook torch_function, recording, mode=trace", lambda f: with_tracer(f, levels=["torch_function"], mode="trace")),
    ("TorchFunctionMode, Python, recording specs", lambda f: with_mode(RecordingFunctionMode(False), f)),
    ("ophook torch_function, recording, mode=dump", lambda f: with_tracer(f, levels=["torch_function"], mode="dump")),
    ("TorchFunctionMode, Python, recording specs + copies", lambda f: with_mode(RecordingFunctionMode(True), f)),
    ("TorchDispatchMode, Python, do-nothing", lambda f: with_mode(NoopDispatchMode(), f)),
    ("ophook torch_dispatch, op filtered out (gate only)",
     lambda f: with_tracer(f, levels=["torch_dispatch"], mode="trace", exclude="^aten\\.add\\.")),
    ("ophook torch_dispatch, recording, mode=trace", lambda f: with_tracer(f, levels=["torch_dispatch"], mode="trace")),
]


def main():
    rounds = int(os.environ.get("BENCH_ROUNDS", "8"))
    best = {name: float("inf") for name, _ in CONFIGS}
    for _ in range(rounds):  # interleaved, so that load changes hit every configuration alike
        for name, run in CONFIGS:
            best[name] = min(best[name], run(torch.add))
    bare = best["no mode"]
    print("torch %s: torch.add on 4-element tensors, %d calls x %d rounds, best round, %s clock"
          % (torch.__version__, N, rounds, CLOCK.__name__))
    for name, _ in CONFIGS:
        print("%-55s %8.0f ns/op  (+%6.0f ns)" % (name, best[name], best[name] - bare))


if __name__ == "__main__":
    main()
