"""Process start-up of ophook: configuration, the recorder, hooks installed as frameworks load."""
import atexit
import os
import sys

from . import _settings

_started = False


def _warn(message):
    sys.stderr.write("[ophook] %s\n" % message)
    sys.stderr.flush()


_native_failed = False


def _load_native():
    """The extension module, or None (after one warning) when it does not load here."""
    global _native_failed
    if _native_failed:
        return None
    try:
        from . import _ophook
    except ImportError as error:
        _native_failed = True
        _warn("the extension does not load in Python %d.%d (%s): running unhooked"
              % (sys.version_info[0], sys.version_info[1], error))
        return None
    return _ophook


def _install_framework_hooks(levels, before_install=None):
    from . import _import_hooks

    def install_with(installer_module):
        # The installer's module (and what it imports: json, weakref, ...) loads only once its
        # framework does, so `python -c pass` under the hook pays for none of it.
        def install(module):
            if before_install is not None and not before_install():
                return
            __import__(__package__ + installer_module, fromlist=["install"]).install(module)
        return install

    if "numpy" in levels:
        _import_hooks.when_imported("numpy", install_with("._numpy_patch"))
    if levels & {"torch_function", "torch_dispatch", "collective"}:
        _import_hooks.when_imported("torch", install_with("._torch.modes"))


def _check(settings, native):
    """Raises ValueError on a bad setting or an overrides file that cannot be loaded."""
    errors = native.config_errors(settings)
    if errors:
        raise ValueError("; ".join(errors))
    rules = settings.get("OPHOOK_OVERRIDES")
    if rules:
        from . import _overrides

        try:
            _overrides.load_rules_file(rules)
        except Exception as error:
            raise ValueError("OPHOOK_OVERRIDES=%r cannot be loaded: %s: %s"
                             % (rules, type(error).__name__, error)) from error


def _start_recorder(settings, native):
    """The output directory, or None in a rank that OPHOOK_RANKS leaves out (nothing started)."""
    output = native.start(settings)
    if output is None:
        return None
    # The recorder exported where the root process writes; mirror it into os.environ so that
    # children started with env=os.environ.copy() still write below it.
    os.environ.update(native.exported_environment())
    native.set_version("python", sys.version.split()[0])
    # `ophook replay` re-runs the calls with the interpreter (and so the packages) that made them.
    native.set_version("python_executable", sys.executable)
    if native.uses_ring():
        from . import _ring_triggers

        _ring_triggers.install(native)
    return output


def begin(settings, native):
    """Starts the recorder with `settings` and arranges the hooks. Raises on a bad setting."""
    global _deferred
    _deferred = None  # started by hand (the API): a pending start from the preload is void
    _check(settings, native)
    output = _start_recorder(settings, native)
    if output is not None:
        _install_framework_hooks(_settings.levels(settings))
    return output


# The settings of a start the preload or the shim put off until a framework is imported: the
# writer thread, the output directory and the summary cost a program that never imports NumPy or
# PyTorch (a tool, a build step) for nothing.
_deferred = None


def started_by_preload_or_shim():
    return _started


def records_this_process():
    """Whether the preload or the shim records this process, or will at the first framework import."""
    if _deferred is not None:
        return True
    native = sys.modules.get(__package__ + "._ophook")
    return native is not None and native.is_recording()


def void_deferred_start():
    """Recording started by hand takes over before any framework import (the pytest plugin, whose
    collection imports NumPy before its first test starts recording): the put-off start of the
    preload or the shim will not happen, and this process leaves no output of its own."""
    global _deferred
    _deferred = None


def _claim_root_output(settings):
    """`settings` with OPHOOK_OUTPUT made absolute now (the contract: relative to the working
    directory at start), exporting the recorder's root variables when no process above this one
    did, so that children started before this process records anything still write below it."""
    root_pid, root_output, default_output = _settings.run_root()
    output = os.path.abspath(settings.get("OPHOOK_OUTPUT") or default_output)
    settings = dict(settings, OPHOOK_OUTPUT=output)
    if not (os.environ.get(root_pid) and os.environ.get(root_output)):
        os.environ[root_pid] = str(os.getpid())
        os.environb[os.fsencode(root_output)] = os.fsencode(output)
    return settings


def _is_root():
    return os.environ.get(_settings.run_root()[0]) == str(os.getpid())


