"""`pip install .` into a fresh venv: the console command, `python -m ophook`, the packaged
library and extension, a NumPy program recorded by `ophook run` from there, and the pytest plugin
found through its entry point.

The venv sees this interpreter's site-packages (a .pth file) for NumPy, pytest and the build tools
(scikit-build-core, pybind11, tvm_ffi), so nothing is downloaded when they are there. The wheel is
compiled as the test build was (its build type, compiler, flags and launcher, read from its
CMakeCache.txt), with the same include paths, so that the compiler cache set-up.sh configures
(ccache) hands it the objects already compiled: what this test checks is the package, not the
optimiser (pyproject.toml's Release build is what users get). The CMake build directory lives in
the test build tree (OPHOOK_BUILD_DIR/wheel-build) so a second run only rebuilds what changed."""
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from harness import BUILD_DIR, SOURCE_DIR, trace

BUILD_TOOLS = ("numpy", "scikit_build_core", "pybind11", "tvm_ffi")

PROGRAM = """\
import numpy as np
a = np.linspace(-2.0, 3.0, 12).reshape(3, 4)
b = np.full((3, 4), 0.75)
c = np.multiply(a, b)
d = np.exp(c)
print(repr(float(d.sum())))
"""


def clean_env(**extra):
    """This process's environment without anything that would hook or redirect the children."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("OPHOOK_") and k not in ("LD_PRELOAD", "PYTHONPATH", "PYTHONHOME")}
    env.update(extra)
    return env


def run(cmd, cwd, timeout=120, **kwargs):
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=clean_env(), capture_output=True,
                          text=True, timeout=timeout, **kwargs)


class Venv:
    def __init__(self, root):
        self.root = root
        self.python = root / "bin" / "python"
        self.ophook = root / "bin" / "ophook"

    def package_dir(self, cwd):
        proc = run([self.python, "-c", "import ophook, os; print(os.path.dirname(ophook.__file__))"],
                   cwd)
        assert proc.returncode == 0, proc.stderr
        return Path(proc.stdout.strip())


def wheel_build_settings():
    """pip --config-settings that build the wheel with the test build's compiler settings."""
    wanted = ("CMAKE_BUILD_TYPE", "CMAKE_CXX_COMPILER", "CMAKE_CXX_FLAGS_RELWITHDEBINFO", "CMAKE_CXX_COMPILER_LAUNCHER")
    cache = {}
    for line in (BUILD_DIR / "CMakeCache.txt").read_text().splitlines():
        name, _, value = line.partition("=")
        name = name.partition(":")[0]
        if name in wanted and value:
            cache[name] = value
    settings = []
    if "CMAKE_BUILD_TYPE" in cache:
        settings.append(f"--config-settings=cmake.build-type={cache.pop('CMAKE_BUILD_TYPE')}")
    settings += [f"--config-settings=cmake.define.{name}={value}" for name, value in cache.items()]
    return settings


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    root = tmp_path_factory.mktemp("pkg") / "venv"
    base_python = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base_python, "-m", "venv", str(root)], check=True, env=clean_env(), timeout=300)
    env = Venv(root)
    site_packages = subprocess.run([str(env.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   env=clean_env(), capture_output=True, text=True, check=True).stdout.strip()
    # After the venv's own packages on sys.path, so that the ophook installed there comes first.
    (Path(site_packages) / "test_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    probe = "import " + ", ".join(BUILD_TOOLS)
    if subprocess.run([str(env.python), "-c", probe], env=clean_env(),
                      capture_output=True).returncode != 0:
        # The base interpreter lacks them: the same registry set-up.sh uses for .venv.
        subprocess.run([str(env.python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        f"numpy=={np.__version__}", "scikit-build-core", "pybind11", "apache-tvm-ffi"],
                       check=True, env=clean_env(), timeout=900)
    install = subprocess.run(
        [str(env.python), "-m", "pip", "install", "--no-build-isolation", "--no-deps",
         "--disable-pip-version-check", f"--config-settings=build-dir={BUILD_DIR / 'wheel-build'}",
         *wheel_build_settings(), str(SOURCE_DIR)],
        env=clean_env(CMAKE_BUILD_PARALLEL_LEVEL="2"), capture_output=True, text=True, timeout=1500)
    assert install.returncode == 0, install.stdout[-4000:] + install.stderr[-4000:]
    return env


def test_package_holds_library_extension_and_command(venv, tmp_path):
    package = venv.package_dir(tmp_path)
    assert package.parent.name == "site-packages" and package.is_relative_to(venv.root)
    proc = run([venv.ophook, "preload-path"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{package / 'libophook.so'}\n"
    # The extension resolves the core beside the preloaded stub through its RPATH, in the package.
    extension = next(package.glob("_ophook*.so"))
    ldd = run(["ldd", extension], tmp_path).stdout
    line = next(line for line in ldd.splitlines() if "libophook_core.so" in line)
    assert line.split("=>")[1].split()[0] == str(package / "libophook_core.so"), ldd
    # No sitecustomize: a plain interpreter of the venv stays unhooked.
    assert not (package.parent / "sitecustomize.py").exists()


def test_python_dash_m_is_the_command(venv, tmp_path):
    via_module = run([venv.python, "-m", "ophook", "--help"], tmp_path)
    via_script = run([venv.ophook, "--help"], tmp_path)
    assert via_module.returncode == 0, via_module.stderr
    assert via_module.stdout == via_script.stdout
    for sub in ("run", "compare", "report", "preload-path"):
        assert sub in via_module.stdout
    version = run([venv.python, "-c", "from importlib.metadata import version; "
                   "print(version('ophook'))"], tmp_path).stdout.strip()
    assert run([venv.python, "-m", "ophook", "--version"], tmp_path).stdout.split()[-1] == version
    # Exit status passes through: a missing run directory is an input error (2).
    missing = run([venv.python, "-m", "ophook", "report", tmp_path / "nope"], tmp_path)
    assert missing.returncode == 2 and "nope" in missing.stderr


def test_ophook_run_records_a_numpy_program(venv, tmp_path):
    (tmp_path / "script.py").write_text(PROGRAM)
    plain = run([venv.python, "script.py"], tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert not (tmp_path / "np_op_dumps").exists()

    out = tmp_path / "dumps"
    proc = run([venv.ophook, "run", "--output", out, "--", venv.python, "script.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == plain.stdout
    records = trace(out)  # an installed package's records match docs/schema/ too
    by_op = {r["op"]: r for r in records}
    assert {"numpy.multiply", "numpy.exp"} <= by_op.keys(), sorted(by_op)

    a = np.linspace(-2.0, 3.0, 12).reshape(3, 4)
    c = a * 0.75
    mul, exp = by_op["numpy.multiply"], by_op["numpy.exp"]
    np.testing.assert_array_equal(np.load(out / mul["args"][0]["file"]), a)
    np.testing.assert_array_equal(np.load(out / mul["args"][1]["file"]), np.full((3, 4), 0.75))
    np.testing.assert_array_equal(np.load(out / mul["outputs"][0]["file"]), c)
    np.testing.assert_array_equal(np.load(out / exp["outputs"][0]["file"]), np.exp(c))
    assert exp["outputs"][0]["shape"] == [3, 4] and exp["outputs"][0]["dtype"] == "float64"
    assert exp["source"] == f"{os.path.realpath(tmp_path / 'script.py')}:5:<module>"
    assert float(proc.stdout) == float(np.exp(c).sum())


def test_pytest_loads_the_plugin_by_its_entry_point(venv, tmp_path):
    """Installed, the plugin needs no -p: pytest finds it through the pytest11 entry point and it
    records each test in-process (no LD_PRELOAD, no shim), then compares against that baseline."""
    (tmp_path / "test_numbers.py").write_text("import numpy as np\n\n\ndef test_exp():\n    np.exp(np.arange(3.0))\n")
    pytest_run = [venv.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_numbers.py"]
    proc = run([*pytest_run, "--ophook-record=ref"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recording = tmp_path / "ref" / "test_numbers.py" / "test_exp"
    records = trace(recording)
    assert [r["op"] for r in records] == ["numpy.exp"]
    np.testing.assert_array_equal(np.load(recording / records[0]["outputs"][0]["file"]), np.exp(np.arange(3.0)))
    proc = run([*pytest_run, "--ophook-compare=ref"], tmp_path)
    assert proc.returncode == 0 and "1 unchanged, 0 moved" in proc.stdout, proc.stdout + proc.stderr
