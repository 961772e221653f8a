"""The first NaN/Inf across ranks: four DDP ranks under torchrun (gloo), an Inf born in rank 2's
backward pass at step 3 and spread to every rank by the bucket allreduce. Rank 2 names the culprit,
with the backward() line and the forward line that made its autograd node; ranks 0, 1 and 3 name
no culprit — the allreduce *received* it, at the same collective number on each — and the later
steps, whose forward tensors are Inf (the Inf weights the optimizer step wrote), make no false
culprit either: a node fed NaN through its saved tensors is no culprit. The program computes what
it computes unhooked."""
import json
import os
import shutil

import pytest

from cli_fixtures import run_ophook
from harness import summary, trace
from ranks import DDP_MLP, torchrun

PROGRAM = DDP_MLP + """
for step in range(6):
    out = model(data)
    if rank == 2 and step == 3:
        d = out - out.detach()
        out = out + torch.sqrt(d * d)  # FORWARD
    loss = out.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()  # BACKWARD
    optimizer.step()
sys.stdout.write("rank %d loss %s\\n" % (rank, loss.item()))
dist.destroy_process_group()
"""
LINES = {tag: n for n, line in enumerate(PROGRAM.splitlines(), 1) for tag in ("FORWARD", "BACKWARD") if "# " + tag in line}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    where = tmp_path_factory.mktemp("ranks")
    proc = torchrun(where, PROGRAM, 4, nan="warn")
    plain = torchrun(tmp_path_factory.mktemp("plain"), PROGRAM, 4, preload=False)
    return where, proc, plain


def test_the_program_computes_what_it_computes_unhooked(run):
    _, proc, plain = run
    assert sorted(proc.stdout.splitlines()) == sorted(plain.stdout.splitlines())


def test_the_culprit_is_named_on_its_rank_with_its_forward_line(run):
    where, proc, _ = run
    culprit = summary(where / "out" / "rank2")["first_nonfinite"]
    script = where / "prog.py"
    assert (culprit["op"], culprit["step"], culprit["phase"]) == ("autograd.SqrtBackward0", 3, "backward")
    assert culprit["source"] == "%s:%d:<module>" % (script, LINES["BACKWARD"])
    assert culprit["forward_source"] == "%s:%d:<module>" % (script, LINES["FORWARD"])
    record = next(r for r in trace(where / "out" / "rank2") if r["seq"] == culprit["seq"])
    assert record["forward_source"] == culprit["forward_source"]
    found = [line for line in proc.stderr.splitlines() if "from finite inputs" in line]
    assert len(found) == 1 and "SqrtBackward0" in found[0] and "made in forward at %s:%d" % (script, LINES["FORWARD"]) in found[0]


def test_every_other_rank_received_it_at_the_same_collective_and_names_no_culprit(run):
    where, proc, _ = run
    received = {}
    for rank in (0, 1, 3):
        written = summary(where / "out" / ("rank%d" % rank))
        assert written["first_nonfinite"] is None, (rank, written["first_nonfinite"])
        first = written["first_received_nonfinite"]
        assert (first["op"], first["step"], first["phase"], first["ranks"]) == ("c10d.allreduce_", 3, "backward", [0, 1, 2, 3])
        record = next(r for r in trace(where / "out" / ("rank%d" % rank)) if r["seq"] == first["seq"])
        assert record["collective"]["received_nonfinite"] and record["collective"]["group_seq"] == first["group_seq"]
        received[rank] = first["group_seq"]
    assert len(set(received.values())) == 1, received
    # On the culprit's rank the same allreduce sent the Inf: its inputs held it, nothing received.
    at_culprit = [r for r in trace(where / "out" / "rank2") if r["level"] == "collective"
                  and r["collective"]["group_seq"] == received[0]]
    assert len(at_culprit) == 1 and not at_culprit[0]["collective"]["received_nonfinite"]
    assert summary(where / "out" / "rank2")["first_received_nonfinite"] is None
    assert sum("first NaN/Inf received from another rank" in line for line in proc.stderr.splitlines()) == 3
    for rank in range(4):  # every rank's ring written, on rank 2's word through the job's store or its own
        written = json.loads((where / "out" / ("rank%d" % rank) / "summary.json").read_text())
        whys = [t["why"] for t in written["ring"]["triggers"]]
        assert whys and all(w.startswith(("first NaN/Inf", "rank 2 asked every rank: first NaN/Inf from finite"))
                            for w in whys), whys
        assert written["notes"]["rank_trigger"]["triggered_by_rank"] == 2, written["notes"]


