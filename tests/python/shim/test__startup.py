"""ophook._startup, how a process starts recording: bad settings refused before anything starts
(with OPHOOK_STRICT, exit status 2), the extension loaded only once a framework is imported, the
output directory claimed at start as an absolute path for the whole process tree, a rank left out
starting nothing, the run of a process that imported no framework still written by the root, and
the hooks asked for by the levels. Called directly on the build tree's package with a stand-in for
the extension; nothing is installed into this process."""
import os
import sys
import types

import pytest

from harness import SHIM_DIR

sys.path.insert(0, str(SHIM_DIR))  # the package without starting it
import ophook  # noqa: E402
from ophook import _import_hooks, _ring_triggers, _settings, _startup  # noqa: E402

NATIVE = "ophook._ophook"
# What the preload's bootstrap hands over: the root variables' names and the default output.
RUN_ROOT = ["OPHOOK_ROOT_PID", "OPHOOK_ROOT_OUTPUT", "np_op_dumps"]


class Native:
    """The extension's start-up entry points, recording what they were asked."""

    def __init__(self, errors=(), output="/runs/out", ring=False, recording=False, exported=None, start_error=None):
        self.errors, self.output, self.ring, self.recording = list(errors), output, ring, recording
        self.exported = exported or {"OPHOOK_ROOT_PID": "1", "OPHOOK_ROOT_OUTPUT": "/runs/out"}
        self.start_error = start_error
        self.started, self.versions, self.logs, self.finished = [], {}, [], 0

    def config_errors(self, settings):
        return list(self.errors)

    def start(self, settings):
        if self.start_error:
            raise self.start_error
        self.started.append(dict(settings))
        return self.output

    def exported_environment(self):
        return dict(self.exported)

    def run_root_names(self):
        return ("OPHOOK_ROOT_PID", "OPHOOK_ROOT_OUTPUT", "np_op_dumps")

    def set_version(self, name, value):
        self.versions[name] = value

    def uses_ring(self):
        return self.ring

    def is_recording(self):
        return self.recording

    def ring_description(self, settings):
        return "a 256 MiB ring"

    def records_ops(self):
        return True

    def config(self):
        return '{"monitor": ""}'

    def log(self, level, message):
        self.logs.append((level, message))

    def finish(self):
        self.finished += 1


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """_startup as a new process has it, its effects on this process recorded instead of made:
    no OPHOOK_* variable, no extension loaded, no hook, no atexit or fork handler, no exit."""
    for name in [n for n in os.environ if n.startswith("OPHOOK_")]:
        monkeypatch.delenv(name)
    for name in ("OPHOOK_ROOT_PID", "OPHOOK_ROOT_OUTPUT"):  # set by the code under test: undone after
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    for name, value in (("_started", False), ("_native_failed", False), ("_deferred", None),
                        ("_write_empty_root_run", None)):
        monkeypatch.setattr(_startup, name, value)
    monkeypatch.setattr(_settings, "_run_root", None)  # neither handed over nor asked yet
    monkeypatch.delitem(sys.modules, NATIVE, raising=False)
    monkeypatch.delattr(ophook, "_ophook", raising=False)
    effects = types.SimpleNamespace(hooks=[], atexit=[], at_fork=[], exits=[], rings=[])
    monkeypatch.setattr(_import_hooks, "when_imported", lambda name, callback: effects.hooks.append((name, callback)))
    monkeypatch.setattr(_ring_triggers, "install", effects.rings.append)
    monkeypatch.setattr(_startup.atexit, "register", effects.atexit.append)
    monkeypatch.setattr(_startup.os, "register_at_fork", lambda **kwargs: effects.at_fork.append(kwargs))

    def exit_(status):
        effects.exits.append(status)
        raise SystemExit(status)

    monkeypatch.setattr(_startup.os, "_exit", exit_)
    return effects


def loaded(monkeypatch, native):
    """`native` as the extension that `from . import _ophook` finds."""
    monkeypatch.setitem(sys.modules, NATIVE, native)
    monkeypatch.setattr(ophook, "_ophook", native, raising=False)
    return native


