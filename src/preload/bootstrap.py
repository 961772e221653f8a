# Embedded into libophook.so and run once per Python process, in a fresh namespace, when the
# interpreter is about to run user code. The C side defines _OPHOOK_LIBRARY (this library's path)
# and _OPHOOK_CONFIG_ERRORS (the OPHOOK_* variables' errors, each message hex-encoded UTF-8).
# Kept to syntax every Python 3 understands: on an interpreter the extension was not built for
# it prints one warning line and leaves the program alone.
def _ophook_bootstrap(library, config_errors):
    import os
    import sys

    config_errors = [bytes.fromhex(e).decode("utf-8", "replace") for e in config_errors]
    if "ophook" in sys.modules and hasattr(sys.modules["ophook"], "_startup"):
        sys.modules["ophook"]._startup.start(origin="preload", config_errors=config_errors)
        return
    here = os.path.dirname(library)
    for parent in (os.path.join(here, "python_shim"), os.path.dirname(here)):
        init = os.path.join(parent, "ophook", "__init__.py")
        if os.path.isfile(init):
            break
    else:
        sys.stderr.write("[ophook] no ophook package found beside %s: running unhooked\n" % library)
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
    module._startup.start(origin="preload", config_errors=config_errors)


_ophook_bootstrap(_OPHOOK_LIBRARY, _OPHOOK_CONFIG_ERRORS)
