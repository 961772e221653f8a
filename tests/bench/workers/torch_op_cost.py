"""Per-op cost of ophook's C++-backed torch modes (mode=trace) against do-nothing Python modes of
the same kind (the mechanism's floor) and Python modes recording the same fields, in one process:
torch.add on 4-element tensors, every configuration once per round, in turn (A/B interleaved).
Prints one JSON line: per configuration, the median over rounds of (its ns per op - the bare op's
ns per op in the same round), each by its fastest burst (worker_support's fastest_burst_ns says
why)."""
import os
import statistics

import torch

from baselines.json_recorder import JsonRecorder
from baselines.torch_modes import NoopDispatchMode, NoopFunctionMode, RecordingDispatchMode, RecordingFunctionMode
from worker_support import arguments, clear_directory, emit, load_ophook, op_timer, paired_medians

args = arguments(__doc__, calls=20_000)
ophook = load_ophook(args.build)
a = torch.ones(4)
b = torch.ones(4)
per_op_ns = op_timer(lambda: torch.add(a, b), args.calls, warm_up=500)


def bare(out):
    return per_op_ns()


def python_mode(make):
    def run(out):
        with make():
            return per_op_ns()

    return run


def python_recording(mode_class):
    def run(out):
        recorder = JsonRecorder(os.path.join(out, "trace.jsonl"))
        try:
            with mode_class(recorder):
                return per_op_ns()
        finally:
            recorder.close()

    return run


def ophook_level(level):
    def run(out):
        with ophook.Tracer(output=out, levels=[level], mode="trace", log_level="warn"):
            return per_op_ns()

    return run


CONFIGS = {
    "bare": bare,
    "noop_function_mode": python_mode(NoopFunctionMode),
    "ophook_torch_function": ophook_level("torch_function"),
    "recording_function_mode": python_recording(RecordingFunctionMode),
    "noop_dispatch_mode": python_mode(NoopDispatchMode),
    "ophook_torch_dispatch": ophook_level("torch_dispatch"),
    "recording_dispatch_mode": python_recording(RecordingDispatchMode),
}


def main():
    rounds = []
    for _ in range(args.rounds):
        this_round = {}
        for name, run in CONFIGS.items():
            out = os.path.join(args.out, name)
            clear_directory(out)
            this_round[name] = run(out)
            clear_directory(out)
        rounds.append(this_round)
    emit({"bare_ns": statistics.median(r["bare"] for r in rounds), "added_ns": paired_medians(rounds, "bare")})


if __name__ == "__main__":
    main()
