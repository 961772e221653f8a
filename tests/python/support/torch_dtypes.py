"""The tensors of every torch dtype that torch/test_torch_capture.py's child program clones under
the hook and the test rebuilds to check what was recorded: one module, imported by both (the child
puts support/ on its sys.path), so the two cannot drift apart."""
import torch

WIDENED = ["bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu"]
PLAIN = ["float16", "float32", "float64", "complex64", "complex128", "bool", "int8", "int16", "int32", "int64",
         "uint8", "uint16", "uint32", "uint64"]


def dtype_case(name):
    """The tensor the child clones for dtype `name` (the test rebuilds the same one)."""
    dtype = getattr(torch, name)
    if name == "bfloat16":  # every bit pattern
        return torch.arange(65536, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    if name.startswith("float8"):  # every bit pattern
        return torch.arange(256, dtype=torch.int32).to(torch.uint8).view(dtype)
    if name == "bool":
        return torch.arange(6) % 2 == 0
    if dtype.is_floating_point or dtype.is_complex:
        base = (torch.arange(24, dtype=torch.float64) / 7 - 1).reshape(2, 3, 4)
        return (base * (1 + 2j) if dtype.is_complex else base).to(dtype)
    signed = name.startswith("int")
    return torch.tensor([-3, -1, 0, 1, 2, 100] if signed else [0, 1, 2, 100, 200, 255]).to(dtype).reshape(2, 3)
