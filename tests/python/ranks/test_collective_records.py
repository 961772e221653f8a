"""Collectives are records at the default levels: every c10d call two gloo ranks make — DDP's
construction broadcasts and bucket allreduces, FSDP2's all-gathers and reduce-scatters, an explicit asynchronous all_reduce, all_gather,
send and recv, a collective on a subgroup, functional collectives (funcol, the ops DTensor and
compiled graphs issue), a barrier — is a record of level `collective` with its
group, the group's global ranks, its number in the group (the same on both ranks), its peer, and
its tensors' statistics: inputs as issued, outputs as they were when the work completed (read by
no wait of ophook's; a functional collective's at the program's own wait_tensor). The program
computes what it computes unhooked."""
import ast
import json
import math

import pytest

from harness import arrays_in, trace
from ranks import spawned, torchrun

PROGRAM = """
import datetime, os, sys
import torch, torch.distributed as dist, torch.multiprocessing as mp
import torch.distributed._functional_collectives as funcol
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(rank, port):
    os.environ.update(RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=60))
    torch.manual_seed(0)
    model = DDP(nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.arange(8.0).reshape(2, 4) / 8 + rank
    for step in range(2):
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
    summed = torch.full((3,), float(rank + 1))
    dist.all_reduce(summed, async_op=True).wait()
    gathered = [torch.zeros(2) for _ in range(2)]
    dist.all_gather(gathered, torch.full((2,), float(rank)))
    if rank == 0:
        dist.send(torch.arange(4.0), 1)
    else:
        received = torch.zeros(4)
        dist.recv(received, 0)
    pair = dist.new_group([0, 1])
    tens = torch.ones(2) * 10
    dist.all_reduce(tens, group=pair)
    # AsyncCollectiveTensors: the first waits in its __torch_dispatch__ (below Autograd), the
    # second in tolist(); the last two are one all_reduce_coalesced.
    world = dist.group.WORLD
    reduced = funcol.all_reduce(torch.arange(4.0) + rank, "sum", world) + 1
    gathered_f = funcol.all_gather_tensor(torch.full((2,), rank * 2.0), 0, world).tolist()
    scattered = funcol.reduce_scatter_tensor(torch.arange(4.0) * (rank + 1), "sum", 0, world) * 1
    pair_f = funcol.all_reduce_coalesced([torch.ones(2) * rank, torch.ones(3) * 2], "max", world)
    functional = [(reduced - 1).tolist(), gathered_f, scattered.tolist(), [t.tolist() for t in pair_f]]
    sys.stdout.write("%s\\n" % [rank, loss.item(), summed.tolist(), [g.tolist() for g in gathered], tens.tolist(),
                                functional])
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(int(sys.argv[1]),), nprocs=2)
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    hooked = tmp_path_factory.mktemp("hooked")
    proc = spawned(hooked, PROGRAM, mode="stats")
    plain = spawned(tmp_path_factory.mktemp("plain"), PROGRAM, preload=False)
    return proc, plain, {rank: trace(hooked / "out" / ("rank%d" % rank)) for rank in (0, 1)}


def collectives(records):
    return [r for r in records if r["level"] == "collective"]


def means(values):
    return [a["stats"]["mean"] for a in arrays_in(values)]


def test_the_program_computes_what_it_computes_unhooked(runs):
    proc, plain, _ = runs
    assert sorted(proc.stdout.splitlines()) == sorted(plain.stdout.splitlines())


def test_every_collective_is_a_record_numbered_alike_in_its_group(runs):
    _, _, records = runs
    calls = {rank: [(r["op"], r["collective"]["group"], r["collective"]["group_seq"]) for r in collectives(records[rank])]
             for rank in (0, 1)}
    # DDP's construction: an allgather and broadcasts; a bucket allreduce in each backward; then
    # the explicit calls. send on rank 0 is recv on rank 1, at the same number.
    assert [op for op, _, _ in calls[0]].count("c10d.allreduce_") == 4
    assert ("c10d.send", "0", 10) in calls[0] and ("c10d.recv_", "0", 10) in calls[1]
    swap = {"c10d.send": "c10d.recv_"}
    assert [(swap.get(op, op), g, n) for op, g, n in calls[0]] == calls[1]
    for rank in (0, 1):
        default = [n for _, g, n in calls[rank] if g == "0"]
        assert default == list(range(1, len(default) + 1))  # every collective of the group, in order
        assert [n for _, g, n in calls[rank] if g != "0"] == [1]  # the subgroup counts its own
        for record in collectives(records[rank]):
            assert record["collective"]["ranks"] == [0, 1] and record["collective"]["completed"]


def test_values_are_read_as_issued_and_as_completed(runs):
    _, _, records = runs
    for rank in (0, 1):
        calls = collectives(records[rank])
        explicit = next(r for r in calls if r["op"] == "c10d.allreduce_" and r["phase"] == "forward"
                        and r["collective"]["group"] == "0")
        assert means(explicit["args"]) == [rank + 1.0] and means(explicit["outputs"]) == [3.0]
        gather = [r for r in calls if r["op"] == "c10d.allgather_"][-1]
        assert means(gather["args"]) == [float(rank)] and means(gather["outputs"]) == [0.0, 1.0]
        buckets = [r for r in calls if r["op"] == "c10d.allreduce_" and r["phase"] == "backward"]
        assert len(buckets) == 2 and all(r["collective"]["async"] for r in buckets)
        assert [r["step"] for r in buckets] == [0, 1]
        pair = next(r for r in calls if r["collective"]["group"] != "0")
        assert means(pair["args"]) == [10.0] and means(pair["outputs"]) == [20.0]
    send = next(r for r in collectives(records[0]) if r["op"] == "c10d.send")
    recv = next(r for r in collectives(records[1]) if r["op"] == "c10d.recv_")
    assert (send["collective"]["peer"], recv["collective"]["peer"]) == (1, 0)
    assert means(send["args"]) == [1.5] and means(recv["outputs"]) == [1.5]  # arange(4), as received
    # The same bucket on both ranks carries the same averaged gradient: one digest.
    digest = lambda r: [a["stats"]["xxh64"] for a in arrays_in(r["outputs"])]  # noqa: E731
    buckets = {rank: [r for r in collectives(records[rank]) if r["phase"] == "backward"] for rank in (0, 1)}
    assert [digest(r) for r in buckets[0]] == [digest(r) for r in buckets[1]]


def test_functional_collectives_are_read_at_the_programs_wait(runs):
    proc, _, records = runs
    printed = {line[0]: line[-1] for line in map(ast.literal_eval, proc.stdout.splitlines())}
    for rank in (0, 1):
        assert not [r for r in records[rank] if "_c10d_functional" in r["op"] and r["level"] != "collective"]
        calls = [r for r in collectives(records[rank]) if r["op"].startswith("_c10d_functional.")]
        assert [r["op"] for r in calls] == ["_c10d_functional.all_reduce", "_c10d_functional.all_gather_into_tensor",
                                            "_c10d_functional.reduce_scatter_tensor",
                                            "_c10d_functional.all_reduce_coalesced"]
        for record in calls:
            assert record["collective"]["group"] == "0" and record["collective"]["ranks"] == [0, 1]
            assert record["collective"]["async"] and record["collective"]["completed"]
        # Outputs as the program saw them once they had arrived, not as they lay when issued.
        for record, result in zip(calls, printed[rank]):
            flat = [v for part in (result if isinstance(result[0], list) else [result]) for v in part]
            outputs = arrays_in(record["outputs"])
            assert sum(a["stats"]["mean"] * math.prod(a["shape"]) for a in outputs) == pytest.approx(sum(flat))
            assert min(a["stats"]["min"] for a in outputs) == min(flat)
            assert max(a["stats"]["max"] for a in outputs) == max(flat)
        assert means(calls[0]["args"]) == [1.5 + rank] and means(calls[2]["args"]) == [1.5 * (rank + 1)]
    # Numbered with the c10d calls of the same group: the same numbers on both ranks.
    numbers = {rank: [r["collective"]["group_seq"] for r in collectives(records[rank]) if r["op"].startswith("_c10d_f")]
               for rank in (0, 1)}
    assert numbers[0] == numbers[1] and numbers[0] == list(range(numbers[0][0], numbers[0][0] + 4))


FSDP2 = """
import json, sys
import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
for layer in (model[0], model[2]):
    fully_shard(layer)
