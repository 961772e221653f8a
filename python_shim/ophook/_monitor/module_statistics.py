"""OPHOOK_MONITOR=modules: each module's output activations (norm, min, max, non-finite count) as
each forward makes them, and the norm of the gradient the output gets back in the backward pass,
kept on the device as 0-d tensors and folded into the step's ScalarBatch at the optimizer step: a
module called several times in a step gives the norm of all its outputs together, the extremes of
all, the sum of the counts. Costs a few small ops per module forward (global forward pre- and
post-hooks)."""
import math

from .._torch_device import Suspended
from .._torch_names import make_module_namer

STATISTICS = ("act_norm", "act_min", "act_max", "act_nonfinite", "act_grad_norm")


def _first_floating(torch, output):
    if isinstance(output, torch.Tensor):
        return output if output.is_floating_point() and output.numel() else None
    if isinstance(output, (tuple, list)) and output:
        return _first_floating(torch, output[0])
    return None


class ModuleStatistics:
    def __init__(self, torch):
        self._torch = torch
        self._namer = make_module_namer()
        self._handles = []
        self._seen = {}  # module name -> {statistic: [0-d tensors]}

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
        tensor = _first_floating(torch, output)
        if tensor is None:
            return None
        with Suspended():
            name = self._namer(module)
            seen = self._seen.setdefault(name, {stat: [] for stat in STATISTICS})
            values = tensor.detach()
            low, high = torch.aminmax(values)
            seen["act_norm"].append(torch.linalg.vector_norm(values))
            seen["act_min"].append(low)
            seen["act_max"].append(high)
            seen["act_nonfinite"].append(values.isfinite().logical_not().sum())
            if tensor.requires_grad:
                tensor.register_hook(self._gradient_hook(seen["act_grad_norm"]))
        return None

    def _gradient_hook(self, norms):
        vector_norm = self._torch.linalg.vector_norm

        def on_gradient(gradient):
            with Suspended():
                norms.append(vector_norm(gradient.detach()))
            return None

        return on_gradient

    def take(self, batch):
        """Adds the step's module statistics to `batch`; returns the modules' names."""
        torch = self._torch
        f64 = torch.float64
        seen, self._seen = self._seen, {}
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
        return list(seen)

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
