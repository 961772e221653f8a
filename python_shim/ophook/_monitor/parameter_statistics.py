"""One optimizer step's statistics of its parameters into a ScalarBatch: weight, gradient and
update norms, weight and gradient min/max. The update is the weights now less the weights kept at
the previous step's statistics (at a parameter's first step, a copy taken just before it): one
copy of the parameters, refreshed as the statistics read them, so that the copy costs no pass of
its own after the first step. Contiguous CPU float32/float64 parameters are read by _ophook in
C++, one pass per array with the GIL released (the multi-tensor ops below read each parameter
five to seven times, and their results cost a tensor each); the others by multi-tensor ops per
device and dtype (torch._foreach_norm, as torch.nn.utils.clip_grad_norm_ groups them)."""
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
    """The weights as the last step left them (one buffer per parameter)."""

    def __init__(self):
        self._buffers = {}  # id(parameter) -> copy

    def take(self, torch, parameters):
        """Copies the weights that have no copy yet (a parameter's first step, or a new shape)."""
        for p in parameters:
            weight = p.tensor
            copy = self._buffers.get(id(p.parameter))
            if copy is None or copy.shape != weight.shape or copy.dtype != weight.dtype:
                self._buffers[id(p.parameter)] = weight.detach().clone()

    def before(self, parameter):
        return self._buffers.get(id(parameter.parameter))


def gather(torch, native, parameters, snapshot, batch):
    """Adds every parameter's statistics to `batch` under keys (name, statistic)."""
    for bucket in buckets(parameters).values():
        weights = [p.tensor.detach() for p in bucket]
        if _native_kind(torch, weights[0]):
            bucket, weights = _gather_native(native, bucket, weights, snapshot, batch)
        if bucket:
            _gather_torch(torch, bucket, weights, snapshot, batch)


def _native_kind(torch, tensor):
    return tensor.device.type == "cpu" and tensor.dtype in (torch.float32, torch.float64)


def _gather_native(native, bucket, weights, snapshot, batch):
    """The parameters _ophook reads, into `batch` as their lines' statistics
    (ScalarBatch.add_parameter); returns those it could not read."""
    grads = [None if p.grad is None else p.grad.detach() for p in bucket]
    results = native.monitor_parameter_statistics(weights, grads, [snapshot.before(p) for p in bucket])
    sqrt, rest = math.sqrt, ([], [])
    for p, weight, result in zip(bucket, weights, results):
        if result is None:
            rest[0].append(p)
            rest[1].append(weight)
            continue
        (squares, low, high, nan, inf), grad, update = result
        norm = sqrt(squares)
        stats = {"norm": norm, "grad_norm": None, "update_ratio": sqrt(update) / norm if update is not None and norm else None,
                 "min": low, "max": high, "grad_min": None, "grad_max": None, "nan": nan, "inf": inf,
                 "grad_nan": 0, "grad_inf": 0}
        if grad is not None:
            stats.update(grad_norm=sqrt(grad[0]), grad_min=grad[1], grad_max=grad[2], grad_nan=grad[3], grad_inf=grad[4])
        batch.add_parameter(p.name, stats)
    return rest


def _gather_torch(torch, bucket, weights, snapshot, batch):
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
        now = [w for _, w, _ in updated]
        torch._foreach_sub_(deltas, now)
        batch.add([(p.name, "update_norm") for p, _, _ in updated], torch._foreach_norm(deltas))
        torch._foreach_copy_(deltas, now)  # kept for the next step's update


def _add_extremes(torch, batch, bucket, tensors, low, high):
    pairs = [torch.aminmax(t) if t.numel() else (t.new_full((), math.nan),) * 2 for t in tensors]
    batch.add([(p.name, low) for p in bucket], [pair[0] for pair in pairs])
    batch.add([(p.name, high) for p in bucket], [pair[1] for pair in pairs])


def nonfinite_counts(parameter, norms):
    """NaN and Inf counts of a parameter read by torch ops and of its gradient: {statistic: count},
    counted only when a norm says there are any (a finite norm means every element is finite)."""
    out = {}
    for prefix in ("", "grad_"):
        nan = inf = 0
        norm = norms.get(prefix + "norm")
        tensor = None if norm is None or math.isfinite(norm) else (parameter.grad if prefix else parameter.tensor.detach())
        if tensor is not None:
            nan, inf = tensor.isnan().sum(), tensor.isinf().sum()
        out[prefix + "nan"], out[prefix + "inf"] = int(nan), int(inf)
    return out
