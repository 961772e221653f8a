"""The planted precision losses that `ophook bisect` and `ophook blame` are tested on, each among
benign ops, and a benign program: float32 cancellation inside one NumPy call, a float16 matmul that
overflows under autocast, a bfloat16 module whose long reduction loses the result. Each marks its
planted line with `# PLANTED`; `planted_site` finds it as ophook names a call's source."""
import textwrap


# (x + 1e8) - 1e8 in one call: np.sum over the three rows adds in float32, which keeps nothing of x.
CANCELLATION = """
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.uniform(1.0, 2.0, 64).astype(np.float32)
    scaled = x * np.float32(0.5)
    shifted = np.tanh(scaled) + np.float32(1)
    offset = np.full_like(x, 1e8)
    terms = np.stack([shifted, offset, -offset])
    recovered = np.sum(terms, axis=0)  # PLANTED
    features = np.sqrt(recovered * recovered + np.float32(1))
    print(np.mean(features))
"""

# Under float16 autocast the attention scores' matmul overflows (its products reach 1e6); with it
# in float32 the scaled scores are finite and the softmax is.
OVERFLOW = """
    import torch

    torch.manual_seed(0)
    x = torch.rand(8, 16)
    keys = torch.rand(8, 64) * 40 + 20
    weight = torch.rand(16, 16)
    with torch.autocast("cpu", dtype=torch.float16):
        hidden = torch.nn.functional.linear(x, weight)
        gate = torch.sigmoid(hidden).mean()
        scores = torch.matmul(keys, keys.t())  # PLANTED
        probs = torch.softmax(scores * 1e-5, dim=-1)
        out = (probs * gate).sum()
    print(out.item())
"""

# Under bfloat16 autocast the contrast module's matmul reduces 4096 values near 100 whose small
# differences are the result: bfloat16 keeps 8 bits, so rounding the inputs loses them all.
LONG_REDUCTION = """
    import torch

    torch.manual_seed(0)
    n = 4096

    class Contrast(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("weights", torch.cat([torch.full((n // 2,), 2.0 / n), torch.full((n // 2,), -2.0 / n)]))

        def forward(self, signal):
            return torch.matmul(signal, self.weights)  # PLANTED

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Tanh())
            self.head = torch.nn.Linear(16, 1)
            self.contrast = Contrast()

        def forward(self, x, signal):
            return self.head(self.encoder(x)).squeeze(-1) * 1e-3 + self.contrast(signal)

    model = Model()
    x = torch.rand(4, 16)
    ramp = torch.linspace(0.0, 0.1, n // 2)
    signal = 100.0 + torch.cat([ramp, torch.zeros(n // 2)]).repeat(4, 1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x, signal)
    print(out.float().sum().item())
"""

BENIGN = """
    import numpy as np

    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 16)).astype(np.float32)
    b = np.tanh(a @ a.T) * np.float32(0.5)
    c = np.exp(-np.abs(b))
    print(np.mean(c + np.float32(1)))
"""


def write_program(tmp_path, source, name="prog.py"):
    """`source` (indented as written here) saved as a program in `tmp_path`."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def planted_site(path):
    """path:line of the line marked PLANTED, as ophook names a call's source (file:line:function)."""
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if "# PLANTED" in line:
            return "%s:%d:" % (path, number)
    raise AssertionError("no PLANTED line in %s" % path)
