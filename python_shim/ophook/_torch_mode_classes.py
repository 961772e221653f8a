"""The mode classes: empty shells whose handler is a C++ builtin bound to their one instance
(_ophook.torch_bound_handler), and how that instance is made."""
from . import _ophook


def function_mode_class(torch, ignore_compile):
    if not ignore_compile:
        class OphookFunctionMode(torch.overrides.TorchFunctionMode):
            pass  # __torch_function__: the C++ handler, set on the class by new_mode
    else:
        compiling = torch.compiler.is_compiling

        class OphookFunctionMode(torch.overrides.TorchFunctionMode):
            # While Dynamo traces, the mode steps aside: the op goes into the graph as if the mode
            # were absent, and the compiled region runs unrecorded. (Dynamo traces this method, so
            # it stays Python.)
            def __torch_function__(self, func, types, args=(), kwargs=None, _compiling=compiling):
                if _compiling():
                    return func(*args, **(kwargs or {}))
                return self._ophook_handler(func, types, args, kwargs)
    return OphookFunctionMode


def new_mode(mode_class, level, handler_level=None):
    """The one instance of a mode class made for one installation, its handler bound to it
    (`handler_level`: the C++ handler's name when it is not the level's own). The
    C++ handler (a builtin whose __self__ is the mode, as torch requires) goes into the class
    itself when the class does not define the method in Python: torch looks the method up by name
    on every op, and a builtin found in the first class's dict is returned as it is, with no
    instance dict to search and no bound method to make. No Python frame runs per op."""
    mode = mode_class()
    handler = _ophook.torch_bound_handler(mode, handler_level or level)
    method_name = "__%s__" % level  # __torch_function__ / __torch_dispatch__
    if method_name in mode_class.__dict__:
        mode._ophook_handler = handler  # the Python method calls it
    else:
        setattr(mode_class, method_name, handler)
    return mode


def dispatch_mode_class(torch, ignore_compile):
    from torch.utils._python_dispatch import TorchDispatchMode

    class OphookDispatchMode(TorchDispatchMode):
        supports_higher_order_operators = True

        @classmethod
        def _should_skip_dynamo(cls):
            # True would wrap a __torch_dispatch__ defined in the class in torch._disable_dynamo;
            # the handler is a C++ builtin set by new_mode (nothing for Dynamo to trace).
            return False

        @classmethod
        def ignore_compile_internals(cls):
            return ignore_compile

    return OphookDispatchMode