def test_an_extension_that_does_not_load_warns_once_and_runs_unhooked(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, NATIVE, None)  # importing it raises ImportError
    assert _startup._load_native() is None
    assert _startup._load_native() is None
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("[ophook] the extension does not load in Python %d.%d (" % sys.version_info[:2])
    assert lines[0].endswith("): running unhooked")


def test_an_extension_that_loads_is_returned(monkeypatch):
    native = loaded(monkeypatch, Native())
    assert _startup._load_native() is native


def test_bad_settings_are_one_error_of_every_message():
    with pytest.raises(ValueError, match=r"^OPHOOK_MODE='x' is not valid; OPHOOK_NAN='y' is not valid$"):
        _startup._check({}, Native(errors=["OPHOOK_MODE='x' is not valid", "OPHOOK_NAN='y' is not valid"]))
    _startup._check({"OPHOOK_MODE": "dump"}, Native())  # none: no error


def test_an_overrides_file_that_is_no_python_file_is_a_bad_setting(tmp_path):
    rules = tmp_path / "rules.txt"
    rules.write_text("not python")
    with pytest.raises(ValueError) as raised:
        _startup._check({"OPHOOK_OVERRIDES": str(rules)}, Native())
    assert str(raised.value).startswith("OPHOOK_OVERRIDES=%r cannot be loaded: ValueError: " % str(rules))


def test_an_overrides_file_that_does_not_import_names_its_error(tmp_path, monkeypatch):
    rules = tmp_path / "broken_rules.py"
    rules.write_text("def rule(:\n")
    for name in ("ophook_overrides_rules", "broken_rules"):  # where the loader registers the module
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ValueError, match=r"cannot be loaded: SyntaxError: "):
        _startup._check({"OPHOOK_OVERRIDES": str(rules)}, Native())


def test_a_started_recorder_exports_its_root_and_notes_the_interpreter(fresh):
    native = Native(exported={"OPHOOK_ROOT_PID": "77", "OPHOOK_ROOT_OUTPUT": "/runs/out"})
    assert _startup._start_recorder({"OPHOOK_MODE": "dump"}, native) == "/runs/out"
    assert native.started == [{"OPHOOK_MODE": "dump"}]
    assert (os.environ["OPHOOK_ROOT_PID"], os.environ["OPHOOK_ROOT_OUTPUT"]) == ("77", "/runs/out")
    assert native.versions == {"python": sys.version.split()[0], "python_executable": sys.executable}
    assert fresh.rings == []  # no ring: no exception hooks


def test_a_recorder_with_a_ring_has_uncaught_exceptions_write_it(fresh):
    native = Native(ring=True)
    _startup._start_recorder({}, native)
    assert fresh.rings == [native]


def test_a_rank_left_out_starts_nothing(fresh):
    native = Native(output=None, ring=True)
    assert _startup._start_recorder({"OPHOOK_RANKS": "1"}, native) is None
    assert "OPHOOK_ROOT_PID" not in os.environ and native.versions == {} and fresh.rings == []


def test_begin_checks_then_starts_then_hooks_the_levels_frameworks(fresh):
    _startup._deferred = {"OPHOOK_OUTPUT": "/pending"}
    native = Native()
    assert _startup.begin({"OPHOOK_LEVELS": "torch_dispatch"}, native) == "/runs/out"
    assert _startup._deferred is None  # started by hand: the preload's pending start is void
    assert [name for name, _ in fresh.hooks] == ["torch"]


def test_begin_with_bad_settings_starts_nothing(fresh):
    native = Native(errors=["OPHOOK_STEPS='3-1' is not valid"])
    with pytest.raises(ValueError, match="OPHOOK_STEPS"):
        _startup.begin({}, native)
    assert native.started == [] and fresh.hooks == []


def test_begin_in_a_rank_left_out_hooks_nothing(fresh):
    assert _startup.begin({}, Native(output=None)) is None
    assert fresh.hooks == []


@pytest.mark.parametrize("levels, frameworks", [("numpy", ["numpy"]), ("torch_function", ["torch"]),
                                                ("numpy,torch_dispatch", ["numpy", "torch"]),
                                                ("torch_function,torch_dispatch", ["torch"])])
def test_each_framework_is_hooked_once_for_its_levels(fresh, levels, frameworks):
    _startup._install_framework_hooks(set(levels.split(",")), None)
    assert [name for name, _ in fresh.hooks] == frameworks


