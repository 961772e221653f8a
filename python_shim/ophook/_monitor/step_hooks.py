"""ophook's Python work at optimizer steps — the training monitor's statistics (training_monitor),
the replica check (replica_check) — behind one pair of optimizer step hooks, which find and name
each optimizer's parameters once for all of them and say which step it is."""
from .._torch.device import Suspended
from .parameter_names import name_parameters
from .parameter_statistics import Parameter


def compiling(torch):
    """True while Dynamo traces: the hooks then run at trace time only, not at each step."""
    compiler = getattr(torch, "compiler", None)
    return compiler is not None and compiler.is_compiling()


class OptimizerParameters:
    """One optimizer's parameters, named, found again when their count changes; `step` is the step
    it runs now (the one its calls are recorded at)."""

    def __init__(self, index):
        self.index = index
        self.parameters = []
        self.count = -1
        self.step = 0

    def refresh(self, torch, optimizer):
        groups = optimizer.param_groups
        count = sum(len(group["params"]) for group in groups)
        if count == self.count:
            return
        self.count = count
        tensors = [(tensor, g) for g, group in enumerate(groups) for tensor in group["params"]]
        names = name_parameters(torch, {id(tensor) for tensor, _ in tensors})
        self.parameters = [Parameter(tensor, names.get(id(tensor), "optimizer%d.group%d.param%d" % (self.index, g, k)), g)
                           for k, (tensor, g) in enumerate(tensors)]


class StepHooks:
    """Calls each of `before` as before(optimizer, kept) when a step starts and each of `after` as
    after(optimizer, kept) when it has ended, `kept` the optimizer's OptimizerParameters."""

    def __init__(self, torch, native, before, after):
        self._torch, self._native, self._before, self._after = torch, native, before, after
        self._optimizers = {}  # id(optimizer) -> OptimizerParameters
        self._handles = []

    def start(self):
        from torch.optim import optimizer as optim_module

        self._handles = [optim_module.register_optimizer_step_pre_hook(self._step_starts),
                         optim_module.register_optimizer_step_post_hook(self._step_ended)]

    def stop(self):
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _step_starts(self, optimizer, args, kwargs):
        if compiling(self._torch):
            return
        kept = self._optimizers.get(id(optimizer))
        if kept is None:
            kept = self._optimizers[id(optimizer)] = OptimizerParameters(len(self._optimizers))
        kept.step = self._native.steps_completed()
        with Suspended():
            kept.refresh(self._torch, optimizer)
        for before in self._before:
            before(optimizer, kept)

    def _step_ended(self, optimizer, args, kwargs):
        kept = self._optimizers.get(id(optimizer))
        if kept is None or compiling(self._torch):
            return
        for after in self._after:
            after(optimizer, kept)
