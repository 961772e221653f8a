"""Shared helpers of the torch end-to-end tests: run a real program under the preload library, read
its trace and dumps back."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

SOURCE_DIR = Path(os.environ.get("OPHOOK_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD_DIR = Path(os.environ.get("OPHOOK_BUILD_DIR", SOURCE_DIR / "build"))
PRELOAD = BUILD_DIR / "libophook.so"
SHIM_DIR = BUILD_DIR / "python_shim"
PYTHON = str(SOURCE_DIR / ".venv" / "bin" / "python") if (SOURCE_DIR / ".venv").exists() else sys.executable
EXAMPLES = SOURCE_DIR / "examples"


def clean_env(**overrides):
    """The test process's environment without any OPHOOK_*/LD_PRELOAD, plus `overrides`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPHOOK_") and k != "LD_PRELOAD"}
    env.update({k: str(v) for k, v in overrides.items()})
    return env


def run(args, cwd, preload=True, timeout=240, check=True, env=None, **settings):
    """Runs PYTHON with `args` in `cwd`; `settings` are OPHOOK_* variables (lower-case names),
    `env` other variables."""
    env = clean_env(**(env or {}), **{"OPHOOK_" + k.upper(): v for k, v in settings.items()})
    if preload:
        env["LD_PRELOAD"] = str(PRELOAD)
        env.setdefault("OPHOOK_OUTPUT", str(Path(cwd) / "out"))
    proc = subprocess.run([PYTHON, *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError("exit %d\nstdout:\n%s\nstderr:\n%s" % (proc.returncode, proc.stdout, proc.stderr))
    return proc


def run_script(tmp_path, source, *args, name="prog.py", **kwargs):
    script = Path(tmp_path) / name
    script.write_text(textwrap.dedent(source))
    return run([script, *args], cwd=tmp_path, **kwargs)


def trace(directory):
    with open(Path(directory) / "trace.jsonl") as f:
        return [json.loads(line) for line in f]


def summary(directory):
    with open(Path(directory) / "summary.json") as f:
        return json.load(f)


def arrays(record, section="args"):
    """The array values of a record's section (kwargs values after positional ones), flattened."""
    values = record[section]
    if isinstance(values, dict):
        values = list(values.values())
    out = []

    def walk(v):
        if isinstance(v, dict) and v.get("kind") == "array":
            out.append(v)
        elif isinstance(v, list):
            for item in v:
                walk(item)

    for v in values:
        walk(v)
    return out


def load(directory, value):
    assert value["file"], "no file for %r" % value
    return np.load(Path(directory) / value["file"])


def ops(records, name):
    return [r for r in records if r["op"] == name]


def same_bits(a, b):
    """Equal as stored bytes, dtype and shape (so NaN payloads and signed zeros count)."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
