# Run by libophook.so once per Python process, in a fresh namespace, when the interpreter is about
# to run user code. It is loaded through the import system's cached bytecode (compiling even these
# lines cost every hooked interpreter about a millisecond). The C side defines _OPHOOK_PACKAGE_INIT
# (this package's __init__.py), _OPHOOK_CONFIG_ERRORS (the OPHOOK_* variables' errors, NUL-
# separated), _OPHOOK_WRITE_EMPTY_ROOT_RUN (see _startup.start) and _OPHOOK_RUN_ROOT (the root
# variables' names and the default output directory, NUL-separated: _settings.run_root).
# Kept to syntax every Python 3 understands: on an interpreter the extension was not built for
# it prints one warning line and leaves the program alone.
def _ophook_bootstrap(init, config_errors, write_empty_root_run, run_root):
    import os
    import sys

    config_errors = config_errors.split("\0") if config_errors else []
    startup_options = {"config_errors": config_errors, "write_empty_root_run": write_empty_root_run,
                       "run_root": run_root.split("\0")}
    if "ophook" in sys.modules and hasattr(sys.modules["ophook"], "_startup"):
        sys.modules["ophook"]._startup.start(origin="preload", **startup_options)
        return
    # The import system's frozen modules are loaded at start-up; the importlib package is not
    # (importing it would pull in warnings too).
    bootstrap = sys.modules["_frozen_importlib"]
    loader = sys.modules["_frozen_importlib_external"].SourceFileLoader("ophook", init)
    module_from_spec = bootstrap.module_from_spec

    spec = bootstrap.ModuleSpec("ophook", loader, origin=init, is_package=True)
    spec.submodule_search_locations = [os.path.dirname(init)]
    spec.has_location = True
    module = module_from_spec(spec)
    sys.modules["ophook"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # e.g. an interpreter too old for the package: leave it unhooked
        del sys.modules["ophook"]
        sys.stderr.write("[ophook] cannot load %s (%s): running unhooked\n" % (init, error))
        return
    module._startup.start(origin="preload", **startup_options)


_ophook_bootstrap(_OPHOOK_PACKAGE_INIT, _OPHOOK_CONFIG_ERRORS, _OPHOOK_WRITE_EMPTY_ROOT_RUN, _OPHOOK_RUN_ROOT)
