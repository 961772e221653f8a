"""The pure-Python NumPy recorder baseline: the seed's wrapper per ufunc, recording each call with
JsonRecorder (same fields as ophook's trace.jsonl). Nested calls are not recorded (depth guard),
as with ophook's default OPHOOK_NESTED=0."""
import functools

from baselines.json_recorder import timed_call
from baselines.ufunc_namespace import UfuncNamespacePatch


class NumpyJsonRecorder(UfuncNamespacePatch):
    def __init__(self, recorder):
        super().__init__()
        self.recorder = recorder
        self.depth = 0

    def wrap(self, name, ufunc):
        op = "numpy." + name

        @functools.wraps(ufunc)
        def recorded_call(*args, **kwargs):
            if self.depth:
                return ufunc(*args, **kwargs)
            self.depth += 1
            try:
                return timed_call(self.recorder, op, "numpy", "ufunc", ufunc, args, kwargs)
            finally:
                self.depth -= 1

        return recorded_call
