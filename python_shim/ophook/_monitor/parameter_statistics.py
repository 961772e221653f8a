"""One optimizer step's statistics of its parameters, as multi-tensor ops per device and dtype
(torch._foreach_norm, as torch.nn.utils.clip_grad_norm_ groups them) into a ScalarBatch: weight,
gradient and update norms, weight and gradient min/max. The update is the copy of the weights
taken before the step less the weights after it, computed in the copy's place (one copy of the
parameters, kept between steps; a new allocation per step would cost more than the norms)."""
import math


class Parameter:
    """`tensor` is what the statistics read: a DTensor parameter's (FSDP2) local shard, so that no
    collective of the monitor's runs on the program's groups; `sharded` says so."""
    __slots__ = ("parameter", "name", "group", "sharded")

    def __init__(self, parameter, name, group):
        self.parameter, self.name, self.group = parameter, name, group
        self.sharded = hasattr(parameter, "_local_tensor") and hasattr(parameter, "placements")

    @property
    def tensor(self):
        return self.parameter._local_tensor if self.sharded else self.parameter

    @property
    def grad(self):
        grad = self.parameter.grad
        return grad._local_tensor if grad is not None and self.sharded else grad


def buckets(parameters):
    """The parameters by (device, dtype): each list one multi-tensor op's inputs."""
    out = {}
    for parameter in parameters:
        tensor = parameter.tensor
        out.setdefault((tensor.device, tensor.dtype), []).append(parameter)
    return out


class UpdateSnapshot:
    """The weights before a step (one buffer per parameter, allocated at the first step)."""

    def __init__(self):
        self._buffers = {}  # id(parameter tensor) -> copy

    def take(self, torch, parameters):
        for bucket in buckets(parameters).values():
            weights = [p.tensor.detach() for p in bucket]
            copies = []
            for p, weight in zip(bucket, weights):
                copy = self._buffers.get(id(p.parameter))
                if copy is None or copy.shape != weight.shape:
                    copy = self._buffers[id(p.parameter)] = torch.empty_like(weight)
                copies.append(copy)
            torch._foreach_copy_(copies, weights)

    def before(self, parameter):
        return self._buffers.get(id(parameter.parameter))


def gather(torch, parameters, snapshot, batch):
    """Adds every parameter's statistics to `batch` under keys (name, statistic)."""
    for bucket in buckets(parameters).values():
        weights = [p.tensor.detach() for p in bucket]
        batch.add([(p.name, "norm") for p in bucket], torch._foreach_norm(weights))
        _add_extremes(torch, batch, bucket, weights, "min", "max")
        with_grad = [(p, p.grad.detach()) for p in bucket if p.grad is not None]
        if with_grad:
            grads = [g for _, g in with_grad]
            batch.add([(p.name, "grad_norm") for p, _ in with_grad], torch._foreach_norm(grads))
            _add_extremes(torch, batch, [p for p, _ in with_grad], grads, "grad_min", "grad_max")
        updated = [(p, w, snapshot.before(p)) for p, w in zip(bucket, weights) if snapshot.before(p) is not None]
        if updated:
            deltas = [before for _, _, before in updated]
            torch._foreach_sub_(deltas, [w for _, w, _ in updated])
            batch.add([(p.name, "update_norm") for p, _, _ in updated], torch._foreach_norm(deltas))


def _add_extremes(torch, batch, bucket, tensors, low, high):
    pairs = [torch.aminmax(t) if t.numel() else (t.new_full((), math.nan),) * 2 for t in tensors]
    batch.add([(p.name, low) for p in bucket], [pair[0] for pair in pairs])
    batch.add([(p.name, high) for p in bucket], [pair[1] for pair in pairs])


def nonfinite_counts(parameter, values):
    """NaN and Inf counts of a parameter and its gradient, counted only when a norm says there are
    any (a finite norm means every element is finite): {statistic: count}."""
    out = {"nan": 0, "inf": 0, "grad_nan": 0, "grad_inf": 0}
    checks = (("", parameter.tensor.detach(), values.get("norm")),
              ("grad_", parameter.grad, values.get("grad_norm")))
    for prefix, tensor, norm in checks:
        if tensor is None or norm is None or math.isfinite(norm):
            continue
        out[prefix + "nan"] = int(tensor.isnan().sum())
        out[prefix + "inf"] = int(tensor.isinf().sum())
    return out
