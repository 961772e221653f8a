"""`ophook compare` on real runs under LD_PRELOAD: the first origin beside the first divergent
call, the processes of a DataLoader run paired and compared, and a comparison of runs that
recorded no values saying so instead of SAME."""
import json
import textwrap

import numpy as np

from cli_fixtures import run_ophook
from harness import load, run_script, trace

# Data from code no hook sees (the `random` module) enters at np.tanh; np.exp is swapped by a
# rules file in the NEW run only.
UNHOOKED_DATA_PROGRAM = """
    import random
    import sys

    import numpy as np

    random.seed(int(sys.argv[1]))
    noise = np.array([random.random() for _ in range(8)])  # not recorded: np.array is no op
    weights = np.linspace(0.0, 1.0, 8)
    squashed = np.tanh(noise)
    scaled = np.exp(weights)
    total = np.add(squashed, scaled)
    print(float(np.add.reduce(total)))
"""

RULES = """
    import ophook

    @ophook.override("numpy.exp")
    def exp(original, *args, **kwargs):
        return original(*args, **kwargs) * 1.001
"""


def compare(base, new, tmp_path, name="out"):
    """Runs `ophook compare BASE NEW --json --html`; returns the process and the parsed JSON."""
    json_path = tmp_path / f"{name}.json"
    proc = run_ophook("compare", base, new, "--json", json_path, "--html", tmp_path / f"{name}.html")
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc, json.loads(json_path.read_text())


def line_of(source, text):
    """The 1-based line of `text` in the dedented program `source`."""
    lines = textwrap.dedent(source).splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def record(directory, seq):
    return next(r for r in trace(directory) if r["seq"] == seq)


def test_first_divergence_reads_unhooked_data_and_first_origin_is_the_overridden_op(tmp_path):
    (tmp_path / "rules.py").write_text(textwrap.dedent(RULES))
    run_script(tmp_path, UNHOOKED_DATA_PROGRAM, "1", output=tmp_path / "base")
    run_script(tmp_path, UNHOOKED_DATA_PROGRAM, "2", output=tmp_path / "new",
               overrides=tmp_path / "rules.py")
    base, new = tmp_path / "base", tmp_path / "new"
    proc, result = compare(base, new, tmp_path)
    assert proc.returncode == 1

    first = result["first_divergence"]
    assert first["base"]["op"] == "numpy.tanh" and first["origin"] is False
    assert first["base"]["source"].endswith(f"prog.py:{line_of(UNHOOKED_DATA_PROGRAM, 'np.tanh')}:<module>")
    # It is the first op to read the noise, and the noise differs between the runs.
    tanh_base, tanh_new = record(base, first["base"]["seq"]), record(new, first["new"]["seq"])
    assert not np.allclose(load(base, tanh_base["args"][0]), load(new, tanh_new["args"][0]))

    origin = result["first_origin"]
    assert origin["base"]["op"] == "numpy.exp" and origin["origin"] is True
    assert origin["process"] == {"index": 0, "base": "root", "new": "root"}
    exp_base, exp_new = record(base, origin["base"]["seq"]), record(new, origin["new"]["seq"])
    assert exp_new.get("overridden") is True and "overridden" not in exp_base
    # Equal inputs, outputs apart by the rule's factor: this op made the difference.
    x_base, x_new = load(base, exp_base["args"][0]), load(new, exp_new["args"][0])
    np.testing.assert_array_equal(x_base, x_new)
    np.testing.assert_allclose(load(base, exp_base["outputs"][0]), np.exp(x_base), rtol=1e-15)
    np.testing.assert_allclose(load(new, exp_new["outputs"][0]), np.exp(x_new) * 1.001, rtol=1e-15)

    differing = [(p["op"], p["origin"]) for p in result["pairs"] if p["differs"]]
    assert differing == [("numpy.tanh", False), ("numpy.exp", True), ("numpy.add", False),
                         ("numpy.add.reduce", False)]
    assert result["origins"] == 1 and result["values_compared"] == result["pairs_total"] == 5
    assert {o["op"]: o["origins"] for o in result["ops"]}["numpy.exp"] == 1

    lines = proc.stdout.splitlines()
    assert lines[0].startswith("DIFFERENT: 4 of 5 paired calls differ (1 origin, 5 with values to compare")
    at = lines.index("first divergent call:")
    assert "op=numpy.tanh" in lines[at + 1] and "step=0" in lines[at + 1]
    assert any(line.startswith("  marked: propagated") for line in lines[at:at + 8])
    origin_at = next(i for i, line in enumerate(lines) if line.startswith("first origin"))
    assert "op=numpy.exp" in lines[origin_at + 1]
    html = (tmp_path / "out.html").read_text()
    assert "First origin" in html and "<td>origin</td>" in html and "<td>propagated</td>" in html


