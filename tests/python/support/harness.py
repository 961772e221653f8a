"""Shared helpers of the end-to-end tests: run a real Python program in a subprocess with or
without ophook, then read back what it recorded (Runner, the `runner` fixture of conftest.py, or
run()/run_script() with trace()/summary()/load() on the output directory; start() for a program
left running). Every record and summary read through these helpers is checked against the
published JSON Schemas (docs/schema/), so the schemas cannot drift from what the recorder
writes."""
import ctypes
import ctypes.util
import functools
import json
import os
import subprocess
import textwrap
from pathlib import Path

import jsonschema_rs
import numpy as np

SOURCE_DIR = Path(os.environ.get("OPHOOK_SOURCE_DIR", Path(__file__).resolve().parents[3]))
BUILD_DIR = Path(os.environ.get("OPHOOK_BUILD_DIR", SOURCE_DIR / "build"))
LIBRARY = BUILD_DIR / "libophook.so"
SHIM_DIR = BUILD_DIR / "python_shim"
VENV_PYTHON = SOURCE_DIR / ".venv" / "bin" / "python"
EXAMPLES = SOURCE_DIR / "examples"
SCHEMA_DIR = SOURCE_DIR / "docs" / "schema"
SUPPORT_DIR = Path(__file__).resolve().parent  # these helper modules, for child programs that import one


# OPHOOK_TEST_TENSOR_COPY=torch (ctest's `.tensor_copy_torch` entries) runs a test file's programs
# with every tensor read through torch, the path tensors on other devices than the CPU take;
# =fake-device (`.fake_device` entries) with the statistics kernel on its fake device besides.
TENSOR_COPY = os.environ.get("OPHOOK_TEST_TENSOR_COPY")


def clean_env(**overrides):
    """The test process's environment without any OPHOOK_*/LD_PRELOAD, plus `overrides` (and
    OPHOOK_TENSOR_COPY when the test run asks for it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPHOOK_") and k != "LD_PRELOAD"}
    if TENSOR_COPY:
        env["OPHOOK_TENSOR_COPY"] = TENSOR_COPY
    env.update({k: str(v) for k, v in overrides.items()})
    return env


@functools.cache
def schema(name):
    """docs/schema/<name>.schema.json, parsed."""
    return json.loads((SCHEMA_DIR / ("%s.schema.json" % name)).read_text())


@functools.cache
def _fast_validator(name):
    # jsonschema-rs: ~10 us per record, where the reference implementation takes ~1 ms (the suite
    # reads hundreds of thousands of records).
    return jsonschema_rs.Draft202012Validator(schema(name))


def check_schema(name, document, where):
    """Asserts that `document` matches docs/schema/<name>.schema.json ("trace-record" or
    "summary"); the message names `where` and the most relevant error."""
    fast_error = next(_fast_validator(name).iter_errors(document), None)
    if fast_error is None:
        return document
    # Only on failure: the reference implementation picks the most relevant error of an anyOf.
    import jsonschema

    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema(name)).iter_errors(document))
    path, message = (error.absolute_path, error.message) if error else (fast_error.instance_path, fast_error.message)
    raise AssertionError("%s does not match docs/schema/%s.schema.json at /%s: %s"
                         % (where, name, "/".join(map(str, path)), message))


def check_record(record, where="a trace.jsonl record"):
    return check_schema("trace-record", record, where)


def trace(directory):
    """The records of <directory>/trace.jsonl, each checked against the record schema."""
    path = Path(directory) / "trace.jsonl"
    return [check_record(json.loads(line), "%s line %d" % (path, number))
            for number, line in enumerate(path.read_text().splitlines(), 1) if line.strip()]


def monitor_lines(directory):
    """The training monitor's monitor.jsonl in `directory`, a dict per line."""
    return [json.loads(line) for line in (Path(directory) / "monitor.jsonl").read_text().splitlines()]