def test_the_report_names_the_culprits_rank_and_the_collective_that_carried_it(run):
    """ophook report over the four rank directories: the culprit's rank (in causal order, by the
    collectives' numbers, not by the hosts' clocks), then one line for the allreduce that brought
    it to the three others, ranks as a range."""
    where, _, _ = run
    culprit = summary(where / "out" / "rank2")["first_nonfinite"]
    received = summary(where / "out" / "rank0")["first_received_nonfinite"]
    proc = run_ophook("report", where / "out")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    first = next(line for line in lines if line.strip().startswith("first NaN/Inf"))
    assert "op=autograd.SqrtBackward0" in first and first.endswith("in rank2"), first
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("across ranks"))
    assert lines[at].split("across ranks", 1)[1].strip().startswith(
        "rank2: made it, seq %d autograd.SqrtBackward0 at %s (step 3), after collective #%d of group 0"
        % (culprit["seq"], culprit["source"], received["group_seq"] - 1)), lines[at]
    assert lines[at + 1].strip() == "received by rank0-1,3 at c10d.allreduce_ #%d of group 0 (step 3)" % (
        received["group_seq"]), lines[at + 1]


def _page(proc):
    """The report's page without its first line (the directory)."""
    return proc.stdout.splitlines()[1:]


def test_the_index_in_summary_json_gives_the_page_the_records_give(run, tmp_path):
    """Each rank's summary.json indexes its records (counts, steps, first NaN/Inf, collectives):
    the report merges the indexes alone; without them (an older summary.json) it counts every
    record, and the page is the same."""
    where, _, _ = run
    copy = tmp_path / "no_index"
    shutil.copytree(where / "out", copy)
    for path in copy.rglob("summary.json"):
        written = json.loads(path.read_text())
        assert written["trace"]["bytes"] == (path.parent / "trace.jsonl").stat().st_size
        del written["trace"]  # what an older recorder wrote: the records are read
        path.write_text(json.dumps(written))
    indexed, counted = run_ophook("report", where / "out"), run_ophook("report", copy)
    assert indexed.returncode == counted.returncode == 0, indexed.stderr + counted.stderr
    assert _page(indexed) == _page(counted)
    levels = next(line for line in _page(indexed) if line.strip().startswith("levels"))
    assert "torch_function" in levels and "collective" in levels, levels


def test_thousands_of_rank_directories_give_a_short_page_that_names_what_is_missing(run, tmp_path):
    """A run of 300 rank directories made from the four recorded ones (rank 2 as recorded, the
    others copies of rank 0): rank 5 has no directory, rank 7 no summary.json (killed before it
    wrote one), rank 9 is an earlier run's. The page stays short, names all three, still names
    rank 2's culprit, and the exit status says the run is incomplete."""
    where, _, _ = run
    target = tmp_path / "many"
    target.mkdir()
    for rank in range(300):
        if rank == 5:
            continue
        source = where / "out" / ("rank%d" % (2 if rank == 2 else 0))
        here = target / ("rank%d" % rank)
        here.mkdir()
        for name in ("trace.jsonl", "summary.json", "api_trace.txt"):
            if (source / name).exists():
                os.link(source / name, here / name)
    for name in ("trace.jsonl", "summary.json"):
        os.link(where / "out" / name, target / name)
    (target / "rank7" / "summary.json").unlink()
    stale = json.loads((target / "rank9" / "summary.json").read_text())
    (target / "rank9" / "summary.json").unlink()
    (target / "rank9" / "summary.json").write_text(json.dumps(dict(stale, root_pid=stale["root_pid"] + 1)))
    proc = run_ophook("report", target)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) < 200, len(lines)
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("incomplete"))
    assert lines[at].split("incomplete", 1)[1].strip() == "2 ranks missing (no directory): rank5,9", lines[at]
    assert lines[at + 1].strip().startswith("1 partial (counted from the records): rank7 (no summary.json"), lines[at + 1]
    assert lines[at + 2].strip() == "1 left by an earlier run, left out: rank9", lines[at + 2]
    first = next(line for line in lines if line.strip().startswith("first NaN/Inf"))
    assert "op=autograd.SqrtBackward0" in first and first.endswith("in rank2"), first
    processes = next(line for line in lines if line.strip().startswith("processes"))
    assert "rank0-4,6-8,10-299: calls min" in processes, processes
    budgets = [line.split(")", 1)[0].strip() for line in lines if line.strip().startswith("budget")]
    assert "budget (rank0-1,3-4,6,8,10-299" in budgets and "budget (rank2" in budgets, budgets  # a budget shared, said once
    assert "left by an earlier run" in proc.stderr and len(proc.stderr.splitlines()) <= 11, proc.stderr
