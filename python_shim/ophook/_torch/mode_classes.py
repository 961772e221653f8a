"""The mode classes: empty shells whose handler is a C++ builtin bound to their one instance
(_ophook.torch_bound_handler), and how that instance is made."""
from .. import _ophook


def function_mode_class(torch):
    class OphookFunctionMode(torch.overrides.TorchFunctionMode):
        pass  # __torch_function__: the C++ handler, set on the class by new_mode
    return OphookFunctionMode


def new_mode(mode_class, level):
    """The one instance of a mode class made for one installation, its handler bound to it. The
    C++ handler (a builtin whose __self__ is the mode, as torch requires) goes into the class
    itself: torch looks the method up by name
    on every op, and a builtin found in the first class's dict is returned as it is, with no
    instance dict to search and no bound method to make. No Python frame runs per op."""
    mode = mode_class()
    setattr(mode_class, "__%s__" % level, _ophook.torch_bound_handler(mode, level))
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
