"""A dump on every rank (python_shim/ophook/_ranks/rank_signals.py): three gloo ranks under torchrun, with
the ring (OPHOOK_NAN set, no mode). When rank 1 fails — an uncaught exception, or a SIGTERM it sends
itself — while ranks 0 and 2 wait in the allreduce it never joins, every rank writes its ring: the
two stuck ranks too, told through the job's TCPStore, off their blocked main threads. Each rank's
summary.json names the rank that triggered and why (notes.rank_trigger), and its ring holds the
arrays of its last completed step. The unfailed run computes what it computes unhooked."""
import json

import numpy as np
import pytest

from harness import summary, trace
from ranks import torchrun

PROGRAM = """
import datetime, os, signal, sys
import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank = dist.get_rank()
torch.manual_seed(rank)
w = torch.randn(32, 32)
for step in range(4):
    x = torch.tanh(w @ torch.randn(32, 32))
    if rank == 1 and step == 2 and sys.argv[1] == "raise":
        raise RuntimeError("rank 1 fails at step 2")
    if rank == 1 and step == 2 and sys.argv[1] == "sigterm":
        os.kill(os.getpid(), signal.SIGTERM)
    dist.all_reduce(x)
    w = w - 0.01 * x
sys.stdout.write("rank %d sum %s\\n" % (rank, float(w.sum())))
dist.destroy_process_group()
"""


def test_the_program_computes_what_it_computes_unhooked(tmp_path):
    (tmp_path / "hooked").mkdir(), (tmp_path / "plain").mkdir()
    hooked = torchrun(tmp_path / "hooked", PROGRAM, 3, "none", nan="warn", timeout=120)
    plain = torchrun(tmp_path / "plain", PROGRAM, 3, "none", preload=False, timeout=120)
    assert sorted(hooked.stdout.splitlines()) == sorted(plain.stdout.splitlines())
    for rank in range(3):  # nothing fired: no ring written, no trigger noted
        written = summary(tmp_path / "hooked" / "out" / ("rank%d" % rank))
        assert "rank_trigger" not in written.get("notes", {}) and not written["ring"]["triggers"]


@pytest.mark.parametrize("how,why", [("raise", "uncaught exception RuntimeError"), ("sigterm", "SIGTERM")])
def test_every_rank_writes_its_ring_when_one_fails(tmp_path, how, why):
    (tmp_path / "job").mkdir()
    proc = torchrun(tmp_path / "job", PROGRAM, 3, how, nan="warn", check=False, timeout=120)
    assert proc.returncode != 0
    out = tmp_path / "job" / "out"
    for rank in range(3):
        directory = out / ("rank%d" % rank)
        written = summary(directory)
        note = json.loads(written["notes"]["rank_trigger"]) if isinstance(written["notes"]["rank_trigger"], str) \
            else written["notes"]["rank_trigger"]
        assert (note["triggered_by_rank"], note["this_rank"]) == (1, rank), note
        assert why in note["why"], note
        assert written["ring"]["triggers"], written["ring"]
        if rank != 1:
            assert note["heard_after_s"] < 30  # heard while stuck in the allreduce, long before its timeout
        # The ring holds the last step this rank finished: the tanh whose output went to the
        # allreduce of step 1, as the record of that call says it was.
        records = [r for r in trace(directory) if r["op"] == "torch.tanh"]
        assert len(records) >= 3
        last = records[-2] if rank != 1 else records[-1]
        files = sorted(directory.glob("op_torch.tanh_output_%06d.npy" % last["seq"]))
        assert files, sorted(p.name for p in directory.glob("*.npy"))
        values = np.load(files[0])
        assert values.shape == (32, 32) and np.all(np.abs(values) <= 1)
