"""ophook: records every NumPy and PyTorch operator call of a program.

Usually started without any code change (`LD_PRELOAD=libophook.so python script.py`); this module
is the Python API for starting and stopping it by hand:

    import ophook
    with ophook.Tracer(output="dumps", mode="stats", levels=["numpy"]):
        ...

Keyword options are the OPHOOK_* variable names in lower case without the prefix (see README).
"""
from . import _startup
from ._api import Tracer, flush, install, uninstall
from ._overrides import override

__all__ = ["Tracer", "install", "uninstall", "flush", "override"]
__version__ = "0.1.0"
