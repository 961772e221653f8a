"""Process start-up of ophook: configuration, the recorder, hooks installed as frameworks load."""
import atexit
import importlib
import os
import sys

from . import _settings

_started = False
_framework_installers = {}  # module name -> installer(module); filled by the framework modules


def _warn(message):
    sys.stderr.write("[ophook] %s\n" % message)
    sys.stderr.flush()


def _load_native():
    try:
        from . import _ophook
    except ImportError as error:
        _warn("the extension does not load in Python %d.%d (%s): running unhooked"
              % (sys.version_info[0], sys.version_info[1], error))
        return None
    return _ophook


def register_framework(module_name, installer):
    _framework_installers[module_name] = installer


def _install_framework_hooks(levels):
    from . import _import_hooks

    def install_with(installer_module):
        # The installer's module (and what it imports: json, weakref, ...) loads only once its
        # framework does, so `python -c pass` under the hook pays for none of it.
        def install(module):
            importlib.import_module(installer_module, __package__).install(module)
        return install

    if "numpy" in levels:
        _import_hooks.when_imported("numpy", install_with("._numpy_patch"))
    if levels & {"torch_function", "torch_dispatch"}:
        _import_hooks.when_imported("torch", install_with("._torch_modes"))


def begin(settings, native):
    """Starts the recorder with `settings` and arranges the hooks. Raises on a bad setting."""
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
    output = native.start(settings)
    # The recorder exported where the root process writes; mirror it into os.environ so that
    # children started with env=os.environ.copy() still write below it.
    os.environ.update(native.exported_environment())
    native.set_version("python", sys.version.split()[0])
    _install_framework_hooks(_settings.levels(settings))
    return output


def start(origin):
    """Entry of the preload bootstrap and of the shim's site/usercustomize; runs once."""
    global _started
    if _started:
        return
    _started = True
    settings = _settings.collect()
    if _settings.truthy(settings, "DISABLE"):
        return
    native = _load_native()
    if native is None:
        return
    errors = native.config_errors(settings)
    if errors:
        for message in errors:
            _warn(message)
        if _settings.truthy(settings, "STRICT"):
            _warn("OPHOOK_STRICT=1: exiting with status 2 before the program runs")
            os._exit(2)
        _warn("running unhooked")
        return
    try:
        output = begin(settings, native)
    except Exception as error:
        _warn("cannot start recording: %s" % error)
        if _settings.truthy(settings, "STRICT"):
            os._exit(2)
        return
    atexit.register(native.finish)
    os.register_at_fork(after_in_child=_after_fork_in_child)
    message = "recording %s (%s mode) into %s" % (
        ",".join(sorted(_settings.levels(settings))), settings.get("OPHOOK_MODE", "dump"), output)
    native.log("info", os.fsencode(message))  # bytes: the path may not be UTF-8


def _after_fork_in_child():
    # multiprocessing's forked workers leave through os._exit, which skips atexit: have their
    # finalizer pass write this child's summary.
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is not None:
        from . import _ophook

        mp_util.Finalize(None, _ophook.finish, exitpriority=-100)
