"""The preload library and the ways into the recorder: dormant in non-Python processes, every
Python entry (script, -c, -m; shared and static libpython), debug allocators, the PYTHONPATH shim."""
import os
import platform
import shutil
import subprocess
import sys

import pytest

from harness import LIBRARY, SHIM_DIR, VENV_PYTHON, run, trace

SMALL = "import numpy as np\na = np.arange(4.0)\nprint((a + a).sum())\n"


def test_library_has_no_python_symbols():
    out = subprocess.run(["nm", "-D", "--undefined-only", str(LIBRARY)], capture_output=True, text=True,
                         check=True).stdout
    python_symbols = [line for line in out.splitlines() if line.split()[-1].lstrip("_").startswith("Py")]
    assert python_symbols == []
    needed = subprocess.run(["readelf", "-d", str(LIBRARY)], capture_output=True, text=True, check=True).stdout
    assert "libpython" not in needed
    # Every process under LD_PRELOAD maps it: libc only, the core is loaded into Python alone.
    assert [line.split("[")[1].rstrip("]") for line in needed.splitlines() if "(NEEDED)" in line] == ["libc.so.6"]


@pytest.mark.parametrize("command", [["sh", "-c", "echo hi; exit 3"], ["/bin/true"], ["/usr/bin/cmake", "--version"]])
def test_non_python_processes_run_unchanged(command, tmp_path):
    plain = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    env = dict(os.environ, LD_PRELOAD=str(LIBRARY), OPHOOK_OUTPUT=str(tmp_path / "out"))
    hooked = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert (hooked.returncode, hooked.stdout, hooked.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    assert not (tmp_path / "out").exists()


def test_script_c_and_m_entries(runner, tmp_path):
    script = runner.run(SMALL)
    assert [r["op"] for r in script.records()] == ["numpy.add", "numpy.add.reduce"]
    assert script.stdout == "12.0\n"

    env = dict(os.environ, LD_PRELOAD=str(LIBRARY), OPHOOK_OUTPUT=str(tmp_path / "c"))
    proc = subprocess.run([str(VENV_PYTHON), "-c", SMALL], env=env, capture_output=True, text=True, check=True)
    assert proc.stdout == "12.0\n"
    assert (tmp_path / "c" / "trace.jsonl").read_text().count("\n") == 2

    (tmp_path / "pkgmod.py").write_text(SMALL)
    env["OPHOOK_OUTPUT"] = str(tmp_path / "m")
    proc = subprocess.run([str(VENV_PYTHON), "-m", "pkgmod"], env=env, cwd=tmp_path, capture_output=True,
                          text=True, check=True)
    assert proc.stdout == "12.0\n"
    assert (tmp_path / "m" / "trace.jsonl").read_text().count("\n") == 2


def test_start_up_imports_only_ophooks_small_modules_until_a_framework_loads(tmp_path):
    # Every Python process under the preload pays for what its start-up imports: no importlib
    # package, no API modules, no extension until NumPy (or torch) is imported.
    show = "import sys\nprint('\\n'.join(sys.modules))\n"
    plain = set(run(["-c", show], tmp_path, preload=False).stdout.split())
    hooked = set(run(["-c", show], tmp_path).stdout.split())
    assert hooked - plain == {"atexit", "ophook", "ophook._import_hooks", "ophook._settings", "ophook._startup"}
    loaded = run(["-c", "import sys, numpy\nnumpy.add(1.0, 2.0)\nprint('ophook._ophook' in sys.modules)"],
                 tmp_path, output=tmp_path / "np")
    assert loaded.stdout == "True\n"
    assert [r["op"] for r in trace(tmp_path / "np")] == ["numpy.add"]


def test_main_namespace_untouched(runner):
    run = runner.run("import numpy as np\nprint(sorted(k for k in globals() if not k.startswith('__')))\n")
    assert run.stdout == "['np']\n"


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3.11"), reason="Debian python3.11 not installed")
def test_static_debian_interpreter(runner):
    # Debian's /usr/bin/python3.11 links libpython statically and exports its symbols; with
    # Debian's NumPy 1.24 only the ufunc levels exist, which the log says.
    run = runner.run("import numpy as np\na = np.arange(3.0)\nprint(np.__version__, (a * a).sum())\n",
                     python="/usr/bin/python3.11")
    version = run.stdout.split()[0]
    assert tuple(int(x) for x in version.split(".")[:2]) < (1, 25)
    assert [r["op"] for r in run.records()] == ["numpy.multiply", "numpy.add.reduce"]
    assert "ufunc levels only" in run.stderr


@pytest.mark.parametrize("how", [{"PYTHONMALLOC": "debug"}, {"PYTHONDEVMODE": "1"}, "-X dev"])
def test_debug_allocators_fall_back_to_the_shim(runner, how):
    env, args = (how, ()) if isinstance(how, dict) else ({}, tuple(how.split()))
    run = runner.run(SMALL, env=env, args=args)
    assert run.proc.returncode == 0
    assert [r["op"] for r in run.records()] == ["numpy.add", "numpy.add.reduce"]


def test_pythonpath_shim_alone(runner):
    run = runner.run(SMALL, how="pythonpath")
    assert [r["op"] for r in run.records()] == ["numpy.add", "numpy.add.reduce"]


def test_shim_runs_the_sitecustomize_it_shadows(runner, tmp_path):
    other = tmp_path / "other_site"
    other.mkdir()
    marker = tmp_path / "marker.txt"
    (other / "sitecustomize.py").write_text("open(%r, 'w').write('ran')\n" % str(marker))
    run = runner.run(SMALL, how="pythonpath", env={"PYTHONPATH": str(other)})
    assert marker.read_text() == "ran"
    assert len(run.records()) == 2


def test_usercustomize_entry(runner, tmp_path):
    # usercustomize alone (as in the seed): a directory holding only it and the package.
    only_user = tmp_path / "user_shim"
    shutil.copytree(SHIM_DIR, only_user)
    (only_user / "sitecustomize.py").unlink()
    code = "import site, sys\nsys.path.insert(0, %r)\nimport usercustomize\n" % str(only_user) + SMALL
    run = runner.run(code, how="plain")
    assert len(run.records()) == 2


def test_interpreter_without_a_matching_extension_runs_unhooked(runner, tmp_path):
    # A shim whose extension was built for another Python: rename the module's ABI tag.
    foreign = tmp_path / "foreign_build"
    (foreign / "python_shim").mkdir(parents=True)
    shutil.copytree(SHIM_DIR / "ophook", foreign / "python_shim" / "ophook")
    for ext in (foreign / "python_shim" / "ophook").glob("_ophook*.so"):
        ext.rename(ext.with_name("_ophook.cpython-399-x86_64-linux-gnu.so"))
    shutil.copy(LIBRARY, foreign / "libophook.so")
    shutil.copy(LIBRARY.with_name("libophook_core.so"), foreign / "libophook_core.so")
    run = runner.run(SMALL, how="plain", env={"LD_PRELOAD": str(foreign / "libophook.so")})
    assert run.stdout == "12.0\n"
    warnings = [line for line in run.stderr.splitlines() if "ophook" in line]
    assert len(warnings) == 1 and "running unhooked" in warnings[0]
    assert not run.output.exists()


def test_a_run_importing_no_framework(runner, tmp_path):
    # The root still writes its (empty) summary; a child that imports nothing writes nothing, and
    # one that does writes below the root even though the root had not started recording.
    child = "import numpy as np; np.ones(2) * 3"
    code = ("import subprocess, sys\n"
            "subprocess.run([sys.executable, '-c', 'pass'], check=True)\n"
            "subprocess.run([sys.executable, '-c', %r], check=True)\n" % child)
    run = runner.run(code)
    assert run.summary()["totals"]["calls"] == 0 and run.records() == []
    pid_dirs = [d.name for d in run.output.iterdir() if d.name.startswith("pid")]
    assert len(pid_dirs) == 1
    assert [r["op"] for r in run.records(pid_dirs[0])][-1] == "numpy.multiply"


def test_an_empty_root_run_is_written_without_the_extension(runner):
    # Under the preload the root of a run that imported no framework has the core write its output
    # at exit instead of loading the extension: the same files, the same summary, the same lines.
    settings = {"OPHOOK_MODE": "stats", "OPHOOK_LEVELS": "numpy,torch_dispatch", "OPHOOK_MAX_BYTES": "64M",
                "LD_DEBUG": "files"}  # the dynamic linker names every library it loads
    preloaded = runner.run("pass", env=settings)
    via_shim = runner.run("pass", how="pythonpath", env=settings)
    assert "_ophook.cpython" not in preloaded.stderr and "_ophook.cpython" in via_shim.stderr

    def output(run):
        files = {p.name: p.read_text() for p in run.output.iterdir()}
        files.pop("summary.json")
        summary = run.summary()  # both writers' summaries match docs/schema/summary.schema.json
        for key in ("pid", "root_pid", "start_t_ns", "output"):  # this process's own
            summary.pop(key)
        summary["config"].pop("output")
        # sys.executable is Python's to tell: the core alone cannot ask (an empty run has nothing to replay)
        summary["versions"].pop("python_executable", None)
        return files, summary

    assert output(preloaded) == output(via_shim)
    files, summary = output(preloaded)
    assert sorted(files) == ["api_apis.txt", "api_configs.txt", "api_statistics.txt", "api_trace.txt", "trace.jsonl"]
    assert summary["totals"]["calls"] == 0 and summary["versions"] == {"python": platform.python_version()}
    assert summary["config"]["mode"] == "stats" and summary["budget"]["max_bytes"] == 64 << 20

    def ophook_lines(run):  # without the "[ophook PID:TID] " prefix, the output as OUT
        return [line.split("] ", 1)[1].replace(str(run.output), "OUT")
                for line in run.stderr.splitlines() if line.startswith("[ophook ")]

    assert ophook_lines(preloaded) == ophook_lines(via_shim) == [
        "info: recording numpy,torch_dispatch (stats mode) into OUT",
        "info: recorded 0 calls of 0 ops, 0 files (0 B) into OUT"]


def test_a_stub_without_its_core_runs_unhooked(runner, tmp_path):
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(LIBRARY, alone / "libophook.so")
    run = runner.run(SMALL, how="plain", env={"LD_PRELOAD": str(alone / "libophook.so")})
    assert run.stdout == "12.0\n"
    warnings = [line for line in run.stderr.splitlines() if "ophook" in line]
    assert len(warnings) == 1 and "libophook_core.so" in warnings[0] and "running unhooked" in warnings[0]
    assert not run.output.exists()


def test_disable(runner):
    run = runner.run(SMALL, env={"OPHOOK_DISABLE": "1"})
    assert run.stdout == "12.0\n" and run.stderr == ""
    assert not run.output.exists()
