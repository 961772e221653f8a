"""OPHOOK_MONITOR=modules: each module's output activations (norm, min, max, non-finite count) as
each forward makes them, and the norm of the gradient the output gets back in the backward pass,
folded into the step's ScalarBatch at the optimizer step: a module called several times in a step
gives the norm of all its outputs together, the extremes of all, the sum of the counts. A
contiguous CPU float32/float64 output is read by _ophook in one pass into host floats; others by
a few small torch ops each, kept on the device as 0-d tensors (global forward pre- and post-hooks)."""
import math

from .._torch.device import Suspended
from .._torch.names import make_module_namer

STATISTICS = ("act_norm", "act_min", "act_max", "act_nonfinite", "act_grad_norm")


def _first_floating(torch, output):
    if isinstance(output, torch.Tensor):
        return output if output.is_floating_point() and output.numel() else None
    if isinstance(output, (tuple, list)) and output:
        return _first_floating(torch, output[0])
    return None


def _norm_of_norms(norms):
    return math.sqrt(math.fsum(n * n for n in norms))


def _least(values):
    return math.nan if any(math.isnan(v) for v in values) else min(values)


def _most(values):
    return math.nan if any(math.isnan(v) for v in values) else max(values)


# The host floats of a step folded as the device's tensors are below (a NaN wins, as torch.min's).
_FOLD = {"act_norm": _norm_of_norms, "act_grad_norm": _norm_of_norms, "act_min": _least, "act_max": _most,
         "act_nonfinite": sum}


class ModuleStatistics:
    def __init__(self, torch, native):
        self._torch = torch
        self._native = native
        self._namer = make_module_namer()
        self._handles = []
        self._seen = {}  # module name -> {statistic: [0-d tensors]}
        self._host = {}  # module name -> {statistic: [floats]}

    def start(self):
        from torch.nn.modules import module as nn_module

        # Named as its forward starts, so that an outer module is named before the modules inside
        # it, which finish first (the names records carry: "Sequential.0", not "Linear").
        self._handles = [nn_module.register_module_forward_pre_hook(self._before_forward),
                         nn_module.register_module_forward_hook(self._after_forward)]

    def stop(self):
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _before_forward(self, module, inputs):
        if not self._torch.compiler.is_compiling():
            self._namer(module)
        return None

    def _after_forward(self, module, inputs, output):
        torch = self._torch
        if torch.compiler.is_compiling():
            return None
        with Suspended():  # its torch calls, is_floating_point() too, unseen by the program's modes
            tensor = _first_floating(torch, output)
            if tensor is None:
                return None
            name = self._namer(module)
            values = tensor.detach()
            native = self._native.monitor_tensor_statistics(values)
            if native is not None:
                squares, low, high, nan, inf = native
                seen = self._host.setdefault(name, {stat: [] for stat in STATISTICS})
                seen["act_norm"].append(math.sqrt(squares))
                seen["act_nonfinite"].append(nan + inf)
            else:
                seen = self._seen.setdefault(name, {stat: [] for stat in STATISTICS})
                low, high = torch.aminmax(values)
                seen["act_norm"].append(torch.linalg.vector_norm(values))
                seen["act_nonfinite"].append(values.isfinite().logical_not().sum())
            seen["act_min"].append(low)
            seen["act_max"].append(high)
            if tensor.requires_grad:
                tensor.register_hook(self._gradient_hook(name))
        return None

    def _gradient_hook(self, name):
        def on_gradient(gradient):
            with Suspended():
                values = gradient.detach()
                native = self._native.monitor_tensor_statistics(values)
                if native is not None:
                    self._host.setdefault(name, {stat: [] for stat in STATISTICS})["act_grad_norm"].append(
                        math.sqrt(native[0]))
                else:
                    self._seen.setdefault(name, {stat: [] for stat in STATISTICS})["act_grad_norm"].append(
                        self._torch.linalg.vector_norm(values))
            return None

        return on_gradient

    def take(self, batch):
        """Adds the step's module statistics to `batch`; returns the modules' names."""
        torch = self._torch
        f64 = torch.float64
        seen, self._seen = self._seen, {}
        host, self._host = self._host, {}
        for name, stats in host.items():
            if name in seen:  # read both ways within one step (a dtype that changed): folded on the device
                device = next(t for tensors in seen[name].values() for t in tensors).device
                for stat, values in stats.items():
                    seen[name][stat] += [torch.tensor(v, dtype=f64, device=device) for v in values]
                continue
            folded = [(stat, _FOLD[stat](values)) for stat, values in stats.items() if values]
            batch.add_host([("module:" + name, stat) for stat, _ in folded], [value for _, value in folded])
        for name, stats in seen.items():
            key = "module:" + name
            folded = []
            for stat, tensors in stats.items():
                if not tensors:
                    continue
                stacked = torch.stack([t.to(f64) for t in tensors])
                if stat in ("act_norm", "act_grad_norm"):
                    folded.append((stat, torch.linalg.vector_norm(stacked)))
                elif stat == "act_min":
                    folded.append((stat, stacked.min()))
                elif stat == "act_max":
                    folded.append((stat, stacked.max()))
                else:
                    folded.append((stat, stacked.sum()))
            batch.add([(key, stat) for stat, _ in folded], [value for _, value in folded])
        return list(dict.fromkeys([*host, *seen]))  # each module once

    @staticmethod
    def values(names, values):
        """{module name: {statistic: value}} of one step, from the batch's values."""
        out = {}
        for name in names:
            stats = {stat: values.get(("module:" + name, stat)) for stat in STATISTICS}
            if stats["act_nonfinite"] is not None and math.isfinite(stats["act_nonfinite"]):
                stats["act_nonfinite"] = int(stats["act_nonfinite"])
            out[name] = stats
        return out
