"""Programs of several gloo ranks on this machine for the tests: started by torchrun
(torch.distributed.run) or torch.multiprocessing.spawn, on a free port, once more on another should
something take the port first or gloo abort a rank at teardown in an unhooked run (seen now and
then on a loaded machine: "terminate called without an active exception")."""
import shutil
import socket
import textwrap
from pathlib import Path

from harness import run

GLOO_TEARDOWN_ABORT = "terminate called without an active exception"
# The start of the ranks' programs that train a small DDP MLP (gloo, SGD, each rank its own data):
# a test's program goes on from here with its loop.
DDP_MLP = """
import json, sys
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.randn(16, 8) + rank
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _retry(launch, preload, output):
    for attempt in (1, 2):
        shutil.rmtree(output, ignore_errors=True)  # an attempt that failed leaves nothing behind
        proc = launch(free_port())
        worth_retrying = "address already in use" in proc.stderr.lower() or (
            preload is False and GLOO_TEARDOWN_ABORT in proc.stderr)
        if proc.returncode == 0 or attempt == 2 or not worth_retrying:
            return proc
    return proc


def torchrun(tmp_path, source, nprocs, *args, name="prog.py", check=True, **kwargs):
    """Writes `source` to <tmp_path>/<name> and runs it on `nprocs` ranks under torchrun; `kwargs`
    as harness.run (OPHOOK_* settings, env, preload, timeout). torchrun starts its ranks with
    `python -u`: a rank's line must be one sys.stdout.write, or the ranks' lines interleave."""
    script = Path(tmp_path) / name
    script.write_text(textwrap.dedent(source))
    kwargs.setdefault("timeout", 240)
    env = dict(kwargs.pop("env", None) or {}, OMP_NUM_THREADS="1")

    def launch(port):
        return run(["-m", "torch.distributed.run", "--nproc-per-node", str(nprocs), "--master-port", str(port),
                    script, *args], cwd=tmp_path, check=False, env=env, **kwargs)

    proc = _retry(launch, kwargs.get("preload", True), Path(kwargs.get("output", Path(tmp_path) / "out")))
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def spawned(tmp_path, source, *args, name="prog.py", check=True, **kwargs):
    """Writes `source` (a program that torch.multiprocessing.spawn's its ranks, taking the port as
    its first argument) to <tmp_path>/<name> and runs it; `kwargs` as harness.run."""
    script = Path(tmp_path) / name
    script.write_text(textwrap.dedent(source))
    kwargs.setdefault("timeout", 240)
    env = dict(kwargs.pop("env", None) or {}, OMP_NUM_THREADS="1")

    def launch(port):
        return run([script, port, *args], cwd=tmp_path, check=False, env=env, **kwargs)

    proc = _retry(launch, kwargs.get("preload", True), Path(kwargs.get("output", Path(tmp_path) / "out")))
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc
