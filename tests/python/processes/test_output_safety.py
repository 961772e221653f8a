"""Files are created only inside the output directory, never through a symlink planted there, with
mode 0644 (less the umask); a directory in a world-writable place is private to its owner."""
import os
import stat

import numpy as np

# The program plants symlinks at names the run will use later (calls 5 and 6, the end-of-run
# files), pointing at files of its own outside the output directory.
PLANT = """
import os, numpy as np
out, victim = os.environ["OPHOOK_OUTPUT"], os.path.abspath("victim")
open(victim, "w").write("precious")
a = np.arange(4.0)
for name in ("op_numpy.add_input1_000005.npy", "op_numpy.add_output_000005.npy",
             "op_numpy.add_output_000006.npy", "summary.json", "api_apis.txt", "api_statistics.txt"):
    os.symlink(victim, os.path.join(out, name))
for i in range(8):
    a = a + 1.0
print(a.tolist())
"""


def test_planted_symlinks_are_replaced_never_followed(runner, tmp_path):
    (tmp_path / "dumps1").mkdir()
    os.symlink(tmp_path / "victim_trace", tmp_path / "dumps1" / "trace.jsonl")  # planted before
    run = runner.run(PLANT)
    assert run.stdout == "[8.0, 9.0, 10.0, 11.0]\n"
    assert (tmp_path / "victim").read_text() == "precious"
    assert not (tmp_path / "victim_trace").exists()
    for path in run.output.iterdir():
        assert not path.is_symlink(), path
    records = run.records()
    assert len(records) == 8
    for r in records:
        np.testing.assert_array_equal(run.load(r["args"][0]["file"]), np.arange(4.0) + r["seq"])
        np.testing.assert_array_equal(run.load(r["outputs"][0]["file"]), np.arange(4.0) + r["seq"] + 1)
    assert run.summary()["totals"]["calls"] == 8


def test_a_symlink_at_a_child_directory_is_not_followed(runner, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "dumps"
    out.mkdir()
    os.symlink(elsewhere, out / "rank1")
    code = """
import os, subprocess, sys, numpy as np
np.ones(2) + 1
child = "import numpy as np; print((np.arange(3.0) * 3).tolist())"
subprocess.run([sys.executable, "-c", child], env=dict(os.environ, RANK="1"), check=True)
"""
    run = runner.run(code, env={"OPHOOK_OUTPUT": str(out)})
    assert run.stdout == "[0.0, 3.0, 6.0]\n"
    assert list(elsewhere.iterdir()) == []
    assert "rank1' is a symlink: not followed" in run.stderr
    assert run.summary()["totals"]["calls"] >= 1


def test_file_modes_follow_the_umask_from_0644(runner, tmp_path):
    code = "import os, numpy as np\nos.umask(0o022)\nnp.arange(3.0) * 2\n"
    run = runner.run(code)
    files = [p for p in run.output.iterdir() if p.is_file()]
    assert {p.name for p in files} >= {"trace.jsonl", "summary.json", "api_trace.txt"}
    assert any(p.suffix == ".npy" for p in files)
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) == 0o644, p
    # With a stricter umask the files are stricter too, as numpy.save's would be.
    strict = runner.run("import os\nos.umask(0o077)\nimport numpy as np\nnp.arange(3.0) * 2\n",
                        env={"OPHOOK_OUTPUT": str(tmp_path / "strict")})
    assert list(strict.output.glob("*.npy"))
    for p in strict.output.glob("*.npy"):
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p


def test_output_in_a_world_writable_directory_is_private(runner, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp
    run = runner.run("import numpy as np\nnp.arange(3.0) * 2\n", env={"OPHOOK_OUTPUT": str(shared / "dumps")})
    assert stat.S_IMODE((shared / "dumps").stat().st_mode) == 0o700
    assert run.records()[0]["op"] == "numpy.multiply"
    if os.geteuid() == 0:  # only root can hand a directory to another user
        theirs = shared / "theirs"
        theirs.mkdir()
        os.chown(theirs, 12345, -1)
        run = runner.run("import numpy as np\nprint(np.arange(3.0) * 2)\n", env={"OPHOOK_OUTPUT": str(theirs)})
        assert run.stdout == "[0. 2. 4.]\n"
        warnings = [l for l in run.stderr.splitlines() if l.startswith("[ophook")]
        assert len(warnings) == 1 and "belongs to uid 12345" in warnings[0], run.stderr
        assert list(theirs.iterdir()) == []

