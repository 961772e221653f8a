"""Collectives as records (docs/ranks.md): every c10d collective and point-to-point call this
process makes — DDP's bucket allreduce, FSDP2's all-gather and reduce-scatter, explicit
torch.distributed calls, the collectives inside functional collectives — is recorded at level
`collective` with its process group, the group's members, the collective's number in the group,
its peer, and its tensors' values as the mode reads them: the inputs when it is issued, the
outputs when its work completes (an asynchronous one's too, by a callback on its future: ophook
never waits for one).

The c10d ops have kernels for CPU, CUDA and Meta and none for Autograd: this module registers one
there (torch.library, exactly undone by uninstall()), which records and hands the call on below
Autograd. Nothing in torch's Python namespace is replaced; the ops keep their identity and
behaviour (an op without an Autograd kernel falls through to the kernel below it anyway).

Usage::

    LD_PRELOAD=libophook.so OPHOOK_MODE=stats torchrun --nproc-per-node 4 train.py
    # rank<R>/trace.jsonl: {"op": "c10d.allreduce_", "level": "collective",
    #   "collective": {"group": "0", "ranks": [0, 1, 2, 3], "group_seq": 7, "peer": null, ...}}
"""
import sys

from . import _ophook, _rank_signals

# By op: the schema arguments read as inputs when it is issued, those read as outputs when its
# work completes (in-place collectives: the same), and the argument naming its peer or root.
_OPS = {
    "allreduce_": (("tensors",), ("tensors",), None),
    "allreduce_coalesced_": (("tensors",), ("tensors",), None),
    "broadcast_": (("tensors",), ("tensors",), "root_rank"),
    "reduce_": (("tensors",), ("tensors",), "root_rank"),
    "allgather_": (("input_tensors",), ("output_tensors",), None),
    "_allgather_base_": (("input_tensor",), ("output_tensor",), None),
    "allgather_coalesced_": (("input_list",), ("output_lists",), None),
    "allgather_into_tensor_coalesced_": (("inputs",), ("outputs",), None),
    "reduce_scatter_": (("input_tensors",), ("output_tensors",), None),
    "_reduce_scatter_base_": (("input_tensor",), ("output_tensor",), None),
    "reduce_scatter_tensor_coalesced_": (("inputs",), ("outputs",), None),
    "alltoall_": (("input_tensors",), ("output_tensors",), None),
    "alltoall_base_": (("input",), ("output",), None),
    "gather_": (("input_tensors",), ("output_tensors",), "root_rank"),
    "scatter_": (("input_tensors",), ("output_tensors",), "root_rank"),
    "send": (("tensors",), (), "dst"),
    "recv_": ((), ("tensors",), "src"),
    "recv_any_source_": ((), ("tensors",), None),
    "barrier": ((), (), None),
    "monitored_barrier_": ((), (), None),
}

_library = None  # the torch.library.Library holding the kernels, while installed
# Works without a future (gloo's send and recv): (token, work, outputs, async), looked at again when the
# next collective is issued and when recording ends, never waited for.
_unfinished = []


def _settle_unfinished():
    if not _unfinished:
        return
    still = []
    for token, work, outputs, asked_async in _unfinished:
        if work.is_completed():
            _ophook.collective_end(token, outputs, None, asked_async)
        else:
            still.append((token, work, outputs, asked_async))
    _unfinished[:] = still


class ProcessGroup:
    """How a call's process group appears among its recorded arguments: {"kind": "ProcessGroup",
    "repr": "ProcessGroup(group='0', ranks=[0, 1])"}, the same on every run (no address)."""
    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


class _Groups:
    """Each group's facts, by its name (unique in a process): its members' global ranks and the
    number of collectives this process issued on it so far, which every member counts alike."""

    def __init__(self, distributed):
        self.distributed = distributed
        self.facts = {}

    def issue(self, boxed):
        group = self.distributed.ProcessGroup.unbox(boxed)
        name = group.group_name
        facts = self.facts.get(name)
        if facts is None:
            try:
                ranks = self.distributed.get_process_group_ranks(group)
            except Exception:  # a group torch.distributed does not know (made by hand): its size
                ranks = list(range(group.size()))
            facts = self.facts[name] = [name, ranks, "[%s]" % ",".join(str(r) for r in ranks), 0,
                                        ProcessGroup("ProcessGroup(group=%r, ranks=%r)" % (name, ranks))]
        facts[3] += 1
        return facts


