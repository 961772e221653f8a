"""Per-process output directories (root, pid<PID>/, rank<R>/), fork, and the Python API."""
import json
import os

import numpy as np

from cli_fixtures import run_ophook
from harness import SHIM_DIR, arrays_in, summary, trace

# The package importable without being started: what `pip install` gives, or the shim directory
# on sys.path (not PYTHONPATH, whose sitecustomize would start recording at once).
IMPORTABLE = "import sys\nsys.path.insert(0, %r)\n" % str(SHIM_DIR)


def test_fork_child_writes_its_own_directory(runner):
    code = """
import os, numpy as np
a = np.arange(100000.0)
for _ in range(20):
    a = a + 1.0          # keep the writer busy while forking
pid = os.fork()
if pid == 0:
    b = np.arange(3.0) * 2.0
    os._exit(0)
os.waitpid(pid, 0)
c = np.arange(3.0) - 1.0
print(pid)
"""
    run = runner.run(code, timeout=60)
    child = int(run.stdout)
    parent_ops = [r["op"] for r in run.records()]
    assert parent_ops.count("numpy.add") == 20 and parent_ops[-1] == "numpy.subtract"
    child_records = run.records("pid%d" % child)
    assert [r["op"] for r in child_records] == ["numpy.multiply"]
    assert child_records[0]["seq"] == 0 and child_records[0]["pid"] == child
    np.testing.assert_array_equal(run.load(child_records[0]["outputs"][0]["file"], "pid%d" % child), [0.0, 2.0, 4.0])


def test_fork_loop_without_exec(runner):
    code = """
import os, numpy as np
pids = []
for i in range(10):
    pid = os.fork()
    if pid == 0:
        np.add(np.arange(2.0), i)
        os._exit(0)
    pids.append(pid)
for pid in pids:
    os.waitpid(pid, 0)
print(" ".join(map(str, pids)))
"""
    run = runner.run(code, timeout=120)
    for pid in map(int, run.stdout.split()):
        records = run.records("pid%d" % pid)
        assert [r["op"] for r in records] == ["numpy.add"]


def test_python_children_and_ranks(runner, tmp_path):
    code = """
import os, subprocess, sys, numpy as np
np.ones(2) + 1
child = "import numpy as np; np.ones(2) * 3"
p = subprocess.run([sys.executable, "-c", child], check=True)
env = dict(os.environ, RANK="1")
subprocess.run([sys.executable, "-c", child], env=env, check=True)
print("ok")
"""
    run = runner.run(code, timeout=120)
    assert run.stdout == "ok\n"
    ops = [r["op"] for r in run.records()]
    assert "numpy.add" in ops and "numpy.multiply" not in ops
    pid_dirs = [d for d in run.output.iterdir() if d.name.startswith("pid")]
    assert len(pid_dirs) == 1
    assert [r["op"] for r in run.records(pid_dirs[0].name)][-1] == "numpy.multiply"
    assert [r["op"] for r in run.records("rank1")][-1] == "numpy.multiply"


def test_what_a_rank_starts_writes_pid_directories(runner):
    """A fork child (a DataLoader worker) and a subprocess of rank 1 inherit RANK=1 from it: each
    writes its own pid<PID>/, never over rank 1's files."""
    rank = """
import os, subprocess, sys, numpy as np
np.ones(2) + 1
pid = os.fork()
if pid == 0:
    np.ones(2) * 2
    os._exit(0)
os.waitpid(pid, 0)
subprocess.run([sys.executable, "-c", "import numpy as np; np.ones(2) / 3"], check=True)
np.ones(2) - 1
"""
    code = ("import os, subprocess, sys\n"
            "subprocess.run([sys.executable, '-c', %r], env=dict(os.environ, RANK='1'), check=True)\n" % rank)
    run = runner.run(code, timeout=120)
    assert {"numpy.add", "numpy.subtract"} <= {r["op"] for r in run.records("rank1")}
    pid_ops = sorted(op for d in run.output.glob("pid*") for op in {r["op"] for r in run.records(d.name)} - {"numpy.copyto"})
    assert pid_ops == ["numpy.divide", "numpy.multiply"]


