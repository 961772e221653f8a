"""Uncaught exceptions as triggers of dump mode's ring (OPHOOK_RING_BYTES): sys.excepthook and
threading.excepthook, each chained to the hook it replaces, have the ring written before the
exception is reported as it would have been. Nothing in the numpy or torch namespaces changes."""
import sys

from . import _import_hooks

_installed = False


def _write_ring(native, why):
    try:
        from ._ranks import rank_signals as _rank_signals

        _rank_signals.trigger(why)  # every rank of a distributed job writes its ring too
        native.dump_ring(why)
    except Exception:  # the program's own report of its exception must come whatever happens here
        pass


def _chain_sys_hook(native):
    previous = sys.excepthook

    def excepthook(kind, value, traceback):
        _write_ring(native, "uncaught exception %s" % getattr(kind, "__name__", kind))
        previous(kind, value, traceback)

    sys.excepthook = excepthook


def _chain_threading_hook(native, threading):
    previous = threading.excepthook

    def excepthook(args):
        if args.exc_type is not SystemExit:  # what threading ignores silently is no failure either
            thread = args.thread.name if args.thread is not None else "?"
            _write_ring(native, "uncaught exception %s in thread %s"
                        % (getattr(args.exc_type, "__name__", args.exc_type), thread))
        previous(args)

    threading.excepthook = excepthook


def install(native):
    """Chains both hooks once per process (a second Tracer keeps the first ones)."""
    global _installed
    if _installed:
        return
    _installed = True
    _chain_sys_hook(native)
    _import_hooks.when_imported("threading", lambda threading: _chain_threading_hook(native, threading))
