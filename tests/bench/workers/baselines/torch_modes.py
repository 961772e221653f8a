"""Python torch modes to measure ophook's C++-backed modes against: do-nothing modes (the floor of
the mechanism: what any TorchFunctionMode/TorchDispatchMode costs) and modes recording the same
fields as ophook's trace.jsonl through JsonRecorder. `module` is left null: these baselines keep no
nn.Module stack (the benchmarked ops run outside any module, where ophook's is null too)."""
from torch.overrides import TorchFunctionMode, resolve_name
from torch.utils._python_dispatch import TorchDispatchMode

from baselines.json_recorder import timed_call


class NoopFunctionMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class NoopDispatchMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class RecordingFunctionMode(TorchFunctionMode):
    def __init__(self, recorder):
        super().__init__()
        self.recorder = recorder
        self.names = {}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = self.names.get(func)
        if name is None:
            name = self.names[func] = resolve_name(func) or repr(func)
        return timed_call(self.recorder, name, "torch", "torch_function", func, args, kwargs or {},
                          phase="forward")


class RecordingDispatchMode(TorchDispatchMode):
    def __init__(self, recorder):
        super().__init__()
        self.recorder = recorder

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return timed_call(self.recorder, str(func), "torch", "torch_dispatch", func, args, kwargs or {},
                          phase="forward")
