"""The Python API: install/uninstall/flush and the Tracer context manager."""
from . import _settings, _startup


def _native():
    from . import _ophook

    return _ophook


def install(**options):
    """Starts recording in this process with `options` (OPHOOK_* names, lower case, no prefix)
    over the environment's settings. Raises ValueError naming a bad option value."""
    native = _native()
    settings = _settings.collect(**options)
    if native.is_recording():
        return native.output_path()
    return _startup.begin(settings, native)


def uninstall():
    """Stops recording and restores every patched NumPy pointer and torch mode."""
    from . import _import_hooks, _numpy_patch

    native = _native()
    native.set_recording(False)
    _import_hooks.cancel_all()
    _numpy_patch.uninstall()
    try:
        from ._torch import modes as _torch_modes
    except ImportError:
        return
    _torch_modes.uninstall()


def flush():
    """Waits until every call recorded so far is on disk (but those held in the ring, see
    dump_ring)."""
    _native().flush()


def step():
    """Marks the end of a step, for programs whose steps are not torch.optim optimizer steps (a
    NumPy loop, a custom update): records made after it carry the next "step", and OPHOOK_STEPS
    selects among them. Optimizer steps are counted without it."""
    _native().step()


def dump_ring(reason="ophook.dump_ring()"):
    """Writes the arrays that dump mode holds in its ring (OPHOOK_RING_BYTES): the files and
    trace.jsonl lines of the latest calls, as a NaN/Inf or an uncaught exception would. `reason`
    goes into summary.json. Returns when they are on disk: True, or False when there is no ring.
    In a torch.distributed job every rank writes its ring too (docs/ranks.md)."""
    from ._ranks import rank_signals as _rank_signals

    _rank_signals.trigger(str(reason))
    return _native().dump_ring(str(reason))


class Tracer:
    """Records the calls made inside a `with` block (the seed API tracer's interface):

        with ophook.Tracer(output_path="trace_output", levels=["torch_function"], mode="trace"):
            ...

    On exit the summary and api_* files are written. start()/stop() do the same by hand. A
    recording already running when the Tracer starts (LD_PRELOAD, the PYTHONPATH shim) is finished
    first, so that the Tracer's options apply."""

    def __init__(self, **options):
        self._options = options
        self.output = None

    def start(self):
        if _native().is_recording():
            # Started already (preload or the PYTHONPATH shim): that recording ends here, with its
            # summary, and the Tracer's own options take over.
            self.stop()
        self.output = install(**self._options)
        return self

    def stop(self):
        uninstall()
        _native().finish()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False
