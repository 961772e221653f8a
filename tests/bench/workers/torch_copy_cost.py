"""Per-op cost of reading tensors through torch (OPHOOK_TENSOR_COPY=torch, the path of tensors on
other devices than the CPU) beside the direct path, in `stats` (and, with --with-dump 1, `dump`)
mode, in one process: torch.add on tensors of --elements float32 elements (three tensors read per
op) at the torch_function level, every configuration once per round, in turn. Tensors up to 256 KiB
are snapshot and read back in batches, larger ones reduced on their device (docs/devices.md).
Prints one JSON line: per configuration, the median over rounds of (its ns per op - the bare op's
ns per op in the same round), each by its fastest burst. Each turn ends with ophook.flush(),
outside the timing."""
import statistics

import torch

from worker_support import arguments, emit, fresh_directory, load_ophook, op_timer, paired_medians

args = arguments(__doc__, calls=2_000, elements=4, with_dump=1)
ophook = load_ophook(args.build)
a = torch.ones(args.elements)
b = torch.ones(args.elements)
per_op_ns = op_timer(lambda: torch.add(a, b), args.calls, warm_up=200)


def bare(out):
    return per_op_ns()


def ophook_reading(mode, tensor_copy):
    def run(out):
        with ophook.Tracer(output=out, levels=["torch_function"], mode=mode, tensor_copy=tensor_copy,
                           log_level="warn"):
            ns = per_op_ns()
            ophook.flush()
        return ns

    return run


CONFIGS = {"bare": bare}
for _mode in ("stats", "dump") if args.with_dump else ("stats",):
    for _copy in ("auto", "torch"):
        CONFIGS["%s_%s" % (_mode, _copy)] = ophook_reading(_mode, _copy)


def main():
    rounds = []
    for number in range(args.rounds):
        # A fresh directory per turn (and size: the driver runs this worker once per size): dump turns
        # create thousands of files (see fresh_directory).
        rounds.append({name: run(fresh_directory(args.out, "%d_%d_%s" % (args.elements, number, name)))
                       for name, run in CONFIGS.items()})
    emit({"bare_ns": statistics.median(r["bare"] for r in rounds), "added_ns": paired_medians(rounds, "bare")})


if __name__ == "__main__":
    main()
