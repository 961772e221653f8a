"""The root of the end-to-end and unit tests: puts support/ (the shared helper modules: harness,
cli_fixtures, headless_chromium, device_programs, torch_dtypes, precision_programs) on sys.path,
so that a test in any subject folder imports them by name (`from harness import run_script,
trace`), and holds the fixtures every folder uses.

The helpers live in modules of their own rather than here: every conftest.py is imported as the
module `conftest`, so a name imported from it would depend on which folder's conftest pytest
loaded last."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))

from harness import Runner  # noqa: E402


@pytest.fixture
def runner(tmp_path):
    """Runs programs in `tmp_path` (Runner.run): each in its own script and output directory."""
    return Runner(tmp_path)
