"""Cost of the device statistics kernel per op, on CUDA: run it unhooked and under
OPHOOK_MODE=stats and compare the rows (ms per call). Each op reads its input and writes its
output; under stats both are read once more by the kernel, so the floor of the added time is
one read of those bytes at the GPU's bandwidth (the `floor` row: torch.amax over 256 MiB, half
of a 256 MiB neg's input and output).
Usage: python device_statistics.py [label]"""
import sys
import time

import torch

dev = "cuda"
N = 64 << 20  # 256 MiB of float32


def per_call_ms(fn, calls=20):
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e3


x = torch.randn(N, device=dev)
square = torch.randn(8192, 8192, device=dev)
half = torch.randn(N, device=dev).bfloat16()
rows = [
    ("neg float32 256 MiB", lambda: torch.neg(x)),
    ("neg float32 transposed 256 MiB", lambda: torch.neg(square.t())),
    ("neg bfloat16 128 MiB", lambda: torch.neg(half)),
    ("neg float32 4 KiB", lambda: torch.neg(x[:1024])),
]
label = sys.argv[1] if len(sys.argv) > 1 else "run"
for name, fn in rows:
    print("%-8s %-34s %9.3f ms/call" % (label, name, per_call_ms(fn)))
with torch._C.DisableTorchFunction():  # not recorded: the floor is the GPU's own read
    floor = per_call_ms(lambda: torch.amax(x))
print("%-8s %-34s %9.3f ms/call" % (label, "floor: amax over 256 MiB", floor))