def test_a_new_run_replaces_only_the_files_it_names(runner, tmp_path):
    out = tmp_path / "shared_out"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    (out / "op_numpy.old_input1_000099.npy").write_bytes(b"stale")
    runner.run("import numpy as np\nnp.ones(2) + 1\n", env={"OPHOOK_OUTPUT": str(out)})
    assert (out / "notes.txt").read_text() == "keep me"
    assert not (out / "op_numpy.old_input1_000099.npy").exists()
    assert len((out / "trace.jsonl").read_text().splitlines()) == 2


def test_tracer_context_manager_without_preload(runner, tmp_path):
    code = IMPORTABLE + """
import numpy as np, ophook
a = np.ones(3)
a + a                                   # before: not recorded
with ophook.Tracer(output_path=%r, levels=["numpy"], mode="stats"):
    b = a * 2
    b.sum()
a - a                                   # after: not recorded
with ophook.Tracer(output=%r, mode="dump", include="subtract"):
    a - a
    a + a
print("done")
""" % (str(tmp_path / "first"), str(tmp_path / "second"))
    run = runner.run(code, how="plain")
    assert run.stdout == "done\n"
    first = trace(tmp_path / "first")
    assert [r["op"] for r in first] == ["numpy.multiply", "numpy.add.reduce"]
    assert first[0]["args"][0]["stats"]["max"] == 1.0 and first[0]["args"][0]["file"] is None
    written = summary(tmp_path / "first")
    assert written["totals"]["calls"] == 2 and written["config"]["mode"] == "stats"
    second = trace(tmp_path / "second")
    assert [r["op"] for r in second] == ["numpy.subtract"] and second[0]["seq"] == 0


def test_a_fork_after_a_tracer_run_ended_runs_normally(runner, tmp_path):
    """The ended run's writer thread was joined: the child's fork handler let go of a thread that
    no longer was one (std::thread::detach threw, and the child aborted)."""
    code = IMPORTABLE + """
import os, numpy as np, ophook
with ophook.Tracer(output_path=%r, levels=["numpy"], mode="trace"):
    np.add(np.ones(3), 1)
pid = os.fork()
if pid == 0:
    print("child", float(np.add(np.ones(3), 2).sum()), flush=True)
    os._exit(0)
print("child exit", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
""" % str(tmp_path / "run")
    run = runner.run(code, how="plain")
    assert run.stdout == "child 9.0\nchild exit 0\n", run.stderr
    assert [r["op"] for r in trace(tmp_path / "run")][-1] == "numpy.add"
    assert not [d for d in (tmp_path / "run").iterdir() if d.is_dir()]  # the child ran unrecorded


def test_each_tracer_run_has_its_own_notes_and_counts(runner, tmp_path):
    """One Tracer after another in one process (the pytest plugin's way: one per test): a run's
    summary notes what happened in that run only — here arrays over OPHOOK_QUEUE_BYTES."""
    code = IMPORTABLE + """
import numpy as np, ophook
big = np.ones(100_000)
for name, queue in (("over", "64K"), ("within", "256M"), ("over_again", "64K")):
    with ophook.Tracer(output=%r + "/" + name, levels=["numpy"], mode="dump", queue_bytes=queue):
        big + 1.0
""" % str(tmp_path)
    runner.run(code, how="plain")
    for name in ("over", "over_again"):
        records, notes = trace(tmp_path / name), summary(tmp_path / name)["notes"]
        refused = [a for r in records for a in arrays_in(r["args"] + r["outputs"]) if a.get("reason")]
        assert [r["seq"] for r in records] == [0] and len(refused) == 2  # big, and the sum
        assert notes["arrays_not_copied"]["count"] == len(refused)
        assert "OPHOOK_QUEUE_BYTES=65536" in notes["arrays_not_copied"]["reason"]
    within = trace(tmp_path / "within")
    assert all(a["file"] for a in arrays_in(within[0]["args"] + within[0]["outputs"]))
    assert summary(tmp_path / "within")["notes"] == {}


