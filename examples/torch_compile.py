"""torch.compile under ophook: a compiled function and a compiled module, checked against eager.

    LD_PRELOAD=$PWD/build/libophook.so .venv/bin/python examples/torch_compile.py
    OPHOOK_COMPILE=ignore LD_PRELOAD=... .venv/bin/python examples/torch_compile.py

With OPHOOK_COMPILE=eager (the default) the compiled code runs eagerly and every op is recorded;
with ignore it runs compiled and nothing inside it is recorded (summary.json notes which).
TORCH_COMPILE_BACKEND picks the backend (default inductor; "aot_eager" skips code generation).
"""
import os

import torch
from torch import nn

BACKEND = os.environ.get("TORCH_COMPILE_BACKEND", "inductor")


def gelu_mix(x, w):
    return nn.functional.gelu(x @ w) * 0.5 + x.relu()


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return x + torch.tanh(self.fc(self.norm(x)))


def main():
    torch.manual_seed(0)
    x = torch.randn(8, 16)
    w = torch.randn(16, 16)
    block = Block(16)

    compiled_fn = torch.compile(gelu_mix, backend=BACKEND)
    compiled_block = torch.compile(block, backend=BACKEND)
    with torch.no_grad():
        results = {
            "function": (compiled_fn(x, w), gelu_mix(x, w)),
            "module": (compiled_block(x), block(x)),
        }
    for name, (compiled, eager) in results.items():
        print("%s: max |compiled - eager| = %.3g, allclose %s"
              % (name, (compiled - eager).abs().max().item(), torch.allclose(compiled, eager, atol=1e-5)))
    print("function sum %s" % results["function"][0].sum().item().hex())
    print("module sum %s" % results["module"][0].sum().item().hex())


if __name__ == "__main__":
    main()
