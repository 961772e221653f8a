"""Whole torch programs under the hook: they must behave exactly as without it (training bits,
compiled code, checkpointing, higher-order ops, threads, DataLoader workers, distributed ranks),
and leave the records the contract promises. Each program runs in a subprocess."""
import collections

import numpy as np
import pytest

from harness import EXAMPLES, arrays, load, ops, run, run_script, summary, trace

# ---- the MLP training example: bit-identical in every mode at both levels -----------------------


@pytest.fixture(scope="module")
def mlp_baseline(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mlp_base")
    proc = run([EXAMPLES / "torch_mlp.py", "--steps", "8", "--save", tmp / "weights.bin"], cwd=tmp, preload=False)
    return proc.stdout, (tmp / "weights.bin").read_bytes()


@pytest.mark.parametrize("levels", ["torch_function", "torch_function,torch_dispatch"])
@pytest.mark.parametrize("mode", ["trace", "stats", "dump"])
def test_mlp_training_is_bit_identical(tmp_path, mlp_baseline, levels, mode):
    losses, weights = mlp_baseline
    proc = run([EXAMPLES / "torch_mlp.py", "--steps", "8", "--save", tmp_path / "weights.bin"], cwd=tmp_path,
               levels=levels, mode=mode)
    assert proc.stdout == losses
    assert (tmp_path / "weights.bin").read_bytes() == weights
    records = trace(tmp_path / "out")
    linear = ops(records, "torch.nn.functional.linear")
    assert len(linear) == 8 * 3 and linear[0]["module"] == "MLP.body.0"
    assert all(r["framework"] == "torch" for r in records)
    if mode == "dump":
        first = linear[0]
        x, w, b = (load(tmp_path / "out", v) for v in arrays(first))
        y = load(tmp_path / "out", arrays(first, "outputs")[0])
        assert np.allclose(y, x @ w.T + b, rtol=1e-5, atol=1e-6)
    else:
        assert all(v["file"] is None for r in records for v in arrays(r))
        assert all((v["stats"] is None) == (mode == "trace") for r in linear for v in arrays(r))


def test_mlp_backward_at_the_dispatch_level(tmp_path, mlp_baseline):
    losses, weights = mlp_baseline
    proc = run([EXAMPLES / "torch_mlp.py", "--steps", "8", "--save", tmp_path / "weights.bin"], cwd=tmp_path,
               levels="torch_dispatch", mode="stats")
    assert proc.stdout == losses and (tmp_path / "weights.bin").read_bytes() == weights
    records = trace(tmp_path / "out")
    phases = collections.Counter((r["op"], r["phase"]) for r in records)
    assert phases[("aten.addmm.default", "forward")] == 8 * 3
    assert phases[("aten.mm.default", "backward")] >= 8 * 3
    assert phases[("aten.threshold_backward.default", "backward")] == 8 * 2
    assert all(r["depth"] == 0 for r in records)


# ---- torch.compile, checkpointing, higher-order ops, threads -------------------------------------

ADVANCED_PROGRAM = """
import concurrent.futures, threading
import torch
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
lin = torch.nn.Linear(8, 8)
x = torch.randn(4, 8, requires_grad=True)
def block(t):
    return torch.tanh(lin(t)) * 2
y = checkpoint(block, x, use_reentrant=False).sum()
y.backward()
print("checkpoint", y.item().hex(), x.grad.sum().item().hex())

a = torch.randn(5)
print("cond", torch.cond(a.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (a,)).sum().item().hex())

def f(t, w):
    return torch.relu(t @ w) * 2 + t.sum()
w = torch.randn(8, 8)
compiled = torch.compile(f, backend="aot_eager")
print("compiled", compiled(x.detach(), w).sum().item().hex(), compiled(x.detach() + 1, w).sum().item().hex())

def work(i):
    return torch.ones(3).mul(i).sum().item()
thread = threading.Thread(target=work, args=(7,))
thread.start(); thread.join()
with concurrent.futures.ThreadPoolExecutor(2) as pool:
    print("pool", list(pool.map(work, range(4))))
"""


@pytest.fixture(scope="module")
def advanced_baseline(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("advanced_base")
    return run_script(tmp, ADVANCED_PROGRAM, preload=False).stdout


@pytest.mark.parametrize("policy", ["eager", "ignore"])
def test_compile_checkpoint_cond_and_threads(tmp_path, advanced_baseline, policy):
    proc = run_script(tmp_path, ADVANCED_PROGRAM, levels="torch_function,torch_dispatch", nested=1, mode="stats",
                      compile=policy)
    assert proc.stdout == advanced_baseline
    out = tmp_path / "out"
    records = trace(out)
    assert summary(out)["notes"]["compile"]["policy"] == policy
    compiled_lines = [r for r in records if r["source"] and r["source"].endswith(":f")]
    if policy == "eager":  # both calls ran eagerly and were recorded at both levels
        assert len([r for r in compiled_lines if r["op"] == "torch.relu"]) == 2
        assert len([r for r in compiled_lines if r["op"] == "aten.mm.default"]) == 2
    else:  # compiled and not recorded at all
        assert compiled_lines == []
    # checkpoint: the forward is recomputed during backward, inside the Linear module
    recomputed = [r for r in ops(records, "aten.addmm.default") if r["phase"] == "backward"]
    assert recomputed and all(r["module"] == "Linear" for r in recomputed)
    # torch.cond runs through torch.compile: recorded as one higher-order op only when eager
    assert bool(ops(records, "higher_order.cond")) == (policy == "eager")
    # threads: threading.Thread and the pool's workers are recorded on their own thread ids
    main_tid = records[0]["pid"]
    workers = [r for r in ops(records, "torch.ones")]
    assert len(workers) == 5 and all(r["tid"] != main_tid for r in workers)


def test_compile_example(tmp_path):
    backend = {"TORCH_COMPILE_BACKEND": "aot_eager"}  # inductor's first compile takes a minute here
    base = run([EXAMPLES / "torch_compile.py"], cwd=tmp_path, preload=False, env=backend)
    for policy in ("eager", "ignore"):
        proc = run([EXAMPLES / "torch_compile.py"], cwd=tmp_path, compile=policy, output=tmp_path / policy, env=backend)
        assert proc.stdout == base.stdout
    eager, ignored = trace(tmp_path / "eager"), trace(tmp_path / "ignore")
    assert len(ops(eager, "torch.nn.functional.gelu")) == 2  # compiled and eager call
    assert len(ops(ignored, "torch.nn.functional.gelu")) == 1  # the eager call only
    assert len(ops(eager, "torch.nn.functional.layer_norm")) == 2
    assert len(ops(ignored, "torch.nn.functional.layer_norm")) == 1


# ---- processes: DataLoader workers and distributed ranks ------------------------------------------

def test_dataloader_workers_write_their_own_directories(tmp_path):
    proc = run_script(tmp_path, """
        import torch
        from torch.utils.data import DataLoader, Dataset
        class Squares(Dataset):
            def __len__(self):
                return 8
            def __getitem__(self, i):
                return torch.full((3,), float(i)) ** 2
        if __name__ == "__main__":
            total = sum(batch.sum().item() for batch in DataLoader(Squares(), batch_size=2, num_workers=2))
            print("total", total)
    """, timeout=120, mode="dump")
    assert proc.stdout.strip() == "total %r" % float(3 * sum(i * i for i in range(8)))
    out = tmp_path / "out"
    workers = sorted(out.glob("pid*"))
    assert len(workers) == 2
    items = []
    for worker in workers:
        records = trace(worker)
        assert {r["pid"] for r in records} == {int(worker.name[3:])}
        items += [load(worker, arrays(r, "outputs")[0]) for r in records if "pow" in r["op"]]
        assert ops(records, "torch.stack")  # the default collate
    assert sorted(float(a[0]) for a in items) == [float(i * i) for i in range(8)]
    main = trace(out)
    assert len(ops(main, "torch.Tensor.sum")) == 4


def test_distributed_gloo_ranks(tmp_path):
    script = tmp_path / "ranks.py"
    script.write_text(
        "import torch, torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "rank = dist.get_rank()\n"
        "t = torch.ones(4) * (rank + 1)\n"
        "dist.all_reduce(t)\n"
        "model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))\n"
        "model(torch.ones(3, 4) * (rank + 1)).sum().backward()\n"
        "line = 'rank %d %s %s' % (rank, t.tolist(), [p.grad.sum().item() for p in model.parameters()])\n"
        "open('result%d.txt' % rank, 'w').write(line)\n"
        "dist.barrier()\n"
        "dist.destroy_process_group()\n")
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run(["-m", "torch.distributed.run", "--nproc_per_node=2", "--master_addr=127.0.0.1",
                "--master_port=%d" % port, script], cwd=tmp_path, timeout=240,
               levels="torch_function,torch_dispatch", mode="stats", env={"OMP_NUM_THREADS": "1"})
    lines = [(tmp_path / ("result%d.txt" % rank)).read_text() for rank in (0, 1)]
    # all_reduce sums 1s and 2s; DDP averages the gradients of both ranks (3 rows of 1s and of 2s)
    assert lines == ["rank 0 [3.0, 3.0, 3.0, 3.0] [36.0, 6.0]", "rank 1 [3.0, 3.0, 3.0, 3.0] [36.0, 6.0]"]
    out = tmp_path / "out"
    for rank in (0, 1):
        records = trace(out / ("rank%d" % rank))
        names = {r["op"] for r in records}
        assert "torch.distributed.distributed_c10d.all_reduce" in names
        assert "torch.nn.functional.linear" in names


# ---- the torch_dispatch promise: the results of a do-nothing dispatch mode ------------------------

MODE_SENSITIVE = """
import sys
import torch
from torch.utils._python_dispatch import TorchDispatchMode

class Noop(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))

torch.manual_seed(0)
x = torch.randn(6, 5, dtype=torch.float64)
def results():  # ops that a do-nothing dispatch mode reroutes on torch 2.13 (README)
    return [torch.linalg.svdvals(x), torch.linalg.matrix_norm(x, ord=2), torch.linalg.cond(x)]
if sys.argv[1] == "noop":
    with Noop():
        values = results()
else:
    values = results()
print([v.item().hex() if v.numel() == 1 else v.numpy().tobytes().hex() for v in values])
"""


def test_dispatch_level_keeps_the_bits_of_a_do_nothing_mode(tmp_path):
    noop = run_script(tmp_path, MODE_SENSITIVE, "noop", preload=False).stdout
    hooked = run_script(tmp_path, MODE_SENSITIVE, "hooked", levels="torch_dispatch", mode="dump").stdout
    assert hooked == noop
    assert ops(trace(tmp_path / "out"), "aten._linalg_svd.default")  # recorded while keeping the bits
