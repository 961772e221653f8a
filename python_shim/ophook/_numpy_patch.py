"""Which NumPy objects get hooked (policy); the patching itself happens in C (_ophook)."""
import importlib
import os

from . import _ophook

# Modules whose ufuncs are hooked: the public namespace and the private umath modules, which hold
# ufuncs that numpy's own functions call (e.g. numpy.linalg's gufuncs).
_UFUNC_MODULES = ("numpy", "numpy._core.umath", "numpy.core.umath", "numpy.linalg._umath_linalg")
# Public modules whose __array_function__ dispatchers are hooked.
_DISPATCHER_MODULES = ("numpy", "numpy.linalg", "numpy.fft", "numpy.lib.stride_tricks",
                       "numpy.lib.recfunctions", "numpy.lib.scimath", "numpy.lib.npyio")


def _modules(names):
    for name in names:
        try:
            yield importlib.import_module(name)
        except Exception:  # absent in this NumPy version
            continue


def _version_tuple(text):
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def _ufunc_name(np, module, ufunc):
    """numpy.<name> for a ufunc of the public namespace (np.abs is numpy.absolute); else where it
    lives, e.g. numpy.linalg._umath_linalg.solve1 (what np.linalg.solve calls), so that the name
    neither passes for a public function (there is no numpy.solve1, and numpy.det would be another
    callable's name) nor leaves replay unable to find the ufunc."""
    if getattr(np, ufunc.__name__, None) is ufunc:
        return "numpy." + ufunc.__name__
    return "%s.%s" % (module.__name__, ufunc.__name__)


def install(np):
    """Hooks `np` (the imported numpy module). Returns a short description for the log."""
    if not _ophook.records_ops():
        return  # the training monitor alone records no call
    if not _ophook.enable_numpy_capture():
        _ophook.log("warn", "numpy %s: its C API could not be imported; NumPy calls are not recorded"
                    % getattr(np, "__version__", "?"))
        return
    _ophook.set_version("numpy", np.__version__)
    _ophook.add_library_directory(os.path.dirname(np.__file__))

    seen = set()
    ufuncs = []
    for module in _modules(_UFUNC_MODULES):
        for obj in list(vars(module).values()):
            if isinstance(obj, np.ufunc) and id(obj) not in seen:
                seen.add(id(obj))
                ufuncs.append((obj, _ufunc_name(np, module, obj)))
    count = _ophook.patch_ufuncs(ufuncs)
    methods = _ophook.patch_ufunc_methods(np.ufunc)

    dispatcher_type = type(np.concatenate)
    if _version_tuple(np.__version__) < (1, 25) or dispatcher_type.__name__ != "_ArrayFunctionDispatcher":
        _ophook.log("info", "numpy %s: ufunc levels only (array_function needs NumPy >= 1.25)" % np.__version__)
        return
    seen.clear()
    dispatchers = []
    for module in _modules(_DISPATCHER_MODULES):
        for obj in list(vars(module).values()):
            if type(obj) is dispatcher_type and id(obj) not in seen:
                seen.add(id(obj))
                dispatchers.append((obj, "%s.%s" % (obj.__module__, obj.__name__)))
    functions = _ophook.patch_dispatchers(dispatchers)
    _ophook.log("debug", "numpy %s: hooked %d ufuncs, methods %s, %d array functions"
                % (np.__version__, count, ",".join(methods), functions))


def uninstall():
    return _ophook.unpatch_numpy()
