"""Shared fixtures of the end-to-end tests: run a real Python program in a subprocess with or
without ophook, then read back what it recorded."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SOURCE_DIR = Path(os.environ.get("OPHOOK_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD_DIR = Path(os.environ.get("OPHOOK_BUILD_DIR", SOURCE_DIR / "build"))
LIBRARY = BUILD_DIR / "libophook.so"
SHIM_DIR = BUILD_DIR / "python_shim"
VENV_PYTHON = SOURCE_DIR / ".venv" / "bin" / "python"


class Run:
    """The outcome of one program run: its process result and its output directory."""

    def __init__(self, proc, output):
        self.proc = proc
        self.output = Path(output)

    @property
    def stdout(self):
        return self.proc.stdout

    @property
    def stderr(self):
        return self.proc.stderr

    def records(self, subdir=""):
        path = self.output / subdir / "trace.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def summary(self, subdir=""):
        return json.loads((self.output / subdir / "summary.json").read_text())

    def load(self, name, subdir=""):
        return np.load(self.output / subdir / name, allow_pickle=False)


class Runner:
    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.count = 0

    def run(self, code, how="preload", env=None, python=None, args=(), timeout=240, cwd=None, check=True):
        """Runs `code` (a script's text) as `python script.py`.

        how: "preload" (LD_PRELOAD), "pythonpath" (the shim on PYTHONPATH) or "plain" (no hook).
        Returns a Run; the output directory is <tmp>/dumpsN unless env sets OPHOOK_OUTPUT."""
        self.count += 1
        script = self.tmp_path / ("prog%d.py" % self.count)
        script.write_text(code)
        output = self.tmp_path / ("dumps%d" % self.count)
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("OPHOOK_")}
        full_env.pop("LD_PRELOAD", None)
        full_env["OPHOOK_OUTPUT"] = str(output)
        full_env.update(env or {})
        if how == "preload":
            full_env["LD_PRELOAD"] = str(LIBRARY)
        elif how == "pythonpath":
            full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SHIM_DIR), full_env.get("PYTHONPATH")]))
        proc = subprocess.run([str(python or VENV_PYTHON), *args, str(script)], env=full_env,
                              cwd=cwd or self.tmp_path, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError("program failed (%d):\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr))
        return Run(proc, full_env["OPHOOK_OUTPUT"])


@pytest.fixture
def runner(tmp_path):
    return Runner(tmp_path)


def arrays_in(values):
    """Every array spec in a list/dict of recorded values, in order."""
    out = []
    if isinstance(values, dict) and values.get("kind") == "array":
        return [values]
    items = values.values() if isinstance(values, dict) else values
    for v in items:
        if isinstance(v, (list, dict)):
            out.extend(arrays_in(v))
    return out
