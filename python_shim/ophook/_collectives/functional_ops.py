"""The functional collectives as collective records: torch.distributed._functional_collectives,
DTensor's redistributions, and the collectives of compiled graphs (Inductor calls these ops).

Such an op returns its output at once and fills it later: the program waits with wait_tensor
(AsyncCollectiveTensor calls it on first use). So the inputs are read as the op is issued and the
outputs at the program's own wait_tensor on one of them; reading them as the op returns would read
what it has not written yet. An output never waited for (the program dropped it) leaves its
record open, submitted unread at exit as not completed.

The ops have one kernel, CompositeExplicitAutograd, and their callers reach them from every
depth: the program (through Autograd), AsyncCollectiveTensor's and DTensor's __torch_dispatch__
(below Autograd and ADInplaceOrView). Only the backend keys see every call: a kernel registered
for CPU and CUDA records and calls the op's own kernel (_op_dk). Other devices' calls run
unrecorded."""
import sys
import weakref

from .. import _ophook
from .._ranks import rank_signals as _rank_signals
from .c10d_ops import settle_unfinished
from .process_groups import tensors, traced

# By op: the arguments read as inputs when it is issued (in-place ops: their outputs too), and the
# argument naming its root (a group rank).
_OPS = {
    "all_reduce": (("input",), None),
    "all_reduce_": (("input",), None),
    "all_reduce_coalesced": (("inputs",), None),
    "all_reduce_coalesced_": (("inputs",), None),
    "all_gather_into_tensor": (("input",), None),
    "all_gather_into_tensor_out": (("input",), None),
    "all_gather_into_tensor_coalesced": (("inputs",), None),
    "reduce_scatter_tensor": (("input",), None),
    "reduce_scatter_tensor_coalesced": (("inputs",), None),
    "all_to_all_single": (("input",), None),
    "broadcast": (("input",), "src"),
    "broadcast_": (("input",), "src"),
}
_BACKENDS = ("CPU", "CUDA")


class _Awaited:
    """The records whose outputs wait for the program's wait_tensor, by id of each output (held
    weakly: an output that dies unwaited takes its entry with it, and its id is never confused
    with a later tensor's)."""

    def __init__(self):
        self.by_output = {}  # id(output) → (token, [weak refs to the outputs], [their ids], a list?)

    def expect(self, token, result):
        listed = isinstance(result, (list, tuple))
        entry = (token, [], [], listed)
        for output in (result if listed else (result,)):
            key = id(output)
            entry[1].append(weakref.ref(output, lambda _, key=key: self.by_output.pop(key, None)))
            entry[2].append(key)
            self.by_output[key] = entry

    def arrived(self, tensor):
        """(token, outputs) of the record `tensor` completes, or None. One wait completes them all:
        the coalesced ops' outputs share one work."""
        entry = self.by_output.pop(id(tensor), None)
        if entry is None:
            return None
        token, refs, keys, listed = entry
        for key in keys:
            self.by_output.pop(key, None)
        outputs = [t for t in (ref() for ref in refs) if t is not None]
        return token, ((outputs,) if listed else tuple(outputs))


def _issue_kernel(torch, name, spec, groups, awaited):
    op = getattr(torch.ops._c10d_functional, name).default
    arguments = [a.name for a in op._schema.arguments]
    group_at = arguments.index("group_name")
    inputs_at = tuple(arguments.index(a) for a in spec[0])
    peer_at = arguments.index(spec[1]) if spec[1] is not None else None
    op_id = _ophook.collective_op("_c10d_functional." + name)
    own_kernel = torch._C.DispatchKey.CompositeExplicitAutograd
    begin, end = _ophook.collective_begin, _ophook.collective_end
    compiling = torch.compiler.is_compiling

    def kernel(*args, **kwargs):
        run = lambda: op._op_dk(own_kernel, *args, **kwargs)  # noqa: E731
        if compiling() or any(traced(t) for t in tensors(args, inputs_at)):
            return run()
        if _rank_signals._signals is None:
            _rank_signals.start(_ophook)
        group = args[group_at]
        facts = groups.issue_named(group) if isinstance(group, str) else groups.issue(group)
        group_name, ranks, ranks_text, group_seq, shown = facts
        peer = groups.global_peer(args[peer_at] if peer_at is not None and peer_at < len(args) else None, ranks)
        values = tuple(shown if i == group_at else a for i, a in enumerate(args))
        settle_unfinished()
        token = begin(op_id, values, group_name, ranks_text, group_seq, peer)
        if token is None:
            return run()
        try:
            result = run()
        except BaseException:
            end(token, None, sys.exc_info()[1], True)
            raise
        awaited.expect(token, result)
        return result

    return kernel


def _wait_kernel(torch, awaited):
    op = torch.ops._c10d_functional.wait_tensor.default
    own_kernel = torch._C.DispatchKey.CompositeExplicitAutograd
    end = _ophook.collective_end

    def kernel(tensor):
        result = op._op_dk(own_kernel, tensor)  # the program's own wait: its outputs are complete now
        if awaited.by_output:
            arrived = awaited.arrived(tensor)
            if arrived is not None:
                end(arrived[0], arrived[1], None, True)
        return result

    return kernel


def register(torch, groups):
    """The kernels, in a torch.library.Library of namespace _c10d_functional (undone by its
    _destroy); None for a torch without these ops."""
    functional = getattr(torch.ops, "_c10d_functional", None)
    if functional is None or not hasattr(functional, "wait_tensor"):
        return None
    awaited = _Awaited()
    library = torch.library.Library("_c10d_functional", "IMPL")
    kernels = {"wait_tensor": _wait_kernel(torch, awaited)}
    for name, spec in _OPS.items():
        try:
            kernels[name] = _issue_kernel(torch, name, spec, groups, awaited)
        except (AttributeError, RuntimeError, ValueError):
            continue  # an op this torch lacks
    for name, kernel in kernels.items():
        for backend in _BACKENDS:
            if torch._C._dispatch_has_kernel_for_dispatch_key("_c10d_functional::" + name, backend):
                continue  # a kernel torch registered itself there: left alone
            library.impl(name, kernel, backend)
    return library
