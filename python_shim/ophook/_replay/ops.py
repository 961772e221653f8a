"""Which recorded op to call, and which ones replay must not call again.

Ops are found from their qualified names: `numpy.add`, `numpy.add.reduce`, `numpy.linalg.norm`,
`torch.add`, `torch.Tensor.sum` (self is args[0]), `torch.nn.functional.linear`,
`torch.Tensor.shape.__get__` (an accessor) and `aten.mm.default` (torch.ops.aten.mm.default)."""
import importlib

from .values import CannotRebuild

# Results drawn from a random generator: equal only by luck, never compared.
RANDOM = frozenset("""
    rand rand_like randn randn_like randint randint_like randperm normal normal_ bernoulli bernoulli_
    multinomial poisson uniform_ random_ exponential_ geometric_ log_normal_ cauchy_ rrelu rrelu_
    rrelu_with_noise rrelu_with_noise_ gumbel_softmax dropout dropout_ dropout1d dropout2d dropout3d
    feature_dropout feature_dropout_ alpha_dropout alpha_dropout_ feature_alpha_dropout
    feature_alpha_dropout_ native_dropout _fused_dropout manual_seed seed initial_seed get_rng_state
    set_rng_state kaiming_uniform_ kaiming_normal_ xavier_uniform_ xavier_normal_ trunc_normal_
    orthogonal_ sparse_""".split())
# Fresh memory nobody wrote (the core's returns_uninitialized_memory list, and resize_, which
# leaves the grown part unwritten).
UNINITIALIZED = frozenset("empty empty_like empty_strided empty_permuted new_empty new_empty_strided resize_".split())
# Answers that depend on where and how the inputs lay in memory, which a replay does not rebuild
# (the recorded arrays come back as fresh C-ordered copies).
LAYOUT = frozenset("""data_ptr stride storage_offset is_contiguous untyped_storage storage _cdata
    is_set_to set_ __hash__ __repr__ __str__ __format__""".split())
# Ops that need, or report on, the autograd graph of the recorded program (a replayed input is a
# fresh leaf that requires no gradient).
AUTOGRAD = frozenset("""backward grad grad_fn is_leaf requires_grad retains_grad register_hook retain_grad
    _version output_nr _base""".split())
# Calls that set process-wide state rather than compute a value.
GLOBAL_STATE = frozenset("""_set_grad_enabled set_grad_enabled set_default_dtype set_default_device
    set_num_threads set_printoptions use_deterministic_algorithms""".split())

_DROPOUT_TRAINING_FLAGS = ("training", "train")
# Attention whose dropout_p draws a mask when it is above 0 (transformers passes the model's
# attention dropout in training): where dropout_p lies among each one's positional arguments.
ATTENTION_DROPOUT_ARGUMENT = {"scaled_dot_product_attention": 4, "_scaled_dot_product_flash_attention": 3,
                              "_scaled_dot_product_flash_attention_for_cpu": 3,
                              "_scaled_dot_product_efficient_attention": 5, "_scaled_dot_product_cudnn_attention": 5}


def function_name(op):
    """'torch.Tensor.new_empty' -> 'new_empty', 'aten.empty.memory_format' -> 'empty',
    'torch.Tensor.grad.__get__' -> 'grad'."""
    parts = op.split(".")
    if parts[0] in ("aten", "prims") and len(parts) >= 2:
        return parts[1]
    if parts[-1] in ("__get__", "__set__", "__delete__") and len(parts) >= 2:
        return parts[-2]
    return parts[-1]


def _dropout_is_identity(record):
    """F.dropout(x, p, training=False) and dropout with p == 0 draw nothing."""
    kwargs = record.get("kwargs") or {}
    args = record.get("args") or []
    for flag in _DROPOUT_TRAINING_FLAGS:
        if kwargs.get(flag) is False:
            return True
    probability = kwargs.get("p", args[1] if len(args) > 1 else None)
    # aten.dropout.default(input, p, train) / aten.native_dropout.default(input, p, train)
    if len(args) > 2 and args[2] is False:
        return True
    return probability == 0


def _attention_draws(name, record):
    position = ATTENTION_DROPOUT_ARGUMENT.get(name)
    if position is None:
        return False
    args = record.get("args") or []
    probability = (record.get("kwargs") or {}).get("dropout_p", args[position] if len(args) > position else 0)
    return isinstance(probability, (int, float)) and probability > 0


def skip_reason(record):
    """Why the call must not be replayed, or None."""
    op = record["op"]
    name = function_name(op)
    if record.get("level") == "compiled":
        return ("a compiled kernel: Inductor's generated code, which lived only in the recorded process "
                "(compare an eager run with this one instead)")
    if record.get("level") == "collective":
        return ("a collective: it needs the recorded job's other ranks (each rank's record holds its inputs and "
                "what it received; compare them across ranks instead)")
    if record.get("level") == "torch_dispatch" and not op.startswith(("aten.", "prims.")):
        return "not an aten or prims operator (%s)" % op.split(".")[0]
    if (name in RANDOM and not ("dropout" in name and _dropout_is_identity(record))) or _attention_draws(name, record):
        return "random: draws from a random generator"
    if name in UNINITIALIZED:
        return "returns uninitialized memory"
    if name in LAYOUT:
        return "depends on the memory layout of the inputs, which is not recorded"
    if name in AUTOGRAD:
        return "needs the recorded program's autograd graph"
    if name in GLOBAL_STATE or op.startswith("torch.ops.profiler."):
        return "sets process state, computes no value"
    if op.endswith((".__set__", ".__delete__")):
        return "changes an attribute, returns nothing to compare"
    return None


_resolved = {}


def resolve(op):
    """The callable a qualified op name names. Raises CannotRebuild when it does not exist here."""
    if op not in _resolved:
        _resolved[op] = _find(op)
    return _resolved[op]


def _find(op):
    parts = op.split(".")
    try:
        if parts[0] in ("aten", "prims") and len(parts) == 3:
            import torch

            return getattr(getattr(getattr(torch.ops, parts[0]), parts[1]), parts[2])
        obj = importlib.import_module(parts[0])
        for i, part in enumerate(parts[1:], start=1):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                obj = importlib.import_module(".".join(parts[:i + 1]))  # a submodule not imported yet
        return obj
    except (ImportError, AttributeError) as error:
        raise CannotRebuild("%s is not found here (%s)" % (op, error))
