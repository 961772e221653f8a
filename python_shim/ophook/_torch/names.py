"""Names of what the torch modes record, run once per func or module object (C++ caches the
answers): the public name of a torch_function func, the aten name of a dispatch op, the dotted
nn.Module path."""
import sys
import weakref


def function_name(func):
    """Public name of a torch_function func: torch.add, torch.Tensor.sum, torch.nn.functional.linear."""
    torch = sys.modules["torch"]
    if isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return "torch.ops." + str(func)
    try:
        name = torch.overrides.resolve_name(func)
    except Exception:
        name = None
    if name:
        return _unaliased(torch, name, func)
    qualname = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    module = getattr(func, "__module__", None)
    if module and qualname:
        return "%s.%s" % (module, qualname)
    return "torch.%s" % (qualname or type(func).__name__)


def _unaliased(torch, name, func):
    """resolve_name's table keeps one name per function object, sometimes an alias's
    (torch.mm → "torch.spmm"): prefer the function's own name where its namespace has it."""
    short = getattr(func, "__name__", None)
    prefix, _, last = name.rpartition(".")
    if not short or not prefix or last == short or last.startswith("__") or short.startswith("_"):
        return name  # accessors and operators (Tensor.__pow__) keep the name the user's syntax reached
    owner = torch if prefix == "torch" else None
    if prefix.startswith("torch."):
        owner = torch
        for part in prefix.split(".")[1:]:
            owner = getattr(owner, part, None)
    if owner is not None and getattr(owner, short, None) is func:
        return "%s.%s" % (prefix, short)
    return name


def dispatch_name(func):
    """(name, callable) of a torch_dispatch func: ("aten.mm.default", the C++ op behind it)."""
    torch = sys.modules["torch"]
    if type(func) is torch._ops.OpOverload:
        # _op: the same call as func(...) without OpOverload.__call__'s frame
        return str(func), func._op
    if isinstance(func, torch._ops.HigherOrderOperator):
        return "higher_order." + func.name(), func
    return str(func), func


def make_module_namer():
    """torch.utils.module_tracker's naming: a module first seen outside any known parent is named by
    its class; its children (recursively) get "<parent>.<attribute>"."""
    known = weakref.WeakKeyDictionary()
    expanded = weakref.WeakSet()

    def name_of(module):
        name = known.get(module)
        if name is None:
            name = known[module] = type(module).__name__
        if module not in expanded:
            expanded.add(module)
            for child_name, child in module.named_children():
                known[child] = "%s.%s" % (name, child_name)
                name_of(child)
        return name

    return name_of
