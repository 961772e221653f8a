"""Replicas checked (OPHOOK_REPLICAS, docs/ranks.md): three DDP ranks under torchrun (gloo), every
step compared. A weight perturbed through `.data` on rank 1 before the optimizer step of step 2 is
named at that step and that parameter, rank 1 against ranks 0 and 2, once on stderr and in every
summary that heard of it (notes.replicas) — the digests there are the XXH64 of the weights each
rank printed, recomputed here. A run with no perturbation names nothing, and both runs compute
what they compute unhooked."""
import json

import pytest

from harness import check_schema, summary, xxh64
from ranks import DDP_MLP, torchrun

PROGRAM = DDP_MLP + """
import time
losses, weights, stepping = [], {}, 0.0
for step in range(4):
    loss = model(data).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    if sys.argv[1] == "perturb" and rank == 1 and step == 2:
        model.module[2].weight.data[0, 3] += 1e-3
    started = time.perf_counter()
    optimizer.step()
    stepping += time.perf_counter() - started
    losses.append(loss.item())
    weights[step] = model.module[2].weight.detach().numpy().tobytes().hex()
sys.stdout.write(json.dumps({"rank": rank, "losses": losses, "weights": weights}) + "\\n")
sys.stderr.write("stepping %d %r\\n" % (rank, stepping))  # stderr: timings differ from run to run
dist.destroy_process_group()
"""
PARAMETER = "DistributedDataParallel.module.2.weight"


def lines(proc):
    return sorted(proc.stdout.splitlines())


def notes(where):
    out = {}
    for rank in range(3):
        written = summary(where / "out" / ("rank%d" % rank))
        check_schema("summary", written, "rank%d summary.json" % rank)
        out[rank] = written["notes"]["replicas"]
    return out


@pytest.fixture(scope="module")
def perturbed(tmp_path_factory):
    where = tmp_path_factory.mktemp("perturbed")
    return where, torchrun(where, PROGRAM, 3, "perturb", replicas="1")


def test_the_parted_replica_is_named_at_its_step_and_parameter(perturbed):
    where, proc = perturbed
    warned = [line for line in proc.stderr.splitlines() if "replicas parted" in line]
    assert [line.split("] ", 1)[1] for line in warned] == ["warning: replicas parted at step 2: %s on rank 1 differs from ranks 0, 2 "
                      "(process group 0)" % PARAMETER], proc.stderr
    weights = {row["rank"]: row["weights"]["2"] for row in map(json.loads, proc.stdout.splitlines())}
    first = notes(where)[0]
    assert first["every"] == 1 and first["left_out"] == {"sharded": 0, "not_replicated": 0}, first
    group = first["groups"][0]
    assert (group["ranks"], group["compared_by_rank"], group["parameters"]) == ([0, 1, 2], 0, 4), group
    assert group["checks"] == 3 and group["unanswered"] == 0, group  # steps 0-2: none after the parting
    # The checks run in the optimizer step's hook: their time on the program's thread is part of the
    # time the program saw its optimizer steps take.
    stepping = dict(line.split()[1:] for line in proc.stderr.splitlines() if line.startswith("stepping "))
    for rank, note in notes(where).items():
        assert 0 < note["program_thread_ms"] < float(stepping[str(rank)]) * 1e3, (note, stepping)
    parted = first["parted"]
    assert (parted["step"], parted["parameter"], parted["ranks"], parted["agreeing"]) == (2, PARAMETER, [1], [0, 2])
    # Each digest is the XXH64 of that rank's weight bytes after the step, as the rank printed them.
    assert parted["digests"] == {str(r): "%016x" % xxh64(bytes.fromhex(weights[r])) for r in range(3)}
    assert parted["digests"]["0"] == parted["digests"]["2"] != parted["digests"]["1"]


def test_the_other_ranks_hear_of_it_at_their_next_check(perturbed):
    where, _ = perturbed
    for rank, note in notes(where).items():
        assert note["this_rank"] == rank
        assert note["parted"]["step"] == 2 and note["parted"]["ranks"] == [1], note


def test_unparted_replicas_are_named_nowhere_and_the_program_computes_as_unhooked(tmp_path, perturbed):
    _, proc = perturbed
    (tmp_path / "hooked").mkdir(), (tmp_path / "plain").mkdir(), (tmp_path / "plain_perturbed").mkdir()
    hooked = torchrun(tmp_path / "hooked", PROGRAM, 3, "none", replicas="1")
    assert "replicas parted" not in hooked.stderr, hooked.stderr
    for rank, note in notes(tmp_path / "hooked").items():
        assert note["parted"] is None and note["groups"][0]["checks"] == 4, note
    assert lines(hooked) == lines(torchrun(tmp_path / "plain", PROGRAM, 3, "none", preload=False))
    assert lines(proc) == lines(torchrun(tmp_path / "plain_perturbed", PROGRAM, 3, "perturb", preload=False))