def _kernel(torch, name, spec, groups):
    op = getattr(torch.ops.c10d, name).default
    arguments = [a.name for a in op._schema.arguments]
    group_at = arguments.index("process_group")
    inputs_at = tuple(arguments.index(a) for a in spec[0])
    outputs_at = tuple(arguments.index(a) for a in spec[1])
    peer_at = arguments.index(spec[2]) if spec[2] is not None else None
    async_at = arguments.index("async_op") if "async_op" in arguments else None
    async_default = bool(op._schema.arguments[async_at].default_value) if async_at is not None else False
    op_id = _ophook.collective_op("c10d." + name)
    after_autograd = torch._C._after_autograd_keyset
    work_type = torch._C._distributed_c10d.Work
    begin, end = _ophook.collective_begin, _ophook.collective_end
    compiling = torch.compiler.is_compiling

    def kernel(keyset, *args, **kwargs):
        redispatch = lambda: op.redispatch(keyset & after_autograd, *args, **kwargs)  # noqa: E731
        if kwargs or compiling() or any(_traced(t) for t in _tensors(args, inputs_at + outputs_at)):
            return redispatch()  # traced, not run: the compiled graph's own call is the one to record
        if _rank_signals._signals is None:
            _rank_signals.start(_ophook)  # the job's first collective: its store is known from now on
        # Counted whether recorded or not (OPHOOK_STEPS, OPHOOK_RANKS): every member counts alike.
        group_name, ranks, ranks_text, group_seq, shown = groups.issue(args[group_at])
        peer = args[peer_at] if peer_at is not None and peer_at < len(args) else None
        if isinstance(peer, int) and 0 <= peer < len(ranks):
            peer = ranks[peer]  # the ops take group ranks; records name global ones
        values = tuple(shown if i == group_at else (None if i not in inputs_at and _holds_tensors(a) else a)
                       for i, a in enumerate(args))
        _settle_unfinished()
        token = begin(op_id, values, group_name, ranks_text, group_seq, -1 if peer is None else peer)
        if token is None:
            return redispatch()
        try:
            result = redispatch()
        except BaseException:
            end(token, None, sys.exc_info()[1], False)
            raise
        boxed_work = result[1] if isinstance(result, tuple) else result
        outputs = tuple(args[i] for i in outputs_at)
        asked_async = bool(args[async_at]) if async_at is not None and async_at < len(args) else async_default
        work = work_type.unbox(boxed_work) if boxed_work is not None else None
        if work is None or work.is_completed():
            end(token, outputs, None, asked_async)
            return result
        try:
            future = work.get_future()
        except Exception:  # gloo's send and recv have none: judged once seen completed (_settle_unfinished)
            _unfinished.append((token, work, outputs, asked_async))
            return result
        future.add_done_callback(lambda _: end(token, outputs, None, asked_async))
        return result

    return kernel


def _traced(tensor):
    """A tensor that stands for one (meta, a fake or functional tensor while a graph is traced)."""
    return tensor.device.type == "meta" or type(tensor).__name__ in ("FakeTensor", "FunctionalTensor")


def _holds_tensors(value):
    return hasattr(value, "device") or (isinstance(value, (list, tuple)) and any(_holds_tensors(v) for v in value))


def _tensors(args, positions):
    for i in positions:
        value = args[i] if i < len(args) else None
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, (list, tuple)):
                stack.extend(item)
            elif hasattr(item, "device"):
                yield item


def install(torch):
    """Registers the kernels once torch.distributed is there; a torch without it records none."""
    global _library
    distributed = getattr(torch, "distributed", None)
    if _library is not None or distributed is None or not distributed.is_available():
        return
    import torch.distributed  # noqa: F401  (the ops' groups and works are its types)

    groups = _Groups(torch.distributed)
    library = torch.library.Library("c10d", "IMPL")
    for name, spec in _OPS.items():
        if torch._C._dispatch_has_kernel_for_dispatch_key("c10d::" + name, "Autograd"):
            continue  # a kernel torch registered itself (none in the releases seen): left alone
        try:
            library.impl(name, _kernel(torch, name, spec, groups), "Autograd", with_keyset=True)
        except (AttributeError, RuntimeError, ValueError):
            continue  # an op this torch lacks
    _library = library


def uninstall():
    """Removes the kernels; the works seen completed by now are judged, the others are submitted
    unread by the recorder's exit hook (not completed when the run ended)."""
    global _library
    _settle_unfinished()
    _rank_signals.stop()
    if _library is not None:
        _library._destroy()
        _library = None
