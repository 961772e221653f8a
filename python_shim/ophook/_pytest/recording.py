"""The pytest plugin at work (--ophook-record or --ophook-compare given): each test's call phase
recorded by a Tracer of its own, then compared with its baseline. Runs in pytest's process."""
import os
import shutil
import sys
import tempfile

import pytest

from .. import _api, _settings, _startup
from ..__main__ import executable_path
from .node_paths import node_path
from .run_comparison import compare_runs

_CHOSEN_BY_THE_PLUGIN = ("output", "output_path")
_LISTED = 20  # tests without a baseline named in the terminal summary; the rest are counted


def _tests(count):
    return "%d test%s" % (count, "" if count == 1 else "s")


def marker_options(item):
    """The keyword options of the test's @pytest.mark.ophook markers, the closest one winning.
    Raises ValueError on positional arguments or an output directory."""
    options = {}
    for marker in reversed(list(item.iter_markers("ophook"))):
        if marker.args:
            raise ValueError("@pytest.mark.ophook takes keyword options only (levels=..., include=...)")
        chosen = [name for name in _CHOSEN_BY_THE_PLUGIN if name in marker.kwargs]
        if chosen:
            raise ValueError("@pytest.mark.ophook(%s=...): the plugin chooses each test's directory" % chosen[0])
        options.update(marker.kwargs)
    return options


def _native_or_usage_error():
    try:
        return _api._native()
    except ImportError as error:
        raise pytest.UsageError("--ophook-record/--ophook-compare: ophook's extension does not load in "
                                "Python %d.%d: %s" % (sys.version_info[0], sys.version_info[1], error))


def _end_process_recording(native):
    """LD_PRELOAD or the shim on PYTHONPATH (how a build tree makes ophook importable) started, or
    put off until NumPy's import, a recording of the whole process: per-test recording replaces
    it, as a Tracer does, so that pytest's own calls (collection, fixtures) are recorded nowhere.
    A recording already running (NumPy imported before pytest loaded its conftest.py files) ends
    with its files and one line on stderr."""
    if not _startup.started_by_preload_or_shim():
        return
    _startup.void_deferred_start()
    if native.is_recording():
        output = native.output_path()
        _api.uninstall()
        native.finish()
        sys.stderr.write("[ophook] the pytest plugin records each test by itself: the recording of the "
                         "whole process into %s ends here\n" % output)


class PerTestRecording:
    """Registered by pytest_configure when the plugin is asked to work; one per session."""

    def __init__(self, config):
        record, baseline = config.getoption("ophook_record"), config.getoption("ophook_compare")
        self.baseline = os.path.abspath(baseline) if baseline is not None else None
        if self.baseline is not None and not os.path.isdir(self.baseline):
            raise pytest.UsageError("--ophook-compare=%s: no such directory (record one with --ophook-record)"
                                    % baseline)
        if self.baseline is not None and not os.access(executable_path(), os.X_OK):
            raise pytest.UsageError("--ophook-compare: no ophook executable at %s (pip install ophook, or "
                                    "use a build tree's package)" % executable_path())
        self.tolerance = {"rtol": config.getoption("ophook_rtol"), "atol": config.getoption("ophook_atol")}
        self.options = {name: value for name, value in (("mode", config.getoption("ophook_mode")),
                                                        ("levels", config.getoption("ophook_levels")))
                        if value is not None}
        if not os.environ.get("OPHOOK_LOG_LEVEL"):
            self.options["log_level"] = "warn"  # no "recorded N calls" line per test
        native = _native_or_usage_error()
        errors = native.config_errors(_settings.collect(**self.options))
        if errors:
            raise pytest.UsageError("ophook: " + "; ".join(errors))
        # Without --ophook-record, a compare keeps only the recordings of tests whose numbers moved.
        self.scratch = record is None
        self.root = tempfile.mkdtemp(prefix="ophook-pytest-") if self.scratch else os.path.abspath(record)
        _end_process_recording(native)
        for name in _settings.run_root()[:2]:
            os.environ.pop(name, None)  # a recorded parent's: this process's tests are roots
        self.recorded = 0
        self.unchanged, self.moved, self.without_baseline = [], [], []

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        directory = os.path.join(self.root, node_path(item.nodeid))
        try:
            tracer = _api.Tracer(**dict(self.options, **marker_options(item), output=directory)).start()
        except (TypeError, ValueError) as error:
            pytest.fail("ophook: %s: %s" % (item.nodeid, error), pytrace=False)
        try:
            result = yield
        finally:
            tracer.stop()
            self.recorded += 1
        if self.baseline is not None:
            self._compare(item.nodeid, directory)
        return result

    def _compare(self, nodeid, directory):
        base = os.path.join(self.baseline, node_path(nodeid))
        if not os.path.exists(os.path.join(base, "trace.jsonl")):
            self.without_baseline.append(nodeid)
            self._drop(directory)
            return
        comparison = compare_runs(base, directory, **self.tolerance)
        if comparison.same:
            self.unchanged.append(nodeid)
            self._drop(directory)
            return
        self.moved.append(nodeid)
        pytest.fail(comparison.message, pytrace=False)

    def _drop(self, directory):
        if self.scratch:
            shutil.rmtree(directory, ignore_errors=True)

    def pytest_terminal_summary(self, terminalreporter):
        write = terminalreporter.write_line
        terminalreporter.write_sep("-", "ophook")
        if self.baseline is None:
            write("recorded %s into %s" % (_tests(self.recorded), self.root))
            return
        compared = len(self.unchanged) + len(self.moved) + len(self.without_baseline)  # not those that failed
        write("compared %s with %s: %d unchanged, %d moved, %d without a baseline"
              % (_tests(compared), self.baseline, len(self.unchanged), len(self.moved), len(self.without_baseline)))
        if self.without_baseline:
            write("no baseline (reported, not failed):")
            for nodeid in self.without_baseline[:_LISTED]:
                write("  " + nodeid)
            if len(self.without_baseline) > _LISTED:
                write("  ... and %d more" % (len(self.without_baseline) - _LISTED))
        if self.moved or not self.scratch:
            write("this run's recordings: %s" % self.root)

    def pytest_unconfigure(self, config):
        if self.scratch:
            _remove_empty_directories(self.root)


def _remove_empty_directories(root):
    """Removes `root` and the directories below it that hold nothing (the dropped recordings')."""
    for directory, _, _ in sorted(os.walk(root), key=lambda entry: -len(entry[0])):
        try:
            os.rmdir(directory)
        except OSError:
            pass  # holds a kept recording