def test_install_flush_uninstall(runner, tmp_path):
    code = IMPORTABLE + """
import numpy as np, ophook, json
ophook.install(output=%r, mode="trace")
np.arange(4.0) * 3
ophook.flush()
lines = open(%r).read().splitlines()
print(len(lines), json.loads(lines[0])["op"])
ophook.uninstall()
np.arange(4.0) * 3
""" % (str(tmp_path / "api"), str(tmp_path / "api" / "trace.jsonl"))
    run = runner.run(code, how="plain")
    assert run.stdout.split()[0] in ("1", "2")
    assert "numpy.multiply" in run.stdout or "numpy.arange" in run.stdout
    records = trace(tmp_path / "api")
    assert [r["op"] for r in records] == ["numpy.multiply"]


def test_summary_and_api_files(runner):
    code = "import numpy as np\na = np.arange(6.0).reshape(2, 3)\nfor _ in range(3):\n    a = a + a\nnp.concatenate([a, a])\n"
    run = runner.run(code)
    written = run.summary()
    assert written["totals"]["calls"] == 4 and written["totals"]["ops"] == 2
    assert written["ops"]["numpy.add"]["count"] == 3
    assert written["versions"]["numpy"] == np.__version__
    assert written["totals"]["files"] == len(list(run.output.glob("*.npy")))
    api_trace = (run.output / "api_trace.txt").read_text().splitlines()
    assert api_trace[0] == 'numpy.add(Array([2, 3], "float64"), Array([2, 3], "float64"))'
    assert api_trace[3] == 'numpy.concatenate([Array([2, 3], "float64"), Array([2, 3], "float64")])'
    assert (run.output / "api_apis.txt").read_text() == "numpy.add\nnumpy.concatenate\n"
    assert len((run.output / "api_configs.txt").read_text().splitlines()) == 2
    stats = (run.output / "api_statistics.txt").read_text()
    assert stats.startswith("Total APIs: 2\nTotal API calls: 4\n\nnumpy.add: 3 (75.00%)")
    assert stats.endswith("\nCalls per level:\n  ufunc: 3\n  array_function: 1\n")


def test_report_and_compare_agree_on_a_run_with_a_stale_process_directory(runner, tmp_path):
    """A run into a directory that an earlier run with a worker used: the worker's pid<PID>/ is
    left there (a run never deletes directories). `report` and `compare` read the run's layout
    through one reader, so both leave the stale directory out, say so, and list the same
    processes."""
    code = """
import os, sys, numpy as np
a = np.arange(6.0) * 2.0
if os.environ.get("WITH_WORKER"):
    pid = os.fork()
    if pid == 0:
        b = np.arange(3.0) + 1.0
        os._exit(0)
    os.waitpid(pid, 0)
c = np.sqrt(a)
"""
    shared = tmp_path / "shared_run"
    earlier = runner.run(code, env={"OPHOOK_OUTPUT": shared, "OPHOOK_MODE": "stats", "WITH_WORKER": "1"})
    stale = [p.name for p in shared.iterdir() if p.name.startswith("pid")]
    assert len(stale) == 1 and earlier.summary(stale[0])["root_pid"] == earlier.summary()["pid"]
    runner.run(code, env={"OPHOOK_OUTPUT": shared, "OPHOOK_MODE": "stats"})
    fresh = runner.run(code, env={"OPHOOK_OUTPUT": tmp_path / "fresh_run", "OPHOOK_MODE": "stats"})
    assert (shared / stale[0] / "trace.jsonl").exists()  # still there, from the earlier run

    report = run_ophook("report", shared)
    assert report.returncode == 0, report.stderr
    processes_line = next(line for line in report.stdout.splitlines() if "processes" in line)
    assert "1 (root: 2 calls)" in processes_line, processes_line
    assert f"{stale[0]}: left by an earlier run" in report.stderr, report.stderr

    compared = run_ophook("compare", shared, fresh.output, "--json", tmp_path / "compare.json")
    assert compared.returncode == 0, compared.stdout + compared.stderr
    result = json.loads((tmp_path / "compare.json").read_text())
    assert [(p["base"], p["new"]) for p in result["processes"]] == [("root", "root")]
    assert f"BASE: {shared / stale[0]}: left by an earlier run" in compared.stderr + compared.stdout