def summary(directory):
    """<directory>/summary.json, checked against the summary schema."""
    path = Path(directory) / "summary.json"
    return check_schema("summary", json.loads(path.read_text()), str(path))


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
        return trace(self.output / subdir)

    def summary(self, subdir=""):
        return summary(self.output / subdir)

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
        full_env = clean_env(**{"OPHOOK_OUTPUT": output, **(env or {})})
        if how == "preload":
            full_env["LD_PRELOAD"] = str(LIBRARY)
        elif how == "pythonpath":
            full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SHIM_DIR), full_env.get("PYTHONPATH")]))
        proc = subprocess.run([str(python or VENV_PYTHON), *args, str(script)], env=full_env,
                              cwd=cwd or self.tmp_path, capture_output=True, text=True, timeout=timeout,
                              errors="backslashreplace")  # paths in messages need not be UTF-8
        if check and proc.returncode != 0:
            raise AssertionError("program failed (%d):\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr))
        return Run(proc, full_env["OPHOOK_OUTPUT"])


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


def arrays(record, section="args"):
    """The array values of a record's section (kwargs values after positional ones), flattened."""
    return arrays_in(record[section])


def load(directory, value):
    """The .npy file of a recorded array value."""
    assert value["file"], "no file for %r" % value
    return np.load(Path(directory) / value["file"], allow_pickle=False)


def ops(records, name):
    return [r for r in records if r["op"] == name]


def xxh64(data):
    """XXH64 (seed 0) of `data`'s bytes, by the system's libxxhash: the digest ophook records."""
    library = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
    library.XXH64.restype = ctypes.c_uint64
    library.XXH64.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
    return library.XXH64(data, len(data), 0)


def same_bits(a, b):
    """Equal as stored bytes, dtype and shape (so NaN payloads and signed zeros count)."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def run(args, cwd, preload=True, timeout=240, check=True, env=None, **settings):
    """Runs the venv's Python with `args` in `cwd`; `settings` are OPHOOK_* variables (lower-case
    names), `env` other variables. Under preload the output goes to <cwd>/out unless set."""
    env = clean_env(**(env or {}), **{"OPHOOK_" + k.upper(): v for k, v in settings.items()})
    if preload:
        env["LD_PRELOAD"] = str(LIBRARY)
        env.setdefault("OPHOOK_OUTPUT", str(Path(cwd) / "out"))
    proc = subprocess.run([str(VENV_PYTHON), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError("exit %d\nstdout:\n%s\nstderr:\n%s" % (proc.returncode, proc.stdout, proc.stderr))
    return proc


def run_script(tmp_path, source, *args, name="prog.py", **kwargs):
    """Writes `source` (dedented) to <tmp_path>/<name> and run()s it there."""
    script = Path(tmp_path) / name
    script.write_text(textwrap.dedent(source))
    return run([script, *args], cwd=tmp_path, **kwargs)


def consistent_records(directory):
    """Checks the consistency promise for `directory` (every trace.jsonl line parses and matches the
    record schema but possibly the last, seq unique and in order, every .npy loads); returns
    (records, {file name: array})."""
    directory = Path(directory)
    lines = (directory / "trace.jsonl").read_text().split("\n")
    records = []
    for i, line in enumerate(lines):
        try:
            records.append(check_record(json.loads(line), "line %d of %s" % (i + 1, directory / "trace.jsonl")))
        except ValueError:
            assert i >= len(lines) - 2, "line %d of %d does not parse: %r" % (i, len(lines), line[:80])
    seqs = [r["seq"] for r in records]
    assert seqs == sorted(set(seqs)), "seq not unique and in order"
    arrays = {f.name: np.load(f, allow_pickle=False) for f in directory.glob("op_*.npy")}
    return records, arrays


def start(code, tmp_path, preexec_fn=None, **settings):
    """Starts `code` under LD_PRELOAD, output into <tmp_path>/out unless `output` says otherwise;
    returns (Popen, output dir)."""
    script = tmp_path / "prog.py"
    script.write_text(code)
    out = Path(settings.pop("output", tmp_path / "out"))
    env = clean_env(LD_PRELOAD=LIBRARY, OPHOOK_OUTPUT=out,
                    **{"OPHOOK_" + k.upper(): v for k, v in settings.items()})
    proc = subprocess.Popen([str(VENV_PYTHON), str(script)], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn)
    return proc, out


def wait_for_line(proc, text):
    """Reads the next line of a start()ed program's stdout, which must be `text`."""
    line = proc.stdout.readline()
    assert line.strip() == text, (line, proc.stderr.read() if proc.poll() is not None else "")
