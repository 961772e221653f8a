"""Runs a callback once a module has finished importing, or at once if it already has.

The callback is attached to that module's own loader object for the duration of its
exec_module call (an instance attribute removed again afterwards), so nothing in the imported
module's namespace, spec or loader is left changed.
"""
import sys
import _thread  # not threading: this module loads in every hooked interpreter

_lock = _thread.RLock()
_pending = {}  # module name -> [callbacks]


class _PostImportFinder:
    """A meta-path finder that never finds anything itself: it only decorates the real loader."""

    def __init__(self):
        self._busy = set()

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _pending or fullname in self._busy:
            return None
        import importlib.util

        self._busy.add(fullname)
        try:
            spec = importlib.util.find_spec(fullname)
        except (ImportError, ValueError):
            return None
        finally:
            self._busy.discard(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module):
            try:
                original(module)
            finally:
                loader.__dict__.pop("exec_module", None)
            _fire(fullname, module)

        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):
            return None  # a loader that refuses attributes: fall back to the next import check
        return spec


_finder = _PostImportFinder()


def _fire(name, module):
    with _lock:
        callbacks = _pending.pop(name, [])
    for callback in callbacks:
        callback(module)


def when_imported(name, callback):
    """Calls callback(module) after `name` is imported (now, if it already is)."""
    module = sys.modules.get(name)
    if module is not None and getattr(getattr(module, "__spec__", None), "_initializing", False) is False:
        callback(module)
        return
    with _lock:
        _pending.setdefault(name, []).append(callback)
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)


def cancel_all():
    with _lock:
        _pending.clear()
        if _finder in sys.meta_path:
            sys.meta_path.remove(_finder)
