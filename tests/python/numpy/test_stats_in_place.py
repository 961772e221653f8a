"""`stats` mode summarises arrays where they lie, large ones shared with a helper thread that
starts on a call's inputs while the call runs (docs/design.md, "Statistics in place"): the
statistics and digests must be those of the values as they were before the call (inputs) and
after it (outputs), exactly as the writer computes them from `dump`'s copies."""

import numpy as np
import pytest

from harness import arrays, load, run_script, summary, trace, xxh64

# Every array of 1 Mi elements is above the size the helper takes (256 KiB); a few are below, or
# not in C order (copied as before), or of dtypes without the fast kernels.
PROGRAM = """
import numpy as np
import torch

torch.set_num_threads(1)
rng = np.random.default_rng(0)
n = 1 << 20
x = rng.standard_normal(n)
y = rng.standard_normal(n)
x[5], y[7] = np.nan, np.inf
z = x + y                           # inputs while the helper runs beside the call
x += y                              # writes its input: inputs summarised before it runs
np.multiply(x, 2.0, out=y)          # out=
np.add(z, 1.0, z)                   # a positional output
f = np.exp(x.astype(np.float32))    # float32, an Inf from overflow
m = x[: 1 << 16].reshape(256, 256).T @ y[: 1 << 16].reshape(256, 256)  # a transposed input: copied
s = x[:100] * 3                     # small: summarised inline
k = np.arange(n, dtype=np.int64) * 3 + (np.arange(n) % 7)              # integers
h = (x[: 1 << 18].astype(np.float16) * 2)                               # float16
a = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
b = a * 2
a.add_(b)                           # in place
c = torch.sigmoid(a) + b
d = torch.arange(n) % 5
a.mul_(1e38)                        # Inf
q, r = torch.sort(b)                # two outputs
print(float(np.nansum(z[np.isfinite(z)])), float(c.sum()))
"""


def statistics_of(values):
    """The README's statistics of an array: over the finite values, NaN and Inf counted."""
    finite = values[np.isfinite(values)].astype(np.float64)
    stats = {"nan": int(np.isnan(values).sum()), "inf": int(np.isinf(values).sum())}
    if finite.size:
        stats.update(min=finite.min(), max=finite.max(), mean=finite.mean(), std=finite.std())
    return stats


def dump_stats_and_plain(base, program):
    """`program` run in `dump` and in `stats` mode ({mode: (output directory, records, summary,
    stdout)}) and unhooked ({"plain": stdout})."""
    done = {}
    for mode in ("dump", "stats"):
        where = base / mode
        where.mkdir()
        proc = run_script(where, program, mode=mode)
        done[mode] = (where / "out", trace(where / "out"), summary(where / "out"), proc.stdout)
    done["plain"] = run_script(base, program, preload=False).stdout
    return done


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return dump_stats_and_plain(tmp_path_factory.mktemp("stats_in_place"), PROGRAM)


def each_array(records):
    for record in records:
        for section in ("args", "kwargs", "outputs"):
            for value in arrays(record, section):
                yield record, section, value


def test_statistics_in_place_equal_those_of_the_copies(runs):
    dump_dir, dumped, _, _ = runs["dump"]
    _, summarised, _, _ = runs["stats"]
    assert [r["op"] for r in summarised] == [r["op"] for r in dumped]
    compared = large = 0
    for (record, section, ours), (_, _, copied) in zip(each_array(summarised), each_array(dumped)):
        where = "seq %d %s %s" % (record["seq"], record["op"], section)
        assert ours["stats"] == copied["stats"], where  # the same arithmetic, bit for bit
        if copied.get("file"):
            values = load(dump_dir, copied)
            assert ours["stats"]["xxh64"] == "%016x" % xxh64(np.ascontiguousarray(values).tobytes()), where
            if values.dtype.kind == "f":
                expected = statistics_of(values)
                for key in ("nan", "inf"):
                    assert ours["stats"][key] == expected[key], where
                for key in ("min", "max", "mean", "std"):
                    assert ours["stats"][key] == pytest.approx(expected[key], rel=1e-9, abs=1e-12), (where, key)
            large += values.nbytes >= 256 << 10
            compared += 1
    assert compared >= 40 and large >= 25, (compared, large)


