"""N calls of torch.add on 4-element tensors under one configuration, for instruction counts:
run it under callgrind with N and 3N calls; the difference divided by 2N is the cost per op.

    valgrind --tool=callgrind --separate-threads=yes python tests/bench/workers/torch_op_loop.py BUILD CONFIG N

CONFIG: bare, noop_function, noop_dispatch, torch_function or torch_dispatch (ophook, trace)."""
import os
import sys
import tempfile

import torch

from baselines.torch_modes import NoopDispatchMode, NoopFunctionMode
from worker_support import load_ophook


def main():
    build, config, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ophook = load_ophook(build)
    a, b = torch.ones(4), torch.ones(4)

    def loop():
        for _ in range(calls):
            torch.add(a, b)

    if config == "bare":
        loop()
    elif config.startswith("noop_"):
        with (NoopFunctionMode if config == "noop_function" else NoopDispatchMode)():
            loop()
    else:
        with tempfile.TemporaryDirectory() as out:
            with ophook.Tracer(output=os.path.join(out, "run"), levels=[config], mode="trace", log_level="warn"):
                loop()


if __name__ == "__main__":
    main()
