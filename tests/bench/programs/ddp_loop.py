"""The DDP training loop of the many-ranks figures (figures/ranks.py): an MLP (width 256, depth 4,
Linear and GELU) wrapped in DistributedDataParallel over gloo, SGD, one thread per rank, started on
--ranks ranks by torchrun. Run without RANK it is the launcher: it starts torchrun on itself and
prints rank 0's timed loop ("<seconds> <loss>", timed_steps), the line measure_loop reads.
DDP_LOOP_STORE=file (a variable, so that a row's settings can set it) initialises the job through a FileStore, which has no address: the baseline of the
trigger watcher's row, where ophook starts no watcher and opens no client of the store."""
import argparse
import os
import socket
import subprocess
import sys
import tempfile

import timed_steps

GLOO_TEARDOWN_ABORT = "terminate called without an active exception"


def options():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--store-file", default="")
    return parser.parse_args()


def launch(given):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as scratch:
        argv = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(given.ranks), "--master-port",
                str(port), __file__, *sys.argv[1:], "--store-file", os.path.join(scratch, "store")]
        done = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    timed = [line for line in done.stdout.splitlines() if line.startswith("rank0 ")]
    # gloo now and then aborts a rank as its process group is torn down, on this loaded machine and
    # unhooked too; the loop was timed before that, and its line stands.
    if done.returncode != 0 and not (timed and GLOO_TEARDOWN_ABORT in done.stderr):
        sys.exit("torchrun exited with %d: %s" % (done.returncode, done.stderr[-400:]))
    print(timed[0].split(" ", 1)[1])


def rank_loop(given):
    import torch
    import torch.distributed as dist

    if os.environ.get("DDP_LOOP_STORE") == "file":
        dist.init_process_group("gloo", init_method="file://" + given.store_file, rank=int(os.environ["RANK"]),
                                world_size=int(os.environ["WORLD_SIZE"]))
    else:
        dist.init_process_group("gloo")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(given.width, given.width), torch.nn.GELU()]
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(*layers, torch.nn.Linear(given.width, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(given.batch, given.width) + dist.get_rank()

    def step():
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        return loss

    # timed_steps prints "<seconds> <loss>"; rank 0's line goes to the launcher with its rank in front.
    if dist.get_rank() == 0:
        sys.stdout.write("rank0 ")
    else:
        sys.stdout = open(os.devnull, "w")
    timed_steps.run(step, given.steps, given.warmup)
    sys.stdout.flush()
    dist.destroy_process_group()


if __name__ == "__main__":
    given = options()
    if "RANK" in os.environ:
        rank_loop(given)
    else:
        launch(given)