fully_shard(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.randn(6, 8) + rank
for step in range(2):
    loss = model(data).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
with torch.no_grad():
    full = [p.full_tensor() for p in model.parameters()]
    sys.stdout.write(json.dumps({"rank": rank, "full": [[t.numel(), t.sum().item(), t.abs().max().item()]
                                                        for t in full]}) + "\\n")
dist.destroy_process_group()
"""


def test_fsdp2_all_gathers_and_reduce_scatters_are_records_with_the_unsharded_values(tmp_path):
    """FSDP2 (fully_shard, on the CPU with gloo): each layer's parameters all-gathered before its
    forward and again before its backward, its gradients reduce-scattered, numbered alike on both
    ranks; the all-gathers that full_tensor() makes at the end hold the unsharded parameters the
    program printed (element count, sum from the mean, largest magnitude)."""
    (tmp_path / "hooked").mkdir(), (tmp_path / "plain").mkdir()
    proc = torchrun(tmp_path / "hooked", FSDP2, 2, mode="stats")
    plain = torchrun(tmp_path / "plain", FSDP2, 2, preload=False)
    assert sorted(proc.stdout.splitlines()) == sorted(plain.stdout.splitlines())
    printed = {row["rank"]: row["full"] for row in map(json.loads, proc.stdout.splitlines())}
    calls = {rank: collectives(trace(tmp_path / "hooked" / "out" / ("rank%d" % rank))) for rank in (0, 1)}
    assert [(r["op"], r["collective"]["group_seq"]) for r in calls[0]] == \
        [(r["op"], r["collective"]["group_seq"]) for r in calls[1]]
    phases = {(r["op"], r["phase"]) for r in calls[0]}
    assert ("c10d._allgather_base_", "forward") in phases and ("c10d._allgather_base_", "backward") in phases, phases
    assert ("c10d._reduce_scatter_base_", "backward") in phases, phases
    assert sum(r["op"] == "c10d._reduce_scatter_base_" for r in calls[0]) == 2 * 2  # two layers, two steps
    for rank in (0, 1):
        final = [r for r in calls[rank] if r["op"] == "_c10d_functional.all_gather_into_tensor"][-4:]
        assert len(final) == 4
        for record, (numel, total, largest) in zip(final, printed[rank]):
            (out,) = arrays_in(record["outputs"])
            stats = out["stats"]
            assert math.prod(out["shape"]) == numel
            assert math.isclose(stats["mean"] * numel, total, rel_tol=1e-5, abs_tol=1e-5)
            assert max(abs(stats["min"]), abs(stats["max"])) == pytest.approx(largest, rel=1e-6)
