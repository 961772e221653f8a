"""`ophook run`, `preload-path`, `--version` and `--help` end to end."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_fixtures import OPHOOK, RunDir, run_ophook, simple_program
from harness import BUILD_DIR, VENV_PYTHON

PYTHON = str(VENV_PYTHON if VENV_PYTHON.exists() else Path(sys.executable))


def dormant_env(**extra):
    """The test's environment with the recorder dormant: these tests are about the launcher."""
    env = dict(os.environ, OPHOOK_DISABLE="1")
    env.pop("LD_PRELOAD", None)
    env.update(extra)
    return env


def ophook_run(*args, env=None, cwd=None, timeout=120):
    return run_ophook("run", *args, env=env or dormant_env(), cwd=cwd, timeout=timeout)


def test_version_help_and_preload_path():
    proc = run_ophook("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("ophook ")
    proc = run_ophook("--help")
    assert proc.returncode == 0
    for name in ("run", "compare", "report", "preload-path", "Exit status"):
        assert name in proc.stdout
    for sub in ("run", "compare", "report", "preload-path"):
        proc = run_ophook(sub, "--help")
        assert proc.returncode == 0 and "Exit status" in proc.stdout, sub
    proc = run_ophook("preload-path")
    assert proc.returncode == 0, proc.stderr
    path = Path(proc.stdout.strip())
    assert path.is_absolute() and path.name == "libophook.so" and path.is_file()
    assert path == (BUILD_DIR / "libophook.so").resolve()
    assert run_ophook().returncode == 2
    assert run_ophook("frobnicate").returncode == 2


def test_exit_status_is_passed_through(tmp_path):
    assert ophook_run("--", PYTHON, "-c", "import sys; sys.exit(3)", cwd=tmp_path).returncode == 3
    assert ophook_run("--", PYTHON, "-c", "pass", cwd=tmp_path).returncode == 0
    assert ophook_run("--", "sh", "-c", "exit 42", cwd=tmp_path).returncode == 42


def test_killed_child_gives_128_plus_signal(tmp_path):
    code = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    assert ophook_run("--", PYTHON, "-c", code, cwd=tmp_path).returncode == 128 + signal.SIGKILL
    code = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    assert ophook_run("--", PYTHON, "-c", code, cwd=tmp_path).returncode == 128 + signal.SIGTERM


def test_command_not_found_is_127_naming_it(tmp_path):
    proc = ophook_run("--", "no-such-command-ophook-test", "x", cwd=tmp_path)
    assert proc.returncode == 127
    assert "no-such-command-ophook-test" in proc.stderr
    script = tmp_path / "not_executable.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    proc = ophook_run("--", str(script), cwd=tmp_path)
    assert proc.returncode == 126 and str(script) in proc.stderr


def test_environment_reaches_the_child(tmp_path):
    lib = run_ophook("preload-path").stdout.strip()
    other = "/nonexistent/libother.so"  # the loader warns and goes on
    env = dormant_env(LD_PRELOAD=other, OPHOOK_LEVELS="numpy")
    code = ("import os; e = os.environ; print(e['OPHOOK_MODE']); print(e['OPHOOK_OUTPUT']); "
            "print(e['LD_PRELOAD']); print(e.get('OPHOOK_INCLUDE', '-')); print(e['OPHOOK_LEVELS']); "
            "print(e['OPHOOK_MAX_BYTES'])")
    proc = ophook_run("--mode", "stats", "--output", "runs/a", "--max-bytes", "64M", "--",
                      PYTHON, "-c", code, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    mode, output, preload, include, levels, max_bytes = proc.stdout.splitlines()
    assert mode == "stats"
    assert Path(output) == tmp_path.resolve() / "runs" / "a"
    assert preload.split(":") == [lib, other]
    assert include == "-"          # options not given set nothing
    assert levels == "numpy"       # and leave the caller's settings alone
    assert max_bytes == "64M"


def test_bad_options_exit_2_without_running(tmp_path):
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').close()"
    for bad in (["--mode", "fast"], ["--levels", "numpy,cuda"], ["--include", "(oops"],
                ["--max-bytes", "lots"], ["--bogus"]):
        proc = ophook_run(*bad, "--", PYTHON, "-c", code, cwd=tmp_path)
        assert proc.returncode == 2, (bad, proc.stderr)
        assert proc.stderr.strip(), bad
    assert ophook_run(cwd=tmp_path).returncode == 2  # no command
    assert not marker.exists()


def test_signals_are_forwarded_to_the_child(tmp_path):
    code = ("import signal, sys, time\n"
            "signal.signal(signal.SIGTERM, lambda *a: sys.exit(42))\n"
            "signal.signal(signal.SIGUSR1, lambda *a: print('usr1', flush=True))\n"
            "print('ready', flush=True)\n"
            "for _ in range(300):\n"
            "    time.sleep(0.1)\n")
    proc = subprocess.Popen([str(OPHOOK), "run", "--", PYTHON, "-c", code], cwd=tmp_path,
                            env=dormant_env(), stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGUSR1)
        assert proc.stdout.readline().strip() == "usr1"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 42
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(not (BUILD_DIR / "python_shim").is_dir(),
                    reason="needs the full build (python_shim and the _ophook extension)")
def test_record_compare_and_report_a_real_program(tmp_path):
    program = ("import numpy as np, sys\n"
               "scale = float(sys.argv[1])\n"
               "a = np.arange(12, dtype=np.float64).reshape(3, 4)\n"
               "b = np.add(a, 1.0)\n"
               "c = np.multiply(b, scale)\n"
               "d = np.tanh(c)\n")
    (tmp_path / "prog.py").write_text(program)
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.pop("OPHOOK_DISABLE", None)
    for name, scale in (("a", "1.0"), ("b", "1.0"), ("c", "1.5")):
        proc = run_ophook("run", "--output", name, "--", PYTHON, "prog.py", scale, env=env,
                          cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / name / "trace.jsonl").is_file(), proc.stderr
    assert run_ophook("compare", tmp_path / "a", tmp_path / "b").returncode == 0
    proc = run_ophook("compare", tmp_path / "a", tmp_path / "c")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "op=numpy.multiply" in proc.stdout
    proc = run_ophook("report", tmp_path / "a")
    assert proc.returncode == 0 and "numpy.multiply" in proc.stdout