def test_inputs_are_summarised_as_they_were_before_the_call(runs):
    _, summarised, _, _ = runs["stats"]
    iadd = [r for r in summarised if r["op"] == "numpy.add"][1]  # x += y: add(x, y, x)
    x_before, y = arrays(iadd)[:2]
    (x_after,) = arrays(iadd, "outputs")
    assert x_before["stats"]["nan"] == 1 and x_before["stats"]["inf"] == 0  # y's Inf not yet added
    assert x_after["stats"]["inf"] == 1 and x_before["stats"]["xxh64"] != x_after["stats"]["xxh64"]
    (add_,) = [r for r in summarised if r["op"] == "torch.Tensor.add_"]
    a_before, b = arrays(add_)
    (a_after,) = arrays(add_, "outputs")
    assert a_before["stats"]["xxh64"] != a_after["stats"]["xxh64"]
    assert a_after["stats"]["mean"] == pytest.approx(a_before["stats"]["mean"] + b["stats"]["mean"], rel=1e-6)


def test_the_program_is_unchanged(runs):
    assert runs["stats"][3] == runs["plain"] == runs["dump"][3]


# Large arrays read again unchanged, then changed by writes no call records (NumPy's setitem, a
# NumPy view of a tensor, C code): statistics are given again only to the same content.
REREAD = """
import ctypes
import numpy as np
import torch

torch.set_num_threads(1)
n = 1 << 18
x = np.linspace(-1.0, 1.0, n)
t = torch.linspace(-1.0, 1.0, n)
w = torch.linspace(-2.0, 2.0, 512 * 512).reshape(512, 512)
for step in range(3):
    np.negative(x)
    torch.neg(t)
    torch.mm(w, w)
x[n - 1] = 7.0                                  # NumPy's setitem: no call
np.negative(x)
t.numpy()[0] = -7.0                             # a NumPy view of the tensor
torch.neg(t)
nine = np.array([9.0])
ctypes.memmove(x.ctypes.data + 8 * 1000, nine.ctypes.data, 8)  # C code
np.negative(x)
with torch.no_grad():
    w.view(-1).numpy()[3] = 5.0                 # a view's view
    torch.mm(w, w)
print(float(np.negative(x).sum()), float(torch.mm(w, w).sum()))
"""


@pytest.fixture(scope="module")
def rereads(tmp_path_factory):
    return dump_stats_and_plain(tmp_path_factory.mktemp("rereads"), REREAD)


def test_statistics_given_again_only_to_unchanged_content(rereads):
    _, dumped, _, dump_out = rereads["dump"]
    _, summarised, counts, stats_out = rereads["stats"]
    assert stats_out == rereads["plain"] == dump_out
    assert [r["op"] for r in summarised] == [r["op"] for r in dumped]
    for (record, section, ours), (_, _, copied) in zip(each_array(summarised), each_array(dumped)):
        assert ours["stats"] == copied["stats"], "seq %d %s %s" % (record["seq"], record["op"], section)
    memo = counts["summaries_in_place"]
    # Every unchanged re-read: x and t twice each, w four times (twice in each of two calls)
    # and the outputs made again with equal content at the same place, less what the two threads
    # summarised side by side before either remembered it.
    assert memo["remembered"] >= 6 and memo["computed"] >= 8, memo
    negated = [arrays(r)[0]["stats"] for r in summarised if r["op"] == "numpy.negative"]
    assert [s["max"] for s in negated[2:5]] == [1.0, 7.0, 9.0]  # each write seen
    (t_after,) = [arrays(r)[0]["stats"] for r in summarised if r["op"] == "torch.neg"][3:]
    assert t_after["min"] == -7.0
    products = [arrays(r)[0]["stats"] for r in summarised if r["op"] == "torch.mm"]
    assert products[3]["max"] == 5.0 and products[2]["max"] == 2.0


LOADER = """
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
data = torch.randn(512, 1024)
print(float((data * 2).sum()))  # a large call first: the helper thread exists, then sleeps
for epoch in range(2):
    total = 0.0
    for (batch,) in DataLoader(TensorDataset(data), batch_size=128, num_workers=2):
        total += float((batch + 1).sum())  # the workers' collate stacks 512 KiB batches
    print(epoch, total)
"""


def test_dataloader_workers_forked_while_the_helper_sleeps(tmp_path):
    """A worker forked while the parent's helper thread waits on its condition variable starts a
    helper of its own; it hung at the first signal when the child kept the parent's variable."""
    plain = run_script(tmp_path, LOADER, preload=False, timeout=120)
    hooked = run_script(tmp_path, LOADER, mode="stats", timeout=120)
    assert hooked.stdout == plain.stdout
    workers = [d for d in (tmp_path / "out").iterdir() if d.is_dir() and d.name.startswith("pid")]
    assert len(workers) >= 2
    stacked = [value for d in workers for r in trace(d) if r["op"] == "torch.stack" for value in arrays(r, "outputs")]
    assert stacked and all(v["shape"] == [128, 1024] and v["stats"]["nan"] == 0 for v in stacked)
