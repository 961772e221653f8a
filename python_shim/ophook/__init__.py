"""ophook: records every NumPy and PyTorch operator call of a program.

Usually started without any code change (`LD_PRELOAD=libophook.so python script.py`); this module
is the Python API for starting and stopping it by hand:

    import ophook
    with ophook.Tracer(output="dumps", mode="stats", levels=["numpy"]):
        ...

Keyword options are the OPHOOK_* variable names in lower case without the prefix (see README).
"""
from . import _startup

__all__ = ["Tracer", "install", "uninstall", "flush", "step", "dump_ring", "override"]
__version__ = "0.1.0"

# The public names load on first use: every hooked interpreter imports this package at start-up,
# and most never call the API.
_HOMES = {"Tracer": "_api", "install": "_api", "uninstall": "_api", "flush": "_api", "step": "_api",
          "dump_ring": "_api", "override": "_overrides"}


def __getattr__(name):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError("module 'ophook' has no attribute %r" % name)
    value = getattr(__import__(__name__ + "." + home, fromlist=[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