def _start_deferred():
    """Starts the put-off recording (at the first framework import); True when recording."""
    global _deferred
    native = _load_native()
    if native is None:
        _deferred = None  # running unhooked: no output at all, not even an empty run's
        return False
    settings, _deferred = _deferred, None
    if settings is None:
        return native.is_recording()
    try:
        output = _start_recorder(settings, native)
    except Exception as error:
        _warn("cannot start recording: %s" % error)
        return False
    if output is None:
        return False  # a rank OPHOOK_RANKS leaves out: it runs unrecorded
    native.log("info", _start_message(settings, output, native.ring_description(settings), native))
    return True


def _step_work(native):
    """What is done at each optimizer step besides recording: the monitor, the replica check."""
    import json  # not at start-up: a program that never imports a framework loads none of it

    config = json.loads(native.config())
    work = ["training monitor into monitor.jsonl"] if config.get("monitor") else []
    if config.get("replicas"):
        work.append("replicas compared every %d steps" % config["replicas"])
    return work


def _start_message(settings, output, ring="", native=None):
    """The log line of a start, as bytes (the path may not be UTF-8); `ring`: the ring's
    description, when dump mode keeps one; `native`: the extension, once the recorder has started."""
    work = _step_work(native) if native is not None else []
    if native is not None and not native.records_ops():
        return os.fsencode("%s (no op call recorded) in " % "; ".join(work)) + os.fsencode(output)
    mode = settings.get("OPHOOK_MODE", "dump") + " mode" + ("; " + ring if ring else "")
    if work:
        mode += "; " + "; ".join(work)
    levels = ",".join(sorted(_settings.levels(settings)))
    return os.fsencode("recording %s (%s) into " % (levels, mode)) + os.fsencode(output)


# Set by the preload's bootstrap: writes the output of a run that imported no framework from the
# core the preload has loaded anyway, so that the root of such a run (a tool, a build step) does
# not load the extension at exit only to say that nothing was recorded.
_write_empty_root_run = None


def _finish_empty_root_run():
    global _deferred
    settings, _deferred = _deferred, None
    encoded = b"\0".join(os.fsencode(name) + b"=" + (value if isinstance(value, bytes) else os.fsencode(value))
                         for name, value in settings.items())
    _write_empty_root_run(encoded, os.fsencode(sys.version.split()[0]),
                          _start_message(settings, settings["OPHOOK_OUTPUT"]))


def _finish_at_exit():
    # The root process writes its summary even when nothing was imported to record: the output
    # directory then says so (0 calls) instead of holding an earlier run's files. Other processes
    # that recorded nothing leave nothing, as forked children always did.
    if _deferred is not None and _is_root():
        if _write_empty_root_run is not None:
            _finish_empty_root_run()
        else:
            _start_deferred()
    native = sys.modules.get(__package__ + "._ophook")  # never loaded: nothing to finish
    if native is not None:
        native.finish()


def start(origin, config_errors=None, write_empty_root_run=None, run_root=None):
    """Entry of the preload bootstrap and of the shim's site/usercustomize; runs once.
    `config_errors`: the settings' errors as the preload already found them, so that the
    extension loads only once a framework is imported (None: check them here).
    `write_empty_root_run`: the preload's writer of an empty run (see _write_empty_root_run).
    `run_root`: the recorder's root variables and default output directory, as the preload hands
    them (None: the extension says, _settings.run_root)."""
    global _started, _deferred, _write_empty_root_run
    if _started:
        return
    _started = True
    _write_empty_root_run = write_empty_root_run
    if run_root is not None:
        _settings.use_run_root(run_root)
    settings = _settings.collect()
    if _settings.truthy(settings, "DISABLE"):
        return
    native = None
    if config_errors is None or settings.get("OPHOOK_OVERRIDES"):  # the rules load now
        native = _load_native()
        if native is None:
            return
        config_errors = native.config_errors(settings)
    if config_errors:
        for message in config_errors:
            _warn(message)
        if _settings.truthy(settings, "STRICT"):
            _warn("OPHOOK_STRICT=1: exiting with status 2 before the program runs")
            os._exit(2)
        _warn("running unhooked")
        return
    try:
        if native is not None:
            _check(settings, native)
        _deferred = _claim_root_output(settings)
    except Exception as error:
        _warn("cannot start recording: %s" % error)
        if _settings.truthy(settings, "STRICT"):
            os._exit(2)
        return
    _install_framework_hooks(_settings.levels(settings), _start_deferred)
    atexit.register(_finish_at_exit)
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _after_fork_in_child():
    # multiprocessing's forked workers leave through os._exit, which skips atexit: have their
    # finalizer pass write this child's summary.
    mp_util = sys.modules.get("multiprocessing.util")
    native = sys.modules.get(__package__ + "._ophook")  # not loaded: nothing recorded to finish
    if mp_util is not None and native is not None:
        mp_util.Finalize(None, native.finish, exitpriority=-100)
