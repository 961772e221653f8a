"""How ophook keeps out of torch.compile's way: what Dynamo traces in place of ophook's callables
under OPHOOK_COMPILE=ignore and record, and the warning Dynamo gives because of ophook's hooks.

Under both policies compiled regions compile as if ophook were absent. Dynamo traces the
function mode's __torch_function__ on each op it meets, and ophook's is a C++ builtin, which Dynamo
cannot trace (a graph break). It is registered with torch.compiler.substitute_in_graph: while
Dynamo traces, it traces a stand-in that runs the op as if no mode were there; eager code still
calls the builtin itself. So no Python frame runs per eager op, and a warning torch raises inside
an op keeps the program's line as its place (a Python __torch_function__ would be the innermost
frame, and named).
"""

# ids of the callables given a stand-in: substitute_in_graph refuses a second registration, and a
# registration lasts for the process.
_registered = set()


def available(torch):
    """Whether this torch can take stand-ins (torch.compiler.substitute_in_graph, torch 2.5 on)."""
    return callable(getattr(getattr(torch, "compiler", None), "substitute_in_graph", None))


def run_the_op(func, types, args=(), kwargs=None):
    """The function mode's stand-in: the op goes into the graph as if no mode were there."""
    return func(*args, **(kwargs or {}))


def give_stand_in(torch, original, stand_in):
    """Has Dynamo trace `stand_in` wherever it meets `original` (once per original)."""
    if id(original) in _registered:
        return
    torch.compiler.substitute_in_graph(original, skip_signature_check=True)(stand_in)
    _registered.add(id(original))


# What torch warns at each call of a torch.compile'd module while any global module hook exists
# (ophook's are): filtered out, as the program would not see it without ophook.
COMPILED_MODULE_WARNING = "Using `torch.compile(module)` when there are global hooks"
