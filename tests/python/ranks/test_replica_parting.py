"""Where replicas part (src/cli/report/replica_parting.cpp): `ophook report` over a three-rank DDP
job (torchrun, gloo) checked every step (OPHOOK_REPLICAS=1) names the parting summary.json holds
and, from the records of the parted rank and of a rank that held the common value over the steps
since the last check that agreed, the first call only the parted rank made, and the first call whose
array inputs agree across the two and whose outputs do not. Two ways to part at step 2 on rank 1: a
weight changed through `.data` (calls rank 0 never made; recorded in `trace`, which has no values)
and another learning rate for one step (the optimizer's update of equal weights and equal gradients
with another alpha: recorded in `stats`)."""
import re

import pytest

from cli_fixtures import run_ophook
from harness import summary
from ranks import DDP_MLP, torchrun

PROGRAM = DDP_MLP + """
for step in range(4):
    loss = model(data).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    if sys.argv[1] == "perturb" and rank == 1 and step == 2:
        model.module[2].weight.data[0, 3] += 1e-3  # the perturbation
    if sys.argv[1] == "lr" and rank == 1 and step == 2:
        optimizer.param_groups[0]["lr"] = 0.5
    optimizer.step()  # the update
    optimizer.param_groups[0]["lr"] = 0.05
dist.destroy_process_group()
"""


def line_of(marker):
    """The program's line that carries `marker` (its number in the file torchrun runs)."""
    for number, text in enumerate(PROGRAM.splitlines(), start=1):
        if marker in text:
            return number
    raise AssertionError(marker)


def replica_lines(where):
    """The report's replicas fact: its lines, the label dropped."""
    proc = run_ophook("report", where / "out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("replicas "))
    width = lines[start].index("parted at")
    shown = [lines[start][width:]]
    for line in lines[start + 1:]:
        if line[:width].strip():
            break
        shown.append(line[width:])
    return shown


def parting(where):
    return summary(where / "out" / "rank0")["notes"]["replicas"]["parted"]


@pytest.mark.parametrize("kind, mode", [("perturb", "trace"), ("lr", "stats")])
def test_the_report_names_where_the_replicas_part(tmp_path, kind, mode):
    torchrun(tmp_path, PROGRAM, 3, kind, replicas="1", mode=mode)
    parted = parting(tmp_path)
    assert (parted["step"], parted["ranks"], parted["agreeing"]) == (2, [1], [0, 2]), parted
    shown = replica_lines(tmp_path)
    assert shown[0] == "parted at step 2: %s on rank1, against rank0,2 (process group %s)" % (
        parted["parameter"], parted["group"])
    assert shown[1] == "rank1 against rank0 over step 2 (since the last check that agreed):"
    if kind == "perturb":
        # The first of the calls the perturbation's line made: rank 0 made none of them.
        assert re.fullmatch(r"  first call only rank1 made: seq=\d+ op=torch\.Tensor\.__getitem__ "
                            r"source=\S+prog\.py:%d:<module> .* step=2" % line_of("# the perturbation"), shown[2]), shown
        assert shown[3] == "  first call apart: not told (no values recorded: record in stats or dump mode)"
        return
    assert shown[2] == "  first call only rank1 made: none"
    # The update of weights and gradients equal on both ranks, with alpha -0.5 against -0.05.
    assert re.fullmatch(r"  first call apart \(its array inputs agree, its outputs do not\): seq=\d+ "
                        r"op=torch\.Tensor\.add_ source=\S+prog\.py:%d:<module> module=- phase=optimizer step=2"
                        % line_of("# the update"), shown[3]), shown
    assert "kwargs.alpha: -0.5 vs -0.05" in [line.strip() for line in shown[4:]], shown