def test_a_framework_hook_installs_its_levels_patch_only_when_recording_starts(fresh, monkeypatch):
    installed = []
    patch = types.ModuleType("ophook._numpy_patch")
    patch.install = installed.append
    monkeypatch.setitem(sys.modules, "ophook._numpy_patch", patch)
    starts = []
    _startup._install_framework_hooks({"numpy"}, lambda: starts.append(1) or len(starts) > 1)
    (name, hook), = fresh.hooks
    numpy_module = object()
    hook(numpy_module)  # the put-off start did not start: nothing installed
    assert installed == []
    hook(numpy_module)
    assert installed == [numpy_module] and len(starts) == 2


def test_the_output_is_made_absolute_at_start_and_exported_for_children(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    given = {"OPHOOK_OUTPUT": "dumps", "OPHOOK_MODE": "stats"}
    claimed = _startup._claim_root_output(given)
    assert claimed == {"OPHOOK_OUTPUT": str(tmp_path / "dumps"), "OPHOOK_MODE": "stats"}
    assert given["OPHOOK_OUTPUT"] == "dumps"  # a new mapping
    assert os.environ["OPHOOK_ROOT_PID"] == str(os.getpid()) and _startup._is_root()
    assert os.environ["OPHOOK_ROOT_OUTPUT"] == str(tmp_path / "dumps")


def test_without_an_output_the_directory_is_np_op_dumps_here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _startup._claim_root_output({})["OPHOOK_OUTPUT"] == str(tmp_path / "np_op_dumps")
    assert _startup._claim_root_output({"OPHOOK_OUTPUT": ""})["OPHOOK_OUTPUT"] == str(tmp_path / "np_op_dumps")


def test_a_child_keeps_the_root_its_parent_exported(tmp_path, monkeypatch):
    monkeypatch.setenv("OPHOOK_ROOT_PID", "1")
    monkeypatch.setenv("OPHOOK_ROOT_OUTPUT", "/parent/out")
    _startup._claim_root_output({"OPHOOK_OUTPUT": str(tmp_path)})
    assert (os.environ["OPHOOK_ROOT_PID"], os.environ["OPHOOK_ROOT_OUTPUT"]) == ("1", "/parent/out")
    assert not _startup._is_root()


def test_half_a_root_is_no_root(tmp_path, monkeypatch):
    monkeypatch.setenv("OPHOOK_ROOT_PID", "1")
    _startup._claim_root_output({"OPHOOK_OUTPUT": str(tmp_path)})
    assert os.environ["OPHOOK_ROOT_PID"] == str(os.getpid())
    assert os.environ["OPHOOK_ROOT_OUTPUT"] == str(tmp_path)


def test_an_output_that_is_not_utf8_stays_its_bytes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    claimed = _startup._claim_root_output({"OPHOOK_OUTPUT": b"caf\xe9"})
    assert claimed["OPHOOK_OUTPUT"] == os.fsencode(tmp_path) + b"/caf\xe9"
    assert os.environb[b"OPHOOK_ROOT_OUTPUT"] == os.fsencode(tmp_path) + b"/caf\xe9"


def test_the_start_message_says_levels_mode_and_where():
    settings = {"OPHOOK_LEVELS": "torch_dispatch,numpy", "OPHOOK_MODE": "stats"}
    assert _startup._start_message(settings, "/runs/out") == \
        b"recording numpy,torch_dispatch (stats mode) into /runs/out"
    assert _startup._start_message({}, "/o", "a 64 MiB ring") == \
        b"recording collective,numpy,torch_function (dump mode; a 64 MiB ring) into /o"
    assert _startup._start_message({}, os.fsdecode(b"/caf\xe9")) == \
        b"recording collective,numpy,torch_function (dump mode) into /caf\xe9"


def test_the_start_message_of_an_output_kept_as_bytes_names_the_path():
    assert _startup._start_message({}, b"/caf\xe9") == b"recording collective,numpy,torch_function (dump mode) into /caf\xe9"


def test_the_put_off_start_starts_and_says_so(monkeypatch):
    native = loaded(monkeypatch, Native())
    _startup._deferred = {"OPHOOK_OUTPUT": "/runs/out", "OPHOOK_MODE": "dump"}
    assert _startup._start_deferred() is True
    assert _startup._deferred is None and native.started == [{"OPHOOK_OUTPUT": "/runs/out", "OPHOOK_MODE": "dump"}]
    assert native.logs == [("info", b"recording collective,numpy,torch_function (dump mode; a 256 MiB ring) into /runs/out")]


def test_the_put_off_start_without_the_extension_leaves_no_output(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, NATIVE, None)
    _startup._deferred = {"OPHOOK_OUTPUT": "/runs/out"}
    assert _startup._start_deferred() is False
    assert _startup._deferred is None  # not even an empty run's output at exit
    assert "running unhooked" in capsys.readouterr().err


def test_the_put_off_start_that_fails_warns_and_records_nothing(monkeypatch, capsys):
    loaded(monkeypatch, Native(start_error=OSError("Permission denied: '/runs/out'")))
    _startup._deferred = {"OPHOOK_OUTPUT": "/runs/out"}
    assert _startup._start_deferred() is False
    assert capsys.readouterr().err == "[ophook] cannot start recording: Permission denied: '/runs/out'\n"


def test_the_put_off_start_in_a_rank_left_out_records_nothing(monkeypatch):
    native = loaded(monkeypatch, Native(output=None))
    _startup._deferred = {"OPHOOK_RANKS": "1"}
    assert _startup._start_deferred() is False and native.logs == []


def test_a_second_framework_import_asks_whether_recording(monkeypatch):
    loaded(monkeypatch, Native(recording=True))
    assert _startup._start_deferred() is True  # nothing put off: already started
    assert _startup.records_this_process()


def test_a_process_records_while_a_start_is_put_off():
    assert not _startup.records_this_process()
    _startup._deferred = {}
    assert _startup.records_this_process()
    _startup.void_deferred_start()
    assert not _startup.records_this_process()


def test_start_puts_recording_off_until_a_framework_is_imported(fresh, tmp_path, monkeypatch):
    """The preload found no bad setting and no overrides file: the extension is not loaded, the
    settings are claimed (absolute output, root exported), the frameworks' hooks wait, and the
    exit and fork handlers are set."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPHOOK_OUTPUT", "out")
    monkeypatch.setenv("OPHOOK_LEVELS", "numpy")
    monkeypatch.setattr(_startup, "_load_native", lambda: pytest.fail("the extension loaded at start"))
    monkeypatch.setitem(sys.modules, NATIVE, None)  # nor imported by anything else
    _startup.start("preload", config_errors=[], run_root=RUN_ROOT)
    assert _startup._deferred == {"OPHOOK_OUTPUT": str(tmp_path / "out"), "OPHOOK_LEVELS": "numpy"}
    assert os.environ["OPHOOK_ROOT_PID"] == str(os.getpid())
    assert [name for name, _ in fresh.hooks] == ["numpy"]
    assert fresh.atexit == [_startup._finish_at_exit]
    assert fresh.at_fork == [{"after_in_child": _startup._after_fork_in_child}]
    assert _startup.started_by_preload_or_shim()


def test_start_runs_once(fresh, monkeypatch):
    monkeypatch.setenv("OPHOOK_LEVELS", "numpy")
    _startup.start("preload", config_errors=[], run_root=RUN_ROOT)
    _startup.start("shim", config_errors=[])
    assert len(fresh.hooks) == 1 and len(fresh.atexit) == 1


def test_start_does_nothing_when_disabled(fresh, monkeypatch):
    monkeypatch.setenv("OPHOOK_DISABLE", "1")
    monkeypatch.setattr(_startup, "_load_native", lambda: pytest.fail("the extension loaded"))
    _startup.start("shim")
    assert _startup._deferred is None and fresh.hooks == [] and fresh.atexit == []


def test_start_with_bad_settings_says_each_and_runs_unhooked(fresh, capsys):
    _startup.start("preload", config_errors=["OPHOOK_MODE='x' is not valid", "OPHOOK_NAN='y' is not valid"], run_root=RUN_ROOT)
    assert capsys.readouterr().err == ("[ophook] OPHOOK_MODE='x' is not valid\n[ophook] OPHOOK_NAN='y' is not valid\n"
                                       "[ophook] running unhooked\n")
    assert _startup._deferred is None and fresh.hooks == [] and fresh.exits == []


def test_strict_start_with_bad_settings_exits_with_status_2(fresh, monkeypatch, capsys):
    monkeypatch.setenv("OPHOOK_STRICT", "1")
    with pytest.raises(SystemExit):
        _startup.start("preload", config_errors=["OPHOOK_MODE='x' is not valid"], run_root=RUN_ROOT)
    assert fresh.exits == [2] and fresh.hooks == []
    assert "OPHOOK_STRICT=1: exiting with status 2 before the program runs" in capsys.readouterr().err


def test_the_shim_checks_the_settings_itself(fresh, monkeypatch, capsys):
    """The shim's start has no preload to check the settings first: it loads the extension."""
    loaded(monkeypatch, Native(errors=["OPHOOK_STEPS='x' is not valid"]))
    _startup.start("shim")
    assert capsys.readouterr().err.splitlines() == ["[ophook] OPHOOK_STEPS='x' is not valid",
                                                    "[ophook] running unhooked"]
    assert fresh.hooks == []


def test_an_overrides_file_is_loaded_at_start(fresh, monkeypatch, tmp_path, capsys):
    rules = tmp_path / "rules.txt"
    rules.write_text("")
    monkeypatch.setenv("OPHOOK_OVERRIDES", str(rules))
    monkeypatch.setenv("OPHOOK_STRICT", "1")
    loaded(monkeypatch, Native())
    with pytest.raises(SystemExit):
        _startup.start("preload", config_errors=[], run_root=RUN_ROOT)
    assert fresh.exits == [2] and fresh.hooks == []
    assert capsys.readouterr().err.startswith("[ophook] cannot start recording: OPHOOK_OVERRIDES=")


def test_the_root_that_imported_nothing_writes_its_empty_run_through_the_preload(monkeypatch):
    _settings.use_run_root(RUN_ROOT)  # as the preload's start handed them
    written = []
    _startup._write_empty_root_run = lambda *args: written.append(args)
    monkeypatch.setenv("OPHOOK_ROOT_PID", str(os.getpid()))
    _startup._deferred = {"OPHOOK_OUTPUT": "/runs/out", "OPHOOK_MODE": "stats", "OPHOOK_NAME": b"caf\xe9"}
    _startup._finish_at_exit()
    assert written == [(b"OPHOOK_OUTPUT=/runs/out\0OPHOOK_MODE=stats\0OPHOOK_NAME=caf\xe9",
                        os.fsencode(sys.version.split()[0]),
                        b"recording collective,numpy,torch_function (stats mode) into /runs/out")]
    assert _startup._deferred is None and NATIVE not in sys.modules  # the extension never loaded


def test_the_root_that_imported_nothing_starts_then_finishes_without_the_preload(monkeypatch):
    native = loaded(monkeypatch, Native())
    monkeypatch.setenv("OPHOOK_ROOT_PID", str(os.getpid()))
    _startup._deferred = {"OPHOOK_OUTPUT": "/runs/out"}
    _startup._finish_at_exit()
    assert native.started == [{"OPHOOK_OUTPUT": "/runs/out"}] and native.finished == 1


def test_a_child_that_imported_nothing_leaves_nothing(monkeypatch):
    _settings.use_run_root(RUN_ROOT)  # as the preload's start handed them
    _startup._write_empty_root_run = lambda *args: pytest.fail("a child wrote an empty run")
    monkeypatch.setenv("OPHOOK_ROOT_PID", "1")
    _startup._deferred = {"OPHOOK_OUTPUT": "/runs/out"}
    _startup._finish_at_exit()
    assert NATIVE not in sys.modules


def test_a_forked_child_finishes_through_multiprocessing_finalizers(monkeypatch):
    finalizers = []
    util = types.ModuleType("multiprocessing.util")
    util.Finalize = lambda obj, callback, exitpriority: finalizers.append((obj, callback, exitpriority))
    monkeypatch.setitem(sys.modules, "multiprocessing.util", util)
    _startup._after_fork_in_child()
    assert finalizers == []  # nothing recorded (the extension never loaded): nothing to finish
    native = loaded(monkeypatch, Native())
    _startup._after_fork_in_child()
    assert finalizers == [(None, native.finish, -100)]
