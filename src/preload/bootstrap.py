# Embedded into libophook.so and run once per Python process, in a fresh namespace, when the
# interpreter is about to run user code. The C side defines _OPHOOK_LIBRARY (this library's path).
# Kept to syntax every Python 3 understands: on an interpreter the extension was not built for
# it prints one warning line and leaves the program alone.
def _ophook_bootstrap(library):
    import os
    import sys

    if "ophook" in sys.modules and hasattr(sys.modules["ophook"], "_startup"):
        sys.modules["ophook"]._startup.start(origin="preload")
        return
    here = os.path.dirname(library)
    for parent in (os.path.join(here, "python_shim"), os.path.dirname(here)):
        init = os.path.join(parent, "ophook", "__init__.py")
        if os.path.isfile(init):
            break
    else:
        sys.stderr.write("[ophook] no ophook package found beside %s: running unhooked\n" % library)
        return
    # importlib.machinery is already loaded at start-up; importlib.util would pull in contextlib.
    from importlib._bootstrap import module_from_spec
    from importlib.machinery import ModuleSpec, SourceFileLoader

    spec = ModuleSpec("ophook", SourceFileLoader("ophook", init), origin=init, is_package=True)
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
    module._startup.start(origin="preload")


_ophook_bootstrap(_OPHOOK_LIBRARY)
