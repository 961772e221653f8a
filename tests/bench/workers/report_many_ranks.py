"""`ophook report` and `ophook compare` over runs of N rank directories (issue 67's scale rows):
one real two-rank DDP job is recorded (gloo, stats mode, OPHOOK_NAN=warn, rank 1 makes an Inf at
step 3 that the allreduce carries to rank 0), then its rank directories are copied into a run of N
ranks — rank 1 as recorded, every other rank a copy of rank 0 (each its own summary.json, the trace
and the rest hard links) — and the report over it is timed, with its peak RSS and the lines it
prints; then the comparison of a run whose ranks are all copies of rank 0 with that one (rank 1
differs). The floors (baselines): reading what each must read with `cat` — every rank's
summary.json and the culprit's trace.jsonl for the report, every trace.jsonl of both runs for the
comparison.

Prints one JSON line, {"runs": [{"ranks", "wall_s", "max_rss_mib", "lines", "floor_s", "compare":
{the same for the comparison}} per N]} (and each run's line on stderr as it is measured).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the driver's measure.py
from measure import median, run_process  # noqa: E402

PROGRAM = textwrap.dedent("""
    import os, torch, torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(int(os.environ["STEPS"])):
        x = torch.randn(16, 32)
        out = model(x)
        if rank == 1 and step == 3:
            d = out - out.detach()
            out = out + torch.sqrt(d * d)  # zero: its backward makes an Inf the allreduce spreads
        loss = out.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()
""")


def record_two_ranks(build, python, scratch, steps):
    """The real job's output directory (root, rank0, rank1)."""
    script = os.path.join(scratch, "ddp_prog.py")
    with open(script, "w") as f:
        f.write(PROGRAM)
    out = os.path.join(scratch, "two_ranks")
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, LD_PRELOAD=os.path.join(build, "libophook.so"), OPHOOK_OUTPUT=out, OPHOOK_MODE="stats",
               OPHOOK_NAN="warn", OMP_NUM_THREADS="1", STEPS=str(steps))
    # --standalone: the rendezvous on a free port of its own.
    done = subprocess.run([python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", script],
                          env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError("the two-rank job failed: " + done.stderr[-400:])
    return out


def make_run(recorded, target, ranks, odd=True):
    """A run of `ranks` rank directories at `target` from the two-rank recording (rank 1 the
    recorded rank 1 when `odd`, else a copy of rank 0 too)."""
    shutil.rmtree(target, ignore_errors=True)
    os.makedirs(target)
    for name in os.listdir(recorded):
        path = os.path.join(recorded, name)
        if os.path.isfile(path):
            os.link(path, os.path.join(target, name))
    sources = {r: os.path.join(recorded, "rank%d" % r) for r in (0, 1)}
    summaries = {r: json.load(open(os.path.join(sources[r], "summary.json"))) for r in (0, 1)}
    for rank in range(ranks):
        source = 1 if rank == 1 and odd else 0
        here = os.path.join(target, "rank%d" % rank)
        os.makedirs(here)
        for name in os.listdir(sources[source]):
            if name != "summary.json" and os.path.isfile(os.path.join(sources[source], name)):
                os.link(os.path.join(sources[source], name), os.path.join(here, name))
        summary = dict(summaries[source], output=here, pid=summaries[source]["pid"] + rank)
        with open(os.path.join(here, "summary.json"), "w") as f:
            json.dump(summary, f)


def report_files(target):
    return [os.path.join(root, name) for root, _, names in os.walk(target) for name in names
            if name == "summary.json"] + [os.path.join(target, "rank1", "trace.jsonl")]


def compare_files(*targets):
    return [os.path.join(root, name) for target in targets for root, _, names in os.walk(target)
            for name in names if name == "trace.jsonl"]


def floor_s(files):
    start = time.perf_counter()
    for i in range(0, len(files), 2000):
        subprocess.run(["cat", *files[i:i + 2000]], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def timed(argv, statuses, files, rounds):
    """Median wall time and the peak RSS of `argv` over `rounds`, the lines it prints, and the
    floor: `cat` of `files`."""
    runs = [run_process(argv, statuses=statuses) for _ in range(rounds)]
    text = subprocess.run(argv, capture_output=True, text=True).stdout
    return {"wall_s": median([r.wall_s for r in runs]), "max_rss_mib": max(r.max_rss_mib for r in runs),
            "lines": len(text.splitlines()), "floor_s": median([floor_s(files) for _ in range(rounds)])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True)
    parser.add_argument("--out", required=True, help="scratch directory")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ranks", default="64,512,4096,16384", help="comma list of N")
    parser.add_argument("--steps", type=int, default=6, help="steps of the recorded job")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    recorded = record_two_ranks(args.build, sys.executable, args.out, args.steps)
    ophook = os.path.join(args.build, "ophook")
    measured = []
    for ranks in [int(n) for n in args.ranks.split(",")]:
        target = os.path.join(args.out, "ranks%d" % ranks)
        make_run(recorded, target, ranks)
        measured.append(timed([ophook, "report", target], (0,), report_files(target), args.rounds))
        same = os.path.join(args.out, "same%d" % ranks)
        make_run(recorded, same, ranks, odd=False)
        measured[-1]["compare"] = timed([ophook, "compare", same, target], (1,), compare_files(same, target),
                                        args.rounds)
        measured[-1]["ranks"] = ranks
        print(json.dumps(measured[-1]), file=sys.stderr, flush=True)
        shutil.rmtree(target)
        shutil.rmtree(same)
    print(json.dumps({"runs": measured}))


if __name__ == "__main__":
    main()
