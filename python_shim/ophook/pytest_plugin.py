"""ophook's pytest plugin: numerical regression tests from the NumPy/PyTorch calls each test makes.

    pytest --ophook-record=ref/ tests/        # one recording per test: ref/<test path>/trace.jsonl ...
    pytest --ophook-compare=ref/ tests/       # record again; a test whose numbers moved fails

Registered through the `pytest11` entry point when ophook is pip-installed, else loaded with
`-p ophook.pytest_plugin`. It records in-process through the Python API (no LD_PRELOAD, no shim).
With neither option given it adds its options and marker and nothing else: no per-test hook, no
NumPy or torch import. docs/pytest.md has the options, the marker, the layout and a CI recipe.
"""
import re

import pytest

MARKER = ("ophook(**options): this test's recording options, as the Python API's keywords (levels, "
          "include, exclude, mode, ...), over the --ophook-* options and the OPHOOK_* environment")


def pytest_addoption(parser):
    group = parser.getgroup("ophook", "ophook: record each test's NumPy/PyTorch calls, compare with a baseline")
    group.addoption("--ophook-record", metavar="DIR",
                    help="record each test into DIR/<test path>/ (trace.jsonl, .npy files, summary.json); "
                         "with --ophook-compare: where this run's recordings are kept")
    group.addoption("--ophook-compare", metavar="DIR",
                    help="record each test again and compare it with DIR/<test path>/ as 'ophook compare' "
                         "does: a test whose numbers moved fails, naming the first divergent call; a test "
                         "without a baseline is reported, not failed")
    group.addoption("--ophook-rtol", type=float, metavar="R",
                    help="relative tolerance of --ophook-compare, as numpy.allclose with the baseline as "
                         "reference (default: ophook compare's, 1e-05)")
    group.addoption("--ophook-atol", type=float, metavar="A",
                    help="absolute tolerance of --ophook-compare (default: ophook compare's, 1e-08)")
    group.addoption("--ophook-mode", metavar="MODE",
                    help="as OPHOOK_MODE: trace, stats or dump (default: OPHOOK_MODE, else dump)")
    group.addoption("--ophook-levels", metavar="LIST",
                    help="as OPHOOK_LEVELS: comma list of numpy, torch_function, torch_dispatch "
                         "(default: OPHOOK_LEVELS, else numpy,torch_function)")


def _asked_to_record(namespace):
    return namespace.ophook_record is not None or namespace.ophook_compare is not None


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    # Before conftest.py files import NumPy: a process-wide recording that LD_PRELOAD or the shim
    # (PYTHONPATH=build/python_shim) put off until then would start on that import.
    if _asked_to_record(early_config.known_args_namespace):
        from . import _startup

        _startup.void_deferred_start()


def pytest_configure(config):
    config.addinivalue_line("markers", MARKER)
    asked = _asked_to_record(config.option)
    from . import _startup

    if asked or _startup.records_this_process():
        # ophook filters the warning its module hooks make torch give at each call of a
        # torch.compile'd module, but pytest's filters for each test (-W error, filterwarnings =
        # error) come before that filter: repeated last among each kind, it still wins.
        from ._torch.dynamo_stand_ins import COMPILED_MODULE_WARNING

        config.addinivalue_line("filterwarnings", "ignore:%s:UserWarning" % re.escape(COMPILED_MODULE_WARNING))
        command_line = config.known_args_namespace  # where pytest reads -W for each test
        command_line.pythonwarnings = [*(command_line.pythonwarnings or []),
                                       "ignore:%s:UserWarning" % COMPILED_MODULE_WARNING]
    if not asked:
        return
    from ._pytest.recording import PerTestRecording

    config.pluginmanager.register(PerTestRecording(config), "ophook-per-test-recording")
