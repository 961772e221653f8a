"""ophook's on-demand entry: `PYTHONPATH=build/python_shim python script.py` records the run.

Python imports only the first `sitecustomize` on sys.path; this one runs the one it shadows
(a distribution's or a virtualenv's) before starting ophook, so nothing that used to run is lost.
"""


def _run_shadowed_sitecustomize():
    import importlib.machinery
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _start():
    import ophook

    ophook._startup.start(origin="sitecustomize")


_run_shadowed_sitecustomize()
_start()
