"""The monitor's flow through a training step: backward() hands it the loss (the torch_function
level's observer), the optimizer step's start (step_hooks) copies the weights, its end gathers the step's
statistics and starts their one copy to the host; a step's line is written, and its rules judged,
once its values have arrived (at once on the CPU). All its torch work runs unseen by ophook's modes
and the program's own (_torch.device.Suspended)."""
import json
import math
import time

from .._ranks import rank_signals as _rank_signals
from .._torch.device import Suspended
from .module_statistics import ModuleStatistics
from .monitor_file import FILE_NAME, MonitorFile
from .parameter_statistics import UpdateSnapshot, gather, nonfinite_counts
from .scalar_batch import ScalarBatch
from .spike_rules import SpikeRules, describe
from .step_hooks import compiling

PARAMETER_STATISTICS = ("norm", "grad_norm", "update_ratio", "min", "max", "grad_min", "grad_max")
MAX_NOTED_TRIGGERS = 100
# A run that diverges fires on every step after the spike: stderr says the first few.
MAX_TOLD_TRIGGERS = 10


class _Step:
    __slots__ = ("step", "optimizer", "batch", "lrs", "backward_calls", "modules")

    def __init__(self, step, optimizer, batch, lrs, backward_calls, modules):
        self.step, self.optimizer, self.batch = step, optimizer, batch
        self.lrs, self.backward_calls, self.modules = lrs, backward_calls, modules


