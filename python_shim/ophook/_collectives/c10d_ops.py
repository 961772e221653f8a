"""c10d's ops as collective records: DDP's bucket allreduce, FSDP2's all-gather and
reduce-scatter, explicit torch.distributed calls. Inputs are read when the op is issued, outputs
when its work completes (an asynchronous one's too, by a callback on its future: ophook never
waits for one).

The c10d ops have kernels for CPU, CUDA and Meta and none for Autograd: a kernel registered there
records and hands the call on below Autograd (an op without an Autograd kernel falls through to
the kernel below it anyway)."""
import sys

from .. import _ophook
from .._ranks import rank_signals as _rank_signals
from .process_groups import holds_tensors, tensors, traced

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

# Works without a future (gloo's send and recv): (token, work, outputs, async), looked at again when the
# next collective is issued and when recording ends, never waited for.
_unfinished = []


def settle_unfinished():
    if not _unfinished:
        return
    still = []
    for token, work, outputs, asked_async in _unfinished:
        if work.is_completed():
            _ophook.collective_end(token, outputs, None, asked_async)
        else:
            still.append((token, work, outputs, asked_async))
    _unfinished[:] = still


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
    process_group, work_type = torch.distributed.ProcessGroup, torch._C._distributed_c10d.Work
    begin, end = _ophook.collective_begin, _ophook.collective_end
    compiling = torch.compiler.is_compiling

    def kernel(keyset, *args, **kwargs):
        redispatch = lambda: op.redispatch(keyset & after_autograd, *args, **kwargs)  # noqa: E731
        if kwargs or compiling() or any(traced(t) for t in tensors(args, inputs_at + outputs_at)):
            return redispatch()  # traced, not run: the compiled graph's own call is the one to record
        if _rank_signals._signals is None:
            _rank_signals.start(_ophook)  # the job's first collective: its store is known from now on
        # Counted whether recorded or not (OPHOOK_STEPS, OPHOOK_RANKS): every member counts alike.
        group_name, ranks, ranks_text, group_seq, shown = groups.issue(process_group.unbox(args[group_at]))
        peer = groups.global_peer(args[peer_at] if peer_at is not None and peer_at < len(args) else None, ranks)
        values = tuple(shown if i == group_at else (None if i not in inputs_at and holds_tensors(a) else a)
                       for i, a in enumerate(args))
        settle_unfinished()
        token = begin(op_id, values, group_name, ranks_text, group_seq, peer)
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
        except Exception:  # gloo's send and recv have none: judged once seen completed (settle_unfinished)
            _unfinished.append((token, work, outputs, asked_async))
            return result
        future.add_done_callback(lambda _: end(token, outputs, None, asked_async))
        return result

    return kernel


def register(torch, groups):
    """The kernels, in a torch.library.Library of namespace c10d (exactly undone by its _destroy)."""
    library = torch.library.Library("c10d", "IMPL")
    for name, spec in _OPS.items():
        if torch._C._dispatch_has_kernel_for_dispatch_key("c10d::" + name, "Autograd"):
            continue  # a kernel torch registered itself (none in the releases seen): left alone
        try:
            library.impl(name, _kernel(torch, name, spec, groups), "Autograd", with_keyset=True)
        except (AttributeError, RuntimeError, ValueError):
            continue  # an op this torch lacks
    return library
