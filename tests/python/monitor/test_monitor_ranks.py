"""The training monitor on a job: DDP over gloo on two ranks under torchrun, the batch of rank 1
at step 12 scaled by 1e3. Each rank writes its own monitor.jsonl; rank 1's loss rule fires at
step 12 and rank 0's does not; with the ring kept by steps (OPHOOK_RING_STEPS=2) every rank writes
the calls of steps 10 to 12, and `ophook report` names rank 1 and the call that made the spike.
The gradients, allreduced, are the same on both ranks; the program computes what it computes
unhooked."""
import json

import numpy as np

from cli_fixtures import run_ophook
from harness import arrays, monitor_lines, summary, trace
from ranks import torchrun

PROGRAM = """
import datetime, sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank = dist.get_rank()
torch.manual_seed(0)
model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
torch.manual_seed(1 + rank)
for step in range(16):
    x = torch.randn(16, 8)
    if rank == 1 and step == 12:
        x = x * 1e3
    loss = (model(x) - x.sum(1, keepdim=True).tanh()).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # the spike does not wreck the weights
    opt.step()
sys.stdout.write("rank %d sum %r\\n" % (rank, [float(p.sum()) for p in model.parameters()]))
dist.destroy_process_group()
"""


def test_the_spiking_rank_is_named_and_every_rank_writes_its_last_steps(tmp_path):
    (tmp_path / "hooked").mkdir(), (tmp_path / "plain").mkdir()
    hooked = torchrun(tmp_path / "hooked", PROGRAM, 2, monitor="1", monitor_trigger="loss:6sigma", ring_steps="2",
                      timeout=180)
    plain = torchrun(tmp_path / "plain", PROGRAM, 2, preload=False, timeout=120)
    assert sorted(hooked.stdout.splitlines()) == sorted(plain.stdout.splitlines())
    out = tmp_path / "hooked" / "out"
    rank0, rank1 = monitor_lines(out / "rank0"), monitor_lines(out / "rank1")
    assert len(rank0) == len(rank1) == 16 and {line["rank"] for line in rank1} == {1}
    assert [line["step"] for line in rank1 if line.get("triggers")] == [12]
    assert not [line["step"] for line in rank0 if line.get("triggers")]
    for a, b in zip(rank0, rank1):  # DDP's allreduce: the same gradients on both ranks (clipped)
        assert np.isclose(a["grad_norm"], b["grad_norm"], rtol=1e-5), (a["step"], a["grad_norm"], b["grad_norm"])
    for rank in (0, 1):
        directory = out / ("rank%d" % rank)
        ring = summary(directory)["ring"]
        assert ring["steps"] == 2 and len(ring["triggers"]) == 1, ring
        assert "monitor: step 12" in ring["triggers"][0]["why"], ring["triggers"]
        with_files = {r["step"] for r in trace(directory) if any(v["file"] for v in arrays(r, "outputs"))}
        # Rank 0 hears of the trigger a moment later, maybe in its step 13.
        last = (12, 13) if rank == 0 else (12,)
        assert with_files and min(with_files) >= 10 and max(with_files) in last, (rank, sorted(with_files))
    report = run_ophook("report", out)
    assert report.returncode == 0, report.stderr
    text = report.stdout
    assert "monitor (rank1)" in text and "monitor (rank0)" not in text, text
    assert "1 of 2 monitored processes had no trigger" in text
    made_by = next(line for line in text.splitlines() if "made by" in line)
    assert "op=torch.nn.functional.linear" in made_by and "module=DistributedDataParallel.module.0" in made_by, made_by
    inputs = next(line for line in text.splitlines() if "the step's inputs:" in line)  # x, before x * 1e3
    name = inputs.split("args[0] ")[1].split(",")[0].strip()
    assert np.load(out / "rank1" / name).shape == (16, 8), inputs


FSDP2 = """
import datetime, json, os, sys
import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
for layer in (model[0], model[2]):
    fully_shard(layer)
fully_shard(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
torch.manual_seed(1 + rank)
norms = []
for step in range(4):
    loss = model(torch.randn(8, 8)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    norms.append({name: p.full_tensor().norm().item() for name, p in model.named_parameters()})
if rank == 0:
    json.dump(norms, open(sys.argv[1], "w"))
dist.destroy_process_group()
"""


def test_fsdp2_shards_norms_put_together_are_the_unsharded_norms(tmp_path):
    reference = tmp_path / "norms.json"
    torchrun(tmp_path, FSDP2, 2, reference, monitor="1", timeout=180)
    want = json.loads(reference.read_text())
    ranks = [monitor_lines(tmp_path / "out" / ("rank%d" % rank)) for rank in (0, 1)]
    for step, expected in enumerate(want):
        for name, norm in expected.items():
            # fully_shard gives the model a class of its own, FSDPSequential: records name it so too
            shards = [rank_lines[step]["params"]["FSDPSequential." + name] for rank_lines in ranks]
            assert all(shard["sharded"] for shard in shards)
            together = np.sqrt(sum(shard["norm"] ** 2 for shard in shards))
            assert np.isclose(together, norm, rtol=1e-5), (step, name, together, norm)