class TrainingMonitor:
    def __init__(self, torch, native, config):
        self._torch = torch
        self._native = native
        self._rules = SpikeRules(config.get("monitor_trigger", ()), config.get("monitor_window", 50))
        self._modules = ModuleStatistics(torch, native) if "modules" in config["monitor"].split(",") else None
        self._snapshots = {}  # optimizer's index (step_hooks.OptimizerParameters) -> the weights its last step left
        self._losses = []
        self._backward_calls = 0
        self._pending = []  # _Step, oldest first
        self._step = 0
        self._file = None
        self._lines = 0
        self._triggers = []
        self._told = 0
        self._ring_written = False
        self._saw_backward = False

    # -- hooks --
    def start(self):
        self._file = MonitorFile(self._native.output_path(), self._native.log, self._native.monitor_json_line)
        self._native.torch_set_backward_observer(self._on_backward)
        if self._modules is not None:
            self._modules.start()

    def stop(self):
        self._native.torch_set_backward_observer(None)
        if self._modules is not None:
            self._modules.stop()
        if self._file is None:
            return
        self._drain(wait=True)
        path = self._file.path
        tensorboard_failure = self._file.close()
        self._file = None
        self._note_summary(path, tensorboard_failure)

    def _on_backward(self, args):
        if not args or compiling(self._torch):
            return
        root = args[0]
        tensors = root if isinstance(root, (list, tuple)) else (root,)
        self._saw_backward = True
        self._backward_calls += 1
        for tensor in tensors:
            if isinstance(tensor, self._torch.Tensor) and tensor.is_floating_point():
                self._losses.append(tensor.detach())

    def before_step(self, optimizer, kept):
        self._step = kept.step
        snapshot = self._snapshots.get(kept.index)
        if snapshot is None:
            snapshot = self._snapshots[kept.index] = UpdateSnapshot()
        with Suspended():
            snapshot.take(self._torch, kept.parameters)

    def after_step(self, optimizer, kept):
        torch = self._torch
        lrs = {}
        with Suspended():
            batch = ScalarBatch(torch)
            gather(torch, self._native, kept.parameters, self._snapshots[kept.index], batch)
            if self._losses:
                losses = [loss.to(torch.float64).mean() for loss in self._losses]
                loss = torch.stack(losses).mean() if len(losses) > 1 else losses[0]
                if loss.device.type == "cpu":
                    batch.add_host([("", "loss")], [loss.item()])
                else:
                    batch.add([("", "loss")], [loss])
            for g, group in enumerate(optimizer.param_groups):
                lr = group.get("lr")
                if isinstance(lr, torch.Tensor):
                    batch.add([("lr", g)], [lr.detach().reshape(())])
                elif lr is not None:
                    lrs[g] = float(lr)
            modules = self._modules.take(batch) if self._modules is not None else None
            batch.launch()
        self._pending.append(_Step(self._step, kept, batch, lrs, self._backward_calls, modules))
        self._losses = []
        self._backward_calls = 0
        self._drain(wait=False)

    # -- lines --
    def _drain(self, wait):
        while self._pending and (wait or self._pending[0].batch.ready()):
            self._write(self._pending.pop(0))

    def _write(self, step):
        values, read = step.batch.values(), step.batch.parameters()
        lrs = dict(step.lrs)
        lrs.update({key[1]: value for key, value in values.items() if key[0] == "lr"})
        params, squares, any_grad = {}, 0.0, False
        with Suspended():
            for parameter in step.optimizer.parameters:
                stats = read.get(parameter.name)
                if stats is None:  # read by torch ops: its values are in the step's vectors
                    stats = {stat: values.get((parameter.name, stat)) for stat in PARAMETER_STATISTICS}
                    update, norm = values.get((parameter.name, "update_norm")), stats["norm"]
                    stats["update_ratio"] = update / norm if update is not None and norm else None
                    stats.update(nonfinite_counts(parameter, stats))
                stats["lr"] = lrs.get(parameter.group)
                if parameter.sharded:
                    stats["sharded"] = True  # this rank's shard: the whole norm is sqrt(sum of the ranks' norm²)
                if stats["grad_norm"] is not None:
                    any_grad = True
                    squares += stats["grad_norm"] ** 2
                params[parameter.name] = stats
        line = {"step": step.step, "rank": _rank(self._torch), "time": round(time.time(), 6),
                "loss": values.get(("", "loss")), "backward_calls": step.backward_calls,
                "grad_norm": math.sqrt(squares) if any_grad else None, "params": params}
        if step.modules is not None:
            line["modules"] = self._modules.values(step.modules, values)
        fired = self._rules.judge(_flat(line)) if self._rules else []
        if fired:
            line["triggers"] = fired
        self._file.write(line)
        self._lines += 1
        for trigger in fired:
            self._told += 1
            if self._told <= MAX_TOLD_TRIGGERS:
                self._native.log("warn", describe(step.step, trigger))
            elif self._told == MAX_TOLD_TRIGGERS + 1:
                self._native.log("warn", "monitor: more triggers fired; they are in monitor.jsonl only")
            if len(self._triggers) < MAX_NOTED_TRIGGERS:
                self._triggers.append(dict(trigger, step=step.step))
        if fired and not self._ring_written:
            self._write_ring(describe(step.step, fired[0]))

    def _write_ring(self, why):
        """The first trigger writes the ring, the steps that led to the spike; the steps after it
        (a run that diverges fires on each) are in monitor.jsonl."""
        self._ring_written = True
        _rank_signals.trigger(why)  # every rank of a distributed job writes its ring too
        if self._native.uses_ring():
            self._native.dump_ring(why)

    def _note_summary(self, path, tensorboard_failure):
        note = {"file": FILE_NAME, "steps": self._lines, "triggers": self._triggers,
                "loss": self._saw_backward}
        if tensorboard_failure is not None:
            note["tensorboard_error"] = tensorboard_failure
        if not self._lines:
            note["missing"] = "no optimizer step ran: nothing was monitored"
        elif not self._saw_backward:
            note["missing"] = "no backward() was seen: no loss (parameters and gradients are monitored)"
        # A process that neither stepped nor ran backward() (a job's launcher) is no training run.
        if "missing" in note and (self._lines or self._saw_backward):
            self._native.log("warn", "monitor: " + note["missing"])
        elif self._lines:
            fired = sorted({trigger["step"] for trigger in self._triggers})
            self._native.log("info", "monitor: %d steps into %s%s" % (
                self._lines, path,
                "; triggers at steps %s" % ", ".join(map(str, fired[:10])) if fired else "; no trigger"))
        self._native.add_note("monitor", json.dumps(note))


def _rank(torch):
    distributed = getattr(torch, "distributed", None)
    if distributed is not None and distributed.is_available() and distributed.is_initialized():
        return distributed.get_rank()
    return None


def _flat(line):
    """{statistic: value} as the trigger rules name them: loss, grad_norm, <path>.<statistic>."""
    out = {"loss": line["loss"], "grad_norm": line["grad_norm"]}
    for section in ("params", "modules"):
        for name, stats in line.get(section, {}).items():
            for stat, value in stats.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    out["%s.%s" % (name, stat)] = float(value)
    return out
