"""`ophook compare` over runs of many rank directories (src/cli/compare/run_comparison.cpp): rank
paired with rank, one rank per thread, the records kept only of the ranks the report shows. Two
real recordings of one NumPy program (the second with a planted difference at one call) are laid out
as runs of 30 ranks; the comparison of the runs must say what the comparison of the two recordings
says, for the one rank that differs, and count every other rank as the same."""
import json
import os
import shutil

import pytest

from cli_fixtures import run_ophook
from harness import run_script

RANKS = 30
ODD_RANK = 17

PROGRAM = """
    import os
    import numpy as np
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 16)).astype(np.float32)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    for step in range(6):
        h = np.matmul(x, w)
        # Planted: another scalar, so this add's array inputs match and its output does not.
        bias = 0.5001 if step == 3 and os.environ.get("PLANT") else 0.5
        x = np.tanh(np.add(h, bias))
        print(float(np.mean(x)))
"""


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """The program recorded twice in stats mode: as it is, and with its difference planted."""
    made = {}
    for name, env in (("plain", {}), ("planted", {"PLANT": "1"})):
        where = tmp_path_factory.mktemp(name)
        run_script(where, PROGRAM, env=env, mode="stats")
        made[name] = where / "out"
    return made


def rank_run(target, recordings, odd=None):
    """A run at `target` whose root and ranks are each a copy of the plain recording, rank
    ODD_RANK a copy of `odd` when given (hard links; each its own summary.json)."""
    target.mkdir()
    plain = recordings["plain"]
    for name in os.listdir(plain):
        if (plain / name).is_file():
            os.link(plain / name, target / name)
    for rank in range(RANKS):
        source = recordings[odd] if odd and rank == ODD_RANK else plain
        here = target / ("rank%d" % rank)
        here.mkdir()
        for name in os.listdir(source):
            if (source / name).is_file() and name != "summary.json":
                os.link(source / name, here / name)
        summary = json.loads((source / "summary.json").read_text())
        summary["root_pid"] = json.loads((plain / "summary.json").read_text())["pid"]
        (here / "summary.json").write_text(json.dumps(summary))
    return target


def test_a_run_of_many_ranks_is_compared_rank_with_rank(tmp_path, recordings):
    single = run_ophook("compare", recordings["plain"], recordings["planted"], "--json", tmp_path / "one.json")
    assert single.returncode == 1, single.stdout + single.stderr
    one = json.loads((tmp_path / "one.json").read_text())
    assert one["differing_pairs"] > 0 and one["first_origin"]["base"]["op"] == "numpy.add"

    base = rank_run(tmp_path / "base", recordings)
    new = rank_run(tmp_path / "new", recordings, odd="planted")
    proc = run_ophook("compare", base, new, "--threads", "2", "--json", tmp_path / "many.json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    many = json.loads((tmp_path / "many.json").read_text())

    # Every process is counted: the root and each rank hold the recording's calls.
    processes = many["processes"]
    assert [(p["base"], p["new"]) for p in processes] == \
        [("root", "root")] + [("rank%d" % r, "rank%d" % r) for r in range(RANKS)]
    assert many["pairs_total"] == (RANKS + 1) * one["pairs_total"]
    assert many["base"]["calls"] == (RANKS + 1) * one["base"]["calls"]
    assert many["differing_pairs"] == one["differing_pairs"] and many["origins"] == one["origins"]
    odd = processes[1 + ODD_RANK]
    for key in ("differing_pairs", "origins", "values_compared", "first_divergence", "first_origin"):
        assert odd[key] == one["processes"][0][key], key
    assert all(p["verdict"] == "same" for p in processes if p is not odd)

    # The first calls are the recordings' own, in the odd rank.
    for key in ("first_divergence", "first_origin"):
        assert many[key]["process"]["base"] == "rank%d" % ODD_RANK
        assert many[key]["base"] == one[key]["base"] and many[key]["reasons"] == one[key]["reasons"]

    # The per-op rows: the recordings' differing counts, every rank's pairs.
    rows = {row["op"]: row for row in many["ops"]}
    for row in one["ops"]:
        assert rows[row["op"]]["pairs"] == (RANKS + 1) * row["pairs"]
        for key in ("differing", "origins", "max_abs_err", "max_rel_err", "values_not_close"):
            assert rows[row["op"]][key] == row[key], (row["op"], key)

    # Call by call: the first process and the odd rank only.
    listed = [p["base"] for p in processes if p["calls_listed"]]
    assert listed == ["root", "rank%d" % ODD_RANK]
    assert {pair["process"] for pair in many["pairs"]} == {0, 1 + ODD_RANK}
    assert [p for p in many["pairs"] if p["differs"]] == \
        [dict(p, process=1 + ODD_RANK) for p in one["pairs"] if p["differs"]]

    # The page lists the rank that differs and counts the others.
    lines = proc.stdout.splitlines()
    table = lines.index("processes (%d pairs):" % (RANKS + 1))
    assert lines[table + 2].split()[:2] == ["rank%d" % ODD_RANK] * 2
    assert lines[table + 3].strip() == ("and %d more process pairs, not listed: 0 different, %d without a "
                                        "difference (--json lists every process)" % (RANKS, RANKS))
    assert len(lines) < 80


def test_a_few_processes_are_all_listed_call_by_call(tmp_path, recordings):
    base = tmp_path / "base"
    new = tmp_path / "new"
    shutil.copytree(recordings["plain"], base)
    shutil.copytree(recordings["planted"], new)
    proc = run_ophook("compare", base, new, "--json", tmp_path / "out.json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    result = json.loads((tmp_path / "out.json").read_text())
    assert [p["calls_listed"] for p in result["processes"]] == [True]
    assert len(result["pairs"]) == result["pairs_total"]
