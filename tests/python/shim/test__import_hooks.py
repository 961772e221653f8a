"""ophook._import_hooks, which installs a level's hooks once its framework is imported: the
callback runs after the module has finished executing (or at once when it already has), each
callback once, in order; a module that fails to import runs none; the module's loader is left as
it was. Real imports of modules written to a temporary directory, in this process."""
import sys

import pytest

from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
from ophook import _import_hooks  # noqa: E402


@pytest.fixture(autouse=True)
def modules(tmp_path, monkeypatch):
    """A directory on sys.path for the test's modules, which leave sys.modules afterwards, and
    the hooks' state as at a process's start."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(_import_hooks, "_pending", {})
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("hooked_"):
            del sys.modules[name]


def write(directory, name, source):
    (directory / (name + ".py")).write_text(source)


def test_the_callback_runs_once_the_module_has_executed(modules):
    write(modules, "hooked_late", "first = 1\nlast = 2\n")
    seen = []
    _import_hooks.when_imported("hooked_late", lambda module: seen.append((module.__name__, module.last)))
    assert seen == [] and _import_hooks._finder in sys.meta_path
    import hooked_late  # noqa: F401
    assert seen == [("hooked_late", 2)]
    assert "exec_module" not in vars(sys.modules["hooked_late"].__spec__.loader)  # the loader as it was
    assert _import_hooks._pending == {}


def test_a_module_imported_already_runs_the_callback_at_once(modules):
    write(modules, "hooked_early", "value = 3\n")
    import hooked_early  # noqa: F401
    seen = []
    meta_path = list(sys.meta_path)
    _import_hooks.when_imported("hooked_early", lambda module: seen.append(module.value))
    assert seen == [3] and sys.meta_path == meta_path  # no finder needed


def test_every_callback_of_a_module_runs_once_in_order(modules):
    write(modules, "hooked_twice", "")
    seen = []
    _import_hooks.when_imported("hooked_twice", lambda module: seen.append("first"))
    _import_hooks.when_imported("hooked_twice", lambda module: seen.append("second"))
    import hooked_twice  # noqa: F401
    import importlib
    importlib.reload(sys.modules["hooked_twice"])
    assert seen == ["first", "second"]


def test_a_module_that_fails_to_import_runs_no_callback(modules):
    write(modules, "hooked_broken", "raise RuntimeError('broken at import')\n")
    seen = []
    _import_hooks.when_imported("hooked_broken", seen.append)
    with pytest.raises(RuntimeError, match="broken at import"):
        import hooked_broken  # noqa: F401
    assert seen == []
    write(modules, "hooked_broken", "fixed = True\n")  # imported again, now whole: the callback runs
    import hooked_broken  # noqa: F401,F811
    assert [module.fixed for module in seen] == [True]


def test_a_module_that_does_not_exist_still_fails_as_without_the_hook(modules):
    _import_hooks.when_imported("hooked_missing", lambda module: pytest.fail("called"))
    with pytest.raises(ModuleNotFoundError, match="hooked_missing"):
        import hooked_missing  # noqa: F401


def test_other_imports_are_left_alone(modules):
    write(modules, "hooked_other", "value = 5\n")
    _import_hooks.when_imported("hooked_wanted", lambda module: pytest.fail("called"))
    import hooked_other
    assert hooked_other.value == 5 and "exec_module" not in vars(hooked_other.__spec__.loader)


def test_cancel_all_drops_the_callbacks_and_the_finder(modules):
    write(modules, "hooked_cancelled", "")
    _import_hooks.when_imported("hooked_cancelled", lambda module: pytest.fail("called"))
    _import_hooks.cancel_all()
    assert _import_hooks._finder not in sys.meta_path and _import_hooks._pending == {}
    import hooked_cancelled  # noqa: F401
