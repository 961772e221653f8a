"""The first NaN/Inf across ranks, from the other places it is born: in a rank's forward pass
(four DDP ranks under torchrun, gloo: a log of zeros on rank 2 at step 2, carried to the other
ranks by the bucket allreduce of its gradients), and in a value one rank sends another
(send/recv, two ranks). The rank that made it names its culprit at the line that made it; every
other rank names the collective that brought it in as *received* and no culprit; `ophook report`
says both. Each program computes what it computes unhooked."""
import pytest

from cli_fixtures import run_ophook
from harness import summary, trace
from ranks import DDP_MLP, torchrun

FORWARD = DDP_MLP + """
for step in range(5):
    out = model(data)
    if rank == 2 and step == 2:
        out = out + torch.log(out - out)  # BORN
    loss = out.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
sys.stdout.write("rank %d loss %s\\n" % (rank, loss.item()))
dist.destroy_process_group()
"""

SENT = """
import sys
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
x = torch.ones(4)
for step in range(3):
    if rank == 0:
        y = x / (x - x) if step == 1 else x * 2  # BORN
        dist.send(y, dst=1)
    else:
        y = torch.empty(4)
        dist.recv(y, src=0)
sys.stdout.write("rank %d %s\\n" % (rank, y.tolist()))
dist.destroy_process_group()
"""


def born_line(program):
    return next(n for n, line in enumerate(program.splitlines(), 1) if "# BORN" in line)


def report_lines(out):
    proc = run_ophook("report", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    first = next(line for line in lines if line.strip().startswith("first NaN/Inf")).split("first NaN/Inf", 1)[1]
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("across ranks"))
    return first.strip(), lines[at].split("across ranks", 1)[1].strip(), lines[at + 1].strip()


# (program, ranks, the culprit's rank, its op, how many Inf it made, the collective that carries it)
CASES = {"forward": (FORWARD, 4, 2, "torch.log", 16, "c10d.allreduce_"),
         "sent": (SENT, 2, 0, "torch.Tensor.div", 4, "c10d.recv_")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_rank_that_made_it_is_named_and_the_others_received_it(tmp_path, case):
    program, ranks, made_by, op, infs, carrier = CASES[case]
    (tmp_path / "hooked").mkdir(), (tmp_path / "plain").mkdir()
    proc = torchrun(tmp_path / "hooked", program, ranks, nan="warn")
    plain = torchrun(tmp_path / "plain", program, ranks, preload=False)
    assert sorted(proc.stdout.splitlines()) == sorted(plain.stdout.splitlines())

    out = tmp_path / "hooked" / "out"
    source = "%s:%d:<module>" % (tmp_path / "hooked" / "prog.py", born_line(program))
    culprit = summary(out / ("rank%d" % made_by))["first_nonfinite"]
    assert (culprit["op"], culprit["source"], culprit["phase"]) == (op, source, "forward"), culprit
    record = next(r for r in trace(out / ("rank%d" % made_by)) if r["seq"] == culprit["seq"])
    assert record["op"] == op and record["source"] == source
    received = {}
    for rank in set(range(ranks)) - {made_by}:
        written = summary(out / ("rank%d" % rank))
        assert written["first_nonfinite"] is None, (rank, written["first_nonfinite"])
        first = written["first_received_nonfinite"]
        assert first["op"] == carrier and first["ranks"] == list(range(ranks)), first
        received[rank] = first["group_seq"]
    assert len(set(received.values())) == 1, received

    first, made, carried = report_lines(out)
    assert first == "seq=%d op=%s source=%s step=%d phase=forward (outputs[0]: 0 NaN, " \
                    "%d Inf) in rank%d" % (culprit["seq"], op, source, culprit["step"], infs, made_by), first
    assert made.startswith("rank%d: made it, seq %d %s at %s" % (made_by, culprit["seq"], op, source)), made
    others = "rank0-1,3" if ranks == 4 else "rank1"
    assert carried == "received by %s at %s #%d of group 0 (step %d)" % (
        others, carrier, received[min(received)], culprit["step"]), carried
