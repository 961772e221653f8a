"""What the Python baselines share: every ufunc in the numpy namespace replaced by a wrapper (the
seed's mechanism — it sees np.add(a, b), never a + b), with the originals put back on uninstall."""
import numpy as np


class UfuncNamespacePatch:
    """Subclasses define wrap(name, ufunc) -> callable. Not thread-safe (install/uninstall)."""

    def __init__(self):
        self.originals = {}

    def wrap(self, name, ufunc):
        raise NotImplementedError

    def install(self):
        for name in dir(np):
            obj = getattr(np, name)
            if isinstance(obj, np.ufunc):
                self.originals[name] = obj
                setattr(np, name, self.wrap(name, obj))

    def uninstall(self):
        for name, ufunc in self.originals.items():
            setattr(np, name, ufunc)
        self.originals.clear()
