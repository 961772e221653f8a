"""The settings table is the one source of the OPHOOK_* variables: every variable has its
`ophook run` option (shown by --help, passed on to the program) and its Python keyword."""
import json
import sys

import pytest

from cli_fixtures import run_ophook
from harness import SHIM_DIR, VENV_PYTHON, clean_env

sys.path.insert(0, str(SHIM_DIR))
from ophook import _ophook, _settings  # noqa: E402

SETTINGS = _ophook.settings()

# A valid value per setting: what the options pass on must reach the program unchanged.
EXAMPLES = {"OUTPUT": None, "MODE": "stats", "LEVELS": "numpy", "INCLUDE": "^numpy", "EXCLUDE": "reduce$",
            "NESTED": "1", "STEPS": "0-2,10", "RANKS": "0", "MODULES": r"layers\.1\b", "ACCESSORS": "1",
            "IMPORTS": "1", "RING_BYTES": "64M", "DUMP_INCLUDE": "mm", "TENSOR_COPY": "torch",
            "MAX_BYTES": "2G", "QUEUE_BYTES": "64M", "STACK": "0", "NAN": "warn", "COMPILE": "ignore",
            "OVERRIDES": None, "LOG_LEVEL": "warn", "STRICT": "1", "DISABLE": "1", "RING_STEPS": "2",
            "MONITOR": "modules", "MONITOR_TRIGGER": "loss:6sigma", "MONITOR_WINDOW": "20",
            "REPLICAS": "100"}


def test_every_variable_has_an_example_here():
    assert sorted(row["variable"][len("OPHOOK_"):] for row in SETTINGS) == sorted(EXAMPLES)


def test_run_help_lists_every_option_with_its_variable_and_default():
    proc = run_ophook("run", "--help")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    for row in SETTINGS:
        assert row["option"] in text and row["variable"] + ":" in text, row
        assert "default: " + " ".join(row["default"].split()) in text, row


def test_run_options_reach_the_program_as_variables(tmp_path):
    given = {row["variable"]: EXAMPLES[row["variable"][len("OPHOOK_"):]] for row in SETTINGS}
    given = {name: value for name, value in given.items() if value is not None}
    args = []
    for row in SETTINGS:
        if row["variable"] in given:
            args += [row["option"], given[row["variable"]]]
    program = "import json, os; print(json.dumps({k: v for k, v in os.environ.items() if k.startswith('OPHOOK_')}))"
    proc = run_ophook("run", *args, "--", str(VENV_PYTHON), "-c", program, env=clean_env(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    for name, value in given.items():
        assert seen.get(name) == value, name


def test_bad_option_value_names_the_variable_and_what_is_accepted():
    proc = run_ophook("run", "--steps", "3-1", "--", "true")
    assert proc.returncode == 2
    assert "OPHOOK_STEPS='3-1' is not valid" in proc.stderr


def test_every_variable_is_a_python_keyword():
    assert _settings.keywords() == [row["keyword"] for row in SETTINGS]
    for row in SETTINGS:
        value = EXAMPLES[row["variable"][len("OPHOOK_"):]] or "x"
        assert _settings.collect(**{row["keyword"]: value})[row["variable"]] == value
    with pytest.raises(TypeError, match="ring_bytes"):
        _settings.collect(ring_byte="1M")