DATALOADER_PROGRAM = """
    import os
    import sys

    import torch
    from torch.utils.data import DataLoader, Dataset

    class Noisy(Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, i):
            generator = torch.Generator().manual_seed(int(os.environ.get("NOISE_SEED", "0")) + i)
            return torch.randn(3, generator=generator) * (i + 1)

    if __name__ == "__main__":
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 2)
        loss = 0
        for batch in DataLoader(Noisy(), batch_size=4, num_workers=2):
            loss = loss + model(batch).pow(2).mean()
        loss.backward()
        print(float(loss))
"""


def test_dataloader_runs_pair_their_worker_processes(tmp_path):
    runs = {}
    for name, seed in (("a", "0"), ("b", "0"), ("c", "100")):
        proc = run_script(tmp_path, DATALOADER_PROGRAM, output=tmp_path / name, timeout=180,
                          env={"NOISE_SEED": seed})
        runs[name] = (tmp_path / name, proc.stdout)
    assert runs["a"][1] == runs["b"][1] != runs["c"][1]

    # Identical seeds: every process pair compared, the workers' calls included.
    proc, result = compare(runs["a"][0], runs["b"][0], tmp_path, "same")
    processes = result["processes"]
    assert [(p["base"] == p["new"] == "root") for p in processes] == [True, False, False]
    workers = processes[1:]
    assert all(p["base"].startswith("pid") and p["new"].startswith("pid") for p in workers)
    for p in workers:
        calls = len(trace(runs["a"][0] / p["base"]))
        assert p["base_calls"] == p["new_calls"] == p["pairs"] == calls > 0
        assert p["values_compared"] > 0 and p["verdict"] == "same", p
    assert result["pairs_total"] > processes[0]["pairs"]
    # Workers pair in start order: summary.json says when each began, after the root.
    for run, side in ((runs["a"][0], "base"), (runs["b"][0], "new")):
        root = json.loads((run / "summary.json").read_text())
        starts = [json.loads((run / p[side] / "summary.json").read_text()) for p in workers]
        assert [s["root_pid"] for s in starts] == [root["pid"]] * 2
        assert root["start_t_ns"] < starts[0]["start_t_ns"] < starts[1]["start_t_ns"]
    assert result["verdict"] == "same", proc.stdout
    assert proc.returncode == 0 and proc.stdout.startswith("SAME: ")

    # Another seed in the workers' generator: the origin is the worker's torch.randn.
    proc, result = compare(runs["a"][0], runs["c"][0], tmp_path, "seeded")
    assert proc.returncode == 1
    origin = result["first_origin"]
    assert origin["base"]["op"] == "torch.randn", proc.stdout
    assert origin["process"]["base"].startswith("pid") and origin["process"]["index"] in (1, 2)
    assert result["first_divergence"] == origin  # the workers draw before the root reads
    randn = [p for p in result["pairs"] if p["op"] == "torch.randn"]
    assert len(randn) == 16 and all(p["origin"] for p in randn)


TRACE_PROGRAM = """
    import sys

    import numpy as np

    rng = np.random.default_rng(int(sys.argv[1]))
    x = rng.standard_normal(16)
    print(float(np.add.reduce(np.tanh(x))))
"""


def test_trace_mode_runs_with_different_seeds_are_not_same(tmp_path):
    for name, mode, seed in (("t1", "trace", "1"), ("t2", "trace", "2"), ("s1", "stats", "1"),
                             ("s2", "stats", "2")):
        run_script(tmp_path, TRACE_PROGRAM, seed, output=tmp_path / name, mode=mode)
    proc, result = compare(tmp_path / "t1", tmp_path / "t2", tmp_path, "trace")
    assert proc.returncode == 1
    assert proc.stdout.startswith("SAME CALLS, VALUES NOT RECORDED: 3 paired calls match, 0 of them")
    assert result["verdict"] == "same_calls_values_not_recorded"
    assert result["values_compared"] == 0 and result["differing_pairs"] == 0
    assert [v["method"] for p in result["pairs"] for v in p["values"] if v["path"] == "outputs[0]"] == ["spec"] * 3
    # The same program recorded with statistics: the values are compared and differ.
    proc, result = compare(tmp_path / "s1", tmp_path / "s2", tmp_path, "stats")
    assert proc.returncode == 1 and result["verdict"] == "different"
    assert result["values_compared"] == 3
